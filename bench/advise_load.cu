// Two known CUDA loads for checking the advisor on a real GPU (bench/real_gpu_check.sh):
//  - `starved`: each step, THREADS host threads spin for HOST_MS to "prepare a batch" (decoding,
//    augmentation), then the batch is copied to the GPU and a ~5 ms kernel runs on it: run under a
//    CPU limit below THREADS cores, the GPU waits on the host most of the time (input-bound, CPU);
//  - `fed`: the kernel runs back to back on data already on the GPU (a well-fed job).
// Usage: advise_load starved|fed SECONDS [THREADS] [HOST_MS]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <unistd.h>

__global__ void Step(float* data, size_t n, int rounds) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (int r = 0; r < rounds; ++r) x = x * 1.000001f + 0.5f;
  data[i] = x;
}

int main(int argc, char** argv) {
  if (argc < 3 || (std::strcmp(argv[1], "starved") != 0 && std::strcmp(argv[1], "fed") != 0)) {
    std::fprintf(stderr, "usage: advise_load starved|fed SECONDS [THREADS] [HOST_MS]\n");
    return 2;
  }
  const bool starved = std::strcmp(argv[1], "starved") == 0;
  const double seconds = std::atof(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 4;
  const int host_ms = argc > 4 ? std::atoi(argv[4]) : 200;
  const size_t n = size_t{64} << 20;  // 256 MiB of floats on the GPU
  float* data = nullptr;
  if (cudaMalloc(&data, n * sizeof(float)) != cudaSuccess) return 1;
  cudaMemset(data, 0, n * sizeof(float));
  std::vector<float> batch(size_t{16} << 20, 1.0f);  // 64 MiB a batch
  std::printf("advise_load %s: pid %d, %.0f s\n", argv[1], static_cast<int>(getpid()), seconds);
  std::fflush(stdout);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const unsigned block = 256, blocks = static_cast<unsigned>((n + block - 1) / block);
  std::atomic<double> sink{0};
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    if (starved) {
      std::vector<std::thread> workers;
      for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&] {
          double x = 0;
          const auto until = Clock::now() + std::chrono::milliseconds(host_ms);
          while (Clock::now() < until) x += 1e-9;
          sink = sink + x;
        });
      }
      for (auto& w : workers) w.join();
      cudaMemcpy(data, batch.data(), batch.size() * sizeof(float), cudaMemcpyHostToDevice);
      Step<<<blocks, block>>>(data, n, 16);
    } else {
      Step<<<blocks, block>>>(data, n, 64);
    }
    cudaDeviceSynchronize();
  }
  cudaFree(data);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

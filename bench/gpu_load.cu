// A small, known CUDA load for checking the agent against a real driver (bench/real_gpu_check.sh):
// allocates MIB of device memory, then for SECONDS runs a compute kernel back to back during the
// first half (about 100% utilization) and with equal idle gaps during the second half (about 50%).
// Usage: gpu_load SECONDS [MIB]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unistd.h>

__global__ void Burn(float* data, size_t n, int rounds) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float x = data[i];
  for (int r = 0; r < rounds; ++r) x = x * 1.000001f + 0.5f;
  data[i] = x;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 60;
  const size_t mib = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 2048;
  const size_t n = mib * 1024 * 1024 / sizeof(float);
  float* data = nullptr;
  if (cudaMalloc(&data, n * sizeof(float)) != cudaSuccess || cudaMemset(data, 0, n * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "gpu_load: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  std::printf("gpu_load: pid %d, %zu MiB, %.0f s\n", static_cast<int>(getpid()), mib, seconds);
  std::fflush(stdout);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const unsigned threads = 256;
  const unsigned blocks = static_cast<unsigned>((n + threads - 1) / threads);
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
    const auto t0 = Clock::now();
    Burn<<<blocks, threads>>>(data, n, 64);
    cudaDeviceSynchronize();
    const bool second_half = std::chrono::duration<double>(Clock::now() - start).count() > seconds / 2;
    if (second_half) std::this_thread::sleep_for(Clock::now() - t0);  // idle as long as it ran
  }
  cudaFree(data);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}

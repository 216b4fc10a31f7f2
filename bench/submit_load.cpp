// Durable submits over HTTP from concurrent clients (issue 5's target: 2,000 jobs/s). Usage:
//   submit_load URL TOKEN [CLIENTS=8] [SECONDS=5]
// Each client posts `{"argv": ["true"], "client_token": …}` in a loop on a kept-alive connection
// (a fresh token per submit, as `gpufleet submit` sends); only 201 answers
// (sent after the commit) count. Prints one line: clients, acknowledged submits, jobs/s.
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: submit_load URL TOKEN [CLIENTS] [SECONDS]\n");
    return 2;
  }
  const std::string url = argv[1], token = argv[2];
  const int clients = argc > 3 ? std::atoi(argv[3]) : 8;
  const double seconds = argc > 4 ? std::atof(argv[4]) : 5;
  std::atomic<long> acknowledged{0}, refused{0};
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client c(url);
      c.set_bearer_token_auth(token);
      c.set_keep_alive(true);
      c.set_tcp_nodelay(true);
      // Each submit carries its own idempotency token, as `gpufleet submit` sends one.
      const std::string prefix = R"({"argv":["true"],"gpus":1,"client_token":"load-)" +
                                 std::to_string(getpid()) + "-" + std::to_string(t) + "-";
      for (long i = 0; std::chrono::steady_clock::now() < end; ++i) {
        auto r = c.Post("/v1/jobs", prefix + std::to_string(i) + "\"}", "application/json");
        if (r && r->status == 201) {
          ++acknowledged;
        } else {
          ++refused;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("clients %d, acknowledged %ld, refused %ld, %.0f jobs/s\n", clients,
              acknowledged.load(), refused.load(), static_cast<double>(acknowledged) / elapsed);
  return refused > 0 ? 1 : 0;
}

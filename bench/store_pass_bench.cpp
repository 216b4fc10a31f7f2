// A live scheduling pass at fleet scale on each store (issue 16): the same `Controller` the
// server runs, on SQLite or on PostgreSQL, with NODES nodes of 8 H100 registered through
// heartbeats and JOBS pending jobs of 1-8 GPUs submitted through `Controller::Submit` (8 threads,
// group commit) and taken into the queue by passes (5,000 a pass) before the nodes register.
// Then, timed with the wall clock:
//   - the first pass, which fills the idle fleet while one node beats without pause: how long
//     it held the controller's lock (the scheduler's decision and the rest of the pass), and
//     the one commit of every start (TransitionAll) it makes durable, with the lock released,
//     before any job starts; the longest heartbeat meanwhile;
//   - the commit alone: the same number of transitions of other pending jobs in one
//     TransitionAll, straight on the store;
//   - further passes on the now busy fleet (the store is not written: nothing to start);
//   - an idle node's heartbeat, and a made-up bearer token checked as the API checks it.
// Usage: store_pass_bench [--store sqlite|postgresql] [--nodes 1250] [--jobs 100000]
// PostgreSQL runs in a temporary directory with fsync on (store/pg_test_server.h).
// PASS_BENCH_VERBOSE=1 prints each intake pass's time (the first one carries one-time work).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "controller/controller.h"
#include "store/pg_test_server.h"
#include "store/store.h"

namespace {

using namespace gpufleet;
constexpr int64_t kNowMs = 1'800'000'000'000;

double MsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "sqlite";
  int nodes = 1250, jobs = 100000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--store")) backend = argv[i + 1];
    else if (!std::strcmp(argv[i], "--nodes")) nodes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--jobs")) jobs = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: store_pass_bench [--store sqlite|postgresql] [--nodes N] "
                           "[--jobs N]\n");
      return 2;
    }
  }
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gpufleet-pass-bench-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::unique_ptr<store::PgTestServer> pg;
  core::Result<std::unique_ptr<store::Store>> opened = core::Error{"no store"};
  if (backend == "postgresql") {
    if (auto why = store::PgTestServer::Unavailable()) {
      std::printf("skipped: %s\n", why->c_str());
      return 0;
    }
    pg = std::make_unique<store::PgTestServer>();
    std::string error;
    if (!pg->Start(&error) || !pg->CreateDatabase("fleet", &error)) {
      std::fprintf(stderr, "postgresql: %s\n", error.c_str());
      return 1;
    }
    opened = store::OpenPostgresStore(pg->ConnInfo("fleet"));
  } else {
    opened = store::OpenSqliteStore(dir.string());
  }
  if (!opened) {
    std::fprintf(stderr, "store: %s\n", opened.error().c_str());
    return 1;
  }
  store::Store& st = *opened.value();
  if (auto led = st.TryLead("bench", "", 600000); !led || !led.value()) {
    std::fprintf(stderr, "store: cannot lead\n");
    return 1;
  }
  controller::ControllerOptions options;
  options.data_dir = dir.string();
  options.clock = [] { return kNowMs; };
  options.lease_ms = int64_t{1} << 40;  // nothing expires in this bench
  auto made = controller::Controller::Create(st, options);
  if (!made) {
    std::fprintf(stderr, "controller: %s\n", made.error().c_str());
    return 1;
  }
  controller::Controller& ctl = *made.value();
  if (auto r = ctl.Recover(kNowMs); !r) {
    std::fprintf(stderr, "recover: %s\n", r.error().c_str());
    return 1;
  }
  // Submits from 8 threads, as 8 API clients would (each returns after its commit).
  const auto submit_start = std::chrono::steady_clock::now();
  std::atomic<int> next{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int k; (k = next++) < jobs;) {
        store::JobRecord job;
        job.user = "user" + std::to_string(k % 16);
        job.name = "job";
        job.argv = {"sleep", "infinity"};
        job.gpus = 1 << (k % 4);  // 1, 2, 4, 8
        job.time_limit_s = 600 + (k % 97) * 600;
        job.submit_ms = kNowMs;
        if (!ctl.Submit(job)) ++failed;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double submit_ms = MsSince(submit_start);
  if (failed > 0) {
    std::fprintf(stderr, "%d submits failed\n", failed.load());
    return 1;
  }
  // The queue takes the 100,000 submits in (passes with no node yet: nothing starts), as passes
  // take each new submit in while the controller runs: at most 5,000 a pass.
  double intake_ms = 0;
  int intake_passes = 0;
  while (ctl.Stats().waiting < jobs && intake_passes < jobs) {
    auto t_intake = std::chrono::steady_clock::now();
    ctl.RunOnce(kNowMs);
    intake_ms = std::max(intake_ms, MsSince(t_intake));
    if (std::getenv("PASS_BENCH_VERBOSE") != nullptr) {
      std::fprintf(stderr, "intake pass %.1f ms\n", MsSince(t_intake));
    }
    ++intake_passes;
  }
  for (int n = 0; n < nodes; ++n) {
    net::Heartbeat beat;
    beat.node = "node-" + std::to_string(n);
    beat.gpus = 8;
    beat.gpu_model = "H100-80GB";
    beat.simulated = true;
    if (auto r = ctl.Heartbeat(beat, kNowMs); !r) {
      std::fprintf(stderr, "heartbeat: %s\n", r.error().c_str());
      return 1;
    }
  }
  if (std::getenv("PASS_BENCH_PAUSE") != nullptr) {  // time to attach a profiler to the pass
    std::fprintf(stderr, "pass in 2 s (pid %d)\n", static_cast<int>(::getpid()));
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  // Meanwhile a node beats without pause: how long its heartbeats wait shows whether the pass
  // (or its commit) keeps the controller from answering.
  std::atomic<bool> pass_over{false};
  std::vector<double> beat_ms;
  std::thread beater([&] {
    net::Heartbeat beat;
    beat.node = "node-0";
    beat.gpus = 8;
    beat.gpu_model = "H100-80GB";
    beat.simulated = true;
    while (!pass_over) {
      const auto b0 = std::chrono::steady_clock::now();
      (void)ctl.Heartbeat(beat, kNowMs);
      beat_ms.push_back(MsSince(b0));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto t0 = std::chrono::steady_clock::now();
  ctl.RunOnce(kNowMs);
  const double first_pass_ms = MsSince(t0);
  pass_over = true;
  beater.join();
  const double max_beat_ms =
      beat_ms.empty() ? 0 : *std::max_element(beat_ms.begin(), beat_ms.end());
  const controller::ControllerStats stats = ctl.Stats();
  const int64_t started = stats.started;

  // The commit alone: as many transitions of still-pending jobs, in one transaction.
  std::vector<store::TransitionRequest> requests;
  store::JobFilter pending;
  pending.state = store::JobState::kPending;
  pending.limit = 10000;
  auto page = st.ListJobs(pending);
  if (!page) {
    std::fprintf(stderr, "list: %s\n", page.error().c_str());
    return 1;
  }
  for (const store::JobRecord& j : page.value()) {
    if (static_cast<int64_t>(requests.size()) >= started) break;
    store::TransitionRequest r;
    r.id = j.id;
    r.from = store::JobState::kPending;
    r.to = store::JobState::kCancelled;
    r.update.end_ms = kNowMs;
    r.update.reason = "bench";
    requests.push_back(std::move(r));
  }
  t0 = std::chrono::steady_clock::now();
  auto done = st.TransitionAll(requests, kNowMs);
  const double commit_ms = MsSince(t0);
  if (!done) {
    std::fprintf(stderr, "transition: %s\n", done.error().c_str());
    return 1;
  }
  std::vector<double> busy;
  for (int k = 0; k < 5; ++k) {
    t0 = std::chrono::steady_clock::now();
    ctl.RunOnce(kNowMs);
    busy.push_back(MsSince(t0));
  }
  std::sort(busy.begin(), busy.end());
  // An idle node's heartbeats, as real agents send them (NVML's model name, which the catalog
  // does not spell so) and in the catalog's own spelling: a beat that changes nothing should cost
  // the same either way (each used to rebuild the snapshot and write the node to the store).
  auto idle_beat_us = [&](const std::string& node, const std::string& model) {
    net::Heartbeat beat;
    beat.node = node;
    beat.gpus = 8;
    beat.gpu_model = model;
    beat.simulated = true;
    std::vector<double> us;
    for (int k = 0; k < 201; ++k) {
      const auto b0 = std::chrono::steady_clock::now();
      (void)ctl.Heartbeat(beat, kNowMs);
      if (k > 0) us.push_back(MsSince(b0) * 1000);  // the first one registers it
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  // A made-up bearer token, as the API checks it (Store::CredentialOf), against one lookup of a
  // token (TokenBySha256): what each made-up token cost before the stored hashes were kept.
  auto made_up_us = [&](bool through_memory) {
    std::vector<double> us;
    for (int k = 0; k < 2001; ++k) {
      const std::string sha = std::to_string(k) + std::string(60, through_memory ? 'e' : 'f');
      const auto b0 = std::chrono::steady_clock::now();
      if (through_memory) {
        (void)st.CredentialOf(sha, kNowMs);
      } else {
        (void)st.TokenBySha256(sha);
      }
      if (k > 0) us.push_back(MsSince(b0) * 1000);  // the first one reads the hashes
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  const double lookup_us = made_up_us(false);
  const double made_up_token_us = made_up_us(true);
  const double catalog_beat_us = idle_beat_us("idle-catalog", "G2");
  const double nvml_beat_us = idle_beat_us("idle-nvml", "NVIDIA H100 80GB HBM3");
  std::printf(
      "%s: %d nodes x 8 GPUs, %d pending jobs submitted in %.1f s (%.0f/s, 8 threads); "
      "intake: %d passes, the longest %.1f ms; first pass %.1f ms in all (%lld starts): "
      "lock held %.1f ms, commit of the starts %.1f ms (lock released), longest "
      "heartbeat meanwhile %.1f ms (%zu beats); %zu transitions alone %.1f ms; "
      "busy-fleet pass median %.2f ms; idle heartbeat median %.0f us (catalog model "
      "name), %.0f us (NVML's name); a made-up token median %.2f us (one lookup, as each "
      "cost before: %.2f us)\n",
      backend.c_str(), nodes, jobs, submit_ms / 1000, jobs / (submit_ms / 1000), intake_passes,
      intake_ms, first_pass_ms, static_cast<long long>(started), stats.last_start_pass_ms,
      stats.last_start_commit_ms, max_beat_ms, beat_ms.size(), requests.size(), commit_ms,
      busy[busy.size() / 2], catalog_beat_us, nvml_beat_us, made_up_token_us, lookup_us);
  made.value().reset();
  opened.value().reset();
  std::filesystem::remove_all(dir);
  return 0;
}

#pragma once
// `gpufleet queue [--explain [--mine] [--limit N]] [--json]`: the queue's summary (GET /v1/queue),
// or why each waiting job waits, in the scheduler's order (GET /v1/queue/explain, issue 15).
#include "cli/client_commands.h"

namespace gpufleet::cli {

struct QueueOptions {
  ClientOptions client;
  bool explain = false;  // each waiting job's position and reason
  bool mine = false;     // with --explain: only your jobs (positions stay those of the queue)
  int limit = 1000;      // with --explain: the first so many jobs of the queue
};

// Exit 1 when the server cannot be reached or refuses.
int RunQueue(const QueueOptions& options);

}  // namespace gpufleet::cli

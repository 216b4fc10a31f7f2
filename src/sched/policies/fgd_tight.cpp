// fgd-tight: gpufleet's variant of FGD. Nodes are scored exactly as FGD scores them; a GPU-sharing
// job then takes, among the GPUs of the chosen node that reach the best score, the one with the
// least free milli (best fit), which keeps emptier GPUs whole for larger shares that come later.
// See docs/placement/README.md for what was tried beyond this and how it measured.
#include "sched/policies/fgd.h"
#include "sched/policy_registry.h"

namespace gpufleet::sched {

std::unique_ptr<PlacementPolicy> MakeFgdTight() {
  return std::make_unique<FgdPolicy>("fgd-tight", true);
}

}  // namespace gpufleet::sched

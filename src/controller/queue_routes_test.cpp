// What GET /v1/queue/explain shows of one waiting job to whom (QueueExplanationJson): when the
// job it waits on ends is shown only where that job's prediction is the caller's to see.
#include "controller/queue_routes.h"

#include <gtest/gtest.h>

namespace gpufleet::controller {
namespace {

using nlohmann::json;

// Job 5 waits on job 9, which ends in 600 s by `basis`; `mixed`: job 9's prediction mixes in
// other users' run times.
Controller::QueueExplanation Waiting(sched::EndBasis basis, bool mixed) {
  Controller::QueueExplanation e;
  e.why.id = 5;
  e.why.position = 1;
  const std::string when = basis == sched::EndBasis::kEstimate ? " (expected in 10 min)"
                                                               : " (time limit in 10 min)";
  e.why.reason = "needs 4 GPUs on one node: no node has 4 free now; would fit after job 9 ends" + when;
  e.why.reason_end_hidden =
      "needs 4 GPUs on one node: no node has 4 free now; would fit after job 9 ends (when: not shown)";
  e.why.fits_after_job = 9;
  e.why.fits_after_s = 600;
  e.why.fits_after_basis = basis;
  e.user = "bob";
  e.fits_after_mixed = mixed;
  return e;
}

// The end, its basis and the reason's words for it are shown together or not at all.
void ExpectEndShown(const json& j, bool shown) {
  EXPECT_EQ(j["fits_after_s"].is_number(), shown) << j.dump();
  EXPECT_EQ(j["fits_after_basis"].is_string(), shown) << j.dump();
  EXPECT_EQ(j["reason"].get<std::string>().find("10 min") != std::string::npos, shown) << j.dump();
  EXPECT_EQ(j["reason"].get<std::string>().find("(when: not shown)") == std::string::npos, shown)
      << j.dump();
}

TEST(QueueExplanationJson, AnEndIsShownOnlyWhereItsPredictionIsTheCallersToSee) {
  using sched::EndBasis;
  const std::set<int64_t> owns_nine = {5, 9};  // bob, whose jobs both are
  const std::set<int64_t> owns_five = {5};     // job 9 is another user's
  for (const bool mixed : {false, true}) {
    for (const EndBasis basis : {EndBasis::kEstimate, EndBasis::kTimeLimit}) {
      SCOPED_TRACE(std::string(mixed ? "mixed " : "own ") + std::string(EndBasisName(basis)));
      const Controller::QueueExplanation e = Waiting(basis, mixed);
      // An admin sees everything.
      ExpectEndShown(QueueExplanationJson(e, true, nullptr), true);
      // The owner of job 9: shown unless its prediction mixes in others' run times, and then
      // not even from a time limit (that against an estimate hidden would tell the mean apart).
      const json own = QueueExplanationJson(e, true, &owns_nine);
      EXPECT_EQ(own["fits_after_job"], 9);
      ExpectEndShown(own, !mixed);
      // Another user's job 9: its estimated end is hidden, its time limit is not (as Slurm).
      const json other = QueueExplanationJson(e, true, &owns_five);
      EXPECT_TRUE(other["fits_after_job"].is_null()) << other.dump();
      EXPECT_EQ(other["reason"].get<std::string>().find("job 9"), std::string::npos)
          << other.dump();
      ExpectEndShown(other, basis == EndBasis::kTimeLimit);
    }
  }
}

}  // namespace
}  // namespace gpufleet::controller

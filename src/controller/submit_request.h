#pragma once
// The body of POST /v1/jobs, parsed and checked at the edge into a job record. Every field has a
// JSON type and a range; anything else is an error naming the field (core::Error::field), and
// unknown fields are refused rather than ignored (a misspelt limit must not vanish silently).
#include <string_view>

#include "core/result.h"
#include "store/store.h"

namespace gpufleet::controller {

// Limits of one job, checked at submit.
inline constexpr int kMaxJobNodes = 1024;
inline constexpr int kMaxJobPriority = 1000000;

// The job as submitted (user, state and times unset). `name` defaults to argv[0].
core::Result<store::JobRecord> ParseSubmitRequest(std::string_view body);

}  // namespace gpufleet::controller

#pragma once
// The command lines of `gpufleet sim placement` and `gpufleet sim placement-report`, registered by
// both programs: gpufleet-full under its `sim`, and the static `gpufleet`, which runs these two
// itself (a whole-process run of the experiment then pays no dynamic loading; issue 18, §4).
#include <CLI/CLI.hpp>

#include "cli/placement_commands.h"

namespace gpufleet::cli {

// What the two commands parse into; must outlive the parse (their callbacks read it).
struct PlacementCommandOptions {
  PlacementOptions place;
  PlacementReportOptions report;
};

// Adds `placement` and `placement-report` to `sim`; each exits the process with its command's code.
void AddPlacementCommands(CLI::App& sim, PlacementCommandOptions& options);

// True when argv names one of those two commands (`gpufleet sim placement ...`).
bool IsPlacementCommand(int argc, char** argv);

// Parses and runs one of those two commands alone; returns the process exit code.
int RunPlacementCommand(int argc, char** argv);

}  // namespace gpufleet::cli

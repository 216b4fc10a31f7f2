// gpufleet: the command users run. It runs the client commands (submit, jobs, show, cancel, logs,
// nodes) itself and hands every other command to `gpufleet-full`, found beside it, by exec: same
// process id, arguments and environment, so `gpufleet up` is still the process a user started.
//
// Why two programs: a client command is a short process, and most of its time used to go to the
// dynamic loader (cpp-httplib as Debian builds it pulls in OpenSSL, brotli and zlib; SQLite and
// libstdc++ add more): 8.6 ms before main against 1 ms for this program, which needs only the C
// library and is linked statically (bench/run_controller_bench.sh measures both). It has no TLS
// either (statically linked OpenSSL alone cost 3-4 ms a start): a client command for an https
// server is handed to gpufleet-full the same way.
//
// It also runs `sim placement` and `sim placement-report` (placement_cli.h), the openb placement
// experiment: it needs no library but the C one, and a whole run of it is short enough that
// gpufleet-full's 24 ms of dynamic loading was a quarter of it (issue 18, section 4).
#include <limits.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli/client_cli.h"
#include "cli/client_commands.h"
#include "cli/full_commands.h"
#include "cli/placement_cli.h"

namespace {

// Replaces this process with gpufleet-full and the same arguments; returns only on failure.
// Found beside this program (/proc/self/exe), else beside argv[0] when it names a path, else on
// PATH; never in the current directory by accident.
int RunFull(char** argv) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self);
  std::string dir;
  if (n > 0 && n < static_cast<ssize_t>(sizeof self)) {
    dir.assign(self, static_cast<std::size_t>(n));
  } else if (std::strchr(argv[0], '/') != nullptr) {
    dir = argv[0];
  }
  std::string full = "gpufleet-full";
  if (!dir.empty()) {
    full = dir.substr(0, dir.rfind('/') + 1) + full;
    ::execv(full.c_str(), argv);
  } else {
    ::execvp(full.c_str(), argv);
  }
  std::fprintf(stderr,
               "gpufleet: cannot run %s for `gpufleet %s` (%s): gpufleet-full is built and "
               "installed beside gpufleet; rebuild with `cmake --build build`\n",
               full.c_str(), argv[1], std::strerror(errno));
  return 127;
}

char** full_argv = nullptr;

// An https server: gpufleet-full speaks TLS, this program does not (see net/http_client.h).
void HandOffHttps() { std::exit(RunFull(full_argv)); }

}  // namespace

int main(int argc, char** argv) {
  using namespace gpufleet;
  full_argv = argv;
  cli::SetHttpsHandoff(&HandOffHttps);
  if (cli::IsPlacementCommand(argc, argv)) return cli::RunPlacementCommand(argc, argv);
  if (argc > 1) {
    for (const cli::FullCommand& c : cli::kFullCommands) {
      if (c.name == argv[1]) return RunFull(argv);
    }
    // Answered here, not by CLI11: CLI11 answers --version with an exception, and the first
    // exception a static binary throws costs milliseconds (it registers its unwind tables).
    if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
      std::printf("%s\n", std::string(cli::kVersion).c_str());
      return 0;
    }
  }
  CLI::App app{cli::kAppDescription};
  app.name("gpufleet");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(cli::kVersion));
  // Listed for --help only: main() above has already handed them over.
  for (const cli::FullCommand& c : cli::kFullCommands) {
    app.add_subcommand(std::string(c.name), std::string(c.description))
        ->allow_extras()
        ->callback([argv] { std::exit(RunFull(argv)); });
  }
  return cli::AddClientCommandsAndRun(app, argc, argv);
}

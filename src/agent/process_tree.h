#pragma once
// A process's descendants, from /proc/PID/task/TID/children, and signals to all of them: how a
// job's processes that left its process group (setsid in a double-forked child) are still found,
// on a node without cgroups. The shim is a child subreaper (job_shim.h), so such a process stays
// below it while it lives, and the walk finds it there.
#include <sys/types.h>

#include <vector>

namespace gpufleet::agent {

// The direct children of `pid` (every thread's), zombies included; none when it is gone.
std::vector<pid_t> ChildrenOf(pid_t pid);

// Every descendant of `root` (not `root`), parents before their children; a process that moves
// while the walk runs may be missed.
std::vector<pid_t> DescendantsOf(pid_t root);

// Sends `sig` to every descendant of `root` (never `root` itself) whose process group is not
// `except_group` (0: none spared), through a pidfd opened while the process was seen as a child
// of its parent, so a pid reused meanwhile is never signalled. With SIGKILL the walk first stops
// each process it finds (SIGSTOP) and walks again until a pass finds no one new, so a process
// forking meanwhile cannot outrun it. Returns how many were signalled.
int SignalDescendants(pid_t root, int sig, pid_t except_group = 0);

}  // namespace gpufleet::agent

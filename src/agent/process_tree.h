#pragma once
// A process's descendants, from /proc/PID/task/TID/children, and signals to all of them: how a
// job's processes that left its process group (setsid in a double-forked child) are still found,
// on a node without cgroups. The shim is a child subreaper (job_shim.h), so such a process stays
// below it while it lives, and the walk finds it there.
#include <sys/types.h>

#include <vector>

namespace gpufleet::agent {

// Whether this kernel lists a process's children (CONFIG_PROC_CHILDREN); without it every walk
// below finds no one.
bool ChildrenListed();

// The direct children of `pid` (every thread's), zombies included; none when it is gone.
std::vector<pid_t> ChildrenOf(pid_t pid);

// Every descendant of `root` (not `root`), parents before their children; a process that moves
// while the walk runs may be missed.
std::vector<pid_t> DescendantsOf(pid_t root);

// Sends `sig` to every descendant of `root` (never `root` itself) whose process group is not
// `except_group` (0: none spared). Each is signalled through a pidfd opened while it was seen as
// a child of its parent, and a parent's children count only if the parent was still there after
// they were read (`root_pidfd`, when given, pins `root` itself), so a pid reused meanwhile is
// never signalled. With SIGKILL the walk first stops each process it finds (SIGSTOP), waits up
// to 100 ms for them to stop, and walks again until a walk finds no one new, so a process forking
// meanwhile cannot outrun it. Returns how many were signalled.
int SignalDescendants(pid_t root, int sig, pid_t except_group = 0, int root_pidfd = -1);

}  // namespace gpufleet::agent

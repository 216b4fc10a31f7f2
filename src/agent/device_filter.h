#pragma once
// Keeping a job off devices on cgroup v2, where the devices controller of v1 is gone: a small
// eBPF program of type BPF_PROG_TYPE_CGROUP_DEVICE, attached to the job's cgroup, that refuses
// every access (open for read or write, mknod) to the listed character or block devices and
// lets all others through, as v1's devices.deny does on top of the parent's rules. The kernel
// runs it for every process in the cgroup and its descendants, and it goes with the cgroup.
//
// Written with the bpf(2) system call and a handful of hand-assembled instructions, as runc and
// crun do: libbpf (Debian's libbpf-dev) loads ELF objects built by clang, which a program of 5
// instructions per device does not need, and it would make every agent depend on it.
#include <linux/bpf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpufleet::agent {

struct DeviceNumber {
  char type = 'c';  // 'c' (character) or 'b' (block)
  uint32_t major = 0;
  uint32_t minor = 0;
};
// "c MAJ:MIN" or "b MAJ:MIN" (cgroup_limits.h, DeviceRule); errors say what is wrong.
core::Result<DeviceNumber> ParseDeviceRule(const std::string& rule);

// The program that denies `denied` and allows the rest: returns 0 (deny) for a listed device,
// 1 otherwise. Pure; at most kMaxDeniedDevices devices.
inline constexpr std::size_t kMaxDeniedDevices = 1024;
std::vector<bpf_insn> DenyListProgram(const std::vector<DeviceNumber>& denied);

// Loads DenyListProgram(`rules`) and attaches it to the cgroup v2 directory `cgroup_dir`
// (`flags` BPF_F_ALLOW_MULTI, so that programs the parent cgroups hold still run too; tests pass
// others). Errors name the
// step and the reason (no permission, a kernel without BPF cgroup programs, not a cgroup2
// directory).
core::Result<bool> AttachDeviceDenyList(const std::string& cgroup_dir,
                                        const std::vector<std::string>& rules,
                                        uint32_t flags = BPF_F_ALLOW_MULTI);

// Whether this process can load a device program at all (root, or CAP_BPF with CAP_NET_ADMIN;
// a kernel built with BPF cgroup programs): "" when it can, else why not.
std::string DeviceFilterUnavailable();

// Whether job cgroups below `jobs_dir` (a cgroup2 directory under the hierarchy's `root`) can take
// a device program without weakening anyone else's: "" when they can, else why not. Every cgroup
// from `jobs_dir` up to `root` must hold no device program, or only programs attached with
// BPF_F_ALLOW_MULTI: below one attached without flags an attach fails (EPERM), and below one
// attached with BPF_F_ALLOW_OVERRIDE (a service manager's DevicePolicy) ours would replace it for
// the job. Then a trial attach on a scratch cgroup below `jobs_dir`, removed again.
std::string DeviceFilterUnusableAt(const std::string& jobs_dir, const std::string& root);

}  // namespace gpufleet::agent

#include "agent/device_filter.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstring>

namespace gpufleet::agent {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}
// r<dst> = *(u32 *)(r<src> + off)
bpf_insn LoadWord(uint8_t dst, uint8_t src, int16_t off) {
  return Insn(BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0);
}
// if r<dst> != imm goto pc + 1 + off
bpf_insn JumpIfNot(uint8_t dst, int32_t imm, int16_t off) {
  return Insn(BPF_JMP | BPF_JNE | BPF_K, dst, 0, off, imm);
}
// r0 = value; exit
void AppendReturn(std::vector<bpf_insn>& out, int32_t value) {
  out.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, value));
  out.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
}

long Bpf(int command, bpf_attr& attr) { return syscall(__NR_bpf, command, &attr, sizeof attr); }

// Loads `program`; the descriptor, or an error with the verifier's first words.
core::Result<int> Load(const std::vector<bpf_insn>& program) {
  static const char kLicense[] = "Apache-2.0";  // no helper is called: any license loads
  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(program.data());
  attr.insn_cnt = static_cast<uint32_t>(program.size());
  attr.license = reinterpret_cast<uint64_t>(kLicense);
  int fd = static_cast<int>(Bpf(BPF_PROG_LOAD, attr));
  if (fd >= 0) return fd;
  const int error = errno;
  std::string log(4096, '\0');
  attr.log_buf = reinterpret_cast<uint64_t>(log.data());
  attr.log_size = static_cast<uint32_t>(log.size());
  attr.log_level = 1;
  fd = static_cast<int>(Bpf(BPF_PROG_LOAD, attr));
  if (fd >= 0) return fd;  // loaded on the second try after all
  log.resize(std::strlen(log.c_str()));
  if (log.size() > 200) log.resize(200);
  return core::Error{"cannot load a BPF device program: " + std::string(std::strerror(error)) +
                     (error == EPERM ? " (it takes root, or CAP_BPF and CAP_NET_ADMIN)" : "") +
                     (log.empty() ? "" : "; the verifier says: " + log)};
}

}  // namespace

core::Result<DeviceNumber> ParseDeviceRule(const std::string& rule) {
  DeviceNumber d;
  const std::size_t colon = rule.find(':');
  if (rule.size() < 5 || (rule[0] != 'c' && rule[0] != 'b') || rule[1] != ' ' ||
      colon == std::string::npos) {
    return core::Error{"device rule '" + rule.substr(0, 40) + "': expected \"c MAJ:MIN\""};
  }
  d.type = rule[0];
  const char* begin = rule.data() + 2;
  const char* middle = rule.data() + colon;
  const char* end = rule.data() + rule.size();
  const auto major = std::from_chars(begin, middle, d.major);
  const auto minor = std::from_chars(middle + 1, end, d.minor);
  if (major.ec != std::errc() || major.ptr != middle || minor.ec != std::errc() ||
      minor.ptr != end || middle == begin || d.major > 0x7fffffff || d.minor > 0x7fffffff) {
    return core::Error{"device rule '" + rule.substr(0, 40) + "': expected \"c MAJ:MIN\""};
  }
  return d;
}

std::vector<bpf_insn> DenyListProgram(const std::vector<DeviceNumber>& denied) {
  // r1 points at struct bpf_cgroup_dev_ctx {u32 access_type; u32 major; u32 minor}; the device's
  // type is the low 16 bits of access_type (the access, the high ones, is not looked at: every
  // access to a listed device is refused).
  std::vector<bpf_insn> p;
  p.push_back(LoadWord(BPF_REG_2, BPF_REG_1, offsetof(bpf_cgroup_dev_ctx, access_type)));
  p.push_back(Insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff));
  p.push_back(LoadWord(BPF_REG_3, BPF_REG_1, offsetof(bpf_cgroup_dev_ctx, major)));
  p.push_back(LoadWord(BPF_REG_4, BPF_REG_1, offsetof(bpf_cgroup_dev_ctx, minor)));
  for (std::size_t k = 0; k < denied.size() && k < kMaxDeniedDevices; ++k) {
    const DeviceNumber& d = denied[k];
    const int32_t type = d.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
    p.push_back(JumpIfNot(BPF_REG_2, type, 4));  // past this device's 5 instructions
    p.push_back(JumpIfNot(BPF_REG_3, static_cast<int32_t>(d.major), 3));
    p.push_back(JumpIfNot(BPF_REG_4, static_cast<int32_t>(d.minor), 2));
    AppendReturn(p, 0);  // denied
  }
  AppendReturn(p, 1);  // allowed
  return p;
}

core::Result<bool> AttachDeviceDenyList(const std::string& cgroup_dir,
                                        const std::vector<std::string>& rules, uint32_t flags) {
  std::vector<DeviceNumber> denied;
  for (const std::string& rule : rules) {
    auto d = ParseDeviceRule(rule);
    if (!d) return d.failure();
    denied.push_back(d.value());
  }
  if (denied.size() > kMaxDeniedDevices) {
    return core::Error{"more than " + std::to_string(kMaxDeniedDevices) + " devices to deny"};
  }
  auto program = Load(DenyListProgram(denied));
  if (!program) return program.failure();
  const int cgroup = ::open(cgroup_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (cgroup < 0) {
    const std::string why = std::strerror(errno);
    ::close(program.value());
    return core::Error{"cannot open " + cgroup_dir + ": " + why};
  }
  bpf_attr attr{};
  attr.target_fd = static_cast<uint32_t>(cgroup);
  attr.attach_bpf_fd = static_cast<uint32_t>(program.value());
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = flags;
  const bool attached = Bpf(BPF_PROG_ATTACH, attr) == 0;
  const int error = errno;
  ::close(cgroup);
  ::close(program.value());  // the attachment holds the program for as long as the cgroup lives
  if (!attached) {
    return core::Error{"cannot attach a BPF device program to " + cgroup_dir + ": " +
                       std::strerror(error)};
  }
  return true;
}

std::string DeviceFilterUnusableAt(const std::string& jobs_dir, const std::string& root) {
  if (std::string why = DeviceFilterUnavailable(); !why.empty()) return why;
  // Each cgroup from the jobs cgroup up to the hierarchy's root.
  std::string dir = jobs_dir;
  while (!dir.empty() && dir.back() == '/' && dir.size() > 1) dir.pop_back();
  std::string top = root;
  while (!top.empty() && top.back() == '/' && top.size() > 1) top.pop_back();
  if (dir != top && dir.rfind(top == "/" ? top : top + "/", 0) != 0) {
    return jobs_dir + " is not below " + root;
  }
  for (;;) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return "cannot open " + dir + ": " + std::strerror(errno);
    bpf_attr attr{};
    attr.query.target_fd = static_cast<uint32_t>(fd);
    attr.query.attach_type = BPF_CGROUP_DEVICE;
    const bool asked = Bpf(BPF_PROG_QUERY, attr) == 0;
    const int error = errno;
    ::close(fd);
    if (!asked) {
      return "cannot ask which device programs " + dir + " holds: " + std::strerror(error);
    }
    if (attr.query.prog_cnt > 0 && (attr.query.attach_flags & BPF_F_ALLOW_MULTI) == 0) {
      return dir +
             " holds a device program attached without BPF_F_ALLOW_MULTI (a service "
             "manager's device policy), which a job's own program would fail against or "
             "replace";
    }
    if (dir == top || dir.size() <= top.size()) break;
    const std::size_t slash = dir.rfind('/');
    if (slash == std::string::npos) break;
    dir.resize(slash == 0 ? 1 : slash);  // "/x" goes up to "/"
  }
  const std::string probe = jobs_dir + "/gpufleet-device-probe";
  if (::mkdir(probe.c_str(), 0755) != 0 && errno != EEXIST) {
    return "cannot create " + probe + ": " + std::strerror(errno);
  }
  auto attached = AttachDeviceDenyList(probe, {});
  ::rmdir(probe.c_str());
  return attached ? "" : attached.error();
}

std::string DeviceFilterUnavailable() {
  auto program = Load(DenyListProgram({}));
  if (!program) return program.error();
  ::close(program.value());
  return "";
}

}  // namespace gpufleet::agent

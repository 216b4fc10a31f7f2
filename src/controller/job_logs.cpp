#include "controller/job_logs.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace gpufleet::controller {

JobLogs::JobLogs(std::string data_dir)
    : dir_((std::filesystem::path(std::move(data_dir)) / "logs").string()) {}

std::string JobLogs::Path(int64_t id, int rank) const {
  const std::string file = rank == 0 ? std::to_string(id) + ".log"
                                     : std::to_string(id) + ".rank" + std::to_string(rank) + ".log";
  return (std::filesystem::path(dir_) / file).string();
}

int64_t JobLogs::Size(int64_t id, int rank) const {
  std::error_code ec;
  const auto size = std::filesystem::file_size(Path(id, rank), ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

namespace {

std::string RemovedPath(const std::string& dir, int64_t id) {
  return (std::filesystem::path(dir) / (std::to_string(id) + ".removed")).string();
}

// The job id of a file named `<id>.log`, `<id>.rank<k>.log`, either with `.attempt<e>` after;
// none for any other name.
std::optional<int64_t> JobOfFile(std::string_view name) {
  auto digits = [](std::string_view text) {
    return !text.empty() && text.size() <= 18 &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (const std::size_t at = name.rfind(".attempt"); at != std::string_view::npos) {
    if (!digits(name.substr(at + 8))) return std::nullopt;
    name = name.substr(0, at);
  }
  if (name.size() < 5 || name.substr(name.size() - 4) != ".log") return std::nullopt;
  name.remove_suffix(4);
  if (const std::size_t at = name.find(".rank"); at != std::string_view::npos) {
    if (!digits(name.substr(at + 5))) return std::nullopt;
    name = name.substr(0, at);
  }
  if (!digits(name)) return std::nullopt;
  int64_t id = 0;
  std::from_chars(name.data(), name.data() + name.size(), id);
  if (id <= 0) return std::nullopt;
  return id;
}

}  // namespace

bool JobLogs::Append(int64_t id, int rank, std::string_view data) const {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::ofstream out(Path(id, rank), std::ios::app | std::ios::binary);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.flush();
  return static_cast<bool>(out);
}

void JobLogs::KeepEarlierAttempt(int64_t id, int ranks, int64_t epoch) const {
  if (epoch <= 1) return;
  for (int k = 0; k < ranks; ++k) {
    if (Size(id, k) == 0) continue;
    const std::string path = Path(id, k);
    std::error_code ec;
    std::filesystem::rename(path, path + ".attempt" + std::to_string(epoch - 1), ec);
  }
}

std::vector<JobLogs::Held> JobLogs::Scan() const {
  std::map<int64_t, Held> by_job;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const auto id = JobOfFile(it->path().filename().string());
    std::error_code size_ec;
    if (!id || !it->is_regular_file(size_ec)) continue;
    const auto size = it->file_size(size_ec);
    Held& held = by_job[*id];
    held.job_id = *id;
    held.bytes += size_ec ? 0 : static_cast<int64_t>(size);
    held.files.push_back(it->path().string());
  }
  std::vector<Held> out;
  out.reserve(by_job.size());
  for (auto& [id, held] : by_job) {
    std::sort(held.files.begin(), held.files.end());
    out.push_back(std::move(held));
  }
  return out;
}

JobLogs::Held JobLogs::Of(int64_t id, int ranks, int64_t epoch) const {
  Held held;
  held.job_id = id;
  const auto add = [&](const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) return;
    const auto size = std::filesystem::file_size(path, ec);
    held.bytes += ec ? 0 : static_cast<int64_t>(size);
    held.files.push_back(path);
  };
  for (int k = 0; k < std::max(ranks, 1); ++k) {
    const std::string path = Path(id, k);
    add(path);
    for (int64_t e = 1; e < epoch; ++e) add(path + ".attempt" + std::to_string(e));
  }
  std::sort(held.files.begin(), held.files.end());
  return held;
}

bool JobLogs::Remove(const Held& held, std::string_view note) const {
  {
    std::ofstream out(RemovedPath(dir_, held.job_id), std::ios::trunc | std::ios::binary);
    out << note << '\n';
    out.flush();
    if (!out) return false;
  }
  bool all = true;
  for (const std::string& file : held.files) {
    std::error_code ec;
    std::filesystem::remove(file, ec);
    all = all && !ec;
  }
  return all;
}

bool JobLogs::Erase(const Held& held) const {
  bool all = true;
  std::vector<std::string> files = held.files;
  files.push_back(RemovedPath(dir_, held.job_id));
  for (const std::string& file : files) {
    std::error_code ec;
    std::filesystem::remove(file, ec);  // false, no error, when it is not there
    all = all && !ec;
  }
  return all;
}

std::optional<std::string> JobLogs::RemovedNote(int64_t id) const {
  std::ifstream in(RemovedPath(dir_, id), std::ios::binary);
  if (!in) return std::nullopt;
  std::string note(512, '\0');
  in.read(note.data(), static_cast<std::streamsize>(note.size()));
  note.resize(static_cast<std::size_t>(in.gcount()));
  return note;
}

}  // namespace gpufleet::controller

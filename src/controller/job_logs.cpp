#include "controller/job_logs.h"

#include <filesystem>
#include <fstream>

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

}  // namespace gpufleet::controller

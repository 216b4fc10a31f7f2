#pragma once
// Test support: holds an embedded store's database locked for writing from a second SQLite
// connection, as another process would, until it goes out of scope (controller and autoscaler
// unit tests of what happens while the store cannot take a write).
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

namespace gpufleet::controller {

class StoreWriteLock {
 public:
  explicit StoreWriteLock(const std::filesystem::path& data_dir) {
    EXPECT_EQ(sqlite3_open((data_dir / "gpufleet.db").string().c_str(), &db_), SQLITE_OK);
    sqlite3_busy_timeout(db_, 5000);
    EXPECT_EQ(sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~StoreWriteLock() {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  StoreWriteLock(const StoreWriteLock&) = delete;
  StoreWriteLock& operator=(const StoreWriteLock&) = delete;

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace gpufleet::controller

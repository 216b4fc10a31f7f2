#include "store/store.h"

namespace gpufleet::store {

core::Result<bool> CheckTransitions(const std::vector<TransitionRequest>& requests) {
  for (const TransitionRequest& r : requests) {
    if (!TransitionAllowed(r.from, r.to)) {
      return core::Error{"job " + std::to_string(r.id) + ": " + std::string(StateName(r.from)) +
                         " -> " + std::string(StateName(r.to)) + " is not allowed"};
    }
  }
  return true;
}

core::Result<bool> Store::Transition(int64_t id, JobState from, JobState to,
                                     const JobUpdate& update, int64_t now_ms) {
  auto results = TransitionAll({TransitionRequest{id, from, to, update}}, now_ms);
  if (!results) return results.failure();
  return static_cast<bool>(results.value().front());
}

core::Result<int64_t> Store::SubmitJob(const JobRecord& job) {
  auto added = AddJob(job);
  if (!added) return added.failure();
  return added.value().id;
}

bool Store::CertainlyUnknown(const std::string& sha256) {
  // What the hashes in memory say, under credentials_mutex_: false (it may be stored: look it
  // up), true (certainly not), or nothing (read them again first).
  const auto answer = [this, &sha256]() -> std::optional<bool> {
    if (known_valid_ && known_hashes_.contains(sha256)) return false;  // stale or not
    // Too many to hold: read again only after a minute (each token is looked up meanwhile).
    const auto memory =
        known_valid_ || known_failed_ ? kCredentialMemory : std::chrono::milliseconds(60'000);
    const bool recent = known_read_ && known_version_ == credentials_version_ &&
                        std::chrono::steady_clock::now() - known_read_at_ < memory;
    if (recent) return known_valid_;  // too many to hold: look each one up
    return std::nullopt;
  };
  {
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    if (auto known = answer()) return *known;
  }
  // One reader at a time: those who waited find the hashes it read.
  std::lock_guard<std::mutex> refreshing(known_refresh_mutex_);
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    if (auto known = answer()) return *known;
    version = credentials_version_;  // taken before the read: a change meanwhile voids it
  }
  const auto read_at = std::chrono::steady_clock::now();
  ++credential_reads_;
  auto tokens = Tokens();
  if (!tokens) {
    // The lookup of this one token says what is wrong. Not read again for kCredentialMemory:
    // meanwhile each token is looked up alone (as a full read per made-up token would cost more).
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    if (version == credentials_version_) {
      known_hashes_.clear();
      known_valid_ = false;
      known_failed_ = true;
      known_read_ = true;
      known_version_ = version;
      known_read_at_ = read_at;
    }
    return false;
  }
  std::unordered_set<std::string> hashes;
  const bool valid = tokens.value().size() <= kMaxKnownHashes;
  if (valid) {
    hashes.reserve(tokens.value().size());
    for (const TokenRecord& t : tokens.value()) hashes.insert(t.sha256);
  }
  const bool unknown = valid && !hashes.contains(sha256);
  std::lock_guard<std::mutex> lock(credentials_mutex_);
  if (version == credentials_version_) {
    known_hashes_ = std::move(hashes);
    known_valid_ = valid;
    known_failed_ = false;
    known_read_ = true;
    known_version_ = version;
    known_read_at_ = read_at;
  }
  return unknown;
}

core::Result<Credential> Store::CredentialOf(const std::string& sha256, int64_t now_ms) {
  const auto standing = [now_ms](const Credential& c) {
    return c.expires_ms > 0 && c.expires_ms <= now_ms ? Credential{} : c;
  };
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    auto it = credentials_.find(sha256);
    if (it != credentials_.end()) {
      if (std::chrono::steady_clock::now() - it->second.read_at < kCredentialMemory) {
        return standing(it->second.credential);
      }
      credentials_.erase(it);
    }
    version = credentials_version_;  // taken before the read: a change meanwhile voids it
  }
  if (CertainlyUnknown(sha256)) return Credential{};
  const auto read_at = std::chrono::steady_clock::now();
  Credential credential;
  ++credential_reads_;
  auto token = TokenBySha256(sha256);
  if (!token) return token.failure();
  if (token.value()) {
    credential.expires_ms = token.value()->expires_ms;
    if (token.value()->kind == TokenKind::kUser) {
      ++credential_reads_;
      auto user = UserByToken(sha256);  // a user token whose user is gone acts as nobody
      if (!user) return user.failure();
      credential.user = std::move(user).value();
    } else {
      credential.token = std::move(token).value();
    }
  }
  if (credential.user || credential.token) {
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    if (version == credentials_version_) {
      if (credentials_.size() >= kMaxRemembered) credentials_.clear();
      credentials_[sha256] = RememberedCredential{credential, read_at};
    }
  }
  return standing(credential);
}

void Store::CredentialsChanged() {
  std::lock_guard<std::mutex> lock(credentials_mutex_);
  ++credentials_version_;
  credentials_.clear();
  known_valid_ = false;
  known_hashes_.clear();
}

}  // namespace gpufleet::store

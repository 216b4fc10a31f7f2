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
  const auto read_at = std::chrono::steady_clock::now();
  Credential credential;
  auto token = TokenBySha256(sha256);
  if (!token) return token.failure();
  if (token.value()) {
    credential.expires_ms = token.value()->expires_ms;
    if (token.value()->kind == TokenKind::kUser) {
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
}

}  // namespace gpufleet::store

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

core::Result<Credential> Store::CredentialOf(const std::string& sha256) {
  uint64_t version = 0;
  {
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    auto it = credentials_.find(sha256);
    if (it != credentials_.end()) {
      if (std::chrono::steady_clock::now() - it->second.read_at < kCredentialMemory) {
        return it->second.credential;
      }
      credentials_.erase(it);
    }
    version = credentials_version_;  // taken before the read: a change meanwhile voids it
  }
  const auto read_at = std::chrono::steady_clock::now();
  Credential credential;
  auto user = UserByToken(sha256);
  if (!user) return user.failure();
  credential.user = std::move(user).value();
  if (!credential.user) {
    auto token = TokenBySha256(sha256);
    if (!token) return token.failure();
    credential.token = std::move(token).value();
    if (credential.token && credential.token->kind == TokenKind::kUser) {
      credential.token.reset();  // a user token whose user is gone acts as nobody
    }
  }
  if (credential.user || credential.token) {
    std::lock_guard<std::mutex> lock(credentials_mutex_);
    if (version == credentials_version_) {
      if (credentials_.size() >= kMaxRemembered) credentials_.clear();
      credentials_[sha256] = RememberedCredential{credential, read_at};
    }
  }
  return credential;
}

void Store::CredentialsChanged() {
  std::lock_guard<std::mutex> lock(credentials_mutex_);
  ++credentials_version_;
  credentials_.clear();
}

}  // namespace gpufleet::store

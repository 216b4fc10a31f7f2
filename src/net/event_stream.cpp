#include "net/event_stream.h"

namespace gpufleet::net {

void EventStream::NotifyLocked() {
  if (notify_ && !notified_) {
    notified_ = true;
    notify_();
  }
}

bool EventStream::Send(std::string_view bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return false;
  if (pending_.size() + bytes.size() > kMaxPending) {
    // A client this far behind is not reading: cut it off rather than hold memory for it.
    pending_.clear();
    closed_ = sender_closed_ = true;
    NotifyLocked();
    return false;
  }
  pending_.append(bytes);
  NotifyLocked();
  return true;
}

void EventStream::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (closed_) return;
  closed_ = sender_closed_ = true;
  NotifyLocked();
}

bool EventStream::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return closed_;
}

void EventStream::Attach(std::function<void()> notify) {
  std::lock_guard<std::mutex> lock(mutex_);
  notify_ = std::move(notify);
  notified_ = false;
  if (!pending_.empty() || sender_closed_) NotifyLocked();
}

std::string EventStream::Take(bool& closed_by_sender) {
  std::lock_guard<std::mutex> lock(mutex_);
  notified_ = false;
  closed_by_sender = sender_closed_;
  std::string out;
  out.swap(pending_);
  return out;
}

void EventStream::Detach() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  notify_ = nullptr;
  pending_.clear();
}

}  // namespace gpufleet::net

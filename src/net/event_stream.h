#pragma once
// `EventStream`: the body of an answer that never ends (Server-Sent Events). A handler registered
// with `HttpServer::GetStream` returns one; whoever holds it then appends bytes from any thread,
// and the server's I/O thread sends them as the socket allows. It never blocks the sender: a
// client that stops reading is cut off once `kMaxPending` bytes wait for it.
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

namespace gpufleet::net {

class EventStream {
 public:
  // Bytes that may wait for one client at most; more closes the stream.
  static constexpr std::size_t kMaxPending = 1 << 20;

  // Appends `bytes` to what the client will receive. False, dropping them, once the stream is
  // closed (the client left, the server stopped, it overflowed, or Close was called): the sender
  // should then forget the stream.
  bool Send(std::string_view bytes);
  // Ends the answer: what was sent still goes, then the server closes the connection.
  void Close();
  bool closed() const;

  // For the server. Attach: from now on `notify` (quick, non-blocking) is called, at most once
  // until the next Take, when bytes are waiting or the stream closes. Take: the waiting bytes,
  // and whether Close was called. Detach: the connection is gone; no more notifications.
  void Attach(std::function<void()> notify);
  std::string Take(bool& closed_by_sender);
  void Detach();

 private:
  void NotifyLocked();
  mutable std::mutex mutex_;
  std::string pending_;
  bool closed_ = false;       // by either side
  bool sender_closed_ = false;  // by Close (or overflow): the server sends the rest, then closes
  bool notified_ = false;     // a notification is outstanding (no Take since)
  std::function<void()> notify_;
};

}  // namespace gpufleet::net

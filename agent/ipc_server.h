// The agent's end of the inject -> agent channel: a SOCK_SEQPACKET AF_UNIX socket in a private
// (0700) directory, one datagram per batch (core/wire.h). A background thread accepts the
// program's connections (one per process: forked children connect on their own), decodes each
// datagram and hands it to the sink. Garbage or truncated datagrams are counted and reported
// through the error callback, never fatal.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "core/status.h"
#include "core/wire.h"

namespace rankscope {

class IpcServer {
 public:
  using BatchSink = std::function<void(wire::Batch&&)>;
  using ErrorSink = std::function<void(const std::string&)>;

  // Both callbacks run on the server thread and must be thread-safe with respect to the caller.
  IpcServer(BatchSink on_batch, ErrorSink on_error);
  ~IpcServer();  // Stop()s.

  IpcServer(const IpcServer&) = delete;
  IpcServer& operator=(const IpcServer&) = delete;

  // Creates the socket in a fresh directory named `prefix` + "agent.XXXXXX" (e.g.
  // "/tmp/rankscope-SESSION-") and starts the thread.
  Status Start(const std::string& prefix);
  // The socket path to hand to the program (RANKSCOPE_IPC_SOCKET).
  const std::string& path() const { return path_; }

  // Reads what is already queued on every connection, then stops the thread and removes the
  // socket. Call after the program exited so the last batches are not lost.
  void Stop();

  uint64_t batches() const { return batches_.load(); }
  uint64_t bad_datagrams() const { return bad_datagrams_.load(); }

 private:
  void Loop();

  BatchSink on_batch_;
  ErrorSink on_error_;
  std::string dir_;
  std::string path_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> bad_datagrams_{0};
};

}  // namespace rankscope

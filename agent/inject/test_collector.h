// Test helper that plays the agent's side of the inject IPC: listens on a SOCK_SEQPACKET
// socket, accepts every producer, and decodes each datagram with wire::DecodeBatch on a
// background thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/wire.h"

namespace rankscope::inject {

class TestCollector {
 public:
  TestCollector() = default;
  ~TestCollector();
  TestCollector(const TestCollector&) = delete;
  TestCollector& operator=(const TestCollector&) = delete;

  // Listens on a fresh path under /tmp and starts collecting. False (with a message in
  // errors()) if the socket cannot be set up.
  bool Start();
  const std::string& path() const { return path_; }

  // Waits until `done(batches so far)` holds or `timeout` passes; returns whether it held.
  bool WaitFor(const std::function<bool(const std::vector<wire::Batch>&)>& done,
               std::chrono::milliseconds timeout);

  // Reads until every accepted producer has hung up and nothing waits to be accepted (or
  // `timeout` passes), then stops. Use after the producers have exited.
  void Drain(std::chrono::milliseconds timeout);

  // While paused nothing is read (the producers' socket buffers fill up, as behind an agent that
  // falls behind); connections are still accepted.
  void Pause(bool paused) { paused_ = paused; }

  // Copies of what arrived so far; decode errors and socket problems go to errors().
  std::vector<wire::Batch> batches() const;
  std::vector<std::string> errors() const;

 private:
  void Run();

  std::string path_;
  int listen_fd_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<bool> draining_{false};
  std::atomic<bool> paused_{false};
  std::atomic<bool> drained_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<wire::Batch> batches_;
  std::vector<std::string> errors_;
};

}  // namespace rankscope::inject

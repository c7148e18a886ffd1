#include "agent/inject/test_collector.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace rankscope::inject {

TestCollector::~TestCollector() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (!path_.empty()) {
    unlink(path_.c_str());
    rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
}

bool TestCollector::Start() {
  char dir[] = "/tmp/rankscope-inject-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    errors_.push_back(std::string("mkdtemp: ") + std::strerror(errno));
    return false;
  }
  path_ = std::string(dir) + "/agent.sock";
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    errors_.push_back("listen on " + path_ + ": " + std::strerror(errno));
    return false;
  }
  thread_ = std::thread([this] { Run(); });
  return true;
}

void TestCollector::Run() {
  std::vector<int> conns;
  std::vector<std::byte> buf(wire::kMaxBatchBytes + 1);
  while (!stop_) {
    std::vector<pollfd> fds;
    fds.push_back({listen_fd_, POLLIN, 0});
    for (int c : conns) fds.push_back({c, static_cast<short>(paused_ ? 0 : POLLIN), 0});
    int ready = poll(fds.data(), fds.size(), 20);
    if (ready == 0 && draining_ && conns.empty()) {
      drained_ = true;
      return;
    }
    if (ready <= 0) continue;
    if (fds[0].revents & POLLIN) {
      int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) conns.push_back(c);
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = recv(fds[i].fd, buf.data(), buf.size(), 0);
      if (n > 0) {
        auto decoded = wire::DecodeBatch(std::span<const std::byte>(buf.data(), size_t(n)));
        std::lock_guard<std::mutex> lock(mu_);
        if (decoded.ok()) {
          batches_.push_back(std::move(decoded).value());
        } else {
          errors_.push_back(decoded.status().message());
        }
        continue;
      }
      close(fds[i].fd);  // hung up (or failed): this producer is done
      conns.erase(std::find(conns.begin(), conns.end(), fds[i].fd));
    }
  }
  for (int c : conns) close(c);
}

bool TestCollector::WaitFor(const std::function<bool(const std::vector<wire::Batch>&)>& done,
                            std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (done(batches_)) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::lock_guard<std::mutex> lock(mu_);
  return done(batches_);
}

void TestCollector::Drain(std::chrono::milliseconds timeout) {
  draining_ = true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!drained_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<wire::Batch> TestCollector::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

std::vector<std::string> TestCollector::errors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_;
}

}  // namespace rankscope::inject

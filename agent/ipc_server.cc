#include "agent/ipc_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

namespace rankscope {
namespace {

// A connection that sends this many undecodable datagrams in a row is not an inject library;
// it is dropped so it cannot make the agent spin.
constexpr int kMaxConsecutiveErrors = 16;
// At most this many datagrams are read from one connection before the others get their turn, so
// a process's burst (a CUPTI buffer: dozens of batches, its sender waiting for room) does not
// hold up the batches of the program's own threads on their connection.
constexpr int kDatagramsPerTurn = 8;

struct Connection {
  int fd;
  int consecutive_errors = 0;
};

}  // namespace

IpcServer::IpcServer(BatchSink on_batch, ErrorSink on_error)
    : on_batch_(std::move(on_batch)), on_error_(std::move(on_error)) {}

IpcServer::~IpcServer() { Stop(); }

Status IpcServer::Start(const std::string& prefix) {
  std::string templ = prefix + "agent.XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    return Status::Error("agent: cannot create the private directory " + templ + ": " +
                         std::strerror(errno));
  }
  dir_ = buf.data();
  path_ = dir_ + "/inject.sock";
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof(addr.sun_path)) {
    return Status::Error("agent: socket path too long: " + path_ + " (set TMPDIR shorter)");
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listen_fd_, 64) != 0) {
    return Status::Error("agent: cannot listen on " + path_ + ": " + std::strerror(errno));
  }
  if (pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Error(std::string("agent: pipe: ") + std::strerror(errno));
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void IpcServer::Stop() {
  if (thread_.joinable()) {
    stopping_.store(true);
    char c = 1;
    (void)!write(wake_pipe_[1], &c, 1);
    thread_.join();
  }
  auto close_fd = [](int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  };
  close_fd(listen_fd_);
  close_fd(wake_pipe_[0]);
  close_fd(wake_pipe_[1]);
  if (!path_.empty()) unlink(path_.c_str());
  if (!dir_.empty()) rmdir(dir_.c_str());
  path_.clear();
  dir_.clear();
}

void IpcServer::Loop() {
  std::vector<Connection> conns;
  // One byte more than the largest valid batch, so an oversized datagram shows as MSG_TRUNC.
  std::vector<std::byte> buf(wire::kMaxBatchBytes + 1);

  // Reads up to `limit` queued datagrams of one connection; false when the peer is gone.
  auto drain = [&](Connection& c, int limit) {
    for (int read = 0; read < limit; ++read) {
      ssize_t n = recv(c.fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
      if (n == 0) return false;
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (static_cast<size_t>(n) > wire::kMaxBatchBytes) {
        ++bad_datagrams_;
        on_error_("inject channel: datagram of " + std::to_string(n) + " bytes exceeds " +
                  std::to_string(wire::kMaxBatchBytes) + " (dropped)");
        if (++c.consecutive_errors >= kMaxConsecutiveErrors) return false;
        continue;
      }
      Result<wire::Batch> batch = wire::DecodeBatch(std::span(buf.data(), static_cast<size_t>(n)));
      if (!batch.ok()) {
        ++bad_datagrams_;
        on_error_("inject channel: " + batch.status().message() + " (dropped)");
        if (++c.consecutive_errors >= kMaxConsecutiveErrors) {
          on_error_("inject channel: closing a connection after " +
                    std::to_string(kMaxConsecutiveErrors) + " bad datagrams in a row");
          return false;
        }
        continue;
      }
      c.consecutive_errors = 0;
      ++batches_;
      on_batch_(std::move(batch).value());
    }
    return true;
  };

  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({wake_pipe_[0], POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const Connection& c : conns) fds.push_back({c.fd, POLLIN, 0});
    int ready = poll(fds.data(), fds.size(), 500);
    if (ready < 0 && errno != EINTR) break;
    bool stop = stopping_.load();

    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) break;
      conns.push_back({fd});
    }
    // Stopping: everything queued is read before the loop ends.
    const int limit = stop ? std::numeric_limits<int>::max() : kDatagramsPerTurn;
    for (size_t i = 0; i < conns.size();) {
      if (!drain(conns[i], limit)) {
        close(conns[i].fd);
        conns.erase(conns.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    if (stop) break;
  }
  for (Connection& c : conns) close(c.fd);
}

}  // namespace rankscope

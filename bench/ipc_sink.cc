// bench_ipc_sink: stands in for the agent's end of the inject -> agent channel when benchmarks
// load librankscope_inject.so without a real agent. It listens on an AF_UNIX SOCK_SEQPACKET
// socket, accepts every connection, reads and decodes every datagram (core/wire.h), and when
// stopped (SIGTERM / SIGINT) prints one summary line to stdout:
//   ipc_sink: C connections, B batches, R records (ranges, marks, collectives, p2p), D dropped, E
//   bad
// plus any notices the library sent (e.g. that it disabled itself).
//
// usage: bench_ipc_sink SOCKET_PATH     (prints "ipc_sink: listening on PATH" once ready)
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/wire.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnStopSignal(int /*signal*/) { g_stop = 1; }

struct Totals {
  uint64_t connections = 0;
  uint64_t batches = 0;
  uint64_t ranges = 0;
  uint64_t marks = 0;
  uint64_t collectives = 0;
  uint64_t p2p = 0;
  uint64_t dropped = 0;
  uint64_t bad = 0;
  std::vector<std::string> notices;
};

void Consume(std::span<const std::byte> datagram, Totals* totals) {
  rankscope::Result<rankscope::wire::Batch> batch = rankscope::wire::DecodeBatch(datagram);
  if (!batch.ok()) {
    if (totals->bad++ == 0) {
      std::fprintf(stderr, "ipc_sink: bad datagram: %s\n", batch.status().message().c_str());
    }
    return;
  }
  ++totals->batches;
  totals->ranges += batch->ranges.size();
  totals->marks += batch->marks.size();
  totals->collectives += batch->collectives.size();
  totals->p2p += batch->p2p.size();
  totals->dropped += batch->dropped;
  for (std::string& notice : batch->notices) totals->notices.push_back(std::move(notice));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bench_ipc_sink SOCKET_PATH\n");
    return 2;
  }
  const std::string path = argv[1];
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    std::fprintf(stderr, "ipc_sink: socket path too long (%zu bytes, max %zu): %s\n", path.size(),
                 sizeof(address.sun_path) - 1, path.c_str());
    return 2;
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);

  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGINT, OnStopSignal);

  const int listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  unlink(path.c_str());
  if (listen_fd < 0 ||
      bind(listen_fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(listen_fd, 128) != 0) {
    std::fprintf(stderr, "ipc_sink: cannot listen on %s: %s\n", path.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("ipc_sink: listening on %s\n", path.c_str());
  std::fflush(stdout);

  Totals totals;
  std::vector<pollfd> fds = {{listen_fd, POLLIN, 0}};
  std::vector<std::byte> buffer(rankscope::wire::kMaxBatchBytes + 1);
  // Poll with a timeout so a stop signal is seen; on stop, drain what is queued, then exit.
  while (true) {
    const bool stopping = g_stop != 0;
    const int ready = poll(fds.data(), fds.size(), stopping ? 0 : 100);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0 && stopping) break;
    if (ready <= 0) continue;

    if (fds[0].revents & POLLIN) {
      const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        fds.push_back({fd, POLLIN, 0});
        ++totals.connections;
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t n = recv(fds[i].fd, buffer.data(), buffer.size(), 0);
      if (n > 0) {
        Consume(std::span<const std::byte>(buffer.data(), static_cast<size_t>(n)), &totals);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);  // Peer closed (its process exited).
        fds[i].fd = -1;    // poll() ignores negative descriptors; keep indexes stable.
      }
    }
  }
  unlink(path.c_str());

  const uint64_t records = totals.ranges + totals.marks + totals.collectives + totals.p2p;
  std::printf("ipc_sink: %" PRIu64 " connections, %" PRIu64 " batches, %" PRIu64
              " records (%" PRIu64 " ranges, %" PRIu64 " marks, %" PRIu64 " collectives, %" PRIu64
              " p2p), %" PRIu64 " dropped, %" PRIu64 " bad\n",
              totals.connections, totals.batches, records, totals.ranges, totals.marks,
              totals.collectives, totals.p2p, totals.dropped, totals.bad);
  for (const std::string& notice : totals.notices) {
    std::printf("ipc_sink: notice: %s\n", notice.c_str());
  }
  return 0;
}

// bench_ipc_sink: stands in for the agent's end of the inject -> agent channel when benchmarks
// load librankscope_inject.so without a real agent. It listens on an AF_UNIX SOCK_SEQPACKET
// socket, accepts every connection, reads and decodes every datagram (core/wire.h), and when
// stopped (SIGTERM / SIGINT) prints one summary line to stdout:
//   ipc_sink: C connections, B batches, R records (ranges, marks, collectives, p2p, gpu), D
//   dropped, E bad
// plus any notices the library sent (e.g. that it disabled itself).
//
// usage: bench_ipc_sink SOCKET_PATH [--gpu-tsv FILE]
//   prints "ipc_sink: listening on PATH" once ready. With --gpu-tsv, every GPU activity record
//   is also written to FILE, one line each, tab-separated (tests/gpu/run_cupti_check.sh reads it):
//   pid kind device context stream correlation_id start end bytes copy_kind sync_kind tid
//   grid_x grid_y grid_z block_x block_y block_z name
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
  uint64_t gpu = 0;
  uint64_t dropped = 0;
  uint64_t bad = 0;
  std::vector<std::string> notices;
};

void WriteGpuRecords(const rankscope::wire::Batch& batch, std::FILE* out) {
  for (const rankscope::GpuActivityRecord& g : batch.gpu) {
    std::fprintf(out,
                 "%" PRIu32 "\t%.*s\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t%" PRId64
                 "\t%" PRId64 "\t%" PRId64 "\t%u\t%u\t%" PRIu32 "\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n",
                 batch.pid, static_cast<int>(rankscope::GpuActivityKindName(g.kind).size()),
                 rankscope::GpuActivityKindName(g.kind).data(), g.device, g.context, g.stream,
                 g.correlation_id, g.start, g.end, g.bytes, g.copy_kind, g.sync_kind, g.tid,
                 g.grid[0], g.grid[1], g.grid[2], g.block[0], g.block[1], g.block[2],
                 g.name.c_str());
  }
}

void Consume(std::span<const std::byte> datagram, Totals* totals, std::FILE* gpu_tsv) {
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
  totals->gpu += batch->gpu.size();
  if (gpu_tsv != nullptr) WriteGpuRecords(batch.value(), gpu_tsv);
  totals->dropped += batch->dropped;
  for (std::string& notice : batch->notices) totals->notices.push_back(std::move(notice));
}

}  // namespace

int main(int argc, char** argv) {
  const bool with_tsv = argc == 4 && std::strcmp(argv[2], "--gpu-tsv") == 0;
  if (argc != 2 && !with_tsv) {
    std::fprintf(stderr, "usage: bench_ipc_sink SOCKET_PATH [--gpu-tsv FILE]\n");
    return 2;
  }
  const std::string path = argv[1];
  std::FILE* gpu_tsv = nullptr;
  if (with_tsv && (gpu_tsv = std::fopen(argv[3], "w")) == nullptr) {
    std::fprintf(stderr, "ipc_sink: cannot write %s: %s\n", argv[3], std::strerror(errno));
    return 2;
  }
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
        Consume(std::span<const std::byte>(buffer.data(), static_cast<size_t>(n)), &totals,
                gpu_tsv);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(fds[i].fd);  // Peer closed (its process exited).
        fds[i].fd = -1;    // poll() ignores negative descriptors; keep indexes stable.
      }
    }
  }
  unlink(path.c_str());
  if (gpu_tsv != nullptr) std::fclose(gpu_tsv);

  const uint64_t records =
      totals.ranges + totals.marks + totals.collectives + totals.p2p + totals.gpu;
  std::printf("ipc_sink: %" PRIu64 " connections, %" PRIu64 " batches, %" PRIu64
              " records (%" PRIu64 " ranges, %" PRIu64 " marks, %" PRIu64 " collectives, %" PRIu64
              " p2p, %" PRIu64 " gpu), %" PRIu64 " dropped, %" PRIu64 " bad\n",
              totals.connections, totals.batches, records, totals.ranges, totals.marks,
              totals.collectives, totals.p2p, totals.gpu, totals.dropped, totals.bad);
  for (const std::string& notice : totals.notices) {
    std::printf("ipc_sink: notice: %s\n", notice.c_str());
  }
  return 0;
}

#include "agent/sweep/checks.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <vector>

#include "core/format.h"
#include "proto/convert.h"

namespace rankscope {
namespace {

double Seconds(TimeNs from, TimeNs to) { return static_cast<double>(to - from) / 1e9; }

// Keeps the compiler from dropping a computation whose result is otherwise unused.
volatile double g_sink = 0;

}  // namespace

std::vector<SweepCheckResult> MeasureMemoryBandwidth(DurationNs budget) {
  constexpr size_t kElements = size_t{16} << 20;  // 128 MiB per array
  std::unique_ptr<double[]> a(new double[kElements]);
  std::unique_ptr<double[]> b(new double[kElements]);
  std::unique_ptr<double[]> c(new double[kElements]);
  for (size_t i = 0; i < kElements; ++i) {
    a[i] = 0;
    b[i] = 1.0 + static_cast<double>(i % 7);
    c[i] = 2.0;
  }
  const double scalar = 3.0;
  double best = 0;
  int passes = 0;
  const TimeNs deadline = MonotonicNow() + budget;
  do {
    const TimeNs start = MonotonicNow();
    for (size_t i = 0; i < kElements; ++i) a[i] = b[i] + scalar * c[i];
    const double s = Seconds(start, MonotonicNow());
    g_sink = g_sink + a[passes % kElements];
    if (s > 0) best = std::max(best, 3.0 * sizeof(double) * kElements / s);
    ++passes;
  } while (MonotonicNow() < deadline || passes < 2);
  return {{"mem.bandwidth", "", best, "bytes_per_second", "",
           "STREAM triad, 3 x 128 MiB, best of " + std::to_string(passes) + " passes"}};
}

std::vector<SweepCheckResult> MeasureCpuFlops(DurationNs budget) {
  constexpr int kChains = 8;
  constexpr int kInner = 1 << 20;
  double x[kChains];
  for (int j = 0; j < kChains; ++j) x[j] = 1.0 + j * 1e-3;
  const double m = 0.999999, add = 1e-7;
  double best = 0;
  int rounds = 0;
  const TimeNs deadline = MonotonicNow() + budget;
  do {
    const TimeNs start = MonotonicNow();
    for (int i = 0; i < kInner; ++i) {
      for (int j = 0; j < kChains; ++j) x[j] = x[j] * m + add;
    }
    const double s = Seconds(start, MonotonicNow());
    if (s > 0) best = std::max(best, 2.0 * kChains * kInner / s);
    ++rounds;
  } while (MonotonicNow() < deadline || rounds < 2);
  for (int j = 0; j < kChains; ++j) g_sink = g_sink + x[j];
  return {{"cpu.flops", "", best, "flops", "",
           "one core, " + std::to_string(kChains) + " multiply-add chains, best of " +
               std::to_string(rounds) + " rounds"}};
}

std::vector<SweepCheckResult> MeasureFreeSpace(const std::string& path) {
  struct statvfs st {};
  if (statvfs(path.c_str(), &st) != 0) {
    return {{"fs.free_bytes", path, 0, "bytes", std::string("cannot read: ") + std::strerror(errno),
             ""}};
  }
  const double free_bytes = static_cast<double>(st.f_bavail) * static_cast<double>(st.f_frsize);
  const double total = static_cast<double>(st.f_blocks) * static_cast<double>(st.f_frsize);
  const double ratio = st.f_blocks > 0 ? static_cast<double>(st.f_bavail) / st.f_blocks : 0;
  const std::string detail = FormatBytes(static_cast<Bytes>(free_bytes)) + " of " +
                             FormatBytes(static_cast<Bytes>(total)) + " free";
  return {{"fs.free_bytes", path, free_bytes, "bytes", "", detail},
          {"fs.free_ratio", path, ratio, "ratio", "", detail}};
}

std::vector<SweepCheckResult> MeasureClockAnchor() {
  const double diff = static_cast<double>(RealtimeMinusMonotonic()) / 1e9;
  return {{"clock.realtime_minus_monotonic", "", diff, "seconds", "", ""}};
}

namespace {

// The parent's ends of the pipes of every IsolatedCheck still running. A child forked for another
// check closes them: holding a copy of a running check's stop pipe would keep that check from
// ever seeing its end (pipes are O_CLOEXEC, which only acts on exec).
std::vector<int>& LiveParentFds() {
  static std::vector<int> fds;
  return fds;
}

void Forget(int fd) {
  auto& fds = LiveParentFds();
  fds.erase(std::remove(fds.begin(), fds.end(), fd), fds.end());
}

}  // namespace

IsolatedCheck::IsolatedCheck(const std::string& name,
                             const std::function<std::vector<SweepCheckResult>(int)>& check)
    : name_(name) {
  int results[2], stop[2];
  if (pipe2(results, O_CLOEXEC) != 0) {
    start_error_ = std::string("pipe: ") + std::strerror(errno);
    return;
  }
  if (pipe2(stop, O_CLOEXEC) != 0) {
    start_error_ = std::string("pipe: ") + std::strerror(errno);
    close(results[0]);
    close(results[1]);
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    close(results[0]);
    close(stop[1]);
    for (int fd : LiveParentFds()) close(fd);
    v1::UploadBatch out;
    for (const SweepCheckResult& r : check(stop[0])) *out.add_sweep() = ToProto(r);
    const std::string bytes = out.SerializeAsString();
    size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t n = write(results[1], bytes.data() + written, bytes.size() - written);
      if (n <= 0) _exit(1);
      written += static_cast<size_t>(n);
    }
    std::fflush(nullptr);  // what the check printed, before _exit skips it
    _exit(0);
  }
  close(results[1]);
  close(stop[0]);
  if (pid_ < 0) {
    start_error_ = std::string("fork: ") + std::strerror(errno);
    close(results[0]);
    close(stop[1]);
    return;
  }
  results_fd_ = results[0];
  stop_fd_ = stop[1];
  LiveParentFds().push_back(results_fd_);
  LiveParentFds().push_back(stop_fd_);
}

IsolatedCheck::~IsolatedCheck() {
  if (pid_ > 0) Collect(0);
}

std::vector<SweepCheckResult> IsolatedCheck::Collect(DurationNs limit) {
  auto failed = [this](const std::string& why) {
    return std::vector<SweepCheckResult>{{name_, "", 0, "", why, ""}};
  };
  if (!start_error_.empty()) return failed(start_error_);
  if (pid_ <= 0) return {};
  Forget(stop_fd_);
  close(stop_fd_);
  stop_fd_ = -1;
  std::string bytes;
  bool timed_out = false;
  const TimeNs deadline = MonotonicNow() + limit;
  for (;;) {
    const TimeNs left = deadline - MonotonicNow();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{results_fd_, POLLIN, 0};
    const int ready =
        poll(&p, 1, static_cast<int>(std::min<DurationNs>(left / kNsPerMs + 1, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = read(results_fd_, buf, sizeof(buf));
    if (n <= 0) break;  // the child is done (or gone)
    bytes.append(buf, static_cast<size_t>(n));
  }
  Forget(results_fd_);
  close(results_fd_);
  results_fd_ = -1;
  if (timed_out) kill(pid_, SIGKILL);
  // A child stuck in the kernel (a hung GPU's driver) may not die even of SIGKILL: wait a little,
  // then leave it and say so rather than hang the node's sweep.
  int status = 0;
  const TimeNs give_up = MonotonicNow() + 10 * kNsPerSec;
  pid_t reaped = 0;
  while ((reaped = waitpid(pid_, &status, WNOHANG)) == 0 && MonotonicNow() < give_up) {
    if (!timed_out) {
      while ((reaped = waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
      }
      break;
    }
    usleep(10 * 1000);
  }
  const pid_t child = pid_;
  pid_ = -1;
  if (reaped != child) {
    return failed("timed out after " + FormatDouble("%.0f", static_cast<double>(limit) / 1e9) +
                  " s and did not end when killed (stuck in the kernel, e.g. a hung GPU driver)");
  }
  if (timed_out) {
    return failed("timed out after " + FormatDouble("%.0f", static_cast<double>(limit) / 1e9) +
                  " s (killed)");
  }
  if (WIFSIGNALED(status)) {
    return failed(std::string("crashed: ") + strsignal(WTERMSIG(status)));
  }
  v1::UploadBatch in;
  if (WEXITSTATUS(status) != 0 || !in.ParseFromString(bytes)) {
    return failed("ended without results (exit code " + std::to_string(WEXITSTATUS(status)) + ")");
  }
  std::vector<SweepCheckResult> out;
  for (const v1::SweepCheck& c : in.sweep()) out.push_back(FromProto(c));
  return out;
}

std::vector<SweepCheckResult> RunIsolated(
    const std::string& name, DurationNs limit,
    const std::function<std::vector<SweepCheckResult>()>& check) {
  IsolatedCheck child(name, [&check](int) { return check(); });
  return child.Collect(limit);
}

}  // namespace rankscope

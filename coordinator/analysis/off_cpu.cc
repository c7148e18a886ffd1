#include "coordinator/analysis/off_cpu.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "core/robust_stats.h"

namespace rankscope {
namespace {

constexpr int kMinSamples = 25;       // 0.5 s of the rank's run
constexpr int kMinOtherSamples = 10;  // for another rank to count in the median
constexpr double kMinShare = 0.15;    // of the rank's samples
constexpr double kMinAboveOthers = 0.10;

struct Family {
  std::vector<std::string_view> parts;  // any of these in the name
  std::string_view meaning;
};

// Kernel function families, most specific first (a name matches the first family with a part
// in it). Names differ between kernels: "pipe_write" became "anon_pipe_write" in 6.x.
const std::vector<Family>& Families() {
  static const std::vector<Family> families = {
      {{"pipe_write"}, "writing a pipe or FIFO faster than its reader drains it"},
      {{"pipe_read"}, "reading a pipe or FIFO, waiting for its writer"},
      {{"nfs", "rpc_wait"}, "waiting for an NFS server"},
      {{"io_schedule", "folio_wait", "wait_on_page", "bit_wait_io", "blk_mq", "jbd2", "submit_bio",
        "wait_on_buffer"},
       "waiting for block I/O (storage)"},
      {{"futex"}, "waiting on a lock or condition variable (futex)"},
      {{"nanosleep"}, "sleeping (nanosleep)"},
      {{"ep_poll", "do_select", "do_sys_poll", "poll_schedule"},
       "waiting in poll, select or epoll (sockets, devices)"},
      {{"sk_wait", "tcp_", "unix_stream", "inet_csk", "skb_"}, "waiting on a socket"},
      {{"do_wait", "kernel_wait"}, "waiting for a child process"},
  };
  return families;
}

bool IsFreezer(std::string_view wchan) {
  return wchan.find("refrigerator") != std::string_view::npos ||
         wchan.find("freezer") != std::string_view::npos;
}

// One rank's samples by category: "stopped", "frozen", or a wchan family's meaning (else the
// wchan itself), with the most frequent wchan of each.
struct Categories {
  int samples = 0;
  std::map<std::string, int> count;
  std::map<std::string, std::pair<std::string, int>> top_wchan;
};

Categories Categorise(const MainThreadStates& m) {
  Categories c;
  c.samples = m.samples;
  if (m.stopped > 0) c.count["stopped"] = m.stopped;
  for (const auto& [wchan, n] : m.blocked_in) {
    std::string key = IsFreezer(wchan) ? "frozen" : DescribeWchan(wchan);
    if (key.empty()) key = wchan;
    c.count[key] += n;
    auto& top = c.top_wchan[key];
    if (n > top.second) top = {wchan, n};
  }
  return c;
}

}  // namespace

std::string DescribeWchan(std::string_view wchan) {
  for (const Family& f : Families()) {
    for (std::string_view part : f.parts) {
      if (wchan.find(part) != std::string_view::npos) return std::string(f.meaning);
    }
  }
  return "";
}

std::optional<OffCpuCause> FindOffCpuCause(const Session& session, int rank) {
  const RankData* self = session.FindRank(rank);
  if (self == nullptr || !self->proc || self->proc->main_thread.samples < kMinSamples) {
    return std::nullopt;
  }
  const Categories mine = Categorise(self->proc->main_thread);
  std::vector<Categories> others;
  for (const RankData& r : session.ranks) {
    if (r.id.rank != rank && r.proc && r.proc->main_thread.samples >= kMinOtherSamples) {
      others.push_back(Categorise(r.proc->main_thread));
    }
  }
  if (others.empty()) return std::nullopt;
  std::optional<OffCpuCause> best;
  double best_above = 0;
  for (const auto& [key, n] : mine.count) {
    const double share = static_cast<double>(n) / mine.samples;
    std::vector<double> theirs;
    for (const Categories& o : others) {
      auto it = o.count.find(key);
      theirs.push_back(it == o.count.end() ? 0.0 : static_cast<double>(it->second) / o.samples);
    }
    const double others_share = Median(std::move(theirs));
    const double above = share - others_share;
    if (share < kMinShare || above < kMinAboveOthers || above <= best_above) continue;
    best_above = above;
    OffCpuCause c;
    c.kind = key == "stopped"  ? CauseKind::kStopped
             : key == "frozen" ? CauseKind::kFrozen
                               : CauseKind::kBlocked;
    if (c.kind != CauseKind::kStopped) c.where = mine.top_wchan.at(key).first;
    c.meaning = c.kind == CauseKind::kBlocked ? DescribeWchan(c.where) : "";
    c.share = share;
    c.others_share = others_share;
    c.samples = mine.samples;
    best = std::move(c);
  }
  return best;
}

double OffCpuMargin(const OffCpuCause& cause) {
  return ThresholdMargin(cause.share - cause.others_share, kMinAboveOthers);
}

}  // namespace rankscope

#include "agent/proc_sampler.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unordered_map>

namespace rankscope {
namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

// The whole of a small /proc file; nullopt when it cannot be opened (process gone, no access).
std::optional<std::string> ReadSmall(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return text.str();
}

}  // namespace

std::string WchanName(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  const bool symbol = !text.empty() && text != "0" && text.size() <= 128 &&
                      std::all_of(text.begin(), text.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
                      });
  return symbol ? std::string(text) : "?";
}

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split at the last ')'.
  const size_t open = text.find(" (");
  const size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcStat out;
  uint64_t pid = 0;
  if (!ParseU64(text.substr(0, open), &pid)) return std::nullopt;
  out.pid = static_cast<pid_t>(pid);
  std::vector<std::string_view> fields;  // fields[0] is the state (field 3 of proc(5))
  std::string_view rest = text.substr(close + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest = rest.substr(start);
    const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
    fields.push_back(rest.substr(0, end));
    rest = rest.substr(end);
  }
  // proc(5) field n is fields[n - 3].
  auto field = [&](size_t n, uint64_t* value) {
    return n - 3 < fields.size() && ParseU64(fields[n - 3], value);
  };
  uint64_t ppid = 0;
  if (!field(4, &ppid) || !field(14, &out.utime_ticks) || !field(15, &out.stime_ticks) ||
      !field(22, &out.start_ticks)) {
    return std::nullopt;
  }
  out.ppid = static_cast<pid_t>(ppid);
  if (!fields[0].empty()) out.state = fields[0][0];
  field(42, &out.blkio_ticks);  // kernels before 2.6.18 lack it: stays 0
  return out;
}

namespace {

// Calls fn(key, value) for each "key: value" line of text (/proc/PID/io, /proc/PID/status),
// the value without the blanks after the colon.
template <typename Fn>
void ForEachField(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t eol = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, eol);
    text = text.substr(std::min(eol + 1, text.size()));
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    value.remove_prefix(std::min(value.find_first_not_of(" \t"), value.size()));
    fn(line.substr(0, colon), value);
  }
}

}  // namespace

std::optional<ProcIo> ParseProcIo(std::string_view text) {
  ProcIo out;
  bool any = false;
  ForEachField(text, [&](std::string_view key, std::string_view value) {
    uint64_t v = 0;
    if (!ParseU64(value, &v)) return;
    uint64_t* slot = key == "rchar"         ? &out.rchar
                     : key == "wchar"       ? &out.wchar
                     : key == "read_bytes"  ? &out.read_bytes
                     : key == "write_bytes" ? &out.write_bytes
                                            : nullptr;
    if (slot != nullptr) {
      *slot = v;
      any = true;
    }
  });
  if (!any) return std::nullopt;
  return out;
}

std::optional<SchedStat> ParseSchedstat(std::string_view text) {
  // "1012498 10473399 3\n"
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(space + 1);
  const size_t end = std::min(rest.find_first_of(" \n"), rest.size());
  uint64_t cpu = 0, delay = 0;
  if (!ParseU64(text.substr(0, space), &cpu) || !ParseU64(rest.substr(0, end), &delay)) {
    return std::nullopt;
  }
  return SchedStat{static_cast<DurationNs>(cpu), static_cast<DurationNs>(delay)};
}

std::optional<ContextSwitches> ParseContextSwitches(std::string_view status_text) {
  ContextSwitches out;
  bool voluntary = false, involuntary = false;
  ForEachField(status_text, [&](std::string_view key, std::string_view value) {
    if (key == "voluntary_ctxt_switches") {
      voluntary = ParseU64(value, &out.voluntary);
    } else if (key == "nonvoluntary_ctxt_switches") {
      involuntary = ParseU64(value, &out.involuntary);
    }
  });
  if (!voluntary || !involuntary) return std::nullopt;
  return out;
}

std::vector<pid_t> Descendants(pid_t root, const std::vector<std::pair<pid_t, pid_t>>& parents) {
  std::unordered_multimap<pid_t, pid_t> children;
  for (const auto& [pid, ppid] : parents) children.emplace(ppid, pid);
  std::vector<pid_t> out = {root};
  for (size_t i = 0; i < out.size(); ++i) {
    auto [begin, end] = children.equal_range(out[i]);
    for (auto it = begin; it != end; ++it) {
      if (it->second != root) out.push_back(it->second);
    }
  }
  return out;
}

ProcSampler::ProcSampler(pid_t root, DurationNs period, std::string proc_root)
    : root_(root),
      period_(period),
      proc_root_(std::move(proc_root)),
      ns_per_tick_(kNsPerSec / std::max<long>(sysconf(_SC_CLK_TCK), 1)) {}

ProcSampler::~ProcSampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProcSampler::Start() {
  // The program's signals are forwarded by the agent's main thread; keep them off this one.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  try {
    thread_ = std::thread(&ProcSampler::Loop, this);
  } catch (const std::system_error&) {
    // No thread: Finish samples once.
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void ProcSampler::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  // The first sample may come before the program's exec; a second one soon after sees it
  // settled (in the cgroup a wrapper made it join first, say), so counters start from there.
  DurationNs wait = std::min<DurationNs>(period_, 50 * kNsPerMs);
  TimeNs next_full = MonotonicNow();
  while (!finishing_) {
    if (MonotonicNow() >= next_full) {
      SampleOnce();
      next_full = MonotonicNow() + wait;
      wait = period_;
      if (on_sample_ && first_sample_ != 0) {
        const ProcessTreeStats so_far = SumsLocked(/*read_cgroup_now=*/false);
        lock.unlock();
        on_sample_(so_far);
        lock.lock();
      }
    }
    SampleMainThread();
    const DurationNs sleep = std::clamp<DurationNs>(next_full - MonotonicNow(), 0, kStatePeriod);
    wake_.wait_for(lock, std::chrono::nanoseconds(sleep), [this] { return finishing_; });
  }
}

void ProcSampler::SampleMainThread() {
  if (first_sample_ == 0) return;  // the program not seen yet
  const std::string dir =
      proc_root_ + "/" + std::to_string(root_) + "/task/" + std::to_string(root_);
  std::optional<std::string> text = ReadSmall(dir + "/stat");
  std::optional<ProcStat> st = text ? ParseProcStat(*text) : std::nullopt;
  if (!st || st->state == 'Z' || st->state == 'X') return;  // gone or exiting
  ++main_thread_.samples;
  if (st->state == 'R') {
    ++main_thread_.running;
  } else if (st->state == 'T' || st->state == 't') {
    ++main_thread_.stopped;
  } else {
    std::optional<std::string> wchan = ReadSmall(dir + "/wchan");
    ++main_thread_.blocked_in[wchan ? WchanName(*wchan) : "?"];
  }
}

void ProcSampler::SampleOnce() {
  ++samples_;
  std::vector<std::pair<pid_t, pid_t>> parents;
  std::unordered_map<pid_t, ProcStat> stats;
  if (DIR* dir = opendir(proc_root_.c_str())) {
    while (dirent* entry = readdir(dir)) {
      uint64_t pid = 0;
      if (!ParseU64(entry->d_name, &pid)) continue;
      std::optional<std::string> text = ReadSmall(proc_root_ + "/" + entry->d_name + "/stat");
      if (!text) continue;
      if (std::optional<ProcStat> st = ParseProcStat(*text)) {
        parents.emplace_back(st->pid, st->ppid);
        stats.emplace(st->pid, *st);
      }
    }
    closedir(dir);
  }
  if (stats.count(root_) == 0) return;  // gone (reaped) or never seen
  last_sample_ = MonotonicNow();
  if (first_sample_ == 0) first_sample_ = last_sample_;
  WatchCgroup(stats.at(root_).state == 'Z');
  for (pid_t pid : Descendants(root_, parents)) {
    const ProcStat& st = stats.at(pid);
    Last& last = last_[{pid, st.start_ticks}];
    last.stat = st;
    SampleThreads(pid, &last);
    std::optional<std::string> io = ReadSmall(proc_root_ + "/" + std::to_string(pid) + "/io");
    std::optional<ProcIo> parsed = io ? ParseProcIo(*io) : std::nullopt;
    if (parsed) {
      last.io = parsed;
    } else if (!last.io) {
      io_unreadable_ = true;
    }
  }
}

void ProcSampler::SampleThreads(pid_t pid, Last* last) {
  const std::string task_dir = proc_root_ + "/" + std::to_string(pid) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    uint64_t tid = 0;
    if (!ParseU64(entry->d_name, &tid)) continue;
    const std::string thread_dir = task_dir + "/" + entry->d_name;
    std::optional<std::string> status = ReadSmall(thread_dir + "/status");
    std::optional<ContextSwitches> switches = status ? ParseContextSwitches(*status) : std::nullopt;
    if (!switches) continue;  // exited meanwhile
    std::optional<std::string> sched_text = ReadSmall(thread_dir + "/schedstat");
    std::optional<SchedStat> sched = sched_text ? ParseSchedstat(*sched_text) : std::nullopt;
    if (!sched) sched_unreadable_ = true;
    ThreadLast& t = last->threads[static_cast<pid_t>(tid)];
    // Counters only grow: smaller ones belong to a new thread that got an exited one's id.
    if ((sched && sched->cpu_ns < t.sched.cpu_ns) ||
        switches->voluntary + switches->involuntary <
            t.switches.voluntary + t.switches.involuntary) {
      t.retired_sched.cpu_ns += t.sched.cpu_ns - t.base_sched.cpu_ns;
      t.retired_sched.run_delay_ns += t.sched.run_delay_ns - t.base_sched.run_delay_ns;
      t.retired_switches.voluntary += t.switches.voluntary - t.base_switches.voluntary;
      t.retired_switches.involuntary += t.switches.involuntary - t.base_switches.involuntary;
      t.base_sched = {};
      t.base_switches = {};
    }
    if (sched) t.sched = *sched;
    t.switches = *switches;
  }
  closedir(dir);
}

std::optional<CpuThrottling> ProcSampler::ReadThrottling() const {
  std::optional<std::string> text = ReadSmall(cgroup_->counters_dir + "/cpu.stat");
  return text ? ParseCpuStat(*text) : std::nullopt;
}

void ProcSampler::WatchCgroup(bool exited) {
  if (exited && cgroup_) {
    if (std::optional<CpuThrottling> now = ReadThrottling()) cgroup_->latest = now;
    return;
  }
  std::optional<std::string> membership =
      ReadSmall(proc_root_ + "/" + std::to_string(root_) + "/cgroup");
  if (!membership) return;
  if (!mounts_) {
    std::optional<std::string> mountinfo = ReadSmall(proc_root_ + "/self/mountinfo");
    mounts_ = mountinfo ? ParseCgroupMounts(*mountinfo) : std::vector<CgroupMount>{};
  }
  std::optional<CpuCgroupLocation> where = LocateCpuCgroup(ParseProcCgroup(*membership), *mounts_);
  if (cgroup_ && (!where || cgroup_->stats.path == where->path)) {
    // Kept for the end, should the cgroup be gone by then (removed with the job step).
    if (std::optional<CpuThrottling> now = ReadThrottling()) cgroup_->latest = now;
    return;
  }
  if (!where) return;
  // Seen for the first time, or the program was moved: the quota that binds is the smallest one
  // on the way up (each level's bandwidth caps everything below it).
  CgroupWatch watch;
  watch.stats.version = where->version;
  watch.stats.path = where->path;
  watch.stats.limit_path = where->path;
  std::optional<double> tightest;
  bool any_quota_file = false;
  for (const std::string& level : CgroupAncestors(where->path, where->mount_root)) {
    const std::string dir = where->Dir(level);
    std::optional<CpuQuota> quota;
    if (where->version == 1) {
      std::optional<std::string> q = ReadSmall(dir + "/cpu.cfs_quota_us");
      std::optional<std::string> p = ReadSmall(dir + "/cpu.cfs_period_us");
      if (q && p) quota = ParseCfsQuota(*q, *p);
    } else if (std::optional<std::string> max = ReadSmall(dir + "/cpu.max")) {
      quota = ParseCpuMax(*max);
    }
    if (!quota) continue;
    if (!any_quota_file) watch.stats.period_us = quota->period_us;  // the nearest level's
    any_quota_file = true;
    CpuCgroupStats candidate;
    candidate.quota_us = quota->quota_us;
    candidate.period_us = quota->period_us;
    std::optional<double> cpus = candidate.QuotaCpus();
    if (cpus && (!tightest || *cpus < *tightest)) {
      tightest = cpus;
      watch.stats.limit_path = level;
      watch.stats.quota_us = quota->quota_us;
      watch.stats.period_us = quota->period_us;
    }
  }
  watch.counters_dir = where->Dir(watch.stats.limit_path);
  cgroup_ = std::move(watch);
  cgroup_->first = ReadThrottling();
  cgroup_->latest = cgroup_->first;
  // A v2 hierarchy without the cpu controller enabled has no bandwidth control to report.
  if (where->version == 2 && !any_quota_file && !cgroup_->first) cgroup_.reset();
}

void ProcSampler::CountFromNow() {
  std::lock_guard<std::mutex> lock(mu_);
  SampleOnce();
  for (auto& [key, last] : last_) {
    last.base_stat = last.stat;
    last.base_io = last.io.value_or(ProcIo{});
    for (auto& [tid, t] : last.threads) {
      t.base_sched = t.sched;
      t.base_switches = t.switches;
    }
  }
}

void ProcSampler::OnSample(std::function<void(const ProcessTreeStats&)> callback) {
  on_sample_ = std::move(callback);
}

ProcessTreeStats ProcSampler::Finish() {
  std::unique_lock<std::mutex> lock(mu_);
  finishing_ = true;
  lock.unlock();
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  lock.lock();
  SampleOnce();
  return SumsLocked(/*read_cgroup_now=*/true);
}

ProcessTreeStats ProcSampler::SumsLocked(bool read_cgroup_now) const {
  ProcessTreeStats out;
  out.samples = samples_;
  out.processes = static_cast<int32_t>(last_.size());
  bool all_io = true;
  for (const auto& [key, last] : last_) {
    auto since = [](uint64_t now, uint64_t base) { return now > base ? now - base : 0; };
    auto ticks = [&](uint64_t now, uint64_t base) {
      return static_cast<int64_t>(since(now, base)) * ns_per_tick_;
    };
    const ProcStat& b = last.base_stat;
    out.cpu_user_ns += ticks(last.stat.utime_ticks, b.utime_ticks);
    out.cpu_system_ns += ticks(last.stat.stime_ticks, b.stime_ticks);
    out.blkio_delay_ns += ticks(last.stat.blkio_ticks, b.blkio_ticks);
    for (const auto& [tid, t] : last.threads) {
      ++out.threads;
      out.sched_cpu_ns += t.retired_sched.cpu_ns + (t.sched.cpu_ns - t.base_sched.cpu_ns);
      out.run_delay_ns +=
          t.retired_sched.run_delay_ns + (t.sched.run_delay_ns - t.base_sched.run_delay_ns);
      out.voluntary_switches +=
          t.retired_switches.voluntary + (t.switches.voluntary - t.base_switches.voluntary);
      out.involuntary_switches +=
          t.retired_switches.involuntary + (t.switches.involuntary - t.base_switches.involuntary);
    }
    if (!last.io) {
      all_io = false;
      continue;
    }
    out.rchar += since(last.io->rchar, last.base_io.rchar);
    out.wchar += since(last.io->wchar, last.base_io.wchar);
    out.read_bytes += since(last.io->read_bytes, last.base_io.read_bytes);
    out.write_bytes += since(last.io->write_bytes, last.base_io.write_bytes);
  }
  out.io_unreadable = io_unreadable_ && !all_io;
  out.sched_unreadable = sched_unreadable_;
  out.sampled_wall_ns = last_sample_ - first_sample_;
  out.main_thread = main_thread_;
  if (cgroup_) {
    CpuCgroupStats c = cgroup_->stats;
    std::optional<CpuThrottling> now = read_cgroup_now ? ReadThrottling() : std::nullopt;
    if (!now) now = cgroup_->latest;
    if (cgroup_->first && now) {
      auto since = [](uint64_t a, uint64_t b) { return a > b ? a - b : 0; };
      c.nr_periods = since(now->nr_periods, cgroup_->first->nr_periods);
      c.nr_throttled = since(now->nr_throttled, cgroup_->first->nr_throttled);
      c.throttled_ns = std::max<DurationNs>(now->throttled_ns - cgroup_->first->throttled_ns, 0);
    } else {
      c.counters_unreadable = true;
    }
    out.cpu_cgroup = std::move(c);
  }
  return out;
}

}  // namespace rankscope

#include "agent/proc_sampler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace rankscope {
namespace {

TEST(ProcSampler, ParsesAStatLineWhoseCommandHasSpacesAndParentheses) {
  // A real /proc/PID/stat line (Linux 6.1), with the command name changed to "a (b) c".
  const char* line =
      "4242 (a (b) c) S 4200 4242 4200 34816 4242 4194304 1205 0 0 0 371 52 0 0 20 0 3 0 "
      "98765 12345678 2345 18446744073709551615 1 1 0 0 0 0 0 16781312 17002 0 0 0 17 1 0 0 "
      "7 0 0 0 0 0 0 0 0 0 0\n";
  std::optional<ProcStat> st = ParseProcStat(line);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->ppid, 4200);
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->utime_ticks, 371u);
  EXPECT_EQ(st->stime_ticks, 52u);
  EXPECT_EQ(st->start_ticks, 98765u);
  EXPECT_EQ(st->blkio_ticks, 7u);
  EXPECT_FALSE(ParseProcStat("").has_value());
  EXPECT_FALSE(ParseProcStat("12 (cut) S 1 2").has_value());
  EXPECT_FALSE(ParseProcStat("x (y) S 1").has_value());
}

TEST(ProcSampler, ParsesProcIo) {
  std::optional<ProcIo> io = ParseProcIo(
      "rchar: 16777416\nwchar: 120\nsyscr: 260\nsyscw: 2\nread_bytes: 4096\n"
      "write_bytes: 0\ncancelled_write_bytes: 0\n");
  ASSERT_TRUE(io.has_value());
  EXPECT_EQ(io->rchar, 16777416u);
  EXPECT_EQ(io->wchar, 120u);
  EXPECT_EQ(io->read_bytes, 4096u);
  EXPECT_EQ(io->write_bytes, 0u);
  EXPECT_FALSE(ParseProcIo("garbage\n").has_value());
}

TEST(ProcSampler, ParsesSchedstat) {
  // /proc/PID/task/TID/schedstat of a busy thread (Linux 6.18): on-CPU ns, run-queue wait ns,
  // timeslices.
  std::optional<SchedStat> st = ParseSchedstat("255066394 1702089202 132\n");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->cpu_ns, 255066394);
  EXPECT_EQ(st->run_delay_ns, 1702089202);
  EXPECT_FALSE(ParseSchedstat("").has_value());
  EXPECT_FALSE(ParseSchedstat("12 x 1\n").has_value());
}

TEST(ProcSampler, ParsesContextSwitchesFromStatus) {
  // The end of /proc/PID/task/TID/status (Linux 6.18).
  std::optional<ContextSwitches> cs = ParseContextSwitches(
      "Name:\tthr\nState:\tR (running)\nTgid:\t7575\nPid:\t7576\n"
      "Cpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n"
      "voluntary_ctxt_switches:\t119\nnonvoluntary_ctxt_switches:\t16\n");
  ASSERT_TRUE(cs.has_value());
  EXPECT_EQ(cs->voluntary, 119u);
  EXPECT_EQ(cs->involuntary, 16u);
  EXPECT_FALSE(ParseContextSwitches("voluntary_ctxt_switches:\t1\n").has_value());
}

TEST(ProcSampler, DescendantsFollowEveryGeneration) {
  const std::vector<std::pair<pid_t, pid_t>> parents = {{10, 1},  {11, 10}, {12, 11},
                                                        {13, 10}, {20, 1},  {21, 20}};
  std::vector<pid_t> d = Descendants(10, parents);
  std::sort(d.begin(), d.end());
  EXPECT_EQ(d, (std::vector<pid_t>{10, 11, 12, 13}));
  EXPECT_EQ(Descendants(99, parents), std::vector<pid_t>{99});
}

// A real process tree: the child burns CPU, its own child (a "DataLoader worker") reads 16 MiB
// and exits before the end. Both count, the worker with its last sampled counters.
TEST(ProcSampler, SumsTheProgramAndTheWorkersItStarted) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const pid_t worker = fork();
    if (worker == 0) {
      int fd = open("/dev/zero", O_RDONLY);
      std::vector<char> buffer(1 << 20);
      for (int i = 0; i < 16; ++i) {
        if (read(fd, buffer.data(), buffer.size()) <= 0) _exit(1);
      }
      usleep(200 * 1000);  // stay visible for a few samples
      _exit(0);
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < until) x = x + 1;
    waitpid(worker, nullptr, 0);
    _exit(0);
  }
  ProcSampler sampler(child, 20 * kNsPerMs);
  sampler.Start();
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ProcessTreeStats s = sampler.Finish();
  waitpid(child, nullptr, 0);
  EXPECT_GE(s.processes, 2);
  EXPECT_GE(s.samples, 3);
  EXPECT_FALSE(s.io_unreadable);
  EXPECT_GE(s.rchar, uint64_t{16} << 20);
  // The busy loop ran for 300 ms of wall time, on a CPU or waiting for one (a loaded machine
  // gives it less than half: the run delay says so).
  EXPECT_GE(s.cpu_user_ns + s.cpu_system_ns + s.run_delay_ns, 200 * kNsPerMs);
  EXPECT_GE(s.cpu_user_ns + s.cpu_system_ns, 30 * kNsPerMs);
  EXPECT_LT(s.cpu_user_ns + s.cpu_system_ns, 2 * kNsPerSec);
}

// /proc/PID/schedstat and the switch counts of /proc/PID/status cover the main thread only: a
// program whose work is in other threads must still show it. Three threads pinned to one CPU
// wait for it about two thirds of the time.
TEST(ProcSampler, SumsSchedulerFiguresOverEveryThread) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof(one), &one) != 0) _exit(1);
    std::atomic<bool> stop{false};
    std::vector<std::thread> busy;
    for (int i = 0; i < 3; ++i) {
      busy.emplace_back([&stop] {
        volatile uint64_t x = 0;
        while (!stop.load(std::memory_order_relaxed)) x = x + 1;
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    stop = true;
    for (std::thread& t : busy) t.join();
    _exit(0);
  }
  ProcSampler sampler(child, 50 * kNsPerMs);
  // The sums so far after each sample (what the coordinator's live check reads): they grow.
  std::mutex mu;
  std::vector<ProcessTreeStats> so_far;
  sampler.OnSample([&](const ProcessTreeStats& s) {
    std::lock_guard<std::mutex> lock(mu);
    so_far.push_back(s);
  });
  sampler.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a sample with the threads on
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ProcessTreeStats s = sampler.Finish();
  waitpid(child, nullptr, 0);
  EXPECT_FALSE(s.sched_unreadable);
  EXPECT_GE(s.threads, 4);
  EXPECT_GE(s.sampled_wall_ns, 400 * kNsPerMs);
  // By their last sample the threads shared ~500 ms of one CPU, each waiting while the other two
  // ran (the bounds leave room for other load on the CPU).
  EXPECT_GE(s.sched_cpu_ns, 100 * kNsPerMs);
  EXPECT_GE(s.run_delay_ns, 2 * s.sched_cpu_ns * 8 / 10);
  EXPECT_GE(s.involuntary_switches, 3u);
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(so_far.size(), 3u);
  for (size_t i = 1; i < so_far.size(); ++i) {
    EXPECT_GE(so_far[i].sampled_wall_ns, so_far[i - 1].sampled_wall_ns);
    EXPECT_GE(so_far[i].sched_cpu_ns, so_far[i - 1].sched_cpu_ns);
  }
  EXPECT_GT(so_far.back().sched_cpu_ns, so_far.front().sched_cpu_ns);
  EXPECT_LE(so_far.back().sched_cpu_ns, s.sched_cpu_ns);
}

// A fake /proc and cgroup v1 tree: the program runs in /job/step, whose parent /job has the
// quota. The counters are the parent's, counted from the first sample; the program's exit
// (a zombie reads as in "/") does not lose its cgroup.
TEST(ProcSampler, CountsTheThrottlingOfTheCgroupWhoseQuotaBinds) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("rankscope-cg-" + std::to_string(getpid()));
  fs::remove_all(root);
  auto write = [](const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
  };
  const fs::path proc = root / "proc", cg = root / "cg";
  auto stat_line = [](char state) {
    return std::string("4242 (prog) ") + state +
           " 1 4242 4242 0 -1 0 0 0 0 0 300 20 0 0 20 0 1 0 5000 1000 100 0 0 0 0 0 0 0 0 0 0 0 "
           "0 0 17 1 0 0 0 0 0\n";
  };
  write(proc / "4242/stat", stat_line('R'));
  write(proc / "4242/task/4242/stat", stat_line('R'));
  write(proc / "4242/task/4242/status",
        "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t10\n");
  write(proc / "4242/task/4242/schedstat", "1000000000 500000000 40\n");
  write(proc / "4242/cgroup", "2:cpuacct:/\n1:cpu:/job/step\n0::/\n");
  write(proc / "self/mountinfo",
        "32 31 0:29 / " + cg.string() + " rw,relatime - cgroup cgroup rw,cpu\n");
  write(cg / "cpu.cfs_quota_us", "-1\n");
  write(cg / "cpu.cfs_period_us", "100000\n");
  write(cg / "job/cpu.cfs_quota_us", "30000\n");
  write(cg / "job/cpu.cfs_period_us", "100000\n");
  write(cg / "job/cpu.stat", "nr_periods 100\nnr_throttled 90\nthrottled_time 5000000000\n");
  write(cg / "job/step/cpu.cfs_quota_us", "-1\n");
  write(cg / "job/step/cpu.cfs_period_us", "100000\n");
  write(cg / "job/step/cpu.stat", "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n");

  ProcSampler sampler(4242, kNsPerSec, proc.string());
  sampler.CountFromNow();
  write(cg / "job/cpu.stat", "nr_periods 140\nnr_throttled 125\nthrottled_time 7000000000\n");
  write(proc / "4242/stat", stat_line('Z'));
  write(proc / "4242/cgroup", "2:cpuacct:/\n1:cpu:/\n0::/\n");
  write(proc / "4242/task/4242/schedstat", "1300000000 2500000000 52\n");
  write(proc / "4242/task/4242/status",
        "voluntary_ctxt_switches:\t3\nnonvoluntary_ctxt_switches:\t30\n");
  ProcessTreeStats s = sampler.Finish();
  fs::remove_all(root);

  EXPECT_EQ(s.threads, 1);
  EXPECT_EQ(s.sched_cpu_ns, 300 * kNsPerMs);
  EXPECT_EQ(s.run_delay_ns, 2 * kNsPerSec);
  EXPECT_EQ(s.involuntary_switches, 20u);
  EXPECT_EQ(s.voluntary_switches, 0u);
  ASSERT_TRUE(s.cpu_cgroup.has_value());
  const CpuCgroupStats& c = *s.cpu_cgroup;
  EXPECT_EQ(c.version, 1);
  EXPECT_EQ(c.path, "/job/step");
  EXPECT_EQ(c.limit_path, "/job");
  EXPECT_EQ(c.quota_us, 30000);
  EXPECT_EQ(c.period_us, 100000);
  ASSERT_TRUE(c.QuotaCpus().has_value());
  EXPECT_DOUBLE_EQ(*c.QuotaCpus(), 0.3);
  EXPECT_FALSE(c.counters_unreadable);
  EXPECT_EQ(c.nr_periods, 40u);
  EXPECT_EQ(c.nr_throttled, 35u);
  EXPECT_EQ(c.throttled_ns, 2 * kNsPerSec);
}

// rankscope attach samples a program that ran long before: only what it does from then on
// counts.
TEST(ProcSampler, CountFromNowLeavesOutWhatCameBefore) {
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  auto read_mib = [](int mib) {
    int fd = open("/dev/zero", O_RDONLY);
    std::vector<char> buffer(1 << 20);
    for (int i = 0; i < mib; ++i) {
      if (read(fd, buffer.data(), buffer.size()) <= 0) _exit(1);
    }
    close(fd);
  };
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    read_mib(64);  // before the attach
    char c = 1;
    if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(1);
    read_mib(8);  // inside the window
    usleep(50 * 1000);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ProcSampler sampler(child, 20 * kNsPerMs);
  sampler.CountFromNow();
  sampler.Start();
  ASSERT_EQ(write(go[1], &c, 1), 1);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ProcessTreeStats s = sampler.Finish();
  waitpid(child, nullptr, 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) close(fd);
  EXPECT_GE(s.rchar, uint64_t{8} << 20);
  EXPECT_LT(s.rchar, uint64_t{16} << 20);
}

TEST(ProcSampler, WchanNamesAreKeptOnlyAsSymbols) {
  EXPECT_EQ(WchanName("anon_pipe_write"), "anon_pipe_write");
  EXPECT_EQ(WchanName("do_signal_stop\n"), "do_signal_stop");
  EXPECT_EQ(WchanName("0"), "?");  // running
  EXPECT_EQ(WchanName(""), "?");   // hidden
  EXPECT_EQ(WchanName("caf\xe9"), "?");
}

// The main thread's states: a child that writes a pipe nobody reads for 400 ms, then is stopped
// (SIGSTOP) for 400 ms, then runs. Samples every 20 ms see each phase.
TEST(ProcSampler, SamplesWhereTheMainThreadIs) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    signal(SIGPIPE, SIG_IGN);
    std::vector<char> block(1 << 16, 'x');
    for (;;) {
      if (write(fds[1], block.data(), block.size()) < 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        volatile uint64_t x = 0;
        while (std::chrono::steady_clock::now() < until) x = x + 1;
        _exit(0);
      }
    }
  }
  close(fds[1]);
  ProcSampler sampler(child, kNsPerSec);
  sampler.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // blocked in write
  kill(child, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  close(fds[0]);  // the write fails with EPIPE once it runs again (the child ignores SIGPIPE)
  kill(child, SIGCONT);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);
  ProcessTreeStats s = sampler.Finish();
  waitpid(child, nullptr, 0);
  const MainThreadStates& m = s.main_thread;
  EXPECT_GE(m.samples, 25);
  // Each phase lasts 20 samples; the bounds leave room for a loaded machine's late wake-ups.
  EXPECT_GE(m.stopped, 8) << m.samples;
  int in_pipe = 0;
  for (const auto& [where, n] : m.blocked_in) {
    if (where.find("pipe_write") != std::string::npos) in_pipe += n;
  }
  EXPECT_GE(in_pipe, 8) << m.samples;
}

}  // namespace
}  // namespace rankscope

// End-to-end test of the NVTX injection: this process is an NVTX-instrumented program whose
// NVTX_INJECTION64_PATH names the built librankscope_inject.so, and it also plays the agent,
// listening on the socket the library sends its batches to.
#include <nvtx3/nvToolsExt.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "agent/inject/test_collector.h"
#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

using std::chrono::milliseconds;

// What one run of the workload below produced.
struct Captured {
  std::vector<std::string> setup_errors;
  std::vector<wire::Batch> batches;
  std::vector<RangeRecord> ranges;
  std::vector<MarkRecord> marks;
  uint32_t main_tid = 0;
  uint32_t worker_tid = 0;
  bool worker_records_came_at_thread_exit = false;
  pid_t child_pid = -1;
  int push_levels[3] = {-9, -9, -9};
  int pop_levels[3] = {-9, -9, -9};
};

nvtxEventAttributes_t Attributes() {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return a;
}

bool HasTid(const std::vector<wire::Batch>& batches, uint32_t tid) {
  for (const auto& b : batches) {
    for (const auto& r : b.ranges) {
      if (r.tid == tid && r.name == "worker-outer") return true;
    }
  }
  return false;
}

bool HasMark(const std::vector<wire::Batch>& batches, const std::string& name) {
  for (const auto& b : batches) {
    for (const auto& m : b.marks) {
      if (m.name == name) return true;
    }
  }
  return false;
}

TestCollector& Collector() {
  static TestCollector collector;  // outlives the library's exit-time flush
  return collector;
}

Captured RunWorkload() {
  Captured c;
  TestCollector& collector = Collector();
  if (!collector.Start()) {
    c.setup_errors = collector.errors();
    return c;
  }
  // Both must be set before the first NVTX call, which loads the library.
  setenv("RANKSCOPE_IPC_SOCKET", collector.path().c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", RANKSCOPE_INJECT_SO, 1);
  c.main_tid = static_cast<uint32_t>(gettid());

  // Push/pop nesting through the A, W and Ex entry points.
  c.push_levels[0] = nvtxRangePushA("outer");
  c.push_levels[1] = nvtxRangePushW(L"middle-\u00fc\u20ac\U0001F600");
  nvtxEventAttributes_t inner = Attributes();
  inner.messageType = NVTX_MESSAGE_TYPE_ASCII;
  inner.message.ascii = "inner-ex";
  c.push_levels[2] = nvtxRangePushEx(&inner);
  c.pop_levels[0] = nvtxRangePop();
  c.pop_levels[1] = nvtxRangePop();
  c.pop_levels[2] = nvtxRangePop();

  // Marks.
  nvtxMarkA("mark-a");
  nvtxMarkW(L"mark-w-\u00e9");
  nvtxEventAttributes_t mark = Attributes();
  mark.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  mark.message.unicode = L"mark-ex-wide";
  nvtxMarkEx(&mark);

  // Domains and registered strings. A default-domain push between a domain's push and pop
  // stays open: each domain has its own stack.
  nvtxDomainHandle_t domain = nvtxDomainCreateA("my-domain");
  nvtxDomainHandle_t wide_domain = nvtxDomainCreateW(L"wide-domain-\u00df");
  nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered-name");
  nvtxStringHandle_t registered_w = nvtxDomainRegisterStringW(domain, L"registered-wide-\u00f8");
  nvtxEventAttributes_t reg = Attributes();
  reg.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  reg.message.registered = registered;
  nvtxDomainRangePushEx(domain, &reg);
  nvtxRangePushA("default-interleaved");
  nvtxDomainRangePop(domain);
  nvtxRangePop();
  nvtxEventAttributes_t in_wide = Attributes();
  in_wide.messageType = NVTX_MESSAGE_TYPE_ASCII;
  in_wide.message.ascii = "in-wide-domain";
  nvtxDomainRangePushEx(wide_domain, &in_wide);
  nvtxDomainRangePop(wide_domain);
  nvtxEventAttributes_t reg_w = Attributes();
  reg_w.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  reg_w.message.registered = registered_w;
  nvtxDomainMarkEx(domain, &reg_w);
  nvtxEventAttributes_t se = Attributes();
  se.messageType = NVTX_MESSAGE_TYPE_ASCII;
  se.message.ascii = "domain-start-end";
  nvtxDomainRangeEnd(domain, nvtxDomainRangeStartEx(domain, &se));
  nvtxDomainDestroy(wide_domain);

  // A start/end range opened here and closed on a worker thread, and the worker's own ranges,
  // which must arrive when the worker exits (long before any 100 ms flush of this thread).
  nvtxRangeId_t cross = nvtxRangeStartA("cross-thread");
  std::thread worker([&] {
    c.worker_tid = static_cast<uint32_t>(gettid());
    nvtxRangePushA("worker-outer");
    nvtxRangePushA("worker-inner");
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangeEnd(cross);
  });
  worker.join();
  c.worker_records_came_at_thread_exit =
      collector.WaitFor([&](const auto& b) { return HasTid(b, c.worker_tid); }, milliseconds(3000));

  // fork(): the child reports under its own pid on its own connection, and does not resend the
  // parent's unsent records ("before-fork" sits in this thread's batch when fork runs).
  nvtxMarkA("before-fork");
  c.child_pid = fork();
  if (c.child_pid == 0) {
    std::thread child_thread([] { nvtxMarkA("child-mark"); });
    child_thread.join();
    _exit(0);
  }
  if (c.child_pid > 0) {
    waitpid(c.child_pid, nullptr, 0);
    collector.WaitFor([](const auto& b) { return HasMark(b, "child-mark"); }, milliseconds(3000));
  }

  // This thread's batch goes out with the first record more than 100 ms after its last flush.
  std::this_thread::sleep_for(milliseconds(150));
  nvtxMarkA("final");
  collector.WaitFor([](const auto& b) { return HasMark(b, "final"); }, milliseconds(3000));

  c.batches = collector.batches();
  c.setup_errors = collector.errors();
  for (const auto& b : c.batches) {
    c.ranges.insert(c.ranges.end(), b.ranges.begin(), b.ranges.end());
    c.marks.insert(c.marks.end(), b.marks.begin(), b.marks.end());
  }
  return c;
}

const Captured& Workload() {
  static const Captured captured = RunWorkload();
  return captured;
}

const RangeRecord* FindRange(const std::string& name) {
  for (const auto& r : Workload().ranges) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const MarkRecord* FindMark(const std::string& name) {
  for (const auto& m : Workload().marks) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

TEST(NvtxInjection, BatchesDecodeCleanly) {
  const Captured& c = Workload();
  EXPECT_TRUE(c.setup_errors.empty()) << c.setup_errors.front();
  ASSERT_FALSE(c.batches.empty());
  for (const auto& b : c.batches) {
    EXPECT_TRUE(b.pid == static_cast<uint32_t>(getpid()) ||
                b.pid == static_cast<uint32_t>(c.child_pid));
    EXPECT_EQ(b.dropped, 0u);
    EXPECT_TRUE(b.notices.empty()) << b.notices.front();
  }
}

TEST(NvtxInjection, PushPopNestsWithDepth) {
  const Captured& c = Workload();
  EXPECT_EQ(c.push_levels[0], 0);
  EXPECT_EQ(c.push_levels[1], 1);
  EXPECT_EQ(c.push_levels[2], 2);
  EXPECT_EQ(c.pop_levels[0], 2);
  EXPECT_EQ(c.pop_levels[1], 1);
  EXPECT_EQ(c.pop_levels[2], 0);
  const RangeRecord* outer = FindRange("outer");
  const RangeRecord* middle = FindRange("middle-\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80");
  const RangeRecord* inner = FindRange("inner-ex");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(middle, nullptr) << "wide name not converted to UTF-8";
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(outer->depth, 0u);
  EXPECT_EQ(middle->depth, 1u);
  EXPECT_EQ(inner->depth, 2u);
  EXPECT_EQ(outer->domain, "");
  EXPECT_EQ(outer->tid, c.main_tid);
  EXPECT_LE(outer->start, middle->start);
  EXPECT_LE(middle->start, inner->start);
  EXPECT_LE(inner->start, inner->end);
  EXPECT_LE(inner->end, middle->end);
  EXPECT_LE(middle->end, outer->end);
}

TEST(NvtxInjection, MarksInAllEncodings) {
  ASSERT_NE(FindMark("mark-a"), nullptr);
  ASSERT_NE(FindMark("mark-w-\xc3\xa9"), nullptr);
  ASSERT_NE(FindMark("mark-ex-wide"), nullptr);
  EXPECT_EQ(FindMark("mark-a")->tid, Workload().main_tid);
  EXPECT_GT(FindMark("mark-a")->time, 0);
}

TEST(NvtxInjection, DomainsAndRegisteredStrings) {
  const RangeRecord* reg = FindRange("registered-name");
  ASSERT_NE(reg, nullptr);
  EXPECT_EQ(reg->domain, "my-domain");
  EXPECT_EQ(reg->depth, 0u);
  const RangeRecord* interleaved = FindRange("default-interleaved");
  ASSERT_NE(interleaved, nullptr);
  EXPECT_EQ(interleaved->domain, "");
  EXPECT_EQ(interleaved->depth, 0u);
  EXPECT_LE(reg->end, interleaved->end);
  const RangeRecord* in_wide = FindRange("in-wide-domain");
  ASSERT_NE(in_wide, nullptr);
  EXPECT_EQ(in_wide->domain, "wide-domain-\xc3\x9f");
  const MarkRecord* mark = FindMark("registered-wide-\xc3\xb8");
  ASSERT_NE(mark, nullptr);
  EXPECT_EQ(mark->domain, "my-domain");
  const RangeRecord* se = FindRange("domain-start-end");
  ASSERT_NE(se, nullptr);
  EXPECT_EQ(se->domain, "my-domain");
  EXPECT_LE(se->start, se->end);
}

TEST(NvtxInjection, StartEndAcrossThreads) {
  const Captured& c = Workload();
  const RangeRecord* cross = FindRange("cross-thread");
  ASSERT_NE(cross, nullptr);
  EXPECT_EQ(cross->tid, c.main_tid) << "start/end ranges belong to the thread that started them";
  EXPECT_EQ(cross->depth, 0u);
  EXPECT_LE(cross->start, cross->end);
}

TEST(NvtxInjection, SecondThreadFlushesAtExit) {
  const Captured& c = Workload();
  EXPECT_TRUE(c.worker_records_came_at_thread_exit);
  const RangeRecord* outer = FindRange("worker-outer");
  const RangeRecord* inner = FindRange("worker-inner");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(outer->tid, c.worker_tid);
  EXPECT_NE(c.worker_tid, c.main_tid);
  EXPECT_EQ(outer->depth, 0u);
  EXPECT_EQ(inner->depth, 1u);
}

TEST(NvtxInjection, ForkedChildReportsAloneUnderItsPid) {
  const Captured& c = Workload();
  ASSERT_GT(c.child_pid, 0);
  int child_batches = 0;
  int before_fork = 0;
  for (const auto& b : c.batches) {
    for (const auto& m : b.marks) {
      if (m.name == "before-fork") {
        ++before_fork;
        EXPECT_EQ(b.pid, static_cast<uint32_t>(getpid()));
      }
      if (m.name == "child-mark") {
        EXPECT_EQ(b.pid, static_cast<uint32_t>(c.child_pid));
      }
    }
    if (b.pid == static_cast<uint32_t>(c.child_pid)) ++child_batches;
  }
  EXPECT_EQ(child_batches, 1);
  EXPECT_EQ(before_fork, 1);
}

// Not a pass/fail benchmark (the machine is shared): prints the cost of one push+pop with the
// library capturing, and fails only if it is absurd.
TEST(NvtxInjection, PushPopCost) {
  Workload();
  constexpr int kPairs = 20000;
  auto begin = std::chrono::steady_clock::now();
  for (int i = 0; i < kPairs; ++i) {
    nvtxRangePushA("bench");
    nvtxRangePop();
  }
  auto elapsed = std::chrono::steady_clock::now() - begin;
  double ns = std::chrono::duration<double, std::nano>(elapsed).count() / kPairs;
  std::cout << "nvtx push+pop with injection: " << ns << " ns/pair\n";
  RecordProperty("push_pop_ns", static_cast<int>(ns));
  EXPECT_LT(ns, 20000.0);
}

// Behind an agent that does not read, the socket fills and records are lost: the next batch
// that goes out carries their count and says why, once.
TEST(NvtxInjection, RecordsLostToAFullSocketAreCountedAndExplained) {
  // The library loaded and connected, and the other tests' workload captured before the flood.
  ASSERT_FALSE(Workload().batches.empty());
  TestCollector& collector = Collector();
  const size_t before = collector.batches().size();
  collector.Pause(true);
  for (int i = 0; i < 400'000; ++i) {
    nvtxRangePushA("flood");
    nvtxRangePop();
  }
  collector.Pause(false);
  const auto told = [&](const std::vector<wire::Batch>& batches) {
    for (size_t i = before; i < batches.size(); ++i) {
      for (const std::string& n : batches[i].notices) {
        if (n.find("the agent's socket was full") != std::string::npos) return true;
      }
    }
    return false;
  };
  // A batch goes out with the first record 100 ms after the last: marks until one says it.
  bool said = false;
  for (int i = 0; i < 40 && !said; ++i) {
    std::this_thread::sleep_for(milliseconds(150));
    nvtxMarkA("after-flood");
    said = collector.WaitFor(told, milliseconds(50));
  }
  ASSERT_TRUE(said);
  uint64_t dropped = 0, ranges = 0, notices = 0;
  const std::vector<wire::Batch> batches = collector.batches();
  for (size_t i = before; i < batches.size(); ++i) {
    dropped += batches[i].dropped;
    for (const RangeRecord& r : batches[i].ranges) ranges += r.name == "flood";
    notices += batches[i].notices.size();
  }
  EXPECT_GT(dropped, 0u);
  // Every range either arrived or was counted (the earlier tests' last ranges arrive too: they
  // may have been dropped, hence at least).
  EXPECT_GE(dropped + ranges, 400'000u);
  EXPECT_GT(ranges, 0u);
  EXPECT_EQ(notices, 1u);  // said once
}

}  // namespace
}  // namespace rankscope::inject

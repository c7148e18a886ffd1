#include "model/gpu/gpu_stats.h"

#include <gtest/gtest.h>

#include <random>

namespace rankscope {
namespace {

GpuActivityRecord Kernel(const std::string& name, uint32_t stream, TimeNs start, DurationNs d) {
  GpuActivityRecord r;
  r.kind = GpuActivityKind::kKernel;
  r.device = 0;
  r.stream = stream;
  r.start = start;
  r.end = start + d;
  r.name = name;
  return r;
}

TEST(GpuStatsFold, CountsEachKindOfWorkPerWindow) {
  GpuStatsFold fold(1000);
  fold.Add(Kernel("gemm", 7, 100, 30));
  fold.Add(Kernel("gemm", 7, 200, 10));
  fold.Add(Kernel("gemm", 7, 300, 20));
  fold.Add(Kernel("gemm", 8, 150, 5));    // another stream: another row
  fold.Add(Kernel("gemm", 7, 1000, 40));  // the next window
  GpuActivityRecord copy;
  copy.kind = GpuActivityKind::kMemcpy;
  copy.device = 0;
  copy.stream = 7;
  copy.copy_kind = 1;
  copy.start = 500;
  copy.end = 600;
  copy.bytes = 4096;
  copy.name = "ignored";
  fold.Add(copy);
  EXPECT_EQ(fold.held(), 6u);

  EXPECT_TRUE(fold.TakeClosed(999).empty());  // the first window ends at 1000
  std::vector<GpuStats> rows = fold.TakeClosed(1000);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(fold.held(), 1u);
  const GpuStats& gemm7 = rows[0];
  EXPECT_EQ(gemm7.key.name, "gemm");
  EXPECT_EQ(gemm7.key.stream, 7u);
  EXPECT_EQ(gemm7.window_start, 0);
  EXPECT_EQ(gemm7.window, 1000);
  EXPECT_EQ(gemm7.count, 3);
  EXPECT_EQ(gemm7.total, 60);
  EXPECT_EQ(gemm7.min, 10);
  EXPECT_EQ(gemm7.p50, 20);
  EXPECT_EQ(gemm7.max, 30);
  EXPECT_EQ(rows[1].key.stream, 8u);
  EXPECT_EQ(rows[1].count, 1);
  const GpuStats& copies = rows[2];
  EXPECT_EQ(copies.key.kind, GpuActivityKind::kMemcpy);
  EXPECT_EQ(copies.key.sub_kind, 1);
  EXPECT_EQ(copies.key.name, "");  // copies are kept apart by direction, not by name
  EXPECT_EQ(copies.bytes, 4096);

  std::vector<GpuStats> rest = fold.TakeAll();
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0].window_start, 1000);
  EXPECT_EQ(rest[0].total, 40);
  EXPECT_EQ(fold.held(), 0u);
}

TEST(GpuStatsFold, ARecordForATakenWindowComesAsARowOfItsOwn) {
  GpuStatsFold fold(1000);
  fold.Add(Kernel("k", 1, 100, 10));
  ASSERT_EQ(fold.TakeClosed(5000).size(), 1u);
  fold.Add(Kernel("k", 1, 900, 50));  // late: its window was taken
  std::vector<GpuStats> late = fold.TakeClosed(5000);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].window_start, 0);
  EXPECT_EQ(late[0].count, 1);
  EXPECT_EQ(late[0].total, 50);
}

TEST(GpuStatsFold, TimesBeforeZeroFallInTheirOwnWindow) {
  GpuStatsFold fold(1000);
  fold.Add(Kernel("k", 1, -1, 1));
  fold.Add(Kernel("k", 1, -1000, 1));
  fold.Add(Kernel("k", 1, -1001, 1));
  std::vector<GpuStats> rows = fold.TakeAll();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].window_start, -2000);
  EXPECT_EQ(rows[0].count, 1);
  EXPECT_EQ(rows[1].window_start, -1000);
  EXPECT_EQ(rows[1].count, 2);
}

// Fed in any order and taken at any points, the rows add up to the records: what the report
// reads (counts, time and bytes per kernel name) is the same as from the records themselves.
TEST(GpuStatsFold, RowsAddUpToTheRecordsWhateverTheOrder) {
  std::mt19937 rng(7);
  std::vector<GpuActivityRecord> records;
  for (int i = 0; i < 5000; ++i) {
    const int name = static_cast<int>(rng() % 5);
    records.push_back(Kernel("k" + std::to_string(name), 1 + rng() % 3, i * 997 % 2'000'000,
                             1 + (rng() % 1000) * (name + 1)));
  }
  std::shuffle(records.begin(), records.end(), rng);
  GpuStatsFold fold(100'000);
  std::vector<GpuStats> rows;
  for (size_t i = 0; i < records.size(); ++i) {
    fold.Add(records[i]);
    if (i % 700 == 0) {
      for (GpuStats& r : fold.TakeClosed(records[i].start - 50'000)) rows.push_back(std::move(r));
    }
  }
  for (GpuStats& r : fold.TakeAll()) rows.push_back(std::move(r));

  std::map<GpuStatsKey, GpuStats> merged = MergeGpuStats(rows);
  std::map<GpuStatsKey, std::vector<DurationNs>> expected;
  for (const GpuActivityRecord& r : records) {
    expected[{r.kind, r.device, r.stream, 0, r.name}].push_back(r.end - r.start);
  }
  ASSERT_EQ(merged.size(), expected.size());
  for (const auto& [key, durations] : expected) {
    const GpuStats& m = merged.at(key);
    DurationNs total = 0;
    for (DurationNs d : durations) total += d;
    EXPECT_EQ(m.count, static_cast<int64_t>(durations.size()));
    EXPECT_EQ(m.total, total);
    EXPECT_EQ(m.min, *std::min_element(durations.begin(), durations.end()));
    EXPECT_EQ(m.max, *std::max_element(durations.begin(), durations.end()));
    EXPECT_GE(m.p50, m.min);
    EXPECT_LE(m.p50, m.max);
  }
}

TEST(MergeGpuStats, MedianOfOneRowIsItsOwnAndOfSeveralTheCountWeightedMiddle) {
  GpuStats a;
  a.key.name = "k";
  a.count = 3;
  a.p50 = 10;
  a.min = 1;
  a.max = 20;
  GpuStats b = a;
  b.count = 10;
  b.p50 = 50;
  b.window_start = 1000;
  EXPECT_EQ(MergeGpuStats({a}).at(a.key).p50, 10);
  EXPECT_EQ(MergeGpuStats({a, b}).at(a.key).p50, 50);  // 10 of 13 records are in b's row
  EXPECT_EQ(MergeGpuStats({a, b}).at(a.key).count, 13);
  EXPECT_EQ(MergeGpuStats({a, b}).at(a.key).window_start, 0);
}

// The agent's rows when there are kernel rows (they count what its buffer dropped), else the
// records.
TEST(KernelTotals, FromTheRowsWhenThereAreAnyElseFromTheRecords) {
  std::vector<GpuActivityRecord> records = {Kernel("a", 1, 0, 10), Kernel("a", 2, 50, 5),
                                            Kernel("b", 1, 100, 7)};
  GpuActivityRecord launch = Kernel("cudaLaunchKernel", 0, 0, 3);
  launch.kind = GpuActivityKind::kRuntime;
  records.push_back(launch);
  std::map<std::string, KernelTotal> from_records = KernelTotals(records, {}, true);
  ASSERT_EQ(from_records.size(), 2u);
  EXPECT_EQ(from_records["a"].count, 2);
  EXPECT_EQ(from_records["a"].total, 15);
  EXPECT_EQ(from_records["b"].total, 7);

  GpuStatsFold fold(1000);
  for (const GpuActivityRecord& r : records) fold.Add(r);
  fold.Add(Kernel("b", 1, 200, 3));  // one the buffer dropped: in the sums only
  std::map<std::string, KernelTotal> from_rows = KernelTotals(records, fold.TakeAll(), true);
  ASSERT_EQ(from_rows.size(), 2u);
  EXPECT_EQ(from_rows["a"].total, 15);
  EXPECT_EQ(from_rows["b"].count, 2);
  EXPECT_EQ(from_rows["b"].total, 10);
  // Rows of an agent that never sent its final batch lack its last windows: the records then.
  GpuStatsFold partial(1000);
  partial.Add(Kernel("a", 1, 0, 10));
  std::map<std::string, KernelTotal> unfinished = KernelTotals(records, partial.TakeAll(), false);
  EXPECT_EQ(unfinished["a"].total, 15);
  EXPECT_EQ(unfinished["b"].total, 7);
}

TEST(GpuStatsFold, TakeAllTakesEveryWindowHoweverLate) {
  GpuStatsFold fold(1000);
  fold.Add(Kernel("k", 1, INT64_MAX - 10, 5));
  fold.Add(Kernel("k", 1, INT64_MIN, 5));
  EXPECT_EQ(fold.TakeAll().size(), 2u);
  EXPECT_EQ(fold.held(), 0u);
}

}  // namespace
}  // namespace rankscope

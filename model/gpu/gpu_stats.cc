#include "model/gpu/gpu_stats.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/robust_stats.h"

namespace rankscope {

GpuStatsFold::GpuStatsFold(DurationNs window) : window_(std::max<DurationNs>(window, 1)) {}

void GpuStatsFold::Add(const GpuActivityRecord& record) {
  GpuStatsKey key;
  key.kind = record.kind;
  key.device = record.device;
  key.stream = record.stream;
  if (record.kind == GpuActivityKind::kMemcpy) key.sub_kind = record.copy_kind;
  if (record.kind == GpuActivityKind::kSync) key.sub_kind = record.sync_kind;
  if (record.kind == GpuActivityKind::kKernel || record.kind == GpuActivityKind::kRuntime) {
    key.name = record.name;
  }
  Open& open = open_[WindowStartOf(record.start, window_)][std::move(key)];
  open.durations.push_back(std::max<DurationNs>(record.end - record.start, 0));
  open.bytes += record.bytes;
  ++held_;
}

std::vector<GpuStats> GpuStatsFold::Take(TimeNs until, bool all) {
  std::vector<GpuStats> rows;
  if (!all && until < INT64_MIN + window_) return rows;  // no window ends that early
  auto it = open_.begin();
  // A window [s, s + window) ends at or before `until` (written to stay clear of overflow).
  for (; it != open_.end() && (all || it->first <= until - window_); ++it) {
    for (auto& [key, open] : it->second) {
      GpuStats row;
      row.window_start = it->first;
      row.window = window_;
      row.key = key;
      row.count = static_cast<int64_t>(open.durations.size());
      const auto [lo, hi] = std::minmax_element(open.durations.begin(), open.durations.end());
      row.min = *lo;
      row.max = *hi;
      for (DurationNs d : open.durations) row.total += d;
      row.bytes = open.bytes;
      held_ -= open.durations.size();
      row.p50 = MedianNs(std::move(open.durations));
      rows.push_back(std::move(row));
    }
  }
  open_.erase(open_.begin(), it);
  return rows;
}

std::map<GpuStatsKey, GpuStats> MergeGpuStats(const std::vector<GpuStats>& rows) {
  std::map<GpuStatsKey, GpuStats> merged;
  std::map<GpuStatsKey, std::vector<std::pair<DurationNs, int64_t>>> medians;
  for (const GpuStats& row : rows) {
    auto [it, fresh] = merged.try_emplace(row.key, row);
    GpuStats& m = it->second;
    if (!fresh) {
      m.window_start = std::min(m.window_start, row.window_start);
      m.count += row.count;
      m.total += row.total;
      m.bytes += row.bytes;
      m.min = std::min(m.min, row.min);
      m.max = std::max(m.max, row.max);
    }
    medians[row.key].emplace_back(row.p50, row.count);
  }
  for (auto& [key, m] : merged) {
    std::vector<std::pair<DurationNs, int64_t>>& p = medians[key];
    if (p.size() == 1) continue;
    std::sort(p.begin(), p.end());
    int64_t seen = 0;
    for (const auto& [value, count] : p) {
      seen += count;
      if (2 * seen >= m.count) {
        m.p50 = value;
        break;
      }
    }
  }
  return merged;
}

std::map<std::string, KernelTotal> KernelTotals(const std::vector<GpuActivityRecord>& records,
                                                const std::vector<GpuStats>& stats,
                                                bool stats_complete) {
  std::map<std::string, KernelTotal> totals;
  for (const GpuStats& row : stats_complete ? stats : std::vector<GpuStats>()) {
    if (row.key.kind != GpuActivityKind::kKernel) continue;
    KernelTotal& t = totals[row.key.name];
    t.count += row.count;
    t.total += row.total;
  }
  if (!totals.empty()) return totals;
  for (const GpuActivityRecord& g : records) {
    if (g.kind != GpuActivityKind::kKernel) continue;
    KernelTotal& t = totals[g.name];
    ++t.count;
    t.total += g.end - g.start;
  }
  return totals;
}

}  // namespace rankscope

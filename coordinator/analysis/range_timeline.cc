#include "coordinator/analysis/range_timeline.h"

#include <algorithm>
#include <utility>

namespace rankscope {

RangeTimeline::RangeTimeline(const std::vector<RangeRecord>* ranges) : ranges_(ranges) {
  std::map<uint32_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < ranges_->size(); ++i) by_tid[(*ranges_)[i].tid].push_back(i);
  for (auto& [tid, indices] : by_tid) {
    Thread thread;
    thread.tid = tid;
    // Enclosing ranges first among equal starts, so parents precede their children.
    std::sort(indices.begin(), indices.end(), [&](size_t a, size_t b) {
      const RangeRecord& ra = (*ranges_)[a];
      const RangeRecord& rb = (*ranges_)[b];
      if (ra.start != rb.start) return ra.start < rb.start;
      return ra.end > rb.end;
    });
    thread.by_start = std::move(indices);
    thread.parent.resize(thread.by_start.size(), -1);
    thread.depth.resize(thread.by_start.size(), 0);
    // The nesting is recomputed rather than read from RangeRecord::depth: start/end ranges carry
    // depth 0 even when they sit inside a push/pop range.
    std::vector<int> open;
    for (size_t pos = 0; pos < thread.by_start.size(); ++pos) {
      const RangeRecord& r = range(thread.by_start[pos]);
      while (!open.empty() &&
             range(thread.by_start[static_cast<size_t>(open.back())]).end <= r.start) {
        open.pop_back();
      }
      thread.parent[pos] = open.empty() ? -1 : open.back();
      thread.depth[pos] = static_cast<int>(open.size());
      open.push_back(static_cast<int>(pos));
    }
    threads_.push_back(std::move(thread));
  }
}

bool RangeTimeline::HasThread(uint32_t tid) const {
  return std::any_of(threads_.begin(), threads_.end(),
                     [&](const Thread& t) { return t.tid == tid; });
}

void RangeTimeline::OverlappingOnThread(const Thread& thread, TimeNs begin, TimeNs end,
                                        std::vector<size_t>* positions) const {
  positions->clear();
  const auto first_inside =
      std::partition_point(thread.by_start.begin(), thread.by_start.end(),
                           [&](size_t index) { return range(index).start < begin; });
  const auto inside = static_cast<size_t>(first_inside - thread.by_start.begin());
  // Of the ranges opened before the window, only the last one and its ancestors can still be
  // open at begin: with proper nesting every other one closed before the last one opened.
  for (int pos = static_cast<int>(inside) - 1; pos >= 0;
       pos = thread.parent[static_cast<size_t>(pos)]) {
    if (range(thread.by_start[static_cast<size_t>(pos)]).end > begin) {
      positions->push_back(static_cast<size_t>(pos));
    }
  }
  std::reverse(positions->begin(), positions->end());
  for (size_t pos = inside; pos < thread.by_start.size(); ++pos) {
    if (range(thread.by_start[pos]).start >= end) break;
    positions->push_back(pos);
  }
}

std::vector<size_t> RangeTimeline::Overlapping(TimeNs begin, TimeNs end,
                                               std::optional<uint32_t> tid) const {
  std::vector<size_t> out;
  if (end <= begin) return out;
  std::vector<size_t> positions;
  for (const Thread& thread : threads_) {
    if (tid.has_value() && thread.tid != *tid) continue;
    OverlappingOnThread(thread, begin, end, &positions);
    for (size_t pos : positions) out.push_back(thread.by_start[pos]);
  }
  std::stable_sort(out.begin(), out.end(),
                   [&](size_t a, size_t b) { return range(a).start < range(b).start; });
  return out;
}

void RangeTimeline::AddThreadTime(const Thread& thread, TimeNs begin, TimeNs end, WindowTime* out,
                                  std::vector<std::pair<TimeNs, TimeNs>>* covered) const {
  std::vector<size_t> positions;
  OverlappingOnThread(thread, begin, end, &positions);
  if (positions.empty()) return;
  std::vector<TimeNs> bounds = {begin, end};
  for (size_t pos : positions) {
    const RangeRecord& r = range(thread.by_start[pos]);
    bounds.push_back(std::clamp(r.start, begin, end));
    bounds.push_back(std::clamp(r.end, begin, end));
  }
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  // Per elementary segment, the deepest covering range (the later-opened one on a tie) owns it.
  // Windows are short gaps between collectives, so the ranges per window are few.
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const TimeNs s = bounds[i];
    const TimeNs e = bounds[i + 1];
    int best = -1;
    for (size_t pos : positions) {
      const RangeRecord& r = range(thread.by_start[pos]);
      if (r.start > s || r.end < e) continue;
      if (best < 0 || thread.depth[pos] >= thread.depth[static_cast<size_t>(best)]) {
        best = static_cast<int>(pos);
      }
    }
    if (best < 0) continue;
    out->by_range[range(thread.by_start[static_cast<size_t>(best)]).name] += e - s;
    covered->emplace_back(s, e);
  }
}

WindowTime RangeTimeline::TimeIn(TimeNs begin, TimeNs end, std::optional<uint32_t> tid) const {
  WindowTime out;
  if (end <= begin) return out;
  out.window = end - begin;
  std::vector<std::pair<TimeNs, TimeNs>> covered;
  for (const Thread& thread : threads_) {
    if (tid.has_value() && thread.tid != *tid) continue;
    AddThreadTime(thread, begin, end, &out, &covered);
  }
  // Union of the covered segments across threads.
  std::sort(covered.begin(), covered.end());
  TimeNs reach = begin;
  for (const auto& [s, e] : covered) {
    const TimeNs from = std::max(s, reach);
    if (e > from) {
      out.covered += e - from;
      reach = e;
    }
  }
  return out;
}

}  // namespace rankscope

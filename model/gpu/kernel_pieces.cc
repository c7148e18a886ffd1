#include "model/gpu/kernel_pieces.h"

#include <algorithm>
#include <iterator>

namespace rankscope {

void KernelPieceFold::AddBoundary(TimeNs t) {
  if (t > decided_until_) {
    boundaries_.insert(t);
    return;
  }
  // Too late to split the pieces at t, unless no kernel time lies where it falls: none at all so
  // far (an MPI code's long first barrier, a CPU-only rank), or none yet in the open piece it
  // falls in (then the open piece just begins at t).
  if (!any_kernel_time_ || (open_.empty() && (!any_boundary_ || t > open_from_))) {
    if (!any_boundary_ || t > open_from_) {
      open_from_ = t;
      any_boundary_ = true;
    }
    first_boundary_ = std::min(first_boundary_, t);
    return;
  }
  ++late_;
}

void KernelPieceFold::AddKernel(TimeNs start, TimeNs end, const std::string& name) {
  if (end <= start) return;
  // Its time before decided_until_ is lost: wrong where a piece was (after the first boundary).
  if (start < decided_until_ && any_boundary_ && std::min(end, decided_until_) > first_boundary_) {
    ++late_;
  }
  const TimeNs accounted = std::max(start, decided_until_);
  if (end <= accounted) return;
  kernels_.emplace(start, Held{end, accounted, name});
}

std::vector<KernelPiece> KernelPieceFold::TakeDecided(TimeNs until) {
  if (until <= decided_until_) return {};
  // The boundaries decided now, d[0] < ... < d[m-1], cut the time into segments: 0 before d[0]
  // (the open piece, from open_from_, where there was a boundary before), k in [d[k-1], d[k]),
  // and m from d[m-1] on (the new open piece).
  const std::vector<TimeNs> d(boundaries_.begin(), boundaries_.upper_bound(until));
  boundaries_.erase(boundaries_.begin(), boundaries_.upper_bound(until));
  const size_t m = d.size();
  const bool had_open = any_boundary_;
  std::vector<std::map<std::string, DurationNs>> segment(m + 1);
  for (auto it = kernels_.begin(); it != kernels_.end() && it->first < until;) {
    Held& k = it->second;
    const TimeNs stop = std::min(k.end, until);
    for (TimeNs from = k.accounted; from < stop;) {
      const auto idx = static_cast<size_t>(std::upper_bound(d.begin(), d.end(), from) - d.begin());
      const TimeNs to = idx < m ? std::min(stop, d[idx]) : stop;
      if (idx > 0 || had_open) {  // before any boundary: in no piece
        segment[idx][k.name] += to - from;
        any_kernel_time_ = true;
      }
      from = to;
    }
    k.accounted = stop;
    it = k.end <= until ? kernels_.erase(it) : std::next(it);
  }
  std::vector<KernelPiece> out;
  auto emit = [&](TimeNs from, TimeNs to, const std::map<std::string, DurationNs>& names) {
    for (const auto& [name, time] : names) {
      if (time > 0) out.push_back({from, to, name, time});
    }
  };
  if (m == 0) {
    for (const auto& [name, time] : segment[0]) open_[name] += time;
  } else {
    if (had_open) {
      for (const auto& [name, time] : segment[0]) open_[name] += time;
      emit(open_from_, d[0], open_);
    }
    first_boundary_ = std::min(first_boundary_, d[0]);
    for (size_t k = 1; k < m; ++k) emit(d[k - 1], d[k], segment[k]);
    open_ = std::move(segment[m]);
    open_from_ = d[m - 1];
    any_boundary_ = true;
  }
  decided_until_ = until;
  return out;
}

DurationNs KernelTimeFromPieces(const std::vector<KernelPiece>& pieces, TimeNs begin, TimeNs end,
                                std::map<std::string, DurationNs>* by_name) {
  DurationNs total = 0;
  auto it = std::partition_point(pieces.begin(), pieces.end(),
                                 [&](const KernelPiece& p) { return p.from < begin; });
  for (; it != pieces.end() && it->from < end; ++it) {
    if (it->to > end) continue;  // a piece across the gap's end (another boundary's)
    (*by_name)[it->name] += it->time;
    total += it->time;
  }
  return total;
}

}  // namespace rankscope

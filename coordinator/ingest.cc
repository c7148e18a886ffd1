#include "coordinator/ingest.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "core/clock_model.h"
#include "proto/convert.h"

namespace rankscope {

namespace {

// The records of `in` this coordinator knows, appended to `out`; the others counted.
template <typename Proto, typename Record>
void AppendKnown(const google::protobuf::RepeatedPtrField<Proto>& in, std::vector<Record>* out,
                 int* unknown) {
  for (const Proto& p : in) {
    Record r;
    if (FromProto(p, &r)) {
      out->push_back(std::move(r));
    } else {
      ++*unknown;
    }
  }
}

}  // namespace

void AddBatchToRank(const v1::UploadBatch& batch, RankData* rank) {
  int unknown = 0;
  for (const auto& s : batch.clock_samples()) rank->clock_samples.push_back(FromProto(s));
  AppendKnown(batch.collectives(), &rank->collectives, &unknown);
  AppendKnown(batch.p2p(), &rank->p2p, &unknown);
  for (const auto& r : batch.ranges()) rank->ranges.push_back(FromProto(r));
  for (const auto& m : batch.marks()) rank->marks.push_back(FromProto(m));
  AppendKnown(batch.gpu(), &rank->gpu, &unknown);
  AppendKnown(batch.gpu_stats(), &rank->gpu_stats, &unknown);
  AppendKnown(batch.launch_latency(), &rank->launch_latency, &unknown);
  AppendKnown(batch.kernel_pieces(), &rank->kernel_pieces, &unknown);
  AppendKnown(batch.nccl_compute(), &rank->nccl_compute, &unknown);
  for (const auto& c : batch.mpi_calls()) {
    // A call this coordinator does not know is still time inside MPI: kept as kUnknown.
    MpiCallRecord r;
    FromProto(c, &r);
    rank->mpi_calls.push_back(r);
  }
  for (const auto& n : batch.notices()) rank->notices.push_back(ToText(n.text()));
  if (unknown > 0) {
    rank->notices.push_back(std::to_string(unknown) +
                            " records with an operation this coordinator does not know (skipped)");
  }
  rank->dropped_records = std::max(rank->dropped_records, batch.dropped_records());
  rank->kernel_pieces_late = std::max(rank->kernel_pieces_late, batch.kernel_pieces_late());
  rank->nccl_compute_late = std::max(rank->nccl_compute_late, batch.nccl_compute_late());
  rank->compute_kernels_summed |= batch.compute_kernels_summed();
  if (batch.has_exit()) rank->exit_time = batch.exit().time();
  if (batch.has_exit() && batch.exit().status_unseen()) {
    rank->exit_unseen = true;
  } else if (batch.has_exit()) {
    rank->exit_code = batch.exit().exit_code();
    rank->term_signal = batch.exit().term_signal();
  }
  if (batch.has_nccl()) {
    // A long run's summary comes in parts (proto/upload_chunk.h): the first has its own fields.
    RankNccl part = FromProto(batch.nccl());
    if (!rank->nccl) {
      rank->nccl = std::move(part);
    } else {
      AppendNcclPart(std::move(part), &*rank->nccl);
    }
  }
  if (batch.has_topology()) {
    rank->topology_source = ToText(batch.topology().source());
    rank->topology_xml = ToText(batch.topology().xml());
  }
  if (batch.has_nvml()) {
    Result<NvmlSnapshot> nvml = FromProto(batch.nvml());
    if (nvml.ok()) {
      rank->nvml = std::move(nvml).value();
    } else {
      rank->nvml_error = nvml.status().message();
    }
  }
  if (batch.has_proc()) rank->proc = FromProto(batch.proc());
  if (batch.has_tool_report()) {
    const v1::ToolReport& t = batch.tool_report();
    rank->tool_run = ToolRun{ToText(t.tool()), ToText(t.path()), ToText(t.host()), ToText(t.csv()),
                             ToText(t.error())};
  }
  for (const v1::SweepCheck& c : batch.sweep()) rank->sweep.push_back(FromProto(c));
  if (batch.final()) rank->finished = true;
}

void AddBatchToTally(const v1::UploadBatch& batch, TimeNs received, LiveTally* tally) {
  tally->heard = received;
  if (batch.has_proc()) {
    tally->open.reset();  // its final figures: the program has ended
    tally->ended = true;
  } else if (batch.has_proc_so_far()) {
    tally->open.reset();
    if (batch.proc_so_far().has_open_call()) {
      const v1::OpenMpiCall& c = batch.proc_so_far().open_call();
      tally->open = LiveOpenCall{c.collective(),
                                 c.op(),
                                 c.comm_id(),
                                 c.seq(),
                                 c.comm_size(),
                                 c.peer(),
                                 received - std::max<int64_t>(0, c.inside_ns()),
                                 c.enter_ns(),
                                 c.polling()};
    }
  }
  if (batch.in_mpi_through() > tally->through) {
    tally->through = batch.in_mpi_through();
    tally->in_mpi = batch.in_mpi_ns();
  }
  const v1::ProcessStats* proc = batch.has_proc()          ? &batch.proc()
                                 : batch.has_proc_so_far() ? &batch.proc_so_far()
                                                           : nullptr;
  if (proc != nullptr && proc->sampled_wall_ns() > 0) {
    tally->cpu = proc->sched_unreadable() ? proc->cpu_user_ns() + proc->cpu_system_ns()
                                          : proc->sched_cpu_ns();
    tally->run_delay = proc->run_delay_ns();
    tally->throttled = proc->has_cpu_cgroup() ? proc->cpu_cgroup().throttled_ns() : 0;
    tally->proc_wall = proc->sampled_wall_ns();
    if (proc->has_main_thread()) tally->main_thread = FromProto(proc->main_thread());
  }
}

Result<Session> SessionFromSpools(const std::vector<SpoolContents>& spools,
                                  const std::vector<std::string>& sources) {
  Session s;
  if (spools.empty()) return Result<Session>::Error("no spools given");
  s.session_id = ToText(spools.front().identity.session_id());
  s.job_id = ToText(spools.front().identity.job_id());
  s.launcher = ToText(spools.front().identity.launcher());
  s.partial = true;
  s.partial_reasons.push_back(
      "rebuilt from " + std::to_string(spools.size()) +
      " agent spool(s): the coordinator wrote no session (killed, or its machine lost), so the "
      "launcher's exit code and the time before the first agent registered are unknown");
  std::map<std::pair<int, int>, size_t> by_rank;  // (rank, restart) -> index in s.ranks
  for (size_t i = 0; i < spools.size(); ++i) {
    const SpoolContents& spool = spools[i];
    const std::string source = i < sources.size() ? sources[i] : "spool " + std::to_string(i);
    if (ToText(spool.identity.session_id()) != s.session_id) {
      return Result<Session>::Error(source + " belongs to session '" +
                                    ToText(spool.identity.session_id()) + "', not '" +
                                    s.session_id + "': give the spools of one session");
    }
    RankData rank;
    rank.id = FromProto(spool.identity);
    if (rank.id.rank < 0 || rank.id.world_size <= 0 || rank.id.world_size > kMaxWorldSize ||
        rank.id.rank >= rank.id.world_size) {
      s.partial_reasons.push_back(source + ": rank " + std::to_string(rank.id.rank) + " of " +
                                  std::to_string(rank.id.world_size) + " is out of range; skipped");
      continue;
    }
    s.world_size = std::max(s.world_size, rank.id.world_size);
    std::vector<const v1::UploadBatch*> batches;
    for (const v1::UploadBatch& b : spool.batches) batches.push_back(&b);
    std::stable_sort(batches.begin(), batches.end(),
                     [](const auto* a, const auto* b) { return a->batch_seq() < b->batch_seq(); });
    std::set<uint64_t> seen;
    for (const v1::UploadBatch* b : batches) {
      if (seen.insert(b->batch_seq()).second) AddBatchToRank(*b, &rank);
    }
    if (!spool.problem.empty()) {
      rank.notices.push_back("its spool " + source + " ends early: " + spool.problem);
      rank.finished = false;
    }
    const std::pair<int, int> key{rank.id.rank, rank.id.restart_count};
    if (auto it = by_rank.find(key); it != by_rank.end()) {
      s.ranks[it->second] = std::move(rank);
    } else {
      by_rank[key] = s.ranks.size();
      s.ranks.push_back(std::move(rank));
    }
  }
  std::sort(s.ranks.begin(), s.ranks.end(), [](const RankData& a, const RankData& b) {
    return std::tie(a.id.rank, a.id.restart_count) < std::tie(b.id.rank, b.id.restart_count);
  });
  // The session's span in coordinator time: from the first clock exchange to the last exit or
  // exchange any agent saw.
  bool any = false;
  for (const RankData& r : s.ranks) {
    for (const ClockSample& c : r.clock_samples) {
      s.start = any ? std::min(s.start, c.t2) : c.t2;
      s.end = any ? std::max(s.end, c.t3) : c.t3;
      any = true;
    }
    if (r.exit_time != 0 && !r.clock_samples.empty()) {
      if (Result<ClockModel> fit = FitClockModel(r.clock_samples); fit.ok()) {
        s.end = std::max(s.end, fit.value().ToCoordinator(r.exit_time));
      }
    }
  }
  return s;
}

}  // namespace rankscope

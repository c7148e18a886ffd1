#include "coordinator/ingest.h"

#include <algorithm>
#include <string>
#include <utility>

#include "proto/convert.h"

namespace rankscope {

RankIdentity IdentityFromProto(const v1::Identity& p) {
  RankIdentity id;
  id.rank = p.rank();
  id.local_rank = p.local_rank();
  id.world_size = p.world_size();
  id.node = ToText(p.node_name());
  id.host = ToText(p.host());
  id.launcher = ToText(p.launcher());
  id.job_id = ToText(p.job_id());
  id.agent_pid = p.agent_pid();
  id.program_pid = p.program_pid();
  id.restart_count = p.restart_count();
  for (const std::string& arg : p.program()) id.program.push_back(ToText(arg));
  return id;
}

RankNccl NcclFromProto(const v1::NcclSummary& p) {
  RankNccl n;
  n.version = ToText(p.nccl_version());
  n.log_file = ToText(p.log_file());
  n.skipped_lines = p.skipped_lines();
  for (const std::string& line : p.problems()) n.problems.push_back(ToText(line));
  for (const v1::NcclCommunicator& c : p.communicators()) {
    NcclCommInfo info{ToText(c.comm_id()), c.rank(),     c.nranks(), c.nnodes(), c.channels(),
                      ToText(c.bus_id()),  c.cuda_dev(), {},         {}};
    for (const v1::NcclTransport& t : c.transports()) {
      info.transports.push_back(
          {t.channel(), t.peer(), ToText(t.kind()), ToText(t.via()), t.gdrdma()});
    }
    info.ring_order.assign(c.ring_order().begin(), c.ring_order().end());
    n.communicators.push_back(std::move(info));
  }
  for (const v1::NcclCall& c : p.calls()) {
    n.calls.push_back({ToText(c.comm_id()), c.seq(), ToText(c.op()), c.count(),
                       ToText(c.datatype()), c.bytes(), c.root(), ToText(c.algo()),
                       ToText(c.proto()), c.channels()});
  }
  return n;
}

void AddBatchToRank(const v1::UploadBatch& batch, RankData* rank) {
  int unknown = 0;
  for (const auto& s : batch.clock_samples()) rank->clock_samples.push_back(FromProto(s));
  for (const auto& c : batch.collectives()) {
    CollectiveRecord r;
    if (FromProto(c, &r)) {
      rank->collectives.push_back(r);
    } else {
      ++unknown;
    }
  }
  for (const auto& p : batch.p2p()) {
    P2PRecord r;
    if (FromProto(p, &r)) {
      rank->p2p.push_back(r);
    } else {
      ++unknown;
    }
  }
  for (const auto& r : batch.ranges()) rank->ranges.push_back(FromProto(r));
  for (const auto& m : batch.marks()) rank->marks.push_back(FromProto(m));
  for (const auto& g : batch.gpu()) {
    GpuActivityRecord r;
    if (FromProto(g, &r)) {
      rank->gpu.push_back(std::move(r));
    } else {
      ++unknown;
    }
  }
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
  if (batch.has_exit()) rank->exit_time = batch.exit().time();
  if (batch.has_exit() && batch.exit().status_unseen()) {
    rank->exit_unseen = true;
  } else if (batch.has_exit()) {
    rank->exit_code = batch.exit().exit_code();
    rank->term_signal = batch.exit().term_signal();
  }
  if (batch.has_nccl()) rank->nccl = NcclFromProto(batch.nccl());
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
  for (const v1::SweepCheck& c : batch.sweep()) rank->sweep.push_back(FromProto(c));
  if (batch.final()) rank->finished = true;
}

}  // namespace rankscope

// Conversions between the core event model (core/records.h) and its protobuf form
// (rankscope/v1). Used by the agent (records -> proto) and the coordinator (proto -> records).
#pragma once

#include "core/clock_model.h"
#include "core/control_page.h"
#include "core/proc_stats.h"
#include "core/records.h"
#include "core/status.h"
#include "model/gpu/gpu_stats.h"
#include "model/gpu/kernel_pieces.h"
#include "model/gpu/launch_latency.h"
#include "model/nccl/rank_nccl.h"
#include "model/rank_identity.h"
#include "model/sweep_result.h"
#include "model/topology/nvml.h"
#include "rankscope/v1/rankscope.pb.h"

namespace rankscope {

// A text field as received (`bytes` on the wire: rankscope.proto), made valid UTF-8: each
// ill-formed part becomes U+FFFD (core/utf8.h), so one stray byte in a program argument or an
// NVTX name cannot break the reports that write it as JSON.
std::string ToText(const std::string& wire);

void ToProto(const CollectiveRecord& r, v1::Collective* out);
void ToProto(const P2PRecord& r, v1::P2P* out);
void ToProto(const RangeRecord& r, v1::Range* out);
void ToProto(const MarkRecord& r, v1::Mark* out);
void ToProto(const ClockSample& s, v1::ClockSample* out);
void ToProto(const GpuActivityRecord& r, v1::GpuActivity* out);
void ToProto(const MpiCallRecord& r, v1::MpiCall* out);
void ToProto(const GpuStats& s, v1::GpuStats* out);
void ToProto(const LaunchLatency& l, v1::LaunchLatency* out);
void ToProto(const KernelPiece& k, v1::KernelPiece* out);
void ToProto(const std::pair<TimeNs, TimeNs>& span, v1::ComputeSpan* out);

// Fields out of range (an op or kind this build does not know) become kUnknown / kSend and
// are reported by returning false; the record is still filled.
bool FromProto(const v1::Collective& p, CollectiveRecord* out);
bool FromProto(const v1::P2P& p, P2PRecord* out);
RangeRecord FromProto(const v1::Range& p);
MarkRecord FromProto(const v1::Mark& p);
ClockSample FromProto(const v1::ClockSample& p);
bool FromProto(const v1::GpuActivity& p, GpuActivityRecord* out);
// A kind this build does not know: false, the row left unread.
bool FromProto(const v1::GpuStats& p, GpuStats* out);
// False when the arrays differ in length or the buckets are not increasing.
bool FromProto(const v1::LaunchLatency& p, LaunchLatency* out);
bool FromProto(const v1::KernelPiece& p, KernelPiece* out);
// False when it ends before it starts.
bool FromProto(const v1::ComputeSpan& p, std::pair<TimeNs, TimeNs>* out);
// A call this build does not know becomes MpiCall::kUnknown (false); the rest is kept.
bool FromProto(const v1::MpiCall& p, MpiCallRecord* out);

// A rank's identity as its agent registers it for session `session_id`, and as the coordinator
// reads it (text made valid UTF-8, as ToText).
v1::Identity ToProto(const RankIdentity& id, const std::string& session_id);
RankIdentity FromProto(const v1::Identity& p);

// The agent's per-rank summaries, sent once (NVML: an error message when it could not be read).
v1::ProcessStats ToProto(const ProcessTreeStats& s);
ProcessTreeStats FromProto(const v1::ProcessStats& p);
MainThreadStates FromProto(const v1::MainThreadStates& m);
// The blocking MPI call a rank is inside, read at `now` (MonotonicNow, as its enter_ns).
v1::OpenMpiCall ToProto(const OpenCall& call, TimeNs now);
v1::NvmlReport ToProto(const Result<NvmlSnapshot>& snapshot);
v1::SweepCheck ToProto(const SweepCheckResult& r);
SweepCheckResult FromProto(const v1::SweepCheck& p);
Result<NvmlSnapshot> FromProto(const v1::NvmlReport& p);
// A rank's NCCL summary (or one part of it: proto/upload_chunk.h). Enum values this build does
// not know read as kUnknown.
v1::NcclSummary ToProto(const RankNccl& n);
RankNccl FromProto(const v1::NcclSummary& p);

}  // namespace rankscope

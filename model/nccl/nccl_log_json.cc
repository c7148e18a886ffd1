#include "model/nccl/nccl_log_json.h"

#include <optional>

#include "model/nccl/nccl_types.h"

namespace rankscope {
namespace {

using Json = nlohmann::ordered_json;

// NCCL logs use -1 for "not printed".
Json OrNull(int64_t v) { return v < 0 ? Json(nullptr) : Json(v); }

Json OrNull(const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); }

Json SourceJson(const NcclLineSource& s) {
  return Json{{"host", s.host},
              {"pid", OrNull(s.pid)},
              {"tid", OrNull(s.tid)},
              {"cuda_dev", OrNull(s.cuda_dev)}};
}

Json TransportJson(const NcclTransport& t) {
  return Json{{"channel", OrNull(t.channel)},
              {"from", OrNull(t.from_rank)},
              {"to", OrNull(t.to_rank)},
              {"peer", OrNull(t.peer_rank)},
              {"kind", std::string(NcclTransportKindName(t.kind))},
              {"via", t.via},
              {"gdrdma", t.gdrdma},
              {"proxy_rank", OrNull(t.proxy_rank)}};
}

Json CommunicatorJson(const NcclCommunicator& c) {
  Json rings = Json::array();
  for (const NcclRing& r : c.rings) {
    rings.push_back(Json{{"channel", r.channel},
                         {"prev", OrNull(r.prev)},
                         {"next", OrNull(r.next)},
                         {"order", r.order},
                         {"order_truncated", r.order_truncated}});
  }
  Json transports = Json::array();
  for (const NcclTransport& t : c.transports) transports.push_back(TransportJson(t));
  return Json{{"comm", c.comm},
              {"comm_id", OrNull(c.comm_id)},
              {"init_function", OrNull(c.init_function)},
              {"parent_comm", OrNull(c.parent_comm)},
              {"rank", OrNull(c.rank)},
              {"nranks", OrNull(c.nranks)},
              {"cuda_dev", OrNull(c.cuda_dev)},
              {"nvml_dev", OrNull(c.nvml_dev)},
              {"bus_id", OrNull(c.bus_id)},
              {"nnodes", OrNull(c.nnodes)},
              {"local_ranks", OrNull(c.local_ranks)},
              {"channels", OrNull(c.nchannels)},
              {"trees", static_cast<int64_t>(c.trees.size())},
              {"init_complete", c.init_complete},
              {"destroyed", c.destroyed},
              {"rings", rings},
              {"transports", transports},
              {"source", SourceJson(c.source)}};
}

Json CollectiveJson(const NcclCollective& c) {
  return Json{{"comm_id", OrNull(c.comm_id)},
              {"comm", c.comm},
              {"seq", c.seq},
              {"op", c.op == NcclOp::kUnknown ? c.op_name : std::string(NcclOpName(c.op))},
              {"count", c.count},
              {"datatype", c.datatype == NcclDataType::kUnknown
                               ? Json(nullptr)
                               : Json(std::string(NcclDataTypeName(c.datatype)))},
              {"bytes", c.bytes},
              {"root", OrNull(c.root)},
              {"redop", c.redop == NcclRedOp::kUnknown ? Json(nullptr)
                                                       : Json(std::string(NcclRedOpName(c.redop)))},
              {"nranks", OrNull(c.nranks)},
              {"stream", c.stream},
              {"algo", c.tuned ? Json(std::string(NcclAlgoName(c.algo))) : Json(nullptr)},
              {"proto", c.tuned ? Json(std::string(NcclProtoName(c.proto))) : Json(nullptr)},
              {"channels", OrNull(c.nchannels)},
              {"line", c.line}};
}

}  // namespace

Json NcclLogToJson(const NcclLog& log) {
  Json comms = Json::array();
  for (const NcclCommunicator& c : log.communicators) comms.push_back(CommunicatorJson(c));
  Json colls = Json::array();
  for (const NcclCollective& c : log.collectives) colls.push_back(CollectiveJson(c));
  Json errors = Json::array();
  for (const NcclLogProblem& p : log.errors) {
    errors.push_back(Json{{"line", p.line}, {"message", p.message}});
  }
  Json warnings = Json::array();
  for (const NcclLogProblem& p : log.warnings) {
    warnings.push_back(Json{{"line", p.line}, {"message", p.message}});
  }
  return Json{{"nccl_version", OrNull(log.nccl_version)},
              {"communicators", comms},
              {"collectives", colls},
              {"lines", log.lines},
              {"skipped_lines", log.skipped_lines},
              {"unmatched_tuning_lines", log.unmatched_tuning_lines},
              {"truncated_last_line", log.truncated_last_line},
              {"error_count", log.error_count},
              {"errors", errors},
              {"warning_count", log.warning_count},
              {"warnings", warnings}};
}

}  // namespace rankscope

#include "model/nccl/nccl_log_parser.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <utility>

#include "model/nccl/text.h"

namespace rankscope {

// One log line split into NCCL's prefix and the message after "NCCL INFO ".
struct NcclLogParser::Line {
  int64_t number = 0;
  NcclLineSource source;
  std::string process_key;  // "host:pid"
  std::string thread_key;   // "host:pid:tid"
  std::string_view message;
  std::vector<std::string_view> words;
  size_t length = 0;  // of the whole line, prefix included
};

namespace {

constexpr std::string_view kInfoMarker = " NCCL INFO ";
constexpr std::string_view kWarnMarker = " NCCL WARN ";
// NCCL writes each line through a 1024-byte buffer; a line this long may have been cut.
constexpr size_t kNcclLineLimit = 1000;

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

std::string Quote(std::string_view text) { return "'" + std::string(text) + "'"; }

// Reads NCCL's prefix "[timestamp] host:pid:tid [cudaDev]" (the timestamp exists from 2.26 on
// and only when NCCL_DEBUG_TIMESTAMP_LEVELS asks for it; its format is the user's, so only the
// last two words are read).
std::optional<NcclLineSource> ParsePrefix(std::string_view header) {
  header = TrimRight(header);
  size_t space = header.rfind(' ');
  if (space == std::string_view::npos) return std::nullopt;
  std::string_view dev = header.substr(space + 1);
  std::string_view rest = TrimRight(header.substr(0, space));
  if (dev.size() < 3 || dev.front() != '[' || dev.back() != ']') return std::nullopt;
  size_t start = rest.rfind(' ');
  std::string_view who = start == std::string_view::npos ? rest : rest.substr(start + 1);
  size_t tid_colon = who.rfind(':');
  if (tid_colon == std::string_view::npos || tid_colon == 0) return std::nullopt;
  size_t pid_colon = who.rfind(':', tid_colon - 1);
  if (pid_colon == std::string_view::npos) return std::nullopt;
  auto pid = ParseInt32(who.substr(pid_colon + 1, tid_colon - pid_colon - 1));
  auto tid = ParseInt32(who.substr(tid_colon + 1));
  auto cuda_dev = ParseInt32(dev.substr(1, dev.size() - 2));
  if (!pid || !tid || !cuda_dev) return std::nullopt;
  NcclLineSource source;
  source.host = std::string(who.substr(0, pid_colon));
  source.pid = *pid;
  source.tid = *tid;
  source.cuda_dev = *cuda_dev;
  return source;
}

// The word after `key` in words[from..], or empty if `key` is absent. Values lose a trailing
// '-': NCCL 2.23-2.28 print "key %d- Init START" for split communicators.
std::string_view ValueAfter(const std::vector<std::string_view>& words, std::string_view key,
                            size_t from = 0) {
  for (size_t i = from; i + 1 < words.size(); ++i) {
    if (words[i] != key) continue;
    std::string_view value = words[i + 1];
    if (value.size() > 1 && value.back() == '-') value.remove_suffix(1);
    return value;
  }
  return {};
}

bool LooksLikePointer(std::string_view text) {
  if (text == "(nil)") return true;
  return text.size() > 2 && text.substr(0, 2) == "0x" && ParseHex(text).has_value();
}

// "3[1]" -> rank 3, device "1". 2.18 prints the busId in hex inside the brackets.
bool ParseRankDevice(std::string_view word, int32_t* rank, std::string* device) {
  size_t open = word.find('[');
  if (open == std::string_view::npos || word.back() != ']') return false;
  auto value = ParseInt32(word.substr(0, open));
  if (!value) return false;
  *rank = *value;
  *device = std::string(word.substr(open + 1, word.size() - open - 2));
  return true;
}

// "d0/d1/d2" -> down ranks.
bool ParseDown(std::string_view text, std::array<int32_t, 3>* down) {
  auto parts = SplitOn(text, '/');
  if (parts.size() != 3) return false;
  for (size_t i = 0; i < 3; ++i) {
    auto value = ParseInt32(parts[i]);
    if (!value) return false;
    (*down)[i] = *value;
  }
  return true;
}

// "d0/d1/d2->me->up" as printed in the "Trees" summary line.
bool ParseTreeArrow(std::string_view text, NcclTree* tree) {
  size_t first = text.find("->");
  if (first == std::string_view::npos) return false;
  size_t second = text.find("->", first + 2);
  if (second == std::string_view::npos) return false;
  auto up = ParseInt32(text.substr(second + 2));
  if (!up || !ParseInt32(text.substr(first + 2, second - first - 2))) return false;
  if (!ParseDown(text.substr(0, first), &tree->down)) return false;
  tree->up = *up;
  return true;
}

}  // namespace

bool ClassifyNcclVia(std::string_view via, NcclTransport* t) {
  auto segments = SplitOn(via, '/');
  std::string_view head = segments[0];
  t->gdrdma = Contains(via, "/GDRDMA");
  t->p2p_read = Contains(via, "/read");
  t->copy_engine = Contains(via, "/CE");
  if (head == "P2P" && segments.size() >= 2) {
    std::string_view how = segments[1];
    if (how == "CUMEM") {
      t->kind = NcclTransportKind::kP2pCumem;
    } else if (how == "MNNVL") {
      t->kind = NcclTransportKind::kP2pMnnvl;
    } else if (how == "IPC") {
      t->kind = NcclTransportKind::kP2pIpc;
    } else if (how == "direct pointer") {
      t->kind = NcclTransportKind::kP2pDirect;
    } else if (how == "indirect" && segments.size() >= 3) {
      t->kind = NcclTransportKind::kP2pIndirect;
      std::string device;
      if (!ParseRankDevice(segments[2], &t->intermediate_rank, &device)) return false;
    } else {
      return false;
    }
    return true;
  }
  if (head == "SHM") {
    t->kind = NcclTransportKind::kShm;
    return true;
  }
  if ((head == "NET" || head == "COLLNET") && segments.size() >= 3) {
    t->net_name = std::string(segments[1]);
    // "0" or "0(3)": NIC index, then the proxy rank when PXN sends through another GPU's NIC.
    std::string_view dev = segments[2];
    size_t paren = dev.find('(');
    auto net_dev = ParseInt32(dev.substr(0, paren));
    if (!net_dev) return false;
    t->net_dev = *net_dev;
    if (paren != std::string_view::npos) {
      if (dev.back() != ')') return false;
      auto proxy = ParseInt32(dev.substr(paren + 1, dev.size() - paren - 2));
      if (!proxy) return false;
      t->proxy_rank = *proxy;
    }
    if (head == "COLLNET") {
      t->kind = NcclTransportKind::kCollNet;
    } else if (t->net_name.rfind("IB", 0) == 0) {
      t->kind = NcclTransportKind::kNetIb;
    } else if (t->net_name == "Socket") {
      t->kind = NcclTransportKind::kNetSocket;
    } else {
      t->kind = NcclTransportKind::kNetOther;
    }
    return true;
  }
  return false;
}

void NcclLogParser::Feed(std::string_view chunk) {
  if (finished_) return;
  while (!chunk.empty()) {
    size_t newline = chunk.find('\n');
    std::string_view piece = chunk.substr(0, newline);
    bool complete = newline != std::string_view::npos;
    chunk.remove_prefix(complete ? newline + 1 : chunk.size());
    if (partial_overflow_ || partial_.size() + piece.size() > kMaxLineBytes) {
      partial_overflow_ = true;
      partial_.clear();
    } else if (!complete || !partial_.empty()) {
      partial_.append(piece);
    }
    if (!complete) return;
    if (partial_overflow_) {
      ++log_.lines;
      ++log_.skipped_lines;
    } else {
      ParseLine(partial_.empty() ? piece : std::string_view(partial_), false);
    }
    partial_.clear();
    partial_overflow_ = false;
  }
}

void NcclLogParser::Finish() {
  if (finished_) return;
  finished_ = true;
  if (partial_.empty() && !partial_overflow_) return;
  log_.truncated_last_line = true;
  if (partial_overflow_) {
    ++log_.lines;
    ++log_.skipped_lines;
  } else {
    ParseLine(partial_, true);
  }
  partial_.clear();
}

void NcclLogParser::ParseLine(std::string_view text, bool unterminated) {
  ++log_.lines;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  if (TrimRight(text).empty()) return;
  if (unterminated) {
    ++log_.skipped_lines;
    return;
  }
  size_t info = text.find(kInfoMarker);
  if (info == std::string_view::npos) {
    // WARN lines: "host:pid:tid [dev] file.cc:123 NCCL WARN message".
    if (size_t warn = text.find(kWarnMarker); warn != std::string_view::npos) {
      ++log_.warning_count;
      if (log_.warnings.size() < NcclLog::kMaxProblems) {
        log_.warnings.push_back(
            {log_.lines, std::string(TrimRight(text.substr(warn + kWarnMarker.size())))});
      }
      return;
    }
    // NCCL_DEBUG=VERSION or WARN print the version bare, as did 2.18 on stdout:
    // "NCCL version 2.18.1+cuda12.1".
    auto words = SplitWords(text);
    if (words.size() >= 3 && words[0] == "NCCL" && words[1] == "version") {
      if (log_.nccl_version.empty()) log_.nccl_version = std::string(words[2]);
      return;
    }
    ++log_.skipped_lines;
    return;
  }

  Line line;
  line.number = log_.lines;
  auto source = ParsePrefix(text.substr(0, info));
  if (!source) {
    Error(line, "malformed NCCL line prefix " + Quote(text.substr(0, info)) +
                    " (expected host:pid:tid [cudaDev])");
    ++log_.skipped_lines;
    return;
  }
  line.source = std::move(*source);
  line.process_key = line.source.host + ":" + std::to_string(line.source.pid);
  line.thread_key = line.process_key + ":" + std::to_string(line.source.tid);
  line.length = text.size();
  line.message = text.substr(info + kInfoMarker.size());
  line.words = SplitWords(line.message);
  if (line.words.empty() || !ParseMessage(line)) ++log_.skipped_lines;
}

bool NcclLogParser::ParseMessage(const Line& line) {
  const auto& w = line.words;
  std::string_view msg = line.message;
  if (w.size() >= 3 && w[0] == "NCCL" && w[1] == "version") {
    if (log_.nccl_version.empty()) log_.nccl_version = std::string(w[2]);
    return true;
  }
  bool names_comm = std::find(w.begin(), w.end(), "comm") != w.end();
  if (names_comm) {
    for (std::string_view event :
         {"Init START", "Init COMPLETE", "Destroy COMPLETE", "Abort COMPLETE"}) {
      if (Contains(msg, event)) return ParseCommLifecycle(line, event);
    }
    if (w[0] == "comm" && Contains(msg, " nNodes ")) return ParseCommSummary(line);
  }
  if (w.size() >= 2 && w[0].size() > 1 && w[0].back() == ':' && w[1] == "opCount") {
    return ParseCollectiveCall(line);
  }
  if (Contains(msg, " Bytes -> Algo ")) return ParseTuning(line);
  if ((w[0] == "Channel" || w[0] == "CollNet") && Contains(msg, " via ")) {
    return ParseTransport(line);
  }
  if (w[0] == "Channel") return ParseRingOrder(line);
  if (w[0] == "Ring") return ParseRingNeighbours(line);
  if (w[0] == "Tree") return ParseTree(line);
  if (w[0] == "Trees") return ParseTrees(line);
  if (w.size() >= 3 && w[1] == "coll" && w[2] == "channels,") return ParseCollChannels(line);
  return false;
}

// 2.18.1:      "comm %p rank %d nranks %d cudaDev %d busId %lx commId 0x%llx - Init COMPLETE"
// 2.18.3-2.20: "comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId %lx commId 0x%llx - Init
//               START" (and COMPLETE)
// 2.21-2.22:   "ncclCommInitRank comm %p ..." / "ncclCommSplit comm %p ... parent %p color %d key
//               %d commId 0x%llx - Init START"
// 2.23-2.28:   "%s comm %p ..." (the API function); split children print "parent %p [splitCount
//               %d] color %d key %d- Init START" and no commId.
// All:         "comm %p rank %d nranks %d cudaDev %d busId %lx - Destroy COMPLETE" (or Abort).
bool NcclLogParser::ParseCommLifecycle(const Line& line, std::string_view event) {
  const auto& w = line.words;
  size_t at = std::find(w.begin(), w.end(), "comm") - w.begin();
  if (at + 1 >= w.size() || !LooksLikePointer(w[at + 1])) {
    return Error(line, "communicator line without a comm pointer");
  }
  std::string_view ptr = w[at + 1];
  bool is_init = event.substr(0, 4) == "Init";
  std::string key = line.process_key + " " + std::string(ptr);
  auto found = comm_by_key_.find(key);
  if (!is_init) {
    if (found != comm_by_key_.end()) log_.communicators[found->second].destroyed = true;
    return true;
  }

  auto rank = ParseInt32(ValueAfter(w, "rank", at));
  auto nranks = ParseInt32(ValueAfter(w, "nranks", at));
  if (!rank || !nranks) {
    return Error(line, "Init line with a missing or malformed rank/nranks: " + Quote(line.message));
  }
  struct IntField {
    std::string_view key;
    int32_t NcclCommunicator::*field;
  };
  // Parse everything before touching the log, so a malformed line leaves no half-made entry.
  std::vector<std::pair<int32_t NcclCommunicator::*, int32_t>> ints = {
      {&NcclCommunicator::rank, *rank}, {&NcclCommunicator::nranks, *nranks}};
  for (IntField f : {IntField{"cudaDev", &NcclCommunicator::cuda_dev},
                     IntField{"nvmlDev", &NcclCommunicator::nvml_dev},
                     IntField{"color", &NcclCommunicator::split_color},
                     IntField{"key", &NcclCommunicator::split_key},
                     IntField{"splitCount", &NcclCommunicator::split_count}}) {
    std::string_view text = ValueAfter(w, f.key, at);
    if (text.empty()) continue;
    auto value = ParseInt32(text);
    if (!value) return Error(line, "malformed " + std::string(f.key) + " " + Quote(text));
    ints.push_back({f.field, *value});
  }
  std::string_view bus_id = ValueAfter(w, "busId", at);
  if (!bus_id.empty() && !ParseHex(bus_id)) return Error(line, "malformed busId " + Quote(bus_id));
  std::string_view comm_id = ValueAfter(w, "commId", at);
  std::optional<uint64_t> comm_id_value;
  if (!comm_id.empty()) {
    comm_id_value = ParseHex(comm_id);
    if (!comm_id_value) return Error(line, "malformed commId " + Quote(comm_id));
  }
  std::string_view parent = ValueAfter(w, "parent", at);

  // A pointer freed by ncclCommDestroy can come back for a new communicator.
  size_t index;
  if (found != comm_by_key_.end() && !log_.communicators[found->second].destroyed &&
      !(event == "Init START" && log_.communicators[found->second].init_complete)) {
    index = found->second;
  } else {
    comm_by_key_.erase(key);
    index = CommIndex(line, ptr);
  }
  NcclCommunicator& comm = log_.communicators[index];
  for (const auto& [field, value] : ints) comm.*field = value;
  if (at == 1 && w[0].substr(0, 4) == "nccl") comm.init_function = std::string(w[0]);
  if (!bus_id.empty()) comm.bus_id = std::string(bus_id);
  if (comm_id_value) {
    comm.comm_id = std::string(comm_id);
    comm.comm_id_value = *comm_id_value;
    comm.has_comm_id = true;
  }
  if (!parent.empty()) comm.parent_comm = std::string(parent);
  if (event == "Init COMPLETE") comm.init_complete = true;
  SetCurrent(line, index);
  return true;
}

// 2.20+: "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d".
bool NcclLogParser::ParseCommSummary(const Line& line) {
  const auto& w = line.words;
  if (w.size() < 2 || !LooksLikePointer(w[1])) return Error(line, "malformed comm pointer");
  auto rank = ParseInt32(ValueAfter(w, "rank"));
  auto nranks = ParseInt32(ValueAfter(w, "nRanks"));
  auto nnodes = ParseInt32(ValueAfter(w, "nNodes"));
  auto local_ranks = ParseInt32(ValueAfter(w, "localRanks"));
  auto local_rank = ParseInt32(ValueAfter(w, "localRank"));
  if (!rank || !nranks || !nnodes || !local_ranks || !local_rank) {
    return Error(line, "malformed communicator summary " + Quote(line.message));
  }
  size_t index = CommIndex(line, w[1]);
  NcclCommunicator& comm = log_.communicators[index];
  comm.rank = *rank;
  comm.nranks = *nranks;
  comm.nnodes = *nnodes;
  comm.local_ranks = *local_ranks;
  comm.local_rank = *local_rank;
  SetCurrent(line, index);
  return true;
}

// 2.18-2.28: "%s: opCount %lx sendbuff %p recvbuff %p count %zi datatype %d op %d root %d
// comm %p [nranks=%d] stream %p" (count is %zu from 2.22).
bool NcclLogParser::ParseCollectiveCall(const Line& line) {
  const auto& w = line.words;
  std::string_view op_name = w[0].substr(0, w[0].size() - 1);
  std::string what = " in " + std::string(op_name) + " call";
  auto op_count = ParseHex(ValueAfter(w, "opCount"));
  if (!op_count) return Error(line, "malformed opCount" + what);
  std::string_view count_text = ValueAfter(w, "count");
  auto count = ParseUint(count_text);
  if (!count) return Error(line, "malformed count " + Quote(count_text) + what);
  std::optional<int32_t> ints[3];
  std::string_view keys[3] = {"datatype", "op", "root"};
  for (int i = 0; i < 3; ++i) {
    std::string_view text = ValueAfter(w, keys[i]);
    ints[i] = ParseInt32(text);
    if (!ints[i])
      return Error(line, "malformed " + std::string(keys[i]) + " " + Quote(text) + what);
  }
  std::string_view comm_ptr = ValueAfter(w, "comm");
  if (!LooksLikePointer(comm_ptr)) return Error(line, "malformed comm " + Quote(comm_ptr) + what);
  int32_t nranks = -1;
  for (std::string_view word : w) {
    if (word.substr(0, 8) == "[nranks=" && word.back() == ']') {
      auto value = ParseInt32(word.substr(8, word.size() - 9));
      if (!value) return Error(line, "malformed " + Quote(word) + what);
      nranks = *value;
    }
  }

  size_t comm_index = CommIndex(line, comm_ptr);
  NcclCommunicator& comm = log_.communicators[comm_index];
  if (comm.nranks < 0) comm.nranks = nranks;
  NcclCollective call;
  call.comm = std::string(comm_ptr);
  call.comm_index = static_cast<int32_t>(comm_index);
  call.comm_id = comm.comm_id;
  call.comm_id_value = comm.comm_id_value;
  call.op = ParseNcclOp(op_name);
  call.op_name = std::string(op_name);
  CommState& state = comm_state_[comm_index];
  call.seq = IsPointToPoint(call.op) ? state.next_p2p_seq++ : state.next_seq++;
  call.nccl_op_count = *op_count;
  call.count = *count;
  call.datatype_code = *ints[0];
  call.datatype = NcclDataTypeFromCode(*ints[0]);
  call.bytes = static_cast<Bytes>(*count) * NcclDataTypeSizeBytes(call.datatype);
  call.redop_code = *ints[1];
  call.redop = NcclRedOpFromCode(*ints[1]);
  call.root = *ints[2];
  call.nranks = nranks;
  call.stream = std::string(ValueAfter(w, "stream"));
  call.source = line.source;
  call.line = line.number;
  size_t call_index = log_.collectives.size();
  log_.collectives.push_back(std::move(call));
  SetCurrent(line, comm_index);

  // Only rank 0 prints tuning lines (2.20+); point-to-point work, empty calls and one-rank
  // communicators never get one.
  const NcclCollective& added = log_.collectives.back();
  if (!IsPointToPoint(added.op) && added.count > 0 && nranks != 1 && comm.rank <= 0) {
    auto& pending = pending_tuning_[line.process_key];
    pending.push_back(call_index);
    if (pending.size() > kMaxPendingTuning) pending.pop_front();
  }
  return true;
}

// 2.20-2.22: "%ld Bytes -> Algo %d proto %d time %f"
// 2.23:      "%s: %ld Bytes -> Algo %d proto %d time %f"
// 2.24-2.28: "%s: %ld Bytes -> Algo %s proto %s channel{Lo..Hi}={%d..%d}"
// Printed by rank 0 while NCCL plans the group, after the call lines of that group and, within
// a group, sorted by size rather than in call order; so a tuning line goes to the oldest waiting
// call of this process with the same function and size.
bool NcclLogParser::ParseTuning(const Line& line) {
  const auto& w = line.words;
  size_t at = 0;
  while (at + 2 < w.size() && !(w[at] == "Bytes" && w[at + 1] == "->" && w[at + 2] == "Algo")) {
    ++at;
  }
  if (at + 2 >= w.size() || at == 0 || at > 2) return false;
  NcclOp op = NcclOp::kUnknown;
  if (at == 2) {
    if (w[0].back() != ':') return false;
    op = ParseNcclOp(w[0].substr(0, w[0].size() - 1));
  }
  auto bytes = ParseInt(w[at - 1]);
  if (!bytes) return Error(line, "malformed byte count " + Quote(w[at - 1]) + " in tuning line");
  if (at + 5 >= w.size() || w[at + 4] != "proto") {
    return Error(line, "tuning line without algorithm/protocol: " + Quote(line.message));
  }
  NcclAlgo algo = ParseNcclAlgo(w[at + 3]);
  NcclProto proto = ParseNcclProto(w[at + 5]);
  if (algo == NcclAlgo::kUnknown || proto == NcclProto::kUnknown) {
    return Error(line, "unknown algorithm/protocol " + Quote(w[at + 3]) + "/" + Quote(w[at + 5]));
  }
  int32_t lo = -1, hi = -1;
  if (at + 6 < w.size()) {
    // "channel{Lo..Hi}={0..23}"
    std::string_view range = w[at + 6];
    size_t open = range.find("={");
    size_t dots = range.find("..", open == std::string_view::npos ? 0 : open);
    if (open != std::string_view::npos && dots != std::string_view::npos && range.back() == '}') {
      auto lo_value = ParseInt32(range.substr(open + 2, dots - open - 2));
      auto hi_value = ParseInt32(range.substr(dots + 2, range.size() - dots - 3));
      if (!lo_value || !hi_value) return Error(line, "malformed channel range " + Quote(range));
      lo = *lo_value;
      hi = *hi_value;
    }
  }

  auto& pending = pending_tuning_[line.process_key];
  auto same_op = [&](size_t i) { return op == NcclOp::kUnknown || log_.collectives[i].op == op; };
  auto same_size = [&](size_t i) {
    const NcclCollective& c = log_.collectives[i];
    // AllGather-like sizes may be counted over all ranks; accept either.
    return c.bytes == *bytes || (c.nranks > 0 && c.bytes * c.nranks == *bytes);
  };
  auto match = std::find_if(pending.begin(), pending.end(),
                            [&](size_t i) { return same_op(i) && same_size(i); });
  if (match == pending.end()) match = std::find_if(pending.begin(), pending.end(), same_op);
  if (match == pending.end()) {
    ++log_.unmatched_tuning_lines;
    return true;
  }
  NcclCollective& call = log_.collectives[*match];
  pending.erase(match);
  call.tuned = true;
  call.algo = algo;
  call.proto = proto;
  if (lo >= 0 && hi >= lo) {
    call.channel_lo = lo;
    call.channel_hi = hi;
    call.nchannels = hi - lo + 1;
  }
  return true;
}

// Rank 0 only: "Channel %02d/%02d : r0 r1 ..." (2.18 pads ranks to 4 columns and prints at most
// 20; 2.28 cuts the line at 128 characters and ends it with "...").
bool NcclLogParser::ParseRingOrder(const Line& line) {
  const auto& w = line.words;
  if (w.size() < 3 || w[2] != ":") return false;
  auto slash = w[1].find('/');
  if (slash == std::string_view::npos) return false;
  auto channel = ParseInt32(w[1].substr(0, slash));
  if (!channel || !ParseInt32(w[1].substr(slash + 1))) {
    return Error(line, "malformed channel " + Quote(w[1]) + " in ring order");
  }
  std::vector<int32_t> order;
  bool truncated = false;
  for (size_t i = 3; i < w.size(); ++i) {
    if (Contains(w[i], "...")) {
      truncated = true;
      break;
    }
    auto rank = ParseInt32(w[i]);
    if (!rank) return Error(line, "malformed rank " + Quote(w[i]) + " in ring order");
    order.push_back(*rank);
  }
  int64_t comm_index = CurrentComm(line);
  if (comm_index < 0) return false;
  NcclCommunicator& comm = log_.communicators[comm_index];
  if (comm.nranks > 0 && std::ssize(order) < comm.nranks) truncated = true;
  NcclRing& ring = RingFor(static_cast<size_t>(comm_index), *channel);
  ring.order = std::move(order);
  ring.order_truncated = truncated;
  return true;
}

// 2.18-2.28, every rank: "Ring %02d : prev -> me -> next".
bool NcclLogParser::ParseRingNeighbours(const Line& line) {
  const auto& w = line.words;
  if (w.size() != 8 || w[2] != ":" || w[4] != "->" || w[6] != "->") return false;
  auto channel = ParseInt32(w[1]);
  auto prev = ParseInt32(w[3]);
  auto me = ParseInt32(w[5]);
  auto next = ParseInt32(w[7]);
  if (!channel || !prev || !me || !next) {
    return Error(line, "malformed ring line " + Quote(line.message));
  }
  int64_t comm_index = CurrentComm(line);
  if (comm_index < 0) return false;
  NcclRing& ring = RingFor(static_cast<size_t>(comm_index), *channel);
  ring.prev = *prev;
  ring.next = *next;
  return true;
}

// 2.18-2.28: "Tree %d : up -> me -> d0/d1/d2" (channels c and c+nChannels alternate).
bool NcclLogParser::ParseTree(const Line& line) {
  const auto& w = line.words;
  if (w.size() != 8 || w[2] != ":" || w[4] != "->" || w[6] != "->") return false;
  auto channel = ParseInt32(w[1]);
  auto up = ParseInt32(w[3]);
  std::array<int32_t, 3> down;
  if (!channel || !up || !ParseInt32(w[5]) || !ParseDown(w[7], &down)) {
    return Error(line, "malformed tree line " + Quote(line.message));
  }
  int64_t comm_index = CurrentComm(line);
  if (comm_index < 0) return false;
  NcclTree& tree = TreeFor(log_.communicators[comm_index], *channel);
  tree.up = *up;
  tree.down = down;
  return true;
}

// 2.18-2.28: "Trees [0] d0/d1/d2->me->up [1] ...". NCCL formats each line into a 1 KiB
// buffer, so with many channels the line is cut and its last entry may be partial: ignored
// then, an error otherwise.
bool NcclLogParser::ParseTrees(const Line& line) {
  const auto& w = line.words;
  const bool may_be_cut = line.length >= kNcclLineLimit;
  std::vector<NcclTree> trees;
  for (size_t i = 1; i < w.size(); i += 2) {
    bool last = i + 2 >= w.size();
    std::string_view label = w[i];
    std::optional<int32_t> channel;
    if (label.size() >= 3 && label.front() == '[' && label.back() == ']') {
      channel = ParseInt32(label.substr(1, label.size() - 2));
    }
    NcclTree tree;
    if (!channel || i + 1 >= w.size() || !ParseTreeArrow(w[i + 1], &tree)) {
      if (last && may_be_cut) break;
      return Error(line, "malformed entry " + Quote(label) + " in Trees line");
    }
    tree.channel = *channel;
    trees.push_back(tree);
  }
  int64_t comm_index = CurrentComm(line);
  if (comm_index < 0) return false;
  for (const NcclTree& tree : trees) {
    TreeFor(log_.communicators[comm_index], tree.channel) = tree;
  }
  return true;
}

// "%d coll channels, %d [collnet channels, %d] nvls channels, %d p2p channels, ..."
bool NcclLogParser::ParseCollChannels(const Line& line) {
  auto nchannels = ParseInt32(line.words[0]);
  if (!nchannels) return Error(line, "malformed channel count " + Quote(line.words[0]));
  int64_t comm_index = CurrentComm(line);
  if (comm_index < 0) return false;
  log_.communicators[comm_index].nchannels = *nchannels;
  comm_state_[comm_index].nchannels_printed = true;
  return true;
}

// P2P:     "Channel %02d/%01d : %d[%d] -> %d[%d] via P2P/{CUMEM,MNNVL,IPC,direct pointer}[/read]
//           [/CE]" and "via P2P/indirect/%d[%d][/read]"
// SHM:     "Channel %02d : %d[%d] -> %d[%d] via SHM/{direct,CE}/{direct,CE}"
// NET:     "Channel %02d/%d : %d[%d] -> %d[%d] [send] via NET/%s/%d[(%d)][/GDRDMA][(PCI)]
//           [/Shared]" and the same with [receive]
// CollNet: "CollNet %02d/%1d : %d [send] via COLLNET/%s/%d[/GDRDMA][/Shared]"
// The bracketed device is the busId in hex in 2.18 and the nvmlDev from 2.19 on.
bool NcclLogParser::ParseTransport(const Line& line) {
  const auto& w = line.words;
  if (w.size() < 6 || w[2] != ":") return false;
  NcclTransport t;
  auto slash = w[1].find('/');
  auto channel = ParseInt32(w[1].substr(0, slash));
  if (!channel) return Error(line, "malformed channel " + Quote(w[1]) + " in transport line");
  t.channel = *channel;
  if (slash != std::string_view::npos) {
    auto conn = ParseInt32(w[1].substr(slash + 1));
    if (!conn) return Error(line, "malformed channel " + Quote(w[1]) + " in transport line");
    t.conn_index = *conn;
  }
  size_t next = 4;
  if (w[0] == "CollNet") {
    auto rank = ParseInt32(w[3]);
    if (!rank) return Error(line, "malformed rank " + Quote(w[3]) + " in CollNet line");
    t.from_rank = t.to_rank = *rank;
  } else {
    if (w[4] != "->") return false;
    if (!ParseRankDevice(w[3], &t.from_rank, &t.from_device) ||
        !ParseRankDevice(w[5], &t.to_rank, &t.to_device)) {
      return Error(line, "malformed rank[device] in transport line " + Quote(line.message));
    }
    next = 6;
  }
  if (next < w.size() && w[next] == "[send]") t.direction = NcclTransportDirection::kSend;
  if (next < w.size() && w[next] == "[receive]") t.direction = NcclTransportDirection::kReceive;
  std::string_view via = line.message.substr(line.message.find(" via ") + 5);
  via = TrimRight(via);
  t.via = std::string(via);
  if (!ClassifyNcclVia(via, &t)) {
    return Error(line, "unrecognised transport " + Quote(via) + " in " + Quote(line.message));
  }
  int64_t comm_index = CurrentComm(line);
  if (comm_index < 0) return false;
  NcclCommunicator& comm = log_.communicators[comm_index];
  if (comm.rank >= 0) {
    t.peer_rank = t.from_rank == comm.rank ? t.to_rank : t.from_rank;
  } else {
    t.peer_rank = t.direction == NcclTransportDirection::kReceive ? t.from_rank : t.to_rank;
  }
  if (t.kind == NcclTransportKind::kCollNet) t.peer_rank = -1;
  comm.transports.push_back(std::move(t));
  return true;
}

size_t NcclLogParser::CommIndex(const Line& line, std::string_view comm) {
  std::string key = line.process_key + " " + std::string(comm);
  if (auto it = comm_by_key_.find(key); it != comm_by_key_.end()) return it->second;
  NcclCommunicator created;
  created.comm = std::string(comm);
  created.source = line.source;
  created.init_line = line.number;
  size_t index = log_.communicators.size();
  log_.communicators.push_back(std::move(created));
  comm_state_.emplace_back();
  comm_by_key_.emplace(std::move(key), index);
  return index;
}

int64_t NcclLogParser::CurrentComm(const Line& line) const {
  if (auto it = current_by_thread_.find(line.thread_key); it != current_by_thread_.end()) {
    return static_cast<int64_t>(it->second);
  }
  if (auto it = current_by_process_.find(line.process_key); it != current_by_process_.end()) {
    return static_cast<int64_t>(it->second);
  }
  return -1;
}

void NcclLogParser::SetCurrent(const Line& line, size_t comm_index) {
  current_by_thread_[line.thread_key] = comm_index;
  current_by_process_[line.process_key] = comm_index;
}

NcclRing& NcclLogParser::RingFor(size_t comm_index, int32_t channel) {
  NcclCommunicator& comm = log_.communicators[comm_index];
  auto it = std::lower_bound(comm.rings.begin(), comm.rings.end(), channel,
                             [](const NcclRing& r, int32_t c) { return r.channel < c; });
  if (it == comm.rings.end() || it->channel != channel) {
    it = comm.rings.insert(it, NcclRing{});
    it->channel = channel;
  }
  // Until (or unless) "%d coll channels" is printed, the rings seen are the best count.
  if (!comm_state_[comm_index].nchannels_printed) {
    comm.nchannels = static_cast<int32_t>(comm.rings.size());
  }
  return *it;
}

NcclTree& NcclLogParser::TreeFor(NcclCommunicator& comm, int32_t channel) {
  auto it = std::lower_bound(comm.trees.begin(), comm.trees.end(), channel,
                             [](const NcclTree& t, int32_t c) { return t.channel < c; });
  if (it == comm.trees.end() || it->channel != channel) {
    it = comm.trees.insert(it, NcclTree{});
    it->channel = channel;
  }
  return *it;
}

bool NcclLogParser::Error(const Line& line, std::string message) {
  ++log_.error_count;
  if (log_.errors.size() < NcclLog::kMaxProblems) {
    log_.errors.push_back({line.number, std::move(message)});
  }
  return false;
}

NcclLog ParseNcclLog(std::string_view whole_file) {
  NcclLogParser parser;
  parser.Feed(whole_file);
  parser.Finish();
  return parser.log();
}

}  // namespace rankscope

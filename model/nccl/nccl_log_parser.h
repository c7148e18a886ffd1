// A streaming parser for NCCL_DEBUG=INFO logs (NCCL 2.18 to 2.28), for a file read whole or a
// live NCCL_DEBUG_FILE tailed chunk by chunk. Pure: text in, NcclLog out; no files, sockets or
// clocks. Lines it does not understand are counted and skipped, never fatal.
//
// Lines of several threads and processes may be interleaved (one file per job, or stdout of
// several ranks): state is kept per process ("host:pid" of the line prefix) and per thread,
// because most NCCL lines (rings, trees, transports, tuning) do not name their communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/nccl/nccl_log.h"

namespace rankscope {

// Fills kind, net_name, net_dev, proxy_rank, intermediate_rank and the flags of a transport from
// the text after "via " ("P2P/CUMEM/read", "SHM/direct/direct", "NET/IB/0(3)/GDRDMA"); false when
// the text is not a transport NCCL prints.
bool ClassifyNcclVia(std::string_view via, NcclTransport* t);

class NcclLogParser {
 public:
  NcclLogParser() = default;
  NcclLogParser(const NcclLogParser&) = delete;
  NcclLogParser& operator=(const NcclLogParser&) = delete;

  // Consumes the next piece of the log. A chunk may end anywhere, mid-line included: the
  // partial line is kept until the rest arrives. Lines longer than kMaxLineBytes are skipped.
  // Ignored after Finish().
  void Feed(std::string_view chunk);

  // Declares the end of input. A last line without its newline is counted as skipped and
  // flagged in log().truncated_last_line rather than parsed: NCCL ends every line with one, so
  // such a line was cut short and any value on it may be cut too. Calling it again does nothing.
  void Finish();

  // Everything parsed so far. Valid between Feed calls, so a tailing agent can read new
  // collectives as they appear; a collective's algo/proto may be filled in by a later line.
  // The reference stays valid while the parser lives.
  const NcclLog& log() const { return log_; }

  // NCCL formats each line into a 1 KiB buffer; anything far longer is not a NCCL line.
  static constexpr size_t kMaxLineBytes = 64 * 1024;
  // Calls kept waiting for their tuning line, per process; the oldest are dropped beyond this
  // (calls whose tuning line never comes: NCCL 2.18/2.19, symmetric-memory kernels).
  static constexpr size_t kMaxPendingTuning = 4096;

 private:
  struct Line;
  struct CommState {
    uint64_t next_seq = 0;
    uint64_t next_p2p_seq = 0;
    bool nchannels_printed = false;  // "%d coll channels" seen
  };

  void ParseLine(std::string_view text, bool unterminated);
  bool ParseMessage(const Line& line);
  bool ParseCommLifecycle(const Line& line, std::string_view event);
  bool ParseCommSummary(const Line& line);
  bool ParseCollectiveCall(const Line& line);
  bool ParseTuning(const Line& line);
  bool ParseRingOrder(const Line& line);
  bool ParseRingNeighbours(const Line& line);
  bool ParseTree(const Line& line);
  bool ParseTrees(const Line& line);
  bool ParseCollChannels(const Line& line);
  bool ParseTransport(const Line& line);

  // The communicator `comm` names in this process, created on first sight.
  size_t CommIndex(const Line& line, std::string_view comm);
  // The communicator a line that names none belongs to: the one this thread (else process) last
  // initialised or called; -1 if there is none yet.
  int64_t CurrentComm(const Line& line) const;
  void SetCurrent(const Line& line, size_t comm_index);
  NcclRing& RingFor(size_t comm_index, int32_t channel);
  NcclTree& TreeFor(NcclCommunicator& comm, int32_t channel);
  // Records a line that matched a known format but carried a malformed value. Returns false,
  // so the caller reports the line as not understood (skipped).
  bool Error(const Line& line, std::string message);

  NcclLog log_;
  std::string partial_;  // an incomplete last line awaiting the rest
  bool partial_overflow_ = false;
  bool finished_ = false;
  std::map<std::string, size_t, std::less<>> comm_by_key_;  // "host:pid comm" -> index
  std::map<std::string, size_t, std::less<>> current_by_thread_;
  std::map<std::string, size_t, std::less<>> current_by_process_;
  std::map<std::string, std::deque<size_t>, std::less<>> pending_tuning_;  // per process
  std::vector<CommState> comm_state_;  // parallel to log_.communicators
};

// Parses a complete log held in memory (Feed + Finish).
NcclLog ParseNcclLog(std::string_view whole_file);

}  // namespace rankscope

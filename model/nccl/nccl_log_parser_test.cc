#include "model/nccl/nccl_log_parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "model/nccl/nccl_log_file.h"

namespace rankscope {
namespace {

const std::string kFixtureDir = std::string(RANKSCOPE_FIXTURES_DIR) + "/h200x2-torch-allreduce";
const std::string kRank0Log = kFixtureDir + "/nccl.vm.747.log";
const std::string kRank1Log = kFixtureDir + "/nccl.vm.748.log";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

NcclLog ParseFixture(const std::string& path) {
  auto log = ParseNcclLogFile(path);
  EXPECT_TRUE(log.ok()) << log.status().message();
  return log.ok() ? std::move(log).value() : NcclLog{};
}

// A canonical rendering of everything the parser extracts, to compare two parses.
std::string Dump(const NcclLog& log) {
  std::ostringstream out;
  out << "version=" << log.nccl_version << " lines=" << log.lines
      << " skipped=" << log.skipped_lines << " errors=" << log.error_count
      << " warnings=" << log.warning_count << " unmatched=" << log.unmatched_tuning_lines
      << " truncated=" << log.truncated_last_line << "\n";
  for (const auto& c : log.communicators) {
    out << "comm " << c.comm << " id=" << c.comm_id << " rank=" << c.rank << "/" << c.nranks
        << " dev=" << c.cuda_dev << "/" << c.nvml_dev << " bus=" << c.bus_id
        << " nodes=" << c.nnodes << " local=" << c.local_rank << "/" << c.local_ranks
        << " ch=" << c.nchannels << " fn=" << c.init_function << " parent=" << c.parent_comm
        << " complete=" << c.init_complete << " destroyed=" << c.destroyed << "\n";
    for (const auto& r : c.rings) {
      out << " ring " << r.channel << " " << r.prev << ">" << r.next << " [";
      for (int32_t rank : r.order) out << rank << ",";
      out << "]" << r.order_truncated << "\n";
    }
    for (const auto& t : c.trees) {
      out << " tree " << t.channel << " " << t.up << " " << t.down[0] << "/" << t.down[1] << "/"
          << t.down[2] << "\n";
    }
    for (const auto& t : c.transports) {
      out << " tp " << t.channel << "/" << t.conn_index << " " << t.from_rank << "->" << t.to_rank
          << " peer=" << t.peer_rank << " " << NcclTransportKindName(t.kind) << " via=" << t.via
          << " gdr=" << t.gdrdma << "\n";
    }
  }
  for (const auto& c : log.collectives) {
    out << "call " << c.op_name << " comm=" << c.comm << " id=" << c.comm_id << " seq=" << c.seq
        << " count=" << c.count << " bytes=" << c.bytes << " " << NcclAlgoName(c.algo) << "/"
        << NcclProtoName(c.proto) << " ch=" << c.channel_lo << ".." << c.channel_hi
        << " line=" << c.line << " pid=" << c.source.pid << "\n";
  }
  for (const auto& e : log.errors) out << "error " << e.line << ": " << e.message << "\n";
  return out.str();
}

// Real NCCL 2.28.9 log of rank 0 of a torchrun all-reduce on 2xH200.
TEST(NcclLogParserTest, RealRankZeroLog) {
  NcclLog log = ParseFixture(kRank0Log);
  EXPECT_EQ(log.nccl_version, "2.28.9+cuda13.0");
  EXPECT_EQ(log.lines, 217);
  EXPECT_GT(log.skipped_lines, 0);
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  EXPECT_TRUE(log.errors.empty());
  EXPECT_EQ(log.warning_count, 0);
  EXPECT_FALSE(log.truncated_last_line);
  EXPECT_EQ(log.unmatched_tuning_lines, 0);

  ASSERT_EQ(log.communicators.size(), 1u);
  const NcclCommunicator& comm = log.communicators[0];
  EXPECT_EQ(comm.comm, "0x14bd9510");
  EXPECT_EQ(comm.comm_id, "0x1e900aa5c8e42401");
  EXPECT_EQ(comm.comm_id_value, 0x1e900aa5c8e42401ull);
  EXPECT_TRUE(comm.has_comm_id);
  EXPECT_EQ(comm.init_function, "ncclCommInitRankConfig");
  EXPECT_EQ(comm.rank, 0);
  EXPECT_EQ(comm.nranks, 2);
  EXPECT_EQ(comm.cuda_dev, 0);
  EXPECT_EQ(comm.nvml_dev, 0);
  EXPECT_EQ(comm.bus_id, "60");
  EXPECT_EQ(comm.nnodes, 1);
  EXPECT_EQ(comm.local_ranks, 2);
  EXPECT_EQ(comm.local_rank, 0);
  // The graph search found 12 channels ("Pattern 4, ... nChannels 12"); NCCL then duplicated
  // them: "24 coll channels", "Channel 00/24" ... "Channel 23/24".
  EXPECT_EQ(comm.nchannels, 24);
  EXPECT_TRUE(comm.init_complete);
  EXPECT_TRUE(comm.destroyed);
  EXPECT_EQ(comm.source.host, "vm");
  EXPECT_EQ(comm.source.pid, 747);

  ASSERT_EQ(comm.rings.size(), 24u);
  for (int i = 0; i < 24; ++i) {
    const NcclRing& ring = comm.rings[i];
    EXPECT_EQ(ring.channel, i);
    EXPECT_EQ(ring.prev, 1);
    EXPECT_EQ(ring.next, 1);
    EXPECT_EQ(ring.order, (std::vector<int32_t>{0, 1}));  // rank 0 prints the order
    EXPECT_FALSE(ring.order_truncated);
  }
  ASSERT_EQ(comm.trees.size(), 24u);
  // Channels 0-5 and 12-17: rank 0 is the root with child 1; 6-11 and 18-23: 1 is its parent.
  EXPECT_EQ(comm.trees[0].up, -1);
  EXPECT_EQ(comm.trees[0].down, (std::array<int32_t, 3>{1, -1, -1}));
  EXPECT_EQ(comm.trees[6].up, 1);
  EXPECT_EQ(comm.trees[6].down, (std::array<int32_t, 3>{-1, -1, -1}));
  EXPECT_EQ(comm.trees[23].up, 1);

  // Connections are made lazily, at the first all-reduce: 24 channels, 0 -> 1, P2P/CUMEM.
  ASSERT_EQ(comm.transports.size(), 24u);
  for (int i = 0; i < 24; ++i) {
    const NcclTransport& t = comm.transports[i];
    EXPECT_EQ(t.channel, i);
    EXPECT_EQ(t.conn_index, 0);
    EXPECT_EQ(t.from_rank, 0);
    EXPECT_EQ(t.to_rank, 1);
    EXPECT_EQ(t.peer_rank, 1);
    EXPECT_EQ(t.from_device, "0");
    EXPECT_EQ(t.to_device, "1");
    EXPECT_EQ(t.kind, NcclTransportKind::kP2pCumem);
    EXPECT_EQ(t.via, "P2P/CUMEM");
    EXPECT_FALSE(t.gdrdma);
    EXPECT_FALSE(t.p2p_read);
  }

  ASSERT_EQ(log.collectives.size(), 5u);
  for (size_t i = 0; i < log.collectives.size(); ++i) {
    const NcclCollective& c = log.collectives[i];
    EXPECT_EQ(c.comm, "0x14bd9510");
    EXPECT_EQ(c.comm_id, "0x1e900aa5c8e42401");
    EXPECT_EQ(c.comm_index, 0);
    EXPECT_EQ(c.seq, i);
    EXPECT_EQ(c.nccl_op_count, 0u);  // 2.28 prints 0 on every call
    EXPECT_EQ(c.op, NcclOp::kAllReduce);
    EXPECT_EQ(c.count, 67108864u);
    EXPECT_EQ(c.datatype_code, 7);
    EXPECT_EQ(c.datatype, NcclDataType::kFloat32);
    EXPECT_EQ(c.bytes, 268435456);  // 256 MiB
    EXPECT_EQ(c.redop, NcclRedOp::kSum);
    EXPECT_EQ(c.root, 0);
    EXPECT_EQ(c.nranks, 2);
    EXPECT_EQ(c.stream, "(nil)");
    EXPECT_TRUE(c.tuned);
    EXPECT_EQ(c.algo, NcclAlgo::kRing);
    EXPECT_EQ(c.proto, NcclProto::kSimple);
    EXPECT_EQ(c.channel_lo, 0);
    EXPECT_EQ(c.channel_hi, 23);
    EXPECT_EQ(c.nchannels, 24);
    EXPECT_EQ(c.source.pid, 747);
    EXPECT_EQ(c.source.tid, 747);
    EXPECT_EQ(c.source.cuda_dev, 0);
  }
  EXPECT_EQ(log.collectives[0].line, 181);
}

// Rank 1 of the same run: no ring order and no tuning lines (NCCL prints those on rank 0).
TEST(NcclLogParserTest, RealRankOneLog) {
  NcclLog log = ParseFixture(kRank1Log);
  EXPECT_EQ(log.lines, 162);
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  EXPECT_GT(log.skipped_lines, 0);
  ASSERT_EQ(log.communicators.size(), 1u);
  const NcclCommunicator& comm = log.communicators[0];
  EXPECT_EQ(comm.comm, "0x157e1080");
  EXPECT_EQ(comm.comm_id, "0x1e900aa5c8e42401");
  EXPECT_EQ(comm.rank, 1);
  EXPECT_EQ(comm.nranks, 2);
  EXPECT_EQ(comm.cuda_dev, 1);
  EXPECT_EQ(comm.nvml_dev, 1);
  EXPECT_EQ(comm.bus_id, "70");
  EXPECT_EQ(comm.nchannels, 24);
  ASSERT_EQ(comm.rings.size(), 24u);
  EXPECT_EQ(comm.rings[5].prev, 0);
  EXPECT_EQ(comm.rings[5].next, 0);
  EXPECT_TRUE(comm.rings[5].order.empty());
  EXPECT_EQ(comm.trees[0].up, 0);
  EXPECT_EQ(comm.trees[6].down, (std::array<int32_t, 3>{0, -1, -1}));
  ASSERT_EQ(comm.transports.size(), 24u);
  EXPECT_EQ(comm.transports[0].from_rank, 1);
  EXPECT_EQ(comm.transports[0].to_rank, 0);
  EXPECT_EQ(comm.transports[0].peer_rank, 0);
  EXPECT_EQ(comm.transports[0].kind, NcclTransportKind::kP2pCumem);
  ASSERT_EQ(log.collectives.size(), 5u);
  for (size_t i = 0; i < log.collectives.size(); ++i) {
    EXPECT_EQ(log.collectives[i].seq, i);
    EXPECT_EQ(log.collectives[i].bytes, 268435456);
    EXPECT_FALSE(log.collectives[i].tuned);
    EXPECT_EQ(log.collectives[i].algo, NcclAlgo::kUnknown);
  }
}

// (comm_id, seq) names the same instance on both ranks.
TEST(NcclLogParserTest, RealRanksAgreeOnInstances) {
  NcclLog rank0 = ParseFixture(kRank0Log);
  NcclLog rank1 = ParseFixture(kRank1Log);
  ASSERT_EQ(rank0.collectives.size(), rank1.collectives.size());
  for (size_t i = 0; i < rank0.collectives.size(); ++i) {
    EXPECT_EQ(rank0.collectives[i].comm_id_value, rank1.collectives[i].comm_id_value);
    EXPECT_EQ(rank0.collectives[i].seq, rank1.collectives[i].seq);
    EXPECT_EQ(rank0.collectives[i].bytes, rank1.collectives[i].bytes);
  }
}

TEST(NcclLogParserTest, RandomChunksMatchWholeFile) {
  for (const std::string& path : {kRank0Log, kRank1Log}) {
    std::string text = ReadFile(path);
    ASSERT_FALSE(text.empty()) << path;
    const std::string whole = Dump(ParseNcclLog(text));
    std::mt19937 rng(12345);
    for (int trial = 0; trial < 20; ++trial) {
      std::uniform_int_distribution<size_t> size(1, trial < 10 ? 7 : 300);
      NcclLogParser parser;
      for (size_t at = 0; at < text.size();) {
        size_t n = std::min(size(rng), text.size() - at);
        parser.Feed(std::string_view(text).substr(at, n));
        at += n;
      }
      parser.Finish();
      ASSERT_EQ(Dump(parser.log()), whole) << path << " trial " << trial;
    }
  }
}

TEST(NcclLogParserTest, LogIsReadableWhileTailing) {
  std::string text = ReadFile(kRank0Log);
  size_t cut = text.find("AllReduce: opCount");
  ASSERT_NE(cut, std::string::npos);
  NcclLogParser parser;
  parser.Feed(std::string_view(text).substr(0, cut + 5));  // mid-line
  EXPECT_EQ(parser.log().communicators.size(), 1u);
  EXPECT_TRUE(parser.log().collectives.empty());
  parser.Feed(std::string_view(text).substr(cut + 5));
  EXPECT_EQ(parser.log().collectives.size(), 5u);  // usable before Finish
  parser.Finish();
  parser.Finish();                                                         // idempotent
  parser.Feed("vm:747:747 [0] NCCL INFO AllReduce: opCount 0 count 1\n");  // ignored
  EXPECT_EQ(parser.log().collectives.size(), 5u);
}

TEST(NcclLogParserTest, TruncatedLastLineIsSkippedAndFlagged) {
  std::string text = ReadFile(kRank1Log);
  size_t last_call = text.rfind("AllReduce: opCount");
  ASSERT_NE(last_call, std::string::npos);
  // Cut inside the comm pointer: parsing it would name a communicator that does not exist.
  size_t cut = text.find("comm 0x157e", last_call) + 9;
  NcclLog log = ParseNcclLog(std::string_view(text).substr(0, cut));
  EXPECT_TRUE(log.truncated_last_line);
  EXPECT_EQ(log.collectives.size(), 4u);
  EXPECT_EQ(log.communicators.size(), 1u);
  EXPECT_EQ(log.error_count, 0);

  NcclLog whole = ParseNcclLog(text);
  EXPECT_FALSE(whole.truncated_last_line);
  // Even a line that reads as complete is not trusted without its newline.
  size_t end_of_call = text.find('\n', last_call);
  NcclLog no_newline = ParseNcclLog(std::string_view(text).substr(0, end_of_call));
  EXPECT_TRUE(no_newline.truncated_last_line);
  EXPECT_EQ(no_newline.collectives.size(), 4u);
  EXPECT_EQ(no_newline.error_count, 0);
}

TEST(NcclLogParserTest, CrLfLineEndings) {
  std::string text = ReadFile(kRank0Log);
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  EXPECT_EQ(Dump(ParseNcclLog(crlf)), Dump(ParseNcclLog(text)));
}

// Two ranks (processes 100 and 200) writing one file, lines interleaved; both print the same
// comm pointer value, which is only unique within a process. Rank 0's tuning lines must find
// rank 0's calls.
TEST(NcclLogParserTest, InterleavedProcesses) {
  const std::string log_text =
      "nodeA:100:100 [0] NCCL INFO ncclCommInitRank comm 0x5000 rank 0 nranks 2 cudaDev 0 "
      "nvmlDev 0 busId 1b000 commId 0xabc - Init START\n"
      "nodeB:200:200 [0] NCCL INFO ncclCommInitRank comm 0x5000 rank 1 nranks 2 cudaDev 0 "
      "nvmlDev 0 busId 1b000 commId 0xabc - Init START\n"
      "nodeB:200:200 [0] NCCL INFO Ring 00 : 0 -> 1 -> 0\n"
      "nodeA:100:100 [0] NCCL INFO Channel 00/02 : 0 1\n"
      "nodeA:100:100 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1\n"
      "nodeB:200:200 [0] NCCL INFO Ring 01 : 0 -> 1 -> 0\n"
      "nodeA:100:100 [0] NCCL INFO Ring 01 : 1 -> 0 -> 1\n"
      "nodeB:200:200 [0] NCCL INFO ncclCommInitRank comm 0x5000 rank 1 nranks 2 cudaDev 0 "
      "nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE\n"
      "nodeA:100:100 [0] NCCL INFO ncclCommInitRank comm 0x5000 rank 0 nranks 2 cudaDev 0 "
      "nvmlDev 0 busId 1b000 commId 0xabc - Init COMPLETE\n"
      "nodeB:200:200 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1024 "
      "datatype 7 op 0 root 0 comm 0x5000 [nranks=2] stream 0x77\n"
      "nodeA:100:100 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1024 "
      "datatype 7 op 0 root 0 comm 0x5000 [nranks=2] stream 0x77\n"
      "nodeB:200:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [receive] via NET/IB/0/GDRDMA\n"
      "nodeA:100:100 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
      "nodeB:200:200 [0] NCCL INFO AllGather: opCount 0 sendbuff 0x1 recvbuff 0x2 count 256 "
      "datatype 2 op 0 root 0 comm 0x5000 [nranks=2] stream 0x77\n"
      "nodeA:100:100 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL "
      "channel{Lo..Hi}={0..1}\n"
      "nodeA:100:100 [0] NCCL INFO AllGather: opCount 0 sendbuff 0x1 recvbuff 0x2 count 256 "
      "datatype 2 op 0 root 0 comm 0x5000 [nranks=2] stream 0x77\n"
      "nodeA:100:100 [0] NCCL INFO AllGather: 1024 Bytes -> Algo RING proto LL128 "
      "channel{Lo..Hi}={0..0}\n";
  NcclLog log = ParseNcclLog(log_text);
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  EXPECT_EQ(log.skipped_lines, 0) << Dump(log);
  ASSERT_EQ(log.communicators.size(), 2u);
  const NcclCommunicator& a = log.communicators[0];
  const NcclCommunicator& b = log.communicators[1];
  EXPECT_EQ(a.source.pid, 100);
  EXPECT_EQ(a.rank, 0);
  EXPECT_EQ(b.source.pid, 200);
  EXPECT_EQ(b.rank, 1);
  EXPECT_EQ(a.comm_id, b.comm_id);
  ASSERT_EQ(a.rings.size(), 2u);
  EXPECT_EQ(a.rings[0].prev, 1);
  EXPECT_EQ(a.rings[0].order, (std::vector<int32_t>{0, 1}));
  ASSERT_EQ(b.rings.size(), 2u);
  EXPECT_EQ(b.rings[1].next, 0);
  EXPECT_TRUE(b.rings[0].order.empty());
  ASSERT_EQ(a.transports.size(), 1u);
  EXPECT_EQ(a.transports[0].direction, NcclTransportDirection::kSend);
  EXPECT_EQ(a.transports[0].peer_rank, 1);
  ASSERT_EQ(b.transports.size(), 1u);
  EXPECT_EQ(b.transports[0].direction, NcclTransportDirection::kReceive);
  EXPECT_EQ(b.transports[0].peer_rank, 0);
  EXPECT_EQ(b.transports[0].kind, NcclTransportKind::kNetIb);
  EXPECT_TRUE(b.transports[0].gdrdma);

  ASSERT_EQ(log.collectives.size(), 4u);
  const NcclCollective& b_allreduce = log.collectives[0];
  const NcclCollective& a_allreduce = log.collectives[1];
  const NcclCollective& b_allgather = log.collectives[2];
  const NcclCollective& a_allgather = log.collectives[3];
  EXPECT_EQ(a_allreduce.source.pid, 100);
  EXPECT_EQ(a_allreduce.algo, NcclAlgo::kTree);
  EXPECT_EQ(a_allreduce.proto, NcclProto::kLL);
  EXPECT_FALSE(b_allreduce.tuned);
  EXPECT_EQ(a_allgather.algo, NcclAlgo::kRing);
  EXPECT_EQ(a_allgather.proto, NcclProto::kLL128);
  EXPECT_EQ(a_allgather.bytes, 1024);  // per-rank send buffer: 256 x int32
  EXPECT_FALSE(b_allgather.tuned);
  EXPECT_EQ(a_allreduce.seq, 0u);
  EXPECT_EQ(a_allgather.seq, 1u);
  EXPECT_EQ(b_allreduce.seq, 0u);
  EXPECT_EQ(b_allgather.seq, 1u);
}

// One process driving two GPUs from two threads (tid 11 for GPU 0, tid 12 for GPU 1): lines
// that name no communicator belong to the one their thread is initialising.
TEST(NcclLogParserTest, InterleavedThreadsOfOneProcess) {
  const std::string log_text =
      "h:9:11 [0] NCCL INFO comm 0xa0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId "
      "0x77 - Init START\n"
      "h:9:12 [1] NCCL INFO comm 0xb0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId "
      "0x77 - Init START\n"
      "h:9:12 [1] NCCL INFO Ring 00 : 0 -> 1 -> 0\n"
      "h:9:11 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1\n"
      "h:9:12 [1] NCCL INFO Trees [0] -1/-1/-1->1->0\n"
      "h:9:11 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1\n"
      "h:9:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/direct pointer\n"
      "h:9:12 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/direct pointer/read\n";
  NcclLog log = ParseNcclLog(log_text);
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  ASSERT_EQ(log.communicators.size(), 2u);
  const NcclCommunicator& gpu0 = log.communicators[0];
  const NcclCommunicator& gpu1 = log.communicators[1];
  ASSERT_EQ(gpu0.rings.size(), 1u);
  EXPECT_EQ(gpu0.rings[0].prev, 1);
  ASSERT_EQ(gpu1.trees.size(), 1u);
  EXPECT_EQ(gpu1.trees[0].up, 0);
  EXPECT_EQ(gpu0.trees[0].down[0], 1);
  ASSERT_EQ(gpu1.transports.size(), 1u);
  EXPECT_EQ(gpu1.transports[0].kind, NcclTransportKind::kP2pDirect);
  EXPECT_TRUE(gpu1.transports[0].p2p_read);
  EXPECT_EQ(gpu0.transports[0].peer_rank, 1);
}

TEST(NcclLogParserTest, GarbageAndMalformedNumbersNeverThrow) {
  const std::string log_text =
      "random garbage\n"
      "\n"
      "   \n"
      "torch: something else entirely\n"
      "h:1:1 [0] NCCL INFO ncclCommInitRank comm 0x10 rank 0 nranks 4 cudaDev 0 nvmlDev 0 "
      "busId 1000 commId 0x99 - Init START\n"
      // 3: count is not a number.
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 12abc datatype 7 "
      "op 0 root 0 comm 0x10 [nranks=4] stream (nil)\n"
      // 4: count does not fit in 64 bits.
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count "
      "999999999999999999999999 datatype 7 op 0 root 0 comm 0x10 [nranks=4] stream (nil)\n"
      // 5: pid is not a number.
      "h:x:1 [0] NCCL INFO Ring 00 : 1 -> 0 -> 1\n"
      // 6: ring neighbour is not a number.
      "h:1:1 [0] NCCL INFO Ring 00 : a -> 0 -> 1\n"
      // 7: no comm pointer in an Init line.
      "h:1:1 [0] NCCL INFO comm rank 0 nranks 4 - Init COMPLETE\n"
      // Unknown NCCL INFO lines are skipped, not errors.
      "h:1:1 [0] NCCL INFO Something new in NCCL 2.99 : 1 -> 2\n"
      "h:1:1 [0] NCCL INFO \n"
      "h:1:1 [0] NCCL INFO Channel\n"
      "h:1:1 [0] NCCL INFO AllReduce: opCount zz\n"
      "h:1:1 [0] NCCL INFO Trees [0] x/y\n"
      "h:1:1 [0] NCCL INFO AllReduce: 12 Bytes -> Algo WARP proto SIMPLE\n"
      "\x01\x02\xff binary\n"
      // A good line after all that still parses.
      "h:1:1 [0] NCCL INFO AllReduce: opCount 1f sendbuff 0x1 recvbuff 0x1 count 8 datatype 99 "
      "op 7 root 0 comm 0x10 [nranks=4] stream (nil)\n";
  NcclLog log;
  EXPECT_NO_THROW(log = ParseNcclLog(log_text));
  ASSERT_EQ(log.collectives.size(), 1u) << Dump(log);
  const NcclCollective& call = log.collectives[0];
  EXPECT_EQ(call.seq, 0u);
  EXPECT_EQ(call.nccl_op_count, 0x1fu);
  EXPECT_EQ(call.datatype_code, 99);
  EXPECT_EQ(call.datatype, NcclDataType::kUnknown);
  EXPECT_EQ(call.bytes, 0);  // unknown element size
  EXPECT_EQ(call.redop, NcclRedOp::kUserDefined);
  EXPECT_EQ(log.communicators.size(), 1u);
  EXPECT_TRUE(log.communicators[0].rings.empty());

  std::vector<int64_t> error_lines;
  for (const auto& e : log.errors) error_lines.push_back(e.line);
  // Line numbers count every line, blank ones included.
  EXPECT_EQ(error_lines, (std::vector<int64_t>{6, 7, 8, 9, 10, 14, 15, 16})) << Dump(log);
  EXPECT_EQ(log.error_count, 8);
  EXPECT_NE(log.errors[0].message.find("count '12abc'"), std::string::npos)
      << log.errors[0].message;
  // Malformed lines are skipped too: everything but the Init line and the last call.
  EXPECT_EQ(log.lines, 18);
  EXPECT_EQ(log.skipped_lines, 18 - 2 - 2);  // neither blank nor understood
}

TEST(NcclLogParserTest, OverlongLineIsSkipped) {
  std::string text(NcclLogParser::kMaxLineBytes + 10, 'x');
  text += "\nh:1:1 [0] NCCL INFO NCCL version 2.20.5+cuda12.4\n";
  NcclLog log = ParseNcclLog(text);
  EXPECT_EQ(log.lines, 2);
  EXPECT_EQ(log.skipped_lines, 1);
  EXPECT_EQ(log.nccl_version, "2.20.5+cuda12.4");
}

// Formats of NCCL 2.18 (taken from the v2.18.1-1 sources: init.cc, enqueue.cc, rings.cc,
// transport/{p2p,shm,net}.cc): Init COMPLETE only, no nvmlDev, busIds in the transport
// brackets, the version printed bare to stdout, 4-column ring order, no tuning line.
TEST(NcclLogParserTest, Nccl218Formats) {
  const std::string log_text =
      "NCCL version 2.18.1+cuda12.1\n"
      "n1:50:50 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n"  // before any comm: skipped
      "n1:50:50 [0] NCCL INFO comm 0x7f00 rank 0 nranks 4 cudaDev 0 busId 1b000 commId "
      "0x5b7a3c1d2e4f6071 - Init START\n"
      "n1:50:50 [0] NCCL INFO Channel 00/02 :     0   1   2   3\n"
      "n1:50:50 [0] NCCL INFO Channel 01/02 :     0   3   2   1\n"
      "n1:50:50 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 3/-1/-1->0->-1\n"
      "n1:50:50 [0] NCCL INFO Ring 00 : 3 -> 0 -> 1\n"
      "n1:50:50 [0] NCCL INFO Ring 01 : 1 -> 0 -> 3\n"
      "n1:50:50 [0] NCCL INFO Channel 00/0 : 0[1b000] -> 1[1c000] via P2P/IPC/read\n"
      "n1:50:50 [0] NCCL INFO Channel 01 : 0[1b000] -> 3[3d000] via SHM/direct/direct\n"
      "n1:50:50 [0] NCCL INFO Channel 00/0 : 3[3d000] -> 0[1b000] [receive] via "
      "NET/IB/1/GDRDMA\n"
      "n1:50:50 [0] NCCL INFO Channel 00/0 : 0[1b000] -> 1[1c000] [send] via NET/Socket/0\n"
      "n1:50:50 [0] NCCL INFO 2 coll channels, 0 nvls channels, 2 p2p channels, 1 p2p channels "
      "per peer\n"
      "n1:50:50 [0] NCCL INFO comm 0x7f00 rank 0 nranks 4 cudaDev 0 busId 1b000 commId "
      "0x5b7a3c1d2e4f6071 - Init COMPLETE\n"
      "n1:50:50 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7f1 recvbuff 0x7f2 count 1024 "
      "datatype 9 op 2 root 0 comm 0x7f00 [nranks=4] stream 0x55aa\n"
      "n1:50:50 [0] NCCL INFO Broadcast: opCount 1 sendbuff 0x7f1 recvbuff 0x7f2 count 100 "
      "datatype 0 op 0 root 3 comm 0x7f00 [nranks=4] stream 0x55aa\n"
      "\n"
      "n1:50:61 [0] misc/socket.cc:100 NCCL WARN Net : Connection closed by remote peer\n"
      "n1:50:50 [0] NCCL INFO comm 0x7f00 rank 0 nranks 4 cudaDev 0 busId 1b000 - Destroy "
      "COMPLETE\n";
  NcclLog log = ParseNcclLog(log_text);
  EXPECT_EQ(log.nccl_version, "2.18.1+cuda12.1");
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  EXPECT_EQ(log.skipped_lines, 1) << Dump(log);
  EXPECT_EQ(log.warning_count, 1);
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_EQ(log.warnings[0].line, 18);
  EXPECT_EQ(log.warnings[0].message, "Net : Connection closed by remote peer");
  ASSERT_EQ(log.communicators.size(), 1u);
  const NcclCommunicator& comm = log.communicators[0];
  EXPECT_EQ(comm.comm_id, "0x5b7a3c1d2e4f6071");
  EXPECT_EQ(comm.nvml_dev, -1);  // not printed by 2.18
  EXPECT_EQ(comm.nnodes, -1);
  EXPECT_EQ(comm.bus_id, "1b000");
  EXPECT_EQ(comm.nchannels, 2);
  EXPECT_TRUE(comm.init_complete);
  EXPECT_TRUE(comm.destroyed);
  ASSERT_EQ(comm.rings.size(), 2u);
  EXPECT_EQ(comm.rings[1].order, (std::vector<int32_t>{0, 3, 2, 1}));
  EXPECT_EQ(comm.rings[1].prev, 1);
  EXPECT_EQ(comm.rings[1].next, 3);
  ASSERT_EQ(comm.trees.size(), 2u);
  EXPECT_EQ(comm.trees[1].down[0], 3);
  ASSERT_EQ(comm.transports.size(), 4u);
  EXPECT_EQ(comm.transports[0].kind, NcclTransportKind::kP2pIpc);
  EXPECT_TRUE(comm.transports[0].p2p_read);
  EXPECT_EQ(comm.transports[0].to_device, "1c000");
  EXPECT_EQ(comm.transports[1].kind, NcclTransportKind::kShm);
  EXPECT_EQ(comm.transports[1].conn_index, -1);
  EXPECT_EQ(comm.transports[1].peer_rank, 3);
  EXPECT_EQ(comm.transports[2].kind, NcclTransportKind::kNetIb);
  EXPECT_EQ(comm.transports[2].net_dev, 1);
  EXPECT_TRUE(comm.transports[2].gdrdma);
  EXPECT_EQ(comm.transports[2].peer_rank, 3);
  EXPECT_EQ(comm.transports[3].kind, NcclTransportKind::kNetSocket);
  EXPECT_FALSE(comm.transports[3].gdrdma);
  ASSERT_EQ(log.collectives.size(), 2u);
  EXPECT_EQ(log.collectives[0].datatype, NcclDataType::kBfloat16);
  EXPECT_EQ(log.collectives[0].bytes, 2048);
  EXPECT_EQ(log.collectives[0].redop, NcclRedOp::kMax);
  EXPECT_EQ(log.collectives[0].stream, "0x55aa");
  EXPECT_FALSE(log.collectives[0].tuned);  // 2.18 has no INFO tuning line
  EXPECT_EQ(log.collectives[1].op, NcclOp::kBroadcast);
  EXPECT_EQ(log.collectives[1].root, 3);
  EXPECT_EQ(log.collectives[1].nccl_op_count, 1u);
  EXPECT_EQ(log.collectives[1].seq, 1u);
}

// NCCL 2.20 (v2.20.5-1 sources): "comm ... nRanks ... nNodes" summary, numeric tuning lines
// without the op name ("%ld Bytes -> Algo %d proto %d time %f"), P2P/CUMEM with /read, and
// 2.21/2.22's "ncclCommInitRank comm ..." / "ncclCommSplit comm ... parent color key commId".
TEST(NcclLogParserTest, Nccl220To222Formats) {
  const std::string log_text =
      "h:7:7 [2] NCCL INFO NCCL version 2.21.5+cuda12.4\n"
      "h:7:7 [2] NCCL INFO ncclCommInitRank comm 0x900 rank 0 nranks 8 cudaDev 2 nvmlDev 2 "
      "busId 41000 commId 0x1111 - Init START\n"
      "h:7:7 [2] NCCL INFO comm 0x900 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0\n"
      "h:7:7 [2] NCCL INFO 16 coll channels, 16 collnet channels, 0 nvls channels, 32 p2p "
      "channels, 2 p2p channels per peer\n"
      "h:7:7 [2] NCCL INFO Channel 00/1 : 0[2] -> 1[3] via P2P/CUMEM/read\n"
      "h:7:7 [2] NCCL INFO ncclCommInitRank comm 0x900 rank 0 nranks 8 cudaDev 2 nvmlDev 2 "
      "busId 41000 commId 0x1111 - Init COMPLETE\n"
      "h:7:7 [2] NCCL INFO ncclCommSplit comm 0xa00 rank 0 nranks 4 cudaDev 2 nvmlDev 2 busId "
      "41000 parent 0x900 color 1 key 0 commId 0x2222 - Init COMPLETE\n"
      // A group of two all-reduces on comm 0x900: NCCL plans them after ncclGroupEnd, larger
      // first, so the tuning lines come after both calls and out of call order.
      "h:7:7 [2] NCCL INFO AllReduce: opCount 3 sendbuff 0x1 recvbuff 0x1 count 256 datatype 7 "
      "op 0 root 0 comm 0x900 [nranks=8] stream 0x5\n"
      "h:7:7 [2] NCCL INFO AllReduce: opCount 4 sendbuff 0x1 recvbuff 0x1 count 1048576 "
      "datatype 7 op 0 root 0 comm 0x900 [nranks=8] stream 0x5\n"
      "h:7:7 [2] NCCL INFO 4194304 Bytes -> Algo 1 proto 2 time 95.250000\n"
      "h:7:7 [2] NCCL INFO 1024 Bytes -> Algo 0 proto 0 time 8.100000\n"
      "h:7:7 [2] NCCL INFO Send: opCount 5 sendbuff 0x1 recvbuff (nil) count 10 datatype 0 op 0 "
      "root 3 comm 0x900 [nranks=8] stream 0x5\n"
      "h:7:7 [2] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 4 datatype 4 "
      "op 0 root 0 comm 0xa00 [nranks=4] stream 0x5\n"
      "h:7:7 [2] NCCL INFO 32 Bytes -> Algo 1 proto 0 time 6.000000\n"
      // Nobody waits for this one.
      "h:7:7 [2] NCCL INFO 32 Bytes -> Algo 1 proto 0 time 6.000000\n";
  NcclLog log = ParseNcclLog(log_text);
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  EXPECT_EQ(log.skipped_lines, 0) << Dump(log);
  EXPECT_EQ(log.unmatched_tuning_lines, 1);
  ASSERT_EQ(log.communicators.size(), 2u);
  const NcclCommunicator& world = log.communicators[0];
  EXPECT_EQ(world.init_function, "ncclCommInitRank");
  EXPECT_EQ(world.nnodes, 2);
  EXPECT_EQ(world.local_ranks, 4);
  EXPECT_EQ(world.nchannels, 16);
  EXPECT_EQ(world.transports[0].kind, NcclTransportKind::kP2pCumem);
  EXPECT_EQ(world.transports[0].conn_index, 1);
  EXPECT_TRUE(world.transports[0].p2p_read);
  const NcclCommunicator& split = log.communicators[1];
  EXPECT_EQ(split.init_function, "ncclCommSplit");
  EXPECT_EQ(split.parent_comm, "0x900");
  EXPECT_EQ(split.split_color, 1);
  EXPECT_EQ(split.split_key, 0);
  EXPECT_EQ(split.comm_id, "0x2222");
  EXPECT_TRUE(split.init_complete);

  ASSERT_EQ(log.collectives.size(), 4u);
  const NcclCollective& small = log.collectives[0];
  const NcclCollective& big = log.collectives[1];
  const NcclCollective& send = log.collectives[2];
  const NcclCollective& on_split = log.collectives[3];
  EXPECT_EQ(small.algo, NcclAlgo::kTree);
  EXPECT_EQ(small.proto, NcclProto::kLL);
  EXPECT_EQ(small.nchannels, -1);  // no channel range before 2.24
  EXPECT_EQ(big.algo, NcclAlgo::kRing);
  EXPECT_EQ(big.proto, NcclProto::kSimple);
  EXPECT_EQ(small.nccl_op_count, 3u);
  EXPECT_EQ(small.seq, 0u);
  EXPECT_EQ(big.seq, 1u);
  EXPECT_EQ(send.op, NcclOp::kSend);
  EXPECT_EQ(send.seq, 0u);  // point-to-point calls have their own counter
  EXPECT_EQ(send.root, 3);  // the peer
  EXPECT_FALSE(send.tuned);
  EXPECT_EQ(on_split.comm_id, "0x2222");
  EXPECT_EQ(on_split.seq, 0u);
  EXPECT_EQ(on_split.bytes, 32);
  EXPECT_EQ(on_split.algo, NcclAlgo::kRing);
}

// "Trees [0] 1/-1/-1->0->39 [1] 2/-1/-1->0->39 ..." for 64 channels, cut the way NCCL's
// 1 KiB line buffer cuts it.
std::string TreesLineCutByNccl() {
  std::string line = "h:5:5 [0] NCCL INFO Trees";
  for (int c = 0; c < 64; ++c) {
    line += " [" + std::to_string(c) + "] " + std::to_string(c + 1) + "/-1/-1->0->39";
  }
  line.resize(1023);
  return line + "\n";
}

// NCCL 2.23-2.28 (v2.23.4-1, v2.24.3-1, v2.28.9-1 sources): "%s: ... Bytes -> Algo %d proto
// %d time" (2.23) then names and channel ranges (2.24+); split children without commId and
// with "key %d- Init START"; PXN, indirect P2P, /CE, GDRDMA(PCI), /Shared, CollNet; optional
// timestamps before the prefix (2.26+); rings cut with "..."; a Trees line cut at 1023 chars;
// a comm pointer reused after destroy.
TEST(NcclLogParserTest, Nccl223To228Formats) {
  const std::string log_text =
      "[2025-03-01 10:00:00] h:5:5 [0] NCCL INFO ncclCommInitRankConfig comm 0x100 rank 0 "
      "nranks 40 cudaDev 0 nvmlDev 0 busId 18000 commId 0x3333 - Init START\n"
      "h:5:5 [0] NCCL INFO Channel 00/02 :  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 "
      "18 19 20 21 22 23 24 25 26 27 28 29 30...\n" +
      TreesLineCutByNccl() +
      "h:5:5 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/2(1)/GDRDMA/Shared\n"
      "h:5:5 [0] NCCL INFO Channel 01/0 : 8[0] -> 0[0] [receive] via NET/IBext_v8/0/GDRDMA(PCI)\n"
      "h:5:5 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via P2P/indirect/2[2]\n"
      "h:5:5 [0] NCCL INFO Channel 03/0 : 0[0] -> 1[1] via P2P/CUMEM/CE\n"
      "h:5:5 [0] NCCL INFO Channel 04/0 : 0[0] -> 9[1] [send] via NET/AWS Libfabric/1\n"
      "h:5:5 [0] NCCL INFO CollNet 00/1 : 0 [send] via COLLNET/SHARP/0/GDRDMA\n"
      "h:5:5 [0] NCCL INFO ncclCommInitRankConfig comm 0x100 rank 0 nranks 40 cudaDev 0 "
      "nvmlDev 0 busId 18000 commId 0x3333 - Init COMPLETE\n"
      "h:5:5 [0] NCCL INFO ncclCommSplit comm 0x200 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId "
      "18000 parent 0x100 splitCount 1 color 4 key 0- Init START\n"
      "h:5:5 [0] NCCL INFO ncclCommSplit comm 0x200 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId "
      "18000 parent 0x100 splitCount 1 color 4 key 0 - Init COMPLETE\n"
      "h:5:5 [0] NCCL INFO ReduceScatter: opCount 0 sendbuff 0x1 recvbuff 0x2 count 1000 "
      "datatype 6 op 4 root 0 comm 0x200 [nranks=8] stream 0x9\n"
      "h:5:5 [0] NCCL INFO ReduceScatter: 2000 Bytes -> Algo PAT proto SIMPLE "
      "channel{Lo..Hi}={2..5}\n"
      "h:5:5 [0] NCCL INFO AlltoAll: opCount 0 sendbuff 0x1 recvbuff 0x2 count 16 datatype 7 "
      "op 0 root 0 comm 0x100 [nranks=40] stream 0x9\n"
      "h:5:5 [0] NCCL INFO AllGather: opCount 0 sendbuff 0x1 recvbuff 0x2 count 64 datatype 7 op "
      "0 root 0 comm 0x100 [nranks=40] stream 0x9\n"
      // 2.23 form of a tuning line.
      "h:5:5 [0] NCCL INFO AllGather: 256 Bytes -> Algo 6 proto 0 time 4.500000\n"
      "h:5:5 [0] NCCL INFO comm 0x100 rank 0 nranks 40 cudaDev 0 busId 18000 - Destroy "
      "COMPLETE\n"
      "h:5:5 [0] NCCL INFO ncclCommInitRankConfig comm 0x100 rank 0 nranks 2 cudaDev 0 nvmlDev "
      "0 busId 18000 commId 0x4444 - Init START\n"
      "h:5:5 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 1 datatype 7 op "
      "0 root 0 comm 0x100 [nranks=2] stream 0x9\n";
  NcclLog log = ParseNcclLog(log_text);
  EXPECT_EQ(log.error_count, 0) << Dump(log);
  EXPECT_EQ(log.skipped_lines, 0) << Dump(log);
  ASSERT_EQ(log.communicators.size(), 3u);
  const NcclCommunicator& world = log.communicators[0];
  EXPECT_EQ(world.comm_id, "0x3333");
  EXPECT_TRUE(world.destroyed);
  ASSERT_EQ(world.rings.size(), 1u);
  EXPECT_EQ(world.rings[0].order.size(), 30u);
  EXPECT_TRUE(world.rings[0].order_truncated);
  ASSERT_EQ(world.trees.size(), 48u);  // "[48] 49/" was cut: dropped
  EXPECT_EQ(world.trees[47].down[0], 48);
  EXPECT_EQ(world.trees[47].up, 39);

  ASSERT_EQ(world.transports.size(), 6u);
  const NcclTransport& pxn = world.transports[0];
  EXPECT_EQ(pxn.kind, NcclTransportKind::kNetIb);
  EXPECT_EQ(pxn.net_name, "IB");
  EXPECT_EQ(pxn.net_dev, 2);
  EXPECT_EQ(pxn.proxy_rank, 1);
  EXPECT_TRUE(pxn.gdrdma);
  EXPECT_EQ(pxn.peer_rank, 8);
  const NcclTransport& plugin = world.transports[1];
  EXPECT_EQ(plugin.kind, NcclTransportKind::kNetIb);
  EXPECT_EQ(plugin.net_name, "IBext_v8");
  EXPECT_TRUE(plugin.gdrdma);
  EXPECT_EQ(plugin.peer_rank, 8);
  EXPECT_EQ(world.transports[2].kind, NcclTransportKind::kP2pIndirect);
  EXPECT_EQ(world.transports[2].intermediate_rank, 2);
  EXPECT_EQ(world.transports[3].kind, NcclTransportKind::kP2pCumem);
  EXPECT_TRUE(world.transports[3].copy_engine);
  EXPECT_EQ(world.transports[4].kind, NcclTransportKind::kNetOther);
  EXPECT_EQ(world.transports[4].net_name, "AWS Libfabric");
  EXPECT_EQ(world.transports[5].kind, NcclTransportKind::kCollNet);
  EXPECT_EQ(world.transports[5].net_name, "SHARP");
  EXPECT_EQ(world.transports[5].conn_index, 1);

  const NcclCommunicator& split = log.communicators[1];
  EXPECT_FALSE(split.has_comm_id);
  EXPECT_TRUE(split.comm_id.empty());
  EXPECT_EQ(split.parent_comm, "0x100");
  EXPECT_EQ(split.split_count, 1);
  EXPECT_EQ(split.split_color, 4);
  EXPECT_EQ(split.split_key, 0);
  EXPECT_TRUE(split.init_complete);

  const NcclCommunicator& reused = log.communicators[2];
  EXPECT_EQ(reused.comm, "0x100");
  EXPECT_EQ(reused.comm_id, "0x4444");
  EXPECT_FALSE(reused.destroyed);

  ASSERT_EQ(log.collectives.size(), 4u);
  const NcclCollective& rs = log.collectives[0];
  EXPECT_EQ(rs.op, NcclOp::kReduceScatter);
  EXPECT_EQ(rs.datatype, NcclDataType::kFloat16);
  EXPECT_EQ(rs.redop, NcclRedOp::kAvg);
  EXPECT_EQ(rs.bytes, 2000);
  EXPECT_EQ(rs.algo, NcclAlgo::kPat);
  EXPECT_EQ(rs.channel_lo, 2);
  EXPECT_EQ(rs.channel_hi, 5);
  EXPECT_EQ(rs.nchannels, 4);
  EXPECT_EQ(log.collectives[1].op, NcclOp::kAllToAll);
  EXPECT_FALSE(log.collectives[1].tuned);
  const NcclCollective& ag = log.collectives[2];
  EXPECT_EQ(ag.algo, NcclAlgo::kPat);
  EXPECT_EQ(ag.proto, NcclProto::kLL);
  EXPECT_EQ(ag.seq, 1u);
  const NcclCollective& after_reuse = log.collectives[3];
  EXPECT_EQ(after_reuse.comm_id, "0x4444");
  EXPECT_EQ(after_reuse.comm_index, 2);
  EXPECT_EQ(after_reuse.seq, 0u);
}

// A log picked up mid-run: calls on a communicator whose Init line was never seen.
TEST(NcclLogParserTest, CallsWithoutInit) {
  NcclLog log = ParseNcclLog(
      "h:1:1 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x1 recvbuff 0x1 count 2 datatype 8 op "
      "0 root 0 comm 0x42 [nranks=16] stream (nil)\n");
  EXPECT_EQ(log.error_count, 0);
  ASSERT_EQ(log.communicators.size(), 1u);
  EXPECT_EQ(log.communicators[0].nranks, 16);
  EXPECT_EQ(log.communicators[0].rank, -1);
  ASSERT_EQ(log.collectives.size(), 1u);
  EXPECT_TRUE(log.collectives[0].comm_id.empty());
  EXPECT_EQ(log.collectives[0].bytes, 16);
}

TEST(NcclLogFileTest, MissingFileNamesIt) {
  auto log = ParseNcclLogFile("/nonexistent/nccl.123.log");
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("/nonexistent/nccl.123.log"), std::string::npos);
}

TEST(NcclLogFileTest, MatchesInMemoryParse) {
  auto from_file = ParseNcclLogFile(kRank0Log);
  ASSERT_TRUE(from_file.ok());
  EXPECT_EQ(Dump(from_file.value()), Dump(ParseNcclLog(ReadFile(kRank0Log))));
}

}  // namespace
}  // namespace rankscope

#include "launchers/inspect.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "core/format.h"
#include "core/subprocess.h"
#include "model/nccl/nccl_log_file.h"
#include "model/nccl/nccl_log_json.h"
#include "model/nccl/nccl_types.h"
#include "model/ncu/kernel_analysis.h"
#include "model/ncu/ncu_file.h"
#include "model/ncu/ncu_html.h"
#include "model/ncu/ncu_text.h"
#include "model/topology/topology_file.h"
#include "model/topology/topology_json.h"
#include "model/topology/topology_text.h"

namespace rankscope {
namespace {

// One file's summary for a person: communicators, transports, calls grouped by shape.
std::string DescribeLog(const std::string& path, const NcclLog& log) {
  std::string out = path + ": NCCL " + (log.nccl_version.empty() ? "?" : log.nccl_version) + ", " +
                    std::to_string(log.communicators.size()) + " communicator(s), " +
                    std::to_string(log.collectives.size()) + " call(s), " +
                    std::to_string(log.skipped_lines) + " of " + std::to_string(log.lines) +
                    " lines not used\n";
  for (const NcclCommunicator& c : log.communicators) {
    std::map<std::string, int> kinds;
    for (const NcclTransport& t : c.transports) ++kinds[std::string(NcclTransportKindName(t.kind))];
    std::string transports;
    for (const auto& [kind, n] : kinds) {
      transports += (transports.empty() ? "" : ", ") + kind + " x" + std::to_string(n);
    }
    out += "  comm " + (c.comm_id.empty() ? c.comm : c.comm_id) + "  rank " +
           std::to_string(c.rank) + "/" + std::to_string(c.nranks) + "  nodes " +
           (c.nnodes < 0 ? "?" : std::to_string(c.nnodes)) + "  busId " +
           (c.bus_id.empty() ? "?" : c.bus_id) + "  channels " +
           (c.nchannels < 0 ? "?" : std::to_string(c.nchannels)) +
           "  transports: " + (transports.empty() ? "none logged" : transports) + "\n";
  }
  // Calls of one shape on one communicator: op, size, datatype, algorithm/protocol.
  std::map<std::tuple<std::string, std::string, Bytes, std::string, std::string>, int> shapes;
  for (const NcclCollective& c : log.collectives) {
    std::string tuning =
        c.tuned ? std::string(NcclAlgoName(c.algo)) + "/" + std::string(NcclProtoName(c.proto))
                : "untuned on this rank";
    ++shapes[{c.comm_id.empty() ? c.comm : c.comm_id, c.op_name, c.bytes,
              std::string(NcclDataTypeName(c.datatype)), tuning}];
  }
  for (const auto& [shape, n] : shapes) {
    const auto& [comm, op, bytes, type, tuning] = shape;
    out += "  " + std::to_string(n) + " x " + op + " " + FormatBytes(bytes) + " " + type + " on " +
           comm + "  " + tuning + "\n";
  }
  for (const NcclLogProblem& p : log.errors) {
    out += "  line " + std::to_string(p.line) + ": " + p.message + "\n";
  }
  if (log.truncated_last_line) out += "  the last line is cut short (file still being written?)\n";
  return out;
}

// Across files: every (comm_id, seq) call should appear once per rank of its communicator.
std::string CrossRankCheck(const std::vector<NcclLog>& logs) {
  std::map<std::pair<std::string, uint64_t>, std::set<int>> seen;
  std::map<std::string, int> nranks;
  for (const NcclLog& log : logs) {
    for (const NcclCollective& c : log.collectives) {
      if (c.comm_id.empty() || c.comm_index < 0) continue;
      const NcclCommunicator& comm = log.communicators[static_cast<size_t>(c.comm_index)];
      seen[{c.comm_id, c.seq}].insert(comm.rank);
      nranks[c.comm_id] = comm.nranks;
    }
  }
  int complete = 0;
  int partial = 0;
  for (const auto& [key, ranks] : seen) {
    (static_cast<int>(ranks.size()) == nranks[key.first] ? complete : partial) += 1;
  }
  return "across files: " + std::to_string(complete) + " call(s) seen on every rank of their " +
         "communicator, " + std::to_string(partial) + " on only some ranks\n";
}

Result<NcuReport> ReadNcuReport(const std::string& path) {
  Result<std::string> text = NcuRawCsvText(path);
  if (!text.ok()) return text.status();
  return ParseNcuRawCsv(text.value(), path);
}

}  // namespace

Result<std::string> NcuRawCsvText(const std::string& path) {
  if (path.ends_with(".ncu-rep")) {
    auto [status, text] = CaptureOutput({"ncu", "--import", path, "--csv", "--page", "raw"});
    if (status == 0) return text;
    return Result<std::string>::Error(
        path +
        (status == 127
             ? ": reading an .ncu-rep needs Nsight Compute's ncu on PATH"
             : ": `ncu --import FILE --csv --page raw` failed (exit " + std::to_string(status) +
                   ")" + (text.empty() ? "" : ": " + text.substr(0, 300))) +
        "; or run `ncu --import " + path +
        " --csv --page raw > R.csv` where ncu is and pass R.csv");
  }
  return ReadNcuRawCsvText(path);
}

int InspectNcu(const std::vector<std::string>& files, bool json, const std::string& html_path) {
  std::vector<KernelAnalysis> kernels;
  std::vector<std::string> problems;
  int rc = 0;
  for (const std::string& file : files) {
    Result<NcuReport> report = ReadNcuReport(file);
    if (!report.ok()) {
      std::fprintf(stderr, "rankscope inspect: %s\n", report.status().message().c_str());
      rc = 1;
      continue;
    }
    if (report->launches.empty()) {
      std::fprintf(stderr, "rankscope inspect: %s: no kernel launches in the file\n", file.c_str());
      rc = 1;
    }
    for (const std::string& p : report->problems) {
      std::fprintf(stderr, "rankscope inspect: %s\n", p.c_str());
      problems.push_back(p);
    }
    for (const NcuLaunch& launch : report->launches) {
      kernels.push_back(AnalyzeKernel(launch));
      kernels.back().file = file;
    }
  }
  if (json) {
    nlohmann::ordered_json out = {
        {"files", files}, {"kernels", KernelAnalysesToJson(kernels)}, {"problems", problems}};
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::fputs(DescribeKernels(kernels).c_str(), stdout);
  }
  if (!html_path.empty()) {
    std::string title = "rankscope inspect ncu:";
    for (const std::string& f : files) title += " " + f;
    std::ofstream out(html_path, std::ios::binary | std::ios::trunc);
    out << KernelsHtml(kernels, title);
    out.close();
    if (!out) {
      std::fprintf(stderr, "rankscope inspect: cannot write %s\n", html_path.c_str());
      return 1;
    }
  }
  return rc;
}

int InspectNcclLogs(const std::vector<std::string>& files, bool json) {
  std::vector<NcclLog> logs;
  std::vector<std::string> paths;
  int rc = 0;
  for (const std::string& path : files) {
    Result<NcclLog> log = ParseNcclLogFile(path);
    if (!log.ok()) {
      std::fprintf(stderr, "rankscope inspect: %s\n", log.status().message().c_str());
      rc = 1;
      continue;
    }
    logs.push_back(std::move(log).value());
    paths.push_back(path);
  }
  if (json) {
    nlohmann::ordered_json out = {{"files", nlohmann::ordered_json::array()},
                                  {"communicators", nlohmann::ordered_json::array()},
                                  {"collectives", nlohmann::ordered_json::array()},
                                  {"skipped_lines", 0}};
    int64_t skipped = 0;
    for (size_t i = 0; i < logs.size(); ++i) {
      nlohmann::ordered_json one = NcclLogToJson(logs[i]);
      for (auto& c : one["communicators"]) {
        c["file"] = paths[i];
        out["communicators"].push_back(c);
      }
      for (auto& c : one["collectives"]) {
        c["file"] = paths[i];
        out["collectives"].push_back(c);
      }
      skipped += logs[i].skipped_lines;
      one.erase("communicators");
      one.erase("collectives");
      one["path"] = paths[i];
      out["files"].push_back(one);
    }
    out["skipped_lines"] = skipped;
    // NCCL prints the tuning line (algorithm, protocol, channels) on rank 0 only; the other ranks
    // ran the same plan, so their calls take it from the call with the same (comm_id, seq).
    std::map<std::pair<std::string, uint64_t>, const nlohmann::ordered_json*> tuned;
    for (const auto& c : out["collectives"]) {
      if (!c["algo"].is_null() && c["comm_id"].is_string()) {
        tuned[{c["comm_id"].get<std::string>(), c["seq"].get<uint64_t>()}] = &c;
      }
    }
    for (auto& c : out["collectives"]) {
      if (!c["algo"].is_null() || !c["comm_id"].is_string()) continue;
      auto it = tuned.find({c["comm_id"].get<std::string>(), c["seq"].get<uint64_t>()});
      if (it == tuned.end()) continue;
      c["algo"] = (*it->second)["algo"];
      c["proto"] = (*it->second)["proto"];
      c["channels"] = (*it->second)["channels"];
      c["tuning_from"] = (*it->second)["file"];
    }
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return rc;
  }
  for (size_t i = 0; i < logs.size(); ++i)
    std::printf("%s", DescribeLog(paths[i], logs[i]).c_str());
  if (logs.size() > 1) std::printf("%s", CrossRankCheck(logs).c_str());
  return rc;
}

int InspectTopology(const std::string& file, bool json) {
  Result<NodeTopology> topo = ReadNcclTopologyFile(file);
  if (!topo.ok()) {
    std::fprintf(stderr, "rankscope inspect: %s\n", topo.status().message().c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", TopologyToJson(topo.value())
                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                            .c_str());
  } else {
    std::printf("%s", DescribeTopology(topo.value()).c_str());
  }
  return 0;
}

}  // namespace rankscope

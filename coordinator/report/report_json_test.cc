#include "coordinator/report/report_json.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>

#include "coordinator/analysis/diagnosis.h"
#include "coordinator/report/test_session.h"

namespace rankscope {
namespace {

using nlohmann::json;

TEST(ReportJson, HasEveryRequiredFieldWithTheRightType) {
  json r = BuildReportJson(report_test::MakeSession(), report_test::MakeFindings());
  EXPECT_EQ(r["schema"], "rankscope.report/v1");
  EXPECT_EQ(r["generated_by"]["name"], "rankscope");
  EXPECT_TRUE(r["generated_by"]["version"].is_string());

  const json& job = r["job"];
  EXPECT_EQ(job["id"], "4711");
  EXPECT_EQ(job["launcher"], "mpirun");
  ASSERT_TRUE(job["command"].is_array());
  EXPECT_EQ(job["command"][0], "mpirun");
  EXPECT_EQ(job["world_size"], 3);
  EXPECT_EQ(job["status"], "partial");
  ASSERT_EQ(job["partial_reasons"].size(), 1u);
  EXPECT_EQ(job["exit_code"], 137);
  EXPECT_TRUE(job["start_ns"].is_number_integer());
  EXPECT_EQ(job["end_ns"].get<int64_t>() - job["start_ns"].get<int64_t>(),
            job["duration_ns"].get<int64_t>());
  EXPECT_EQ(job["duration_ns"], 50'000'000);

  ASSERT_EQ(r["ranks"].size(), 3u);
  const json& r2 = r["ranks"][2];
  EXPECT_EQ(r2["rank"], 2);
  EXPECT_EQ(r2["node"], "node-b");
  EXPECT_EQ(r2["host"], "node-b.cluster");
  EXPECT_EQ(r2["pid"], 1002);
  EXPECT_EQ(r2["local_rank"], 0);
  EXPECT_EQ(r2["exit_code"], 137);
  EXPECT_EQ(r2["term_signal"], 9);
  EXPECT_EQ(r2["finished"], false);
  EXPECT_EQ(r2["dropped_records"], 17);
  EXPECT_EQ(r2["notices"].size(), 1u);
  EXPECT_EQ(r2["clock"]["offset_ns"], -1'234'567);
  EXPECT_EQ(r2["clock"]["drift_ppm"], 3.5);
  EXPECT_EQ(r2["clock"]["uncertainty_ns"], 12'000);
  EXPECT_EQ(r2["clock"]["samples"], 40);
  EXPECT_EQ(r2["clock"]["samples_total"], 160);
  EXPECT_EQ(r2["clock"]["fitted"], true);
  EXPECT_TRUE(r2["clock"]["error"].is_null());
  EXPECT_EQ(r2["counts"]["collectives"], 3);
  EXPECT_EQ(r2["counts"]["p2p"], 0);
  EXPECT_EQ(r2["counts"]["ranges"], 6);
  EXPECT_EQ(r2["counts"]["marks"], 1);
  EXPECT_TRUE(r["ranks"][0]["exit_code"].is_number_integer());

  ASSERT_EQ(r["findings"].size(), 2u);
  const json& f = r["findings"][0];  // worst first, although given second
  EXPECT_EQ(f["kind"], "straggler");
  EXPECT_EQ(f["severity"], "critical");
  EXPECT_EQ(f["ranks"], json::array({2}));
  EXPECT_EQ(f["nodes"], json::array({"node-b"}));
  EXPECT_TRUE(f["summary"].is_string());
  EXPECT_EQ(f["evidence"]["times_last"], 3);
  EXPECT_EQ(f["confidence"], 0.9);
  EXPECT_EQ(f["cost_ns"], 12'000'000);
  ASSERT_EQ(f["next_steps"].size(), 2u);
  EXPECT_EQ(f["next_steps"][0]["tool"], "nsys");
  EXPECT_TRUE(f["next_steps"][0]["command"].is_string());
  EXPECT_TRUE(f["next_steps"][0]["look_for"].is_string());
  EXPECT_EQ(r["findings"][1]["kind"], "dataloader_skew");

  EXPECT_EQ(r["collectives"]["instances"], 5);
  EXPECT_EQ(r["collectives"]["complete"], 3);
  EXPECT_EQ(r["collectives"]["by_op"], json({{"allreduce", 4}, {"bcast", 1}}));
}

// Why a rank was slow from outside the program: waiting for a CPU, throttled by its cgroup.
TEST(ReportJson, ProcessShowsRunDelayAndCgroupThrottling) {
  json r = BuildReportJson(report_test::MakeSession(), {});
  const json& p = r["ranks"][1]["process"];
  EXPECT_EQ(p["sched_cpu_ns"], 2'290'000'000);
  EXPECT_EQ(p["run_delay_ns"], 8'100'000'000);
  EXPECT_EQ(p["voluntary_switches"], 1'234);
  EXPECT_EQ(p["involuntary_switches"], 5'678);
  EXPECT_EQ(p["threads"], 17);
  EXPECT_EQ(p["sampled_wall_ns"], 15'300'000'000);
  EXPECT_NEAR(p["run_delay_per_wall"].get<double>(), 8.1 / 15.3, 1e-9);
  EXPECT_NEAR(p["cpu_per_wall"].get<double>(), 2.29 / 15.3, 1e-9);
  const json& c = p["cpu_cgroup"];
  EXPECT_EQ(c["version"], 1);
  EXPECT_EQ(c["path"], "/slurm/uid_0/job_7/step_0");
  EXPECT_EQ(c["limit_path"], "/slurm/uid_0/job_7");
  EXPECT_EQ(c["quota_us"], 1'500);
  EXPECT_NEAR(c["quota_cpus"].get<double>(), 0.3, 1e-9);
  EXPECT_EQ(c["nr_throttled"], 2'950);
  EXPECT_EQ(c["throttled_ns"], 10'700'000'000);
  // Nothing sampled: no ratios; an unlimited cgroup has no quota.
  const json& p2 = r["ranks"][2]["process"];
  EXPECT_TRUE(p2["cpu_per_wall"].is_null());
  EXPECT_TRUE(p2["cpu_cgroup"]["quota_us"].is_null());
  EXPECT_TRUE(p2["cpu_cgroup"]["quota_cpus"].is_null());
  EXPECT_EQ(p2["cpu_cgroup"]["counters_unreadable"], true);
  EXPECT_FALSE(r["ranks"][0].contains("process"));
}

TEST(ReportJson, UnknownExitCodesAreNull) {
  Session s = report_test::MakeSession();
  s.launcher_exit_code.reset();
  s.ranks[0].exit_code.reset();
  s.partial = false;
  s.partial_reasons.clear();
  json r = BuildReportJson(s, {});
  EXPECT_TRUE(r["job"]["exit_code"].is_null());
  EXPECT_TRUE(r["ranks"][0]["exit_code"].is_null());
  EXPECT_EQ(r["job"]["status"], "complete");
  EXPECT_TRUE(r["findings"].is_array());
  EXPECT_TRUE(r["findings"].empty());
}

TEST(FindingJson, RoundTrips) {
  for (const Finding& f : report_test::MakeFindings()) {
    Result<Finding> back = FindingFromJson(FindingToJson(f));
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(FindingToJson(back.value()), FindingToJson(f));
  }
  EXPECT_FALSE(FindingFromJson(json{{"kind", "straggler"}}).ok());
  json bad = FindingToJson(report_test::MakeFindings()[0]);
  bad["severity"] = "apocalyptic";
  EXPECT_NE(FindingFromJson(bad).status().message().find("severity"), std::string::npos);
}

// The kind and the cause are typed fields, named in report.json as before; a kind or cause a later
// rankscope names reads back as text and is written again unchanged.
TEST(FindingJson, KindAndCauseAreTypedAndNamesFromALaterVersionSurvive) {
  Finding f = report_test::MakeFindings()[0];
  f.kind = FindingKind::kStraggler;
  f.cause = CauseKind::kCpuStarved;
  const json j = FindingToJson(f);
  EXPECT_EQ(j["kind"], "straggler");
  EXPECT_EQ(j["evidence"]["cause_kind"], "cpu_starved");
  Result<Finding> back = FindingFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back.value().kind, FindingKind::kStraggler);
  EXPECT_EQ(back.value().cause, CauseKind::kCpuStarved);
  EXPECT_FALSE(back.value().evidence.contains("cause_kind"));  // held once, in the typed field

  json later = j;
  later["kind"] = "gpu_thermal_throttle";
  later["evidence"]["cause_kind"] = "hbm_ecc";
  Result<Finding> other = FindingFromJson(later);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_EQ(other.value().kind, FindingKind::kOther);
  EXPECT_EQ(other.value().KindName(), "gpu_thermal_throttle");
  EXPECT_EQ(other.value().cause, CauseKind::kNone);
  EXPECT_EQ(FindingToJson(other.value()), later);
}

// ---- JSON Schema validation through Python's jsonschema --------------------------------------

constexpr char kValidator[] = R"py(
import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(77)
schema = json.load(open(sys.argv[1]))
document = json.load(open(sys.argv[2]))
validator_class = jsonschema.Draft202012Validator
validator_class.check_schema(schema)
errors = list(validator_class(schema).iter_errors(document))
for e in errors:
    print("/".join(str(p) for p in e.absolute_path) + ": " + e.message)
sys.exit(1 if errors else 0)
)py";

struct Validation {
  bool available = false;
  bool valid = false;
  std::string output;
};

// Validates `document` against report.schema.json with Python jsonschema's
// Draft 2020-12 validator; available=false when Python or the module is missing.
Validation ValidateAgainstSchema(const json& document) {
  Validation v;
  if (access("/usr/bin/python3", X_OK) != 0) return v;
  std::string dir = report_test::MakeTempDir("schema");
  std::string script = dir + "/validate.py";
  std::string instance = dir + "/report.json";
  std::ofstream(script) << kValidator;
  std::ofstream(instance) << document.dump(2);
  std::string command =
      "/usr/bin/python3 " + script + " " RANKSCOPE_REPORT_SCHEMA " " + instance + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return v;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) v.output += buffer;
  int status = pclose(pipe);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  v.available = code != 77;
  v.valid = code == 0;
  return v;
}

// With the blame model: every rank says where its time went in MPI terms, the report who
// waited for whom, and the straggler its what-if; all of it in the schema, and the what-if
// read back by FindingFromJson as the typed field.
TEST(ReportSchema, BlameSectionValidatesAndTheWhatIfRoundTrips) {
  const Session s = report_test::MakeSession();
  const SessionMatches matches = MatchSession(s);
  BlameModel blame;
  const std::vector<Finding> findings = Diagnose(s, matches, AnalysisOptions{}, nullptr, &blame);
  const json report = BuildReportJson(s, findings, BuildGpuReport(s),
                                      SummarizeCollectives(matches.collectives), &blame);
  ASSERT_TRUE(report.contains("blame")) << report.dump();
  for (const json& r : report["ranks"]) ASSERT_TRUE(r.contains("mpi")) << r.dump();
  EXPECT_EQ(report["blame"]["span_ns"].get<int64_t>(), blame.span());
  const Validation v = ValidateAgainstSchema(report);
  if (!v.available) GTEST_SKIP() << "needs /usr/bin/python3 with jsonschema (python3-jsonschema)";
  EXPECT_TRUE(v.valid) << v.output;

  Finding f = findings.empty() ? Finding{} : findings.front();
  f.kind = FindingKind::kStraggler;
  f.summary = "rank 1 is slow";
  f.what_if = WhatIf{10 * kNsPerSec, 4 * kNsPerSec, 12 * kNsPerSec, {1}};
  const json j = FindingToJson(f);
  EXPECT_DOUBLE_EQ(j["evidence"]["what_if"]["speedup"].get<double>(), 2.5);
  Result<Finding> back = FindingFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back.value().what_if.has_value());
  EXPECT_EQ(back.value().what_if->with_typical, 4 * kNsPerSec);
  EXPECT_EQ(back.value().what_if->ranks, std::vector<int>{1});
  EXPECT_FALSE(back.value().evidence.contains("what_if"));
  EXPECT_EQ(FindingToJson(back.value()), j);
}

// Every operation name report.json can write under collectives.by_op is one the schema allows
// (scan and the neighbourhood collectives were added to the event model, not to the schema, and
// every real LAMMPS report failed validation).
TEST(ReportSchema, EveryCollectiveOpIsInTheSchema) {
  std::ifstream in(RANKSCOPE_REPORT_SCHEMA);
  const json schema = json::parse(in);
  const json& names =
      schema["$defs"]["collectives"]["properties"]["by_op"]["propertyNames"]["enum"];
  for (int op = 0; op <= kMaxCollectiveOp; ++op) {
    const std::string name(CollectiveOpName(static_cast<CollectiveOp>(op)));
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(ReportSchema, ReportValidates) {
  Validation v = ValidateAgainstSchema(
      BuildReportJson(report_test::MakeSession(), report_test::MakeFindings()));
  if (!v.available) GTEST_SKIP() << "needs /usr/bin/python3 with jsonschema (python3-jsonschema)";
  EXPECT_TRUE(v.valid) << v.output;

  v = ValidateAgainstSchema(BuildReportJson(report_test::MakeCleanSession(), {}));
  EXPECT_TRUE(v.valid) << v.output;
  v = ValidateAgainstSchema(BuildReportJson(Session{}, {}));
  EXPECT_TRUE(v.valid) << v.output;
  const json gpu = BuildReportJson(report_test::MakeGpuSession(), {});
  v = ValidateAgainstSchema(gpu);
  EXPECT_TRUE(v.valid) << v.output;
  EXPECT_TRUE(gpu["ranks"][0].contains("gpu")) << gpu["ranks"][0].dump();

  // torchrun restarted once: attempt 0's ranks under "attempts", the last attempt in "ranks".
  Session restarted = report_test::MakeCleanSession();
  for (RankData r : restarted.ranks) {
    r.exit_code = r.id.rank == 1 ? 1 : 0;
    restarted.earlier_attempts.push_back(r);
  }
  for (RankData& r : restarted.ranks) r.id.restart_count = 1;
  const json attempts = BuildReportJson(restarted, {});
  v = ValidateAgainstSchema(attempts);
  EXPECT_TRUE(v.valid) << v.output;
  ASSERT_EQ(attempts["attempts"].size(), 1u);
  EXPECT_EQ(attempts["attempts"][0]["restart_count"], 0);
  EXPECT_EQ(attempts["attempts"][0]["ranks"].size(), restarted.ranks.size());
  EXPECT_EQ(attempts["attempts"][0]["ranks"][1]["exit_code"], 1);
  EXPECT_EQ(attempts["ranks"][0]["restart_count"], 1);
}

TEST(ReportSchema, RejectsBrokenReports) {
  const json good = BuildReportJson(report_test::MakeSession(), report_test::MakeFindings());
  if (!ValidateAgainstSchema(good).available) {
    GTEST_SKIP() << "needs /usr/bin/python3 with jsonschema (python3-jsonschema)";
  }
  std::vector<std::pair<const char*, std::function<void(json&)>>> breakages = {
      {"missing job.status", [](json& r) { r["job"].erase("status"); }},
      {"unknown status", [](json& r) { r["job"]["status"] = "done"; }},
      {"unknown severity", [](json& r) { r["findings"][0]["severity"] = "fatal"; }},
      {"unknown kind", [](json& r) { r["findings"][0]["kind"] = "gremlins"; }},
      {"fitted not a bool", [](json& r) { r["ranks"][0]["clock"]["fitted"] = "yes"; }},
      {"command not strings",
       [](json& r) {
         r["job"]["command"] = json::array({1, 2});
       }},
      {"extra top-level key", [](json& r) { r["surprise"] = 1; }},
      {"wrong schema id", [](json& r) { r["schema"] = "rankscope.report/v2"; }},
      {"confidence above 1", [](json& r) { r["findings"][0]["confidence"] = 1.5; }},
      {"missing clock", [](json& r) { r["ranks"][1].erase("clock"); }},
      {"unknown op", [](json& r) { r["collectives"]["by_op"]["allsmash"] = 1; }},
      {"complete with reasons", [](json& r) { r["job"]["status"] = "complete"; }},
  };
  for (const auto& [what, breakage] : breakages) {
    json broken = good;
    breakage(broken);
    EXPECT_FALSE(ValidateAgainstSchema(broken).valid) << what << " was accepted";
  }
}

TEST(ReportJson, NcclCommunicatorsAreMergedAcrossRanksAndTopologyParsed) {
  json report = BuildReportJson(report_test::MakeSession(), report_test::MakeFindings());
  ASSERT_TRUE(report.contains("nccl"));
  const json& comm = report["nccl"]["communicators"][0];
  EXPECT_EQ(comm["comm_id"], "0x1e900aa5c8e42401");
  EXPECT_EQ(comm["ranks_reporting"], json::array({0, 1}));
  EXPECT_EQ(comm["calls"], 3);
  EXPECT_EQ(comm["calls_on_every_rank"], 3);
  // Rank 1's log has no tuning lines; the merged shape takes rank 0's.
  ASSERT_EQ(comm["shapes"].size(), 1u);
  EXPECT_EQ(comm["shapes"][0]["algo"], "RING");
  EXPECT_EQ(comm["transports"]["P2P/CUMEM"], 2);
  ASSERT_EQ(report["topology"].size(), 1u);
  EXPECT_EQ(report["topology"][0]["node"], "node-a");
  EXPECT_EQ(report["topology"][0]["topology"]["gpus"].size(), 2u);
  EXPECT_TRUE(report["topology"][0]["topology"]["all_gpus_nvlink_connected"].get<bool>());
}

}  // namespace
}  // namespace rankscope

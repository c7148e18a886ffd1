#include "coordinator/sweep/sweep_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace rankscope {
namespace {

std::vector<NodeVerdict> Verdicts() {
  std::vector<SweepNodeInput> nodes;
  for (const char* n : {"n1", "n2", "n3"}) {
    nodes.push_back({n,
                     true,
                     "",
                     {{"mem.bandwidth", "", 10e9, "bytes_per_second", "", ""},
                      {"fs.free_bytes", "/scratch", 50e9, "bytes", "", "50 GiB free"}}});
  }
  nodes[2].results[1].value = 1e6;  // n3's scratch is full
  nodes.push_back({"n4", false, "srun exit 1: node down", {}});
  return JudgeSweep(nodes, DefaultSweepThresholds());
}

SweepRunInfo SweepRun() { return {"sweep-1", "quick", 1.7e9, 12.5, {"n5: unknown node"}}; }

TEST(SweepReport, TextGridAndProblems) {
  const std::string text = SweepReportText(SweepRun(), Verdicts());
  EXPECT_NE(text.find("2 pass, 0 warn, 2 fail"), std::string::npos) << text;
  EXPECT_NE(text.find("fs.free_bytes:/scratch"), std::string::npos) << text;
  EXPECT_NE(text.find("fail  n3 fs.free_bytes:/scratch: 976.6 KiB < 100.0 MiB"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fail  n4: did not answer: srun exit 1: node down"), std::string::npos);
  EXPECT_NE(text.find("note: n5: unknown node"), std::string::npos);
}

TEST(SweepReport, HtmlGridEscapesAndColours) {
  std::vector<NodeVerdict> v = Verdicts();
  v[3].problem = "did not answer: <script>";
  const std::string html = SweepReportHtml(SweepRun(), v);
  EXPECT_NE(html.find("<td class=\"fail\" title=\"976.6 KiB &lt; 100.0 MiB\">976.6 KiB</td>"),
            std::string::npos)
      << html;
  EXPECT_NE(html.find("n4: did not answer: &lt;script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
}

TEST(SweepReport, JsonCarriesEveryFigure) {
  auto j = nlohmann::json::parse(SweepReportJson(SweepRun(), Verdicts()));
  EXPECT_EQ(j["sweep"]["exit_code"], 2);
  ASSERT_EQ(j["nodes"].size(), 4u);
  EXPECT_EQ(j["nodes"][2]["status"], "fail");
  EXPECT_EQ(j["nodes"][2]["checks"][1]["subject"], "/scratch");
  EXPECT_EQ(j["nodes"][2]["checks"][1]["value"], 1e6);
  EXPECT_EQ(j["nodes"][3]["problem"], "did not answer: srun exit 1: node down");
}

TEST(SweepReport, PrometheusNamesAndFamilies) {
  EXPECT_EQ(SweepMetricName("mem.bandwidth", "bytes_per_second"),
            "rankscope_sweep_mem_bandwidth_bytes_per_second");
  EXPECT_EQ(SweepMetricName("fs.free_bytes", "bytes"), "rankscope_sweep_fs_free_bytes");
  EXPECT_EQ(SweepMetricName("clock.offset", "seconds"), "rankscope_sweep_clock_offset_seconds");
  EXPECT_EQ(SweepMetricName("fs.free_ratio", "ratio"), "rankscope_sweep_fs_free_ratio");
  const std::string prom = SweepPrometheus(SweepRun(), Verdicts());
  EXPECT_NE(prom.find("rankscope_sweep_node_status{node=\"n3\"} 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("rankscope_sweep_fs_free_bytes{node=\"n3\",subject=\"/scratch\"} 1000000\n"),
            std::string::npos)
      << prom;
  // Each family's TYPE line comes once, before its series.
  EXPECT_EQ(prom.find("# TYPE rankscope_sweep_mem_bandwidth_bytes_per_second gauge"),
            prom.rfind("# TYPE rankscope_sweep_mem_bandwidth_bytes_per_second gauge"));
  EXPECT_LT(prom.find("# TYPE rankscope_sweep_mem_bandwidth_bytes_per_second"),
            prom.find("rankscope_sweep_mem_bandwidth_bytes_per_second{node=\"n1\"}"));
}

TEST(SweepReport, GpuCountersAreCountersAndGpusShareAColumn) {
  SweepCheckResult ecc0{"gpu.ecc_uncorrected_aggregate", "gpu0", 0, "total", "", ""};
  SweepCheckResult ecc1{"gpu.ecc_uncorrected_aggregate", "gpu1", 2, "total", "", ""};
  SweepCheckResult hot{"gpu.temperature", "gpu1", 93, "celsius", "", ""};
  ecc0.model = ecc1.model = hot.model = "NVIDIA H200";
  auto v = JudgeSweep({{"n1", true, "", {ecc0, ecc1, hot}}}, DefaultSweepThresholds());
  EXPECT_EQ(SweepMetricName("gpu.ecc_uncorrected_aggregate", "total"),
            "rankscope_sweep_gpu_ecc_uncorrected_aggregate_total");
  const std::string prom = SweepPrometheus(SweepRun(), v);
  EXPECT_NE(prom.find("# TYPE rankscope_sweep_gpu_ecc_uncorrected_aggregate_total counter\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("rankscope_sweep_gpu_ecc_uncorrected_aggregate_total{node=\"n1\","
                      "subject=\"gpu1\"} 2\n"),
            std::string::npos);
  EXPECT_NE(prom.find("# TYPE rankscope_sweep_gpu_temperature_celsius gauge\n"), std::string::npos);
  // One grid column per GPU check; the hot GPU's cell names it.
  const std::string text = SweepReportText(SweepRun(), v);
  EXPECT_EQ(text.find("gpu.ecc_uncorrected_aggregate:gpu0"), std::string::npos) << text;
  EXPECT_NE(text.find("93 C gpu1 !!"), std::string::npos) << text;
  const std::string html = SweepReportHtml(SweepRun(), v);
  EXPECT_NE(html.find("title=\"gpu1 (NVIDIA H200): 93 C &gt; 90 C\""), std::string::npos) << html;
}

TEST(SweepReport, JUnitFailuresAndErrors) {
  const std::string xml = SweepJUnit(SweepRun(), Verdicts());
  EXPECT_NE(xml.find("<testsuite name=\"n3\" tests=\"2\" failures=\"1\" errors=\"0\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("<testsuite name=\"n4\" tests=\"1\" failures=\"0\" errors=\"1\">"),
            std::string::npos);
  EXPECT_NE(xml.find("<failure message=\"976.6 KiB &lt; 100.0 MiB\"/>"), std::string::npos);
  std::vector<NodeVerdict> v = Verdicts();
  v[3].problem = "srun exit 1: \x1b[31mred\r";
  EXPECT_NE(SweepJUnit(SweepRun(), v).find("srun exit 1: ?[31mred?"), std::string::npos);
}

}  // namespace
}  // namespace rankscope

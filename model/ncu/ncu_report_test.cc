#include "model/ncu/ncu_report.h"

#include "gtest/gtest.h"
#include "model/ncu/ncu_file.h"

namespace rankscope {
namespace {

const std::string kFixtures = std::string(RANKSCOPE_FIXTURES_DIR) + "/h200-ncu/";

TEST(NcuUnitScale, PrefixesOfTheNumeratorAndTimesOfTheDenominator) {
  EXPECT_DOUBLE_EQ(NcuUnitScale("Kbyte/cycle"), 1e3);
  EXPECT_DOUBLE_EQ(NcuUnitScale("Tbyte/s"), 1e12);
  EXPECT_DOUBLE_EQ(NcuUnitScale("Mbyte"), 1e6);
  EXPECT_DOUBLE_EQ(NcuUnitScale("us"), 1e-6);
  EXPECT_DOUBLE_EQ(NcuUnitScale("ms"), 1e-3);
  EXPECT_DOUBLE_EQ(NcuUnitScale("Ghz"), 1e9);
  EXPECT_DOUBLE_EQ(NcuUnitScale("sector/ns"), 1e9);
  EXPECT_DOUBLE_EQ(NcuUnitScale("sector/ms"), 1e3);
  EXPECT_DOUBLE_EQ(NcuUnitScale("byte/cycle"), 1);
  EXPECT_DOUBLE_EQ(NcuUnitScale("%"), 1);
  EXPECT_DOUBLE_EQ(NcuUnitScale("register/thread"), 1);
  EXPECT_DOUBLE_EQ(NcuUnitScale("SM"), 1);
}

TEST(ParseNcuRawCsv, ReadsEveryLaunchOfARealH200File) {
  Result<NcuReport> r = ParseNcuRawCsvFile(kFixtures + "torch_gemm_gelu.raw.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->launches.size(), 2u);
  EXPECT_FALSE(r->partial);
  const NcuLaunch& gemm = r->launches[0];
  EXPECT_EQ(gemm.id, 0);
  EXPECT_EQ(gemm.kernel, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(gemm.device, "NVIDIA H200");
  EXPECT_NEAR(*gemm.Number("gpu__time_duration.sum"), 218.784e-6, 1e-12);   // printed in us
  EXPECT_NEAR(*gemm.Number("dram__bytes.sum.peak_sustained"), 1504, 1e-9);  // Kbyte/cycle
  EXPECT_NEAR(*gemm.Number("dram__bytes.sum.per_second"), 0.806912e12, 1);  // Tbyte/s
  EXPECT_NEAR(*gemm.Number("launch__grid_size"), 132, 0);
  // "16,384" with a thousands separator is a number.
  EXPECT_NEAR(*r->launches[1].Number("launch__grid_size"), 16384, 0);
  EXPECT_FALSE(gemm.Number("launch__cluster_scheduling_policy"));
  EXPECT_EQ(gemm.texts.at("launch__cluster_scheduling_policy"), "PolicySpread");
}

TEST(ParseNcuRawCsv, AFileCutShortKeepsTheWholeRowsAndSaysWhere) {
  const std::string head = "\"ID\",\"Kernel Name\",\"gpu__time_duration.sum\"\n\"\",\"\",\"us\"\n";
  Result<NcuReport> r =
      ParseNcuRawCsv(head + "\"0\",\"k(int)\",\"5.1\"\n\"1\",\"k(int)\"", "cut.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->launches.size(), 1u);
  EXPECT_TRUE(r->partial);
  ASSERT_EQ(r->problems.size(), 1u);
  EXPECT_NE(r->problems[0].find("cut.csv:4"), std::string::npos) << r->problems[0];
  // A quoted field left open at the end is cut short too.
  Result<NcuReport> open_quote = ParseNcuRawCsv(head + "\"0\",\"k(int", "open.csv");
  ASSERT_TRUE(open_quote.ok());
  EXPECT_TRUE(open_quote->partial);
  EXPECT_TRUE(open_quote->launches.empty());
}

TEST(ParseNcuRawCsv, OtherCsvIsRefusedWithTheFileNamed) {
  Result<NcuReport> empty = ParseNcuRawCsv("", "empty.csv");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty.csv"), std::string::npos);
  Result<NcuReport> details = ParseNcuRawCsvFile(kFixtures + "../h200-ncu/README.md");
  EXPECT_FALSE(details.ok());
  Result<NcuReport> other = ParseNcuRawCsv("a,b\n1,2\n3,4\n", "other.csv");
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("--page raw"), std::string::npos)
      << other.status().message();
  Result<NcuReport> missing = ParseNcuRawCsvFile(kFixtures + "no-such.csv");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such.csv"), std::string::npos);
}

}  // namespace
}  // namespace rankscope

#include "model/ncu/ncu_html.h"

#include "gtest/gtest.h"
#include "model/ncu/ncu_fixtures_for_tests.h"

namespace rankscope {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ShortKernelName, TheFunctionsOwnName) {
  EXPECT_EQ(ShortKernelName("heavy_stencil(float *, const float *, int, int)"), "heavy_stencil");
  EXPECT_EQ(ShortKernelName("void at::vectorized_elementwise_kernel<8, at::GeluCUDAKernelImpl("
                            "at::TensorIteratorBase &)>(int, T2, T3)"),
            "vectorized_elementwise_kernel");
  EXPECT_EQ(ShortKernelName("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
}

// Every kernel of the fixtures a labelled dot; one roof per precision of the H200 with its
// ridge marked; no script and nothing fetched.
TEST(RooflineSvg, EachKernelADotOnItsGpusRoofs) {
  const std::vector<KernelAnalysis> k =
      AnalyzeFixtures({"torch_gemm_gelu.raw.csv", "heavy_stencil.raw.csv", "light_kernel.raw.csv"});
  ASSERT_EQ(k.size(), 5u);
  const std::string svg = RooflineSvg(k);
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(Count(svg, "<polyline"), 4u);  // fp64, fp32, fp16, tensor
  EXPECT_EQ(Count(svg, "r=\"5\""), 5u);    // the kernels
  EXPECT_NE(svg.find(">nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT #0<"), std::string::npos);
  EXPECT_NE(svg.find(">heavy_stencil #0<"), std::string::npos);
  EXPECT_NE(svg.find("compute-bound"), std::string::npos);
  const std::string html = KernelsHtml(k, "kernels");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // No address but SVG's namespace.
  EXPECT_EQ(Count(html, "http://") + Count(html, "https://"),
            Count(html, "xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  EXPECT_EQ(Count(html, "<h2>"), 6u);  // the chart and each kernel
  // The GELU's name carries '&' and '<': escaped.
  EXPECT_NE(html.find("TensorIteratorBase &amp;"), std::string::npos);
}

TEST(StallBarsSvg, ABarPerReasonTheLongestFullWidth) {
  const std::vector<KernelAnalysis> k = AnalyzeFixtures({"light_kernel.raw.csv"});
  ASSERT_FALSE(k.empty());
  const std::string bars = StallBarsSvg(k[0]);
  EXPECT_EQ(Count(bars, "<rect"), k[0].stalls.size());
  EXPECT_NE(bars.find("width=\"360.0\""), std::string::npos);  // long_scoreboard, the most
  EXPECT_TRUE(StallBarsSvg(KernelAnalysis{}).empty());
}

TEST(RooflineSvg, NothingToPlaceNoChart) {
  EXPECT_TRUE(RooflineSvg({}).empty());
  EXPECT_NE(KernelsHtml({}, "none").find("No kernel"), std::string::npos);
}

}  // namespace
}  // namespace rankscope

#include "agent/inject/cupti_config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace rankscope::inject {
namespace {

// The environment the lookup below reads; each test fills it.
std::map<std::string, std::string> g_env;

const char* Lookup(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

TEST(CuptiConfig, DefaultsWhenNothingIsSet) {
  g_env = {};
  CuptiConfig c = CuptiConfigFromEnv(Lookup);
  EXPECT_EQ(c.mode, CuptiMode::kAll);
  EXPECT_EQ(c.buffer_count, 8u);
  EXPECT_EQ(c.buffer_bytes, size_t{4} << 20);
  EXPECT_EQ(c.flush_period, 500 * kNsPerMs);
  EXPECT_TRUE(c.library_path.empty());
  EXPECT_TRUE(c.pick_launch_calls);
  EXPECT_TRUE(c.synchronization);
  EXPECT_FALSE(c.discard);
  EXPECT_TRUE(c.problems.empty());
}

TEST(CuptiConfig, ReadsEveryVariable) {
  g_env = {
      {"RANKSCOPE_CUPTI_MODE", "kernels"}, {"RANKSCOPE_CUPTI_PATH", "/opt/cupti/libcupti.so.12"},
      {"RANKSCOPE_CUPTI_BUFFERS", "16"},   {"RANKSCOPE_CUPTI_BUFFER_KB", "1024"},
      {"RANKSCOPE_CUPTI_FLUSH_MS", "100"}, {"RANKSCOPE_CUPTI_PICK_CALLS", "0"},
      {"RANKSCOPE_CUPTI_SYNC", "0"},       {"RANKSCOPE_CUPTI_DISCARD", "1"}};
  CuptiConfig c = CuptiConfigFromEnv(Lookup);
  EXPECT_FALSE(c.pick_launch_calls);
  EXPECT_FALSE(c.synchronization);
  EXPECT_TRUE(c.discard);
  EXPECT_EQ(c.mode, CuptiMode::kKernels);
  EXPECT_EQ(c.library_path, "/opt/cupti/libcupti.so.12");
  EXPECT_EQ(c.buffer_count, 16u);
  EXPECT_EQ(c.buffer_bytes, size_t{1} << 20);
  EXPECT_EQ(c.flush_period, 100 * kNsPerMs);
  EXPECT_TRUE(c.problems.empty());
  g_env = {{"RANKSCOPE_CUPTI_MODE", "gpu"}};
  EXPECT_EQ(CuptiConfigFromEnv(Lookup).mode, CuptiMode::kGpu);
  g_env = {{"RANKSCOPE_CUPTI_MODE", "api"}};
  EXPECT_EQ(CuptiConfigFromEnv(Lookup).mode, CuptiMode::kApi);
}

TEST(CuptiConfig, BadValuesKeepDefaultsAndSayWhich) {
  g_env = {{"RANKSCOPE_CUPTI_MODE", "everything"},
           {"RANKSCOPE_CUPTI_BUFFERS", "1000"},
           {"RANKSCOPE_CUPTI_BUFFER_KB", "12x"},
           {"RANKSCOPE_CUPTI_FLUSH_MS", "-5"}};
  CuptiConfig c = CuptiConfigFromEnv(Lookup);
  EXPECT_EQ(c.mode, CuptiMode::kAll);
  EXPECT_EQ(c.buffer_count, 8u);
  EXPECT_EQ(c.buffer_bytes, size_t{4} << 20);
  EXPECT_EQ(c.flush_period, 500 * kNsPerMs);
  ASSERT_EQ(c.problems.size(), 4u);
  EXPECT_EQ(c.problems[0],
            "RANKSCOPE_CUPTI_MODE=everything is not one of kernels, gpu, all, api; using all");
  EXPECT_EQ(c.problems[1],
            "RANKSCOPE_CUPTI_BUFFERS=1000 is not a whole number in [2, 64]; using 8");
  EXPECT_NE(c.problems[2].find("RANKSCOPE_CUPTI_BUFFER_KB=12x"), std::string::npos);
  EXPECT_NE(c.problems[3].find("RANKSCOPE_CUPTI_FLUSH_MS=-5"), std::string::npos);
}

TEST(CuptiConfig, AnExplicitPathIsTheOnlyCandidate) {
  g_env = {{"RANKSCOPE_CUPTI_PATH", "/nonexistent"}};
  CuptiConfig c = CuptiConfigFromEnv(Lookup);
  EXPECT_EQ(CuptiLibraryCandidates(c, Lookup), std::vector<std::string>{"/nonexistent"});
}

TEST(CuptiConfig, SearchTriesSonamesThenToolkitFolders) {
  g_env = {{"CUDA_HOME", "/opt/cuda-12.8"}};
  std::vector<std::string> candidates = CuptiLibraryCandidates(CuptiConfigFromEnv(Lookup), Lookup);
  ASSERT_GE(candidates.size(), 9u);
  EXPECT_EQ(candidates[0], "libcupti.so.13");
  EXPECT_EQ(candidates[1], "libcupti.so.12");
  EXPECT_EQ(candidates[2], "libcupti.so");
  EXPECT_EQ(candidates[3], "/opt/cuda-12.8/lib64/libcupti.so.13");
  EXPECT_NE(std::find(candidates.begin(), candidates.end(),
                      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.12"),
            candidates.end());
}

}  // namespace
}  // namespace rankscope::inject

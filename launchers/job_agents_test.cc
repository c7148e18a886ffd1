#include "launchers/job_agents.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "agent/proc_environ.h"
#include "launchers/capture_cmd.h"

namespace rankscope {
namespace {

std::string Block(std::initializer_list<std::string> vars) {
  std::string out;
  for (const std::string& v : vars) out += v + '\0';
  return out;
}

TEST(Attach, ParseEnvironReadsANulSeparatedBlock) {
  const auto env = ParseEnviron(Block({"A=1", "SLURM_JOB_ID=42", "EMPTY=", "X=a=b"}));
  EXPECT_EQ(env.at("SLURM_JOB_ID"), "42");
  EXPECT_EQ(env.at("X"), "a=b");
  EXPECT_EQ(env.at("EMPTY"), "");
  EXPECT_EQ(env.count("SLURM_JOB"), 0u);  // a prefix of a name is not the name
  EXPECT_TRUE(ParseEnviron("").empty());
}

// A /proc of four processes: two agents of job 42 (same coordinator), a rank of job 42 (no
// secret: agents strip it), and an agent of job 7; then an agent started by the SPANK plugin.
TEST(Attach, FindsTheJobsAgentsByTheirEnvironmentOnly) {
  const std::filesystem::path proc =
      std::filesystem::temp_directory_path() / ("rs-proc-" + std::to_string(getpid()));
  auto process = [&](const std::string& pid, const std::string& environ) {
    std::filesystem::create_directories(proc / pid);
    std::ofstream(proc / pid / "environ", std::ios::binary) << environ;
  };
  process("100", Block({"SLURM_JOB_ID=42", "RANKSCOPE_COORDINATOR=n1:5000", "RANKSCOPE_TOKEN=s"}));
  process("101", Block({"SLURM_JOB_ID=42", "RANKSCOPE_COORDINATOR=n1:5000", "RANKSCOPE_TOKEN=s"}));
  process("102", Block({"SLURM_JOB_ID=42", "RANKSCOPE_COORDINATOR=n1:5000"}));
  process("200", Block({"SLURM_JOB_ID=7", "RANKSCOPE_COORDINATOR=n2:6000", "RANKSCOPE_TOKEN=t"}));
  process("self", Block({"SLURM_JOB_ID=42", "RANKSCOPE_COORDINATOR=x", "RANKSCOPE_TOKEN=y"}));
  std::vector<AgentEndpoint> found = FindJobAgents("42", getuid(), proc.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].coordinator, "n1:5000");
  EXPECT_EQ(found[0].token, "s");
  EXPECT_TRUE(FindJobAgents("43", getuid(), proc.string()).empty());
  EXPECT_TRUE(FindJobAgents("42", getuid() + 1, proc.string()).empty());  // not ours
  process("300", Block({"SLURM_JOB_ID=9", "SLURM_RANKSCOPE_COORDINATOR=n3:7000",
                        "SLURM_RANKSCOPE_TOKEN=u", "RANKSCOPE_SPANK_ARGV0=./train"}));
  process("301", Block({"SLURM_JOB_ID=9", "RANKSCOPE_COORDINATOR=n3:7000"}));  // its rank
  found = FindJobAgents("9", getuid(), proc.string());
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].coordinator, "n3:7000");
  EXPECT_EQ(found[0].token, "u");
  std::filesystem::remove_all(proc);
}

TEST(Capture, EndpointFileIsPrivate) {
  const std::string runtime =
      (std::filesystem::temp_directory_path() / ("rs-rt-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(runtime);
  setenv("XDG_RUNTIME_DIR", runtime.c_str(), 1);
  Result<std::string> path = WriteEndpoint("rs-1", "127.0.0.1:5000", "secret");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(path.value(), runtime + "/rankscope/rs-1.endpoint");
  struct stat st {};
  ASSERT_EQ(stat(path.value().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((runtime + "/rankscope").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::ifstream in(path.value());
  std::string address, token;
  std::getline(in, address);
  std::getline(in, token);
  EXPECT_EQ(address, "127.0.0.1:5000");
  EXPECT_EQ(token, "secret");
  // A shared directory in its place is refused, not used.
  std::filesystem::remove_all(runtime + "/rankscope");
  std::filesystem::create_directories(runtime + "/rankscope");
  chmod((runtime + "/rankscope").c_str(), 0777);
  EXPECT_FALSE(WriteEndpoint("rs-2", "a", "b").ok());
  std::filesystem::remove_all(runtime);
  unsetenv("XDG_RUNTIME_DIR");
}

}  // namespace
}  // namespace rankscope

#include "agent/outside_sampler.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rankscope {
namespace {

std::string Block(std::initializer_list<std::string> vars) {
  std::string out;
  for (const std::string& v : vars) out += v + '\0';
  return out;
}

TEST(OutsideSampler, ParsesAnEnvironBlock) {
  const EnvMap env = ParseEnviron(Block({"A=1", "X=a=b", "EMPTY=", "=bad", "noequals"}));
  EXPECT_EQ(env.size(), 3u);
  EXPECT_EQ(env.at("X"), "a=b");
  EXPECT_EQ(env.at("EMPTY"), "");
}

// A /proc of job 42 on node n1 run under srun with torchrun: the launcher, its two workers, a
// DataLoader worker of rank 0, attach-node's own step, another job, the batch script and a rank
// on node n2. Only the two workers are ranks to sample.
TEST(OutsideSampler, FindsTheJobsRanksByTheirEnvironment) {
  const std::filesystem::path proc =
      std::filesystem::temp_directory_path() / ("rs-ranks-" + std::to_string(getpid()));
  auto process = [&](int pid, int ppid, const std::string& environ, const std::string& cmd) {
    const std::filesystem::path dir = proc / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "environ", std::ios::binary) << environ;
    std::ofstream(dir / "cmdline", std::ios::binary) << cmd;
    std::ofstream(dir / "stat") << pid << " (" << cmd.substr(0, cmd.find('\0')) << ") S " << ppid
                                << " 1 1 0 -1";
  };
  const std::string step0 = Block({"SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURMD_NODENAME=n1",
                                   "SLURM_PROCID=0", "SLURM_LOCALID=0", "SLURM_NTASKS=1"});
  auto worker = [&](int rank) {
    return step0 + Block({"TORCHELASTIC_RUN_ID=r1", "RANK=" + std::to_string(rank),
                          "LOCAL_RANK=" + std::to_string(rank), "WORLD_SIZE=2"});
  };
  process(100, 1, step0, std::string("torchrun\0train.py", 17));
  process(101, 100, worker(0), std::string("python3\0train.py", 16));
  process(102, 100, worker(1), std::string("python3\0train.py", 16));
  process(103, 101, worker(0), std::string("python3\0-c\0loader", 18));  // a DataLoader worker
  process(104, 1,
          Block({"SLURM_JOB_ID=42", "SLURM_STEP_ID=1", "SLURMD_NODENAME=n1", "SLURM_PROCID=0"}),
          "rankscope");  // the attach's own step
  process(105, 1, Block({"SLURM_JOB_ID=43", "SLURM_STEP_ID=0", "SLURM_PROCID=0"}), "other");
  process(106, 1, Block({"SLURM_JOB_ID=42", "SLURM_PROCID=0", "SLURMD_NODENAME=n1"}), "batch");
  process(107, 1,
          Block({"SLURM_JOB_ID=42", "SLURM_STEP_ID=0", "SLURMD_NODENAME=n2", "SLURM_PROCID=1"}),
          "elsewhere");

  const std::vector<JobRank> ranks = FindJobRanks("42", "1", "n1", getuid(), proc.string());
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].pid, 101);
  EXPECT_EQ(ranks[0].id.rank, 0);
  EXPECT_EQ(ranks[0].id.launcher, "torchrun");
  EXPECT_EQ(ranks[0].command, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(ranks[1].pid, 102);
  EXPECT_EQ(ranks[1].id.rank, 1);
  EXPECT_EQ(ranks[1].id.world_size, 2);
  EXPECT_TRUE(FindJobRanks("42", "1", "n1", getuid() + 1, proc.string()).empty());  // not ours
  // Plain srun tasks (no launcher inside): each task is a rank.
  EXPECT_EQ(FindJobRanks("43", "", "n1", getuid(), proc.string()).size(), 1u);
  std::filesystem::remove_all(proc);
}

}  // namespace
}  // namespace rankscope

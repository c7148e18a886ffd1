#include "coordinator/advise/next_steps.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

Session TwoRanks(std::string launcher, std::vector<std::string> command,
                 std::vector<std::string> program) {
  Session s;
  s.launcher = std::move(launcher);
  s.command = std::move(command);
  s.world_size = 2;
  s.job_id = "77";
  for (int r = 0; r < 2; ++r) {
    RankData d;
    d.id.rank = r;
    d.id.node = "node" + std::to_string(r);
    d.id.program_pid = 500 + r;
    d.id.program = program;
    s.ranks.push_back(d);
  }
  return s;
}

TEST(NextStepsTest, ShellQuote) {
  EXPECT_EQ(ShellQuote("./app"), "./app");
  EXPECT_EQ(ShellQuote("--output=rank2.%p"), "--output=rank2.%p");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$HOME"), "'$HOME'");
  EXPECT_EQ(ShellJoin({"echo", "a b", "c"}), "echo 'a b' c");
}

TEST(NextStepsTest, MpirunWrapsOnlyTheChosenRank) {
  const Session s = TwoRanks("mpirun", {"mpirun", "-np", "2", "--", "./app", "--n", "a b"},
                             {"/home/u/app", "--n", "a b"});
  EXPECT_EQ(RelaunchWithToolOnRank(s, 1, {"nsys", "profile", "--output=rank1.%p"}),
            "mpirun -np 2 bash -c 'if [ \"${OMPI_COMM_WORLD_RANK:-$PMI_RANK}\" = 1 ]; then exec "
            "nsys profile --output=rank1.%p \"$@\"; else exec \"$@\"; fi' _ /home/u/app --n "
            "'a b'");
}

TEST(NextStepsTest, SrunTorchrunAndNoLauncher) {
  const Session slurm = TwoRanks("slurm", {"srun", "-N2", "./app"}, {"./app"});
  EXPECT_EQ(RelaunchWithToolOnRank(slurm, 0, {"nsys", "profile"}),
            "srun -N2 bash -c 'if [ \"$SLURM_PROCID\" = 0 ]; then exec nsys profile \"$@\"; "
            "else exec \"$@\"; fi' _ ./app");
  const Session torch = TwoRanks("torchrun", {"torchrun", "--nproc-per-node=2", "train.py"},
                                 {"/usr/bin/python3", "-u", "train.py"});
  EXPECT_EQ(RelaunchWithToolOnRank(torch, 1, {"nsys", "profile"}),
            "torchrun --nproc-per-node=2 --no-python bash -c 'if [ \"$RANK\" = 1 ]; then exec "
            "nsys profile \"$@\"; else exec \"$@\"; fi' _ /usr/bin/python3 -u train.py");
  EXPECT_TRUE(IsPythonProgram(torch, 1));
  const Session plain = TwoRanks("none", {"./app"}, {"./app", "x"});
  EXPECT_EQ(RelaunchWithToolOnRank(plain, 0, {"nsys", "profile"}), "nsys profile ./app x");
}

TEST(NextStepsTest, RunsOnTheRanksNode) {
  const Session ssh = TwoRanks("mpirun", {"mpirun", "./app"}, {"./app"});
  EXPECT_EQ(OnRankNode(ssh, 1, {"pidstat", "-d", "-p", "501", "1"}),
            "ssh node1 'pidstat -d -p 501 1'");
  const Session slurm = TwoRanks("slurm", {"srun", "./app"}, {"./app"});
  EXPECT_EQ(OnRankNode(slurm, 0, {"iostat", "-x", "1"}),
            "srun --jobid=77 --overlap -w node0 -N1 -n1 iostat -x 1");
}

TEST(NextStepsTest, EveryRankAndOneOutputPerRank) {
  const Session mpi = TwoRanks("mpirun", {"mpirun", "-np", "2", "./app"}, {"./app"});
  EXPECT_EQ(RelaunchWithToolOnEveryRank(mpi, {"nsys", "profile"}),
            "mpirun -np 2 nsys profile ./app");
  EXPECT_EQ(RankOutputName(mpi, 1), "rank%q{OMPI_COMM_WORLD_RANK}");
  const Session slurm = TwoRanks("slurm", {"srun", "-N2", "./app"}, {"./app"});
  EXPECT_EQ(RankOutputName(slurm, 1), "rank%q{SLURM_PROCID}");
  const Session torch = TwoRanks("torchrun", {"torchrun", "--nproc-per-node=2", "train.py"},
                                 {"/usr/bin/python3", "train.py"});
  EXPECT_EQ(RankOutputName(torch, 0), "rank%q{RANK}");
  EXPECT_EQ(RelaunchWithToolOnEveryRank(torch, {"nsys", "profile"}),
            "torchrun --nproc-per-node=2 --no-python nsys profile /usr/bin/python3 train.py");
  const Session plain = TwoRanks("none", {"./app"}, {"./app"});
  EXPECT_EQ(RankOutputName(plain, 1), "rank1");
  EXPECT_EQ(RelaunchWithToolOnEveryRank(plain, {"nsys", "profile"}), "nsys profile ./app");
}

}  // namespace
}  // namespace rankscope

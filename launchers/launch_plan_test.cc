#include "launchers/launch_plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "launchers/launch_probe.h"

namespace rankscope {
namespace {

using Argv = std::vector<std::string>;
const Argv kAgent = {"/opt/rs/bin/rankscope", "agent", "--"};

Argv Plan(const Argv& cmd, const Argv& fwd = {}) {
  auto p = PlanLaunch(cmd, kAgent, fwd);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p->argv : Argv{};
}

TEST(LaunchPlan, MpirunFindsTheProgramAfterOptions) {
  EXPECT_EQ(Plan({"mpirun", "-np", "4", "--oversubscribe", "--mca", "btl", "self,tcp", "./prog",
                  "--steps", "5"},
                 {"RANKSCOPE_TOKEN"}),
            (Argv{"mpirun", "-x", "RANKSCOPE_TOKEN", "-np", "4", "--oversubscribe", "--mca", "btl",
                  "self,tcp", "/opt/rs/bin/rankscope", "agent", "--", "./prog", "--steps", "5"}));
}

TEST(LaunchPlan, OptionWithAttachedValueAndEquals) {
  EXPECT_EQ(Plan({"/usr/bin/mpiexec", "--map-by=slot", "-x", "FOO=1", "prog", "-np", "2"}),
            (Argv{"/usr/bin/mpiexec", "--map-by=slot", "-x", "FOO=1", "/opt/rs/bin/rankscope",
                  "agent", "--", "prog", "-np", "2"}));
  EXPECT_EQ(Plan({"srun", "-N4", "-n", "8", "--mpi=pmix", "prog"}),
            (Argv{"srun", "-N4", "-n", "8", "--mpi=pmix", "/opt/rs/bin/rankscope", "agent", "--",
                  "prog"}));
}

TEST(LaunchPlan, ExplicitSeparator) {
  EXPECT_EQ(Plan({"mpirun", "-np", "2", "--weird-option", "x", "--", "prog", "--", "a"}),
            (Argv{"mpirun", "-np", "2", "--weird-option", "x", "/opt/rs/bin/rankscope", "agent",
                  "--", "prog", "--", "a"}));
  auto p = PlanLaunch({"mylauncher", "-k", "--", "prog"}, kAgent, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->launcher, "mylauncher");
  EXPECT_EQ(p->argv[p->program_index], "prog");
}

TEST(LaunchPlan, PlainProgram) {
  auto p = PlanLaunch({"./prog", "-x", "1"}, kAgent, {"A"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->launcher, "none");
  EXPECT_EQ(p->argv, (Argv{"/opt/rs/bin/rankscope", "agent", "--", "./prog", "-x", "1"}));
}

Argv PlanWith(const Argv& cmd, const LaunchContext& context, const Argv& fwd = {}) {
  auto p = PlanLaunch(cmd, kAgent, fwd, context);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p->argv : Argv{};
}

TEST(LaunchPlan, HydraForwardsWithGenvlistAndKnowsTwoValueOptions) {
  EXPECT_EQ(Plan({"mpiexec.hydra", "-n", "4", "-ppn", "2", "-genv", "OMP_NUM_THREADS", "4", "-f",
                  "hosts", "./prog", "-n", "3"},
                 {"RANKSCOPE_TOKEN", "RANKSCOPE_SESSION"}),
            (Argv{"mpiexec.hydra", "-n", "4", "-ppn", "2", "-genv", "OMP_NUM_THREADS", "4", "-f",
                  "hosts", "/opt/rs/bin/rankscope", "agent", "--", "./prog", "-n", "3"}));
  // Hydra passes the whole environment on by default; a list the user gave is extended, and
  // -genv takes one NAME=VALUE word as well as NAME VALUE.
  EXPECT_EQ(Plan({"mpiexec.hydra", "-genvlist", "PATH", "-genv", "A=1", "./prog", "in.dat"},
                 {"RANKSCOPE_TOKEN", "RANKSCOPE_SESSION"}),
            (Argv{"mpiexec.hydra", "-genvlist", "PATH,RANKSCOPE_TOKEN,RANKSCOPE_SESSION", "-genv",
                  "A=1", "/opt/rs/bin/rankscope", "agent", "--", "./prog", "in.dat"}));
  // A plain mpirun whose --version says HYDRA (MPICH, Intel MPI).
  LaunchContext hydra;
  hydra.mpi = MpiFlavor::kHydra;
  EXPECT_EQ(PlanWith({"mpirun", "--np", "2", "--bind-to", "core", "-env", "A", "1", "prog"}, hydra,
                     {"X"}),
            (Argv{"mpirun", "--np", "2", "--bind-to", "core", "-env", "A", "1",
                  "/opt/rs/bin/rankscope", "agent", "--", "prog"}));
  EXPECT_EQ(PlanWith({"mpiexec", "-n", "2", "--", "prog", "x"}, hydra),
            (Argv{"mpiexec", "-n", "2", "/opt/rs/bin/rankscope", "agent", "--", "prog", "x"}));
}

TEST(LaunchPlan, TorchrunWorkersRunTheAgentWithTorchrunsPython) {
  LaunchContext venv;
  venv.torchrun_python = "/opt/venv/bin/python3";
  EXPECT_EQ(PlanWith({"torchrun", "--standalone", "--nproc-per-node", "2", "train.py", "--lr", "1"},
                     venv),
            (Argv{"torchrun", "--standalone", "--nproc-per-node", "2", "--no-python",
                  "/opt/rs/bin/rankscope", "agent", "--", "/opt/venv/bin/python3", "-u", "train.py",
                  "--lr", "1"}));
  // -m/--module: the module runs as `python -m` (torchrun refuses --no-python with -m).
  EXPECT_EQ(Plan({"torchrun", "--nproc_per_node=2", "-m", "pkg.train", "--x", "1"}),
            (Argv{"torchrun", "--nproc_per_node=2", "--no-python", "/opt/rs/bin/rankscope", "agent",
                  "--", "python3", "-u", "-m", "pkg.train", "--x", "1"}));
  // --no-python already: the program is run as given.
  EXPECT_EQ(Plan({"torchrun", "--nnodes", "1", "--no-python", "./prog", "-m"}),
            (Argv{"torchrun", "--nnodes", "1", "--no-python", "/opt/rs/bin/rankscope", "agent",
                  "--", "./prog", "-m"}));
  // An option's value that looks like -m is the value, not the module flag.
  EXPECT_EQ(Plan({"torchrun", "--log-dir", "-m", "train.py"}),
            (Argv{"torchrun", "--log-dir", "-m", "--no-python", "/opt/rs/bin/rankscope", "agent",
                  "--", "python3", "-u", "train.py"}));
  // python -m torch.distributed.run: that python runs the workers.
  auto p = PlanLaunch({"/opt/venv/bin/python", "-m", "torch.distributed.run", "--nproc_per_node",
                       "2", "-m", "pkg.train"},
                      kAgent, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->launcher, "torchrun");
  EXPECT_EQ(p->argv, (Argv{"/opt/venv/bin/python", "-m", "torch.distributed.run",
                           "--nproc_per_node", "2", "--no-python", "/opt/rs/bin/rankscope", "agent",
                           "--", "/opt/venv/bin/python", "-u", "-m", "pkg.train"}));
  EXPECT_EQ(p->argv[p->program_index], "/opt/venv/bin/python");
  // The explicit form works for torchrun too.
  EXPECT_EQ(Plan({"torchrun", "--nproc_per_node=2", "--", "train.py"}),
            (Argv{"torchrun", "--nproc_per_node=2", "--no-python", "/opt/rs/bin/rankscope", "agent",
                  "--", "python3", "-u", "train.py"}));
}

TEST(LaunchPlan, TorchrunUnderSrunOrMpirunWrapsTheWorkers) {
  auto p = PlanLaunch({"srun", "-N2", "--ntasks-per-node=1", "-J", "-n", "torchrun",
                       "--nproc-per-node", "4", "train.py", "a b"},
                      kAgent, {"RANKSCOPE_TOKEN"});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->launcher, "srun");  // the coordinator must listen beyond this host
  EXPECT_EQ(p->argv, (Argv{"srun", "-N2", "--ntasks-per-node=1", "-J", "-n", "torchrun",
                           "--nproc-per-node", "4", "--no-python", "/opt/rs/bin/rankscope", "agent",
                           "--", "python3", "-u", "train.py", "a b"}));
  EXPECT_EQ(p->argv[p->program_index], "python3");
  EXPECT_EQ(Plan({"mpirun", "-np", "2", "torchrun", "--standalone", "t.py"}, {"V"}),
            (Argv{"mpirun", "-x", "V", "-np", "2", "torchrun", "--standalone", "--no-python",
                  "/opt/rs/bin/rankscope", "agent", "--", "python3", "-u", "t.py"}));
}

TEST(LaunchPlan, ArgumentsKeepTheirQuotingAndOptionLookalikes) {
  // argv is never re-split by a shell: spaces, quotes and = stay inside their word.
  EXPECT_EQ(Plan({"srun", "-n", "2", "prog", "a b", "--flag=x y", "'q'", "-n", "5"}),
            (Argv{"srun", "-n", "2", "/opt/rs/bin/rankscope", "agent", "--", "prog", "a b",
                  "--flag=x y", "'q'", "-n", "5"}));
  // A launcher option whose value starts with '-' takes it along.
  EXPECT_EQ(Plan({"srun", "-J", "-weird-name", "prog"}),
            (Argv{"srun", "-J", "-weird-name", "/opt/rs/bin/rankscope", "agent", "--", "prog"}));
}

TEST(LaunchPlan, TorchrunsInterpreterFromItsScript) {
  const std::string dir = testing::TempDir();
  auto script = [&](const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
  };
  EXPECT_EQ(ScriptPython(script("a", "#!/opt/venv/bin/python3.11\nimport sys\n")),
            "/opt/venv/bin/python3.11");
  EXPECT_EQ(ScriptPython(script("b", "#!/usr/bin/env -S python3 -u\n")), "python3");
  // pip's form for a venv path too long for a shebang.
  EXPECT_EQ(ScriptPython(script(
                "c", "#!/bin/sh\n'''exec' /very/long/venv/bin/python \"$0\" \"$@\"\n' '''\n")),
            "/very/long/venv/bin/python");
  EXPECT_EQ(ScriptPython(script("d", "#!/bin/bash\necho hi\n")), "");  // not a Python: default
  EXPECT_EQ(ScriptPython(dir + "/missing"), "");
}

TEST(LaunchPlan, NoProgramIsAClearError) {
  auto p = PlanLaunch({"mpirun", "-np", "4"}, kAgent, {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("explicit form"), std::string::npos);
  EXPECT_FALSE(PlanLaunch({}, kAgent, {}).ok());
}

}  // namespace
}  // namespace rankscope

namespace rankscope {
namespace {

LaunchPlan Planned(const std::vector<std::string>& command) {
  Result<LaunchPlan> p = PlanLaunch(command, {"/x/rankscope", "agent", "--"}, {});
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p.value() : LaunchPlan{};
}

TEST(LaunchSpansHosts, OnlyWhenRanksMayRunElsewhere) {
  EXPECT_FALSE(LaunchSpansHosts(Planned({"./prog"}), 0));
  EXPECT_FALSE(LaunchSpansHosts(Planned({"mpirun", "-np", "4", "./prog"}), 0));
  EXPECT_FALSE(LaunchSpansHosts(Planned({"mpirun", "-np", "4", "./prog"}), 1));
  EXPECT_TRUE(LaunchSpansHosts(Planned({"mpirun", "-np", "4", "./prog"}), 2));  // allocation
  EXPECT_TRUE(LaunchSpansHosts(Planned({"mpirun", "-np", "4", "-H", "a,b", "./prog"}), 0));
  EXPECT_TRUE(
      LaunchSpansHosts(Planned({"mpirun", "--hostfile", "hosts", "-np", "4", "./prog"}), 0));
  EXPECT_TRUE(LaunchSpansHosts(Planned({"mpirun", "--host=a,b", "./prog"}), 0));
  EXPECT_TRUE(LaunchSpansHosts(Planned({"srun", "-n", "2", "./prog"}), 0));
  // A program argument that looks like a host option is the program's, not mpirun's.
  EXPECT_FALSE(LaunchSpansHosts(Planned({"mpirun", "-np", "2", "./prog", "-H", "x"}), 0));
}

// A program mpirun could not start here: mpirun is run as given, to say so itself.
TEST(ProgramProblemHere, OnlyForALocalMpirunWhoseProgramCannotRunHere) {
  const std::string dir = ::testing::TempDir();
  const std::string plain = dir + "/rankscope-not-executable";
  std::ofstream(plain) << "data\n";
  EXPECT_EQ(ProgramProblemHere(Planned({"mpirun", "-np", "2", "sh", "-c", "true"}), 0),
            std::nullopt);
  const auto missing = ProgramProblemHere(Planned({"mpirun", "-np", "2", "/no/such/prog"}), 0);
  ASSERT_TRUE(missing.has_value());
  EXPECT_NE(missing->find("/no/such/prog"), std::string::npos) << *missing;
  EXPECT_TRUE(ProgramProblemHere(Planned({"mpirun", "-np", "2", "no-such-prog-xyz"}), 0));
  // A bare name in the working directory, not in PATH: Open MPI runs it.
  const std::string here = "rankscope-launch-plan-test-prog";
  std::ofstream(here) << "#!/bin/sh\n";
  chmod(here.c_str(), 0755);
  EXPECT_EQ(ProgramProblemHere(Planned({"mpirun", "-np", "2", here}), 0), std::nullopt);
  unlink(here.c_str());
  const auto denied = ProgramProblemHere(Planned({"mpirun", "-np", "2", plain}), 0);
  ASSERT_TRUE(denied.has_value());
  EXPECT_NE(denied->find("Permission denied"), std::string::npos) << *denied;
  EXPECT_TRUE(ProgramProblemHere(Planned({"mpirun", "-np", "2", dir}), 0));  // a directory
  // Elsewhere, or from another directory: only mpirun can tell.
  EXPECT_EQ(ProgramProblemHere(Planned({"mpirun", "-H", "a,b", "/no/such/prog"}), 0), std::nullopt);
  EXPECT_EQ(ProgramProblemHere(Planned({"mpirun", "-np", "2", "/no/such/prog"}), 2), std::nullopt);
  EXPECT_EQ(ProgramProblemHere(Planned({"mpirun", "-wdir", "/x", "./prog"}), 0), std::nullopt);
  EXPECT_EQ(ProgramProblemHere(Planned({"srun", "-n", "2", "/no/such/prog"}), 0), std::nullopt);
  EXPECT_EQ(ProgramProblemHere(Planned({"/no/such/prog"}), 0), std::nullopt);
}

}  // namespace
}  // namespace rankscope

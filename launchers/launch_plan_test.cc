#include "launchers/launch_plan.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace rankscope

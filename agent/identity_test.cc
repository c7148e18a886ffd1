#include "agent/identity.h"

#include <gtest/gtest.h>

namespace rankscope {
namespace {

TEST(Identity, OpenMpi) {
  auto id = DetectIdentity({{"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                            {"OMPI_COMM_WORLD_SIZE", "8"}},
                           "hostA");
  EXPECT_EQ(id.launcher, "mpirun");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.node_name, "hostA");
}

TEST(Identity, SlurmStepUsesNodeName) {
  auto id = DetectIdentity({{"SLURM_PROCID", "5"},
                            {"SLURM_LOCALID", "1"},
                            {"SLURM_NTASKS", "8"},
                            {"SLURM_STEP_ID", "0"},
                            {"SLURM_JOB_ID", "42"},
                            {"SLURMD_NODENAME", "n3"}},
                           "localhost");
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.job_id, "42");
  EXPECT_EQ(id.node_name, "n3");
  EXPECT_EQ(id.host, "localhost");
}

TEST(Identity, MpirunInsideSlurmAllocationPrefersMpiVariables) {
  auto id = DetectIdentity({{"SLURM_PROCID", "0"},
                            {"SLURM_STEP_ID", "4294967294"},
                            {"SLURM_JOB_ID", "77"},
                            {"OMPI_COMM_WORLD_RANK", "2"},
                            {"OMPI_COMM_WORLD_SIZE", "4"}},
                           "h");
  EXPECT_EQ(id.launcher, "mpirun");
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.job_id, "77");
}

TEST(Identity, SrunWithPmixIsSlurmNotASingletonPmiRank) {
  AgentIdentity id = DetectIdentity({{"SLURM_STEP_ID", "0"},
                                     {"SLURM_PROCID", "5"},
                                     {"SLURM_LOCALID", "1"},
                                     {"SLURM_NTASKS", "8"},
                                     {"SLURM_JOB_ID", "7"},
                                     {"SLURMD_NODENAME", "n2"},
                                     {"PMIX_RANK", "5"}},
                                    "vm");
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.node_name, "n2");
}

TEST(Identity, HydraProxiesUnderSrunKeepPmiRanks) {
  // mpiexec.hydra inside an allocation: srun starts one proxy per node (SLURM_PROCID = proxy),
  // the proxy starts the ranks with PMI_RANK/PMI_SIZE.
  AgentIdentity id = DetectIdentity({{"SLURM_STEP_ID", "0"},
                                     {"SLURM_PROCID", "1"},
                                     {"SLURM_NTASKS", "2"},
                                     {"PMI_RANK", "6"},
                                     {"PMI_SIZE", "8"}},
                                    "vm");
  EXPECT_EQ(id.launcher, "pmi");
  EXPECT_EQ(id.rank, 6);
  EXPECT_EQ(id.world_size, 8);
}

TEST(Identity, Torchrun) {
  auto id = DetectIdentity({{"RANK", "1"},
                            {"LOCAL_RANK", "1"},
                            {"WORLD_SIZE", "2"},
                            {"TORCHELASTIC_RUN_ID", "abc"},
                            {"TORCHELASTIC_RESTART_COUNT", "2"}},
                           "h");
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.job_id, "abc");
  EXPECT_EQ(id.restart_count, 2);
}

TEST(Identity, PmiAndNone) {
  auto pmi = DetectIdentity({{"PMI_RANK", "7"}, {"PMI_SIZE", "9"}}, "h");
  EXPECT_EQ(pmi.launcher, "pmi");
  EXPECT_EQ(pmi.rank, 7);
  auto none = DetectIdentity({{"OMPI_COMM_WORLD_RANK", "notanumber"}}, "h");
  EXPECT_EQ(none.launcher, "none");
  EXPECT_EQ(none.rank, 0);
  EXPECT_EQ(none.world_size, 1);
}

}  // namespace
}  // namespace rankscope

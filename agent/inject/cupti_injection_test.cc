// The CUDA_INJECTION64_PATH entry point on a machine without a GPU. cupti_load_program plays the
// CUDA driver (dlopen the library, call InitializeInjection); this test plays the agent. It
// checks the promises that hold everywhere: inert without an agent, one clear notice when CUPTI
// cannot be used, and a program that runs on and exits 0. tests/gpu/run_cupti_check.sh checks
// the capture itself on a GPU machine.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "agent/inject/test_collector.h"
#include "gtest/gtest.h"

namespace rankscope::inject {
namespace {

struct LoadRun {
  int exit_status = -1;  // the program's exit code, or -1 if it did not exit normally
  std::string output;    // stdout and stderr together
  std::vector<std::string> notices;
  size_t gpu_records = 0;
  uint32_t dropped = 0;
  std::vector<std::string> collector_errors;
};

// Runs cupti_load_program on the built library with exactly `env` as its environment, and
// collects what it sends when `with_agent` is set.
LoadRun LoadLibrary(std::map<std::string, std::string> env, bool with_agent) {
  LoadRun run;
  TestCollector collector;
  if (with_agent) {
    if (!collector.Start()) {
      run.collector_errors = collector.errors();
      return run;
    }
    env["RANKSCOPE_IPC_SOCKET"] = collector.path();
  }
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string program = RANKSCOPE_CUPTI_LOAD_PROGRAM;
  std::string library = RANKSCOPE_INJECT_SO;
  char* argv[] = {program.data(), library.data(), nullptr};

  int out[2];
  if (pipe(out) != 0) return run;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    execve(program.c_str(), argv, envp.data());
    _exit(127);
  }
  close(out[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) run.output.append(buf, static_cast<size_t>(n));
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

  if (with_agent) {
    collector.Drain(std::chrono::milliseconds(3000));
    for (const wire::Batch& b : collector.batches()) {
      run.notices.insert(run.notices.end(), b.notices.begin(), b.notices.end());
      run.gpu_records += b.gpu.size();
      run.dropped += b.dropped;
    }
    run.collector_errors = collector.errors();
  }
  return run;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(CuptiInjection, InertWithoutAnAgent) {
  LoadRun run = LoadLibrary({{"RANKSCOPE_CUPTI_PATH", "/nonexistent/libcupti.so"}}, false);
  EXPECT_EQ(run.exit_status, 0) << run.output;
  EXPECT_EQ(run.output, "InitializeInjection: 1 1\n") << "an inert library says nothing";
}

TEST(CuptiInjection, MissingCuptiGivesExactlyOneNotice) {
  LoadRun run = LoadLibrary({{"RANKSCOPE_CUPTI_PATH", "/nonexistent/libcupti.so"}}, true);
  ASSERT_TRUE(run.collector_errors.empty()) << run.collector_errors.front();
  EXPECT_EQ(run.exit_status, 0) << run.output;
  EXPECT_EQ(run.output, "InitializeInjection: 1 1\n");
  ASSERT_EQ(run.notices.size(), 1u);
  const std::string& notice = run.notices[0];
  EXPECT_TRUE(StartsWith(notice, "CUPTI unavailable: ")) << notice;
  // A build without the CUPTI headers never looks for libcupti and says why instead.
  const char* why = RANKSCOPE_INJECT_HAS_CUPTI ? "/nonexistent/libcupti.so" : "without the CUPTI";
  EXPECT_NE(notice.find(why), std::string::npos) << notice;
  EXPECT_TRUE(EndsWith(notice, "; continuing without GPU activity")) << notice;
  EXPECT_EQ(run.gpu_records, 0u);
  EXPECT_EQ(run.dropped, 0u);
}

TEST(CuptiInjection, BadSettingsAreNamedAndDefaultsUsed) {
  if (!RANKSCOPE_INJECT_HAS_CUPTI) GTEST_SKIP() << "built without the CUPTI headers";
  LoadRun run = LoadLibrary(
      {{"RANKSCOPE_CUPTI_PATH", "/nonexistent/libcupti.so"}, {"RANKSCOPE_CUPTI_MODE", "sometimes"}},
      true);
  EXPECT_EQ(run.exit_status, 0) << run.output;
  ASSERT_EQ(run.notices.size(), 2u);
  EXPECT_EQ(run.notices[0],
            "CUPTI settings: RANKSCOPE_CUPTI_MODE=sometimes is not one of kernels, gpu, all, api; "
            "using all");
  EXPECT_TRUE(StartsWith(run.notices[1], "CUPTI unavailable: ")) << run.notices[1];
}

// The real libcupti, on a machine with no NVIDIA driver: CUPTI loads but cannot subscribe. On
// a GPU machine this would start a capture instead, which run_cupti_check.sh covers.
TEST(CuptiInjection, RealCuptiWithoutADriverGivesOneNotice) {
  if (!RANKSCOPE_INJECT_HAS_CUPTI) GTEST_SKIP() << "built without the CUPTI headers";
  const std::string cupti = std::string(RANKSCOPE_CUDA_ROOT) + "/lib64/libcupti.so";
  struct stat st {};
  if (stat(cupti.c_str(), &st) != 0) GTEST_SKIP() << "no " << cupti;
  if (stat("/dev/nvidiactl", &st) == 0) GTEST_SKIP() << "this machine has an NVIDIA driver";
  LoadRun run = LoadLibrary({{"RANKSCOPE_CUPTI_PATH", cupti}}, true);
  EXPECT_EQ(run.exit_status, 0) << run.output;
  EXPECT_EQ(run.output, "InitializeInjection: 1 1\n");
  ASSERT_EQ(run.notices.size(), 1u);
  EXPECT_TRUE(StartsWith(run.notices[0], "CUPTI unavailable: ")) << run.notices[0];
  EXPECT_NE(run.notices[0].find(cupti), std::string::npos) << run.notices[0];
  std::cout << "notice: " << run.notices[0] << "\n";
}

}  // namespace
}  // namespace rankscope::inject

// rankscope's SPANK plugin: `srun --rankscope[=OPTIONS] PROG ARGS...` profiles the step as
// `rankscope run -- srun PROG ARGS...` would, without changing the srun line otherwise.
//
// Installed by one line in plugstack.conf (docs/spank.md):
//   optional /path/rankscope_spank.so bin=/path/bin/rankscope [bind=ADDR] [wait=SECONDS]
//
// Two halves, both in this file (Slurm loads the same plugin in srun and in slurmstepd):
// - srun (local context): slurm_spank_local_user_init starts `rankscope coordinator` for the
//   step, reads its address and session secret, and puts them into srun's environment as
//   SLURM_RANKSCOPE_* (srun merges its environment into the tasks'; the SLURM_ prefix survives
//   --export=NONE). slurm_spank_exit lets the coordinator write its report after the step.
// - slurmstepd (remote context): slurm_spank_task_init replaces the task's argv[0] with the
//   rankscope binary and keeps the original in RANKSCOPE_SPANK_ARGV0; rankscope then runs as
//   the rank's agent (`rankscope agent -- ARGV0 ARGS...`) in the same pid, so slurmstepd's
//   direct child and the exit status srun reports stay the program's. Slurm 22.05 has no call
//   to add words to a task's argv (spank_prepend_task_argv is 23.11), hence argv[0].
//
// Whatever fails, the job runs unprofiled: every callback returns 0 and says why.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

SPANK_PLUGIN(rankscope, 1);

// Settings: plugstack.conf arguments, then the user's --rankscope=... words over them.
static struct {
  int enabled;         // --rankscope was given
  char bin[PATH_MAX];  // the rankscope binary, the same path on every node
  char bind[256];      // coordinator listen address; empty: 127.0.0.1 on one node, else "auto"
  char out[PATH_MAX];  // session folder; empty: rankscope-JOBID.STEPID in srun's directory
  int dormant;         // record nothing until `rankscope capture`
  int quiet;           // do not print the report
  int wait_s;          // how long srun waits for the report after the step
} g = {.wait_s = 120};

static char g_user_options[1024];   // the --rankscope argument, parsed in local_user_init
static pid_t g_coordinator = 0;     // srun only: the coordinator we started
static int g_coordinator_out = -1;  // its stdout (the "listening on" line)

static int OnRankscopeOption(int val, const char* optarg, int remote) {
  (void)val;
  (void)remote;
  g.enabled = 1;
  snprintf(g_user_options, sizeof(g_user_options), "%s", optarg != NULL ? optarg : "");
  return ESPANK_SUCCESS;
}

struct spank_option spank_options[] = {
    {"rankscope", "[out=DIR,dormant,quiet,wait=S,bind=ADDR]",
     "Profile this step with rankscope: report in rankscope-JOBID.STEPID/ (or out=DIR)", 2, 0,
     OnRankscopeOption},
    SPANK_OPTIONS_TABLE_END};

static void CopyString(char* dst, size_t size, const char* src) { snprintf(dst, size, "%s", src); }

// One "name=value" or "flag" word; 0 when it is not one of ours.
static int ApplyWord(const char* word, int from_user) {
  const char* eq = strchr(word, '=');
  const size_t name_len = eq != NULL ? (size_t)(eq - word) : strlen(word);
  const char* value = eq != NULL ? eq + 1 : "";
#define IS(name) (name_len == strlen(name) && strncmp(word, name, name_len) == 0)
  if (IS("bin") && !from_user) {
    CopyString(g.bin, sizeof(g.bin), value);
  } else if (IS("bind")) {
    CopyString(g.bind, sizeof(g.bind), value);
  } else if (IS("wait")) {
    const long seconds = strtol(value, NULL, 10);
    g.wait_s = seconds < 0 ? 0 : seconds > 86400 ? 86400 : (int)seconds;
  } else if (IS("out") && from_user) {
    CopyString(g.out, sizeof(g.out), value);
  } else if (IS("dormant") && eq == NULL) {
    g.dormant = 1;
  } else if (IS("quiet") && eq == NULL) {
    g.quiet = 1;
  } else {
    return 0;
  }
#undef IS
  return 1;
}

int slurm_spank_init(spank_t sp, int ac, char** av) {
  (void)sp;
  for (int i = 0; i < ac; ++i) {
    if (!ApplyWord(av[i], 0)) slurm_error("rankscope: unknown plugstack.conf argument '%s'", av[i]);
  }
  return ESPANK_SUCCESS;
}

// ---- srun (local context) ----

// srun's own command line, for the report: its words point into `buf`; at most `max` of them.
static int ReadOwnCommandLine(char* buf, size_t size, const char** words, int max) {
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  int count = 0;
  for (ssize_t i = 0; i < n && count < max; i += (ssize_t)strlen(buf + i) + 1) {
    words[count++] = buf + i;
  }
  return count;
}

// Reads the coordinator's "... listening on HOST:PORT" line within `timeout_s`.
static int ReadListeningAddress(int fd, char* address, size_t size, int timeout_s) {
  char line[512];
  size_t used = 0;
  const time_t deadline = time(NULL) + timeout_s;
  while (used + 1 < sizeof(line) && time(NULL) < deadline) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 200) <= 0) continue;
    ssize_t n = read(fd, line + used, 1);
    if (n <= 0) return -1;  // the coordinator exited (its error is on srun's stderr)
    if (line[used] == '\n') {
      line[used] = '\0';
      const char* at = strstr(line, "listening on ");
      if (at == NULL) return -1;
      CopyString(address, size, at + strlen("listening on "));
      return 0;
    }
    ++used;
  }
  return -1;
}

static int ReadToken(const char* path, char* token, size_t size) {
  FILE* f = fopen(path, "re");
  if (f == NULL) return -1;
  const int ok = fgets(token, (int)size, f) != NULL;
  fclose(f);
  if (!ok) return -1;
  token[strcspn(token, "\r\n")] = '\0';
  return token[0] != '\0' ? 0 : -1;
}

static void StopCoordinator(void) {
  if (g_coordinator <= 0) return;
  kill(g_coordinator, SIGKILL);
  waitpid(g_coordinator, NULL, 0);
  g_coordinator = 0;
}

// Starts the coordinator and exports its address; on any failure says why and leaves the
// environment as it was (the step runs unprofiled).
static void StartCoordinator(spank_t sp) {
  uint32_t job = 0, step = 0, tasks = 0, nodes = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &tasks) != ESPANK_SUCCESS) {
    slurm_error("rankscope: srun gave no job/step/task count; the step runs unprofiled");
    return;
  }
  spank_get_item(sp, S_JOB_NNODES, &nodes);
  enum { kMaxWords = 256 };
  static char command_buf[16384];
  const char* command[kMaxWords];
  const int command_words =
      ReadOwnCommandLine(command_buf, sizeof(command_buf), command, kMaxWords);
  int multi_prog = 0;
  for (int i = 0; i < command_words; ++i) {
    // srun takes unambiguous prefixes of long options ("--multi"), with or without "=...".
    const char* w = command[i];
    const size_t len = strcspn(w, "=");
    if (len >= 7 && strncmp(w, "--multi-prog", len) == 0) multi_prog = 1;
  }
  if (multi_prog) {
    slurm_error(
        "rankscope: --multi-prog gives every task its own argv, which Slurm %d.%02d does "
        "not let a plugin wrap; the step runs unprofiled (use `rankscope run -- srun ...`)",
        SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER));
    return;
  }
  char session[64], out[PATH_MAX], ranks[16], pid[16];
  snprintf(session, sizeof(session), "slurm-%u.%u", job, step);
  if (g.out[0] != '\0') {
    CopyString(out, sizeof(out), g.out);
  } else {
    snprintf(out, sizeof(out), "rankscope-%u.%u", job, step);
  }
  snprintf(ranks, sizeof(ranks), "%u", tasks);
  snprintf(pid, sizeof(pid), "%d", (int)getpid());
  // srun often runs on a login node and even a one-node step on a compute node: listen where
  // other hosts can reach (the session secret guards every RPC).
  const char* bind = g.bind[0] != '\0' ? g.bind : "auto";
  (void)nodes;

  const char* tmp = getenv("TMPDIR");
  char dir[PATH_MAX], token_file[PATH_MAX + 16];
  snprintf(dir, sizeof(dir), "%s/rankscope-spank-XXXXXX", tmp != NULL && *tmp ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    slurm_error("rankscope: cannot create %s: %s; the step runs unprofiled", dir, strerror(errno));
    return;
  }
  snprintf(token_file, sizeof(token_file), "%s/token", dir);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    slurm_error("rankscope: pipe: %s; the step runs unprofiled", strerror(errno));
    rmdir(dir);
    return;
  }
  const char* argv[32 + kMaxWords];
  int n = 0;
  argv[n++] = g.bin;
  argv[n++] = "coordinator";
  argv[n++] = "--bind";
  argv[n++] = bind;
  argv[n++] = "--session";
  argv[n++] = session;
  argv[n++] = "--token-file";
  argv[n++] = token_file;
  argv[n++] = "--ranks";
  argv[n++] = ranks;
  argv[n++] = "-o";
  argv[n++] = out;
  argv[n++] = "--watch-pid";
  argv[n++] = pid;
  argv[n++] = "--launcher";
  argv[n++] = "srun --rankscope";
  if (g.dormant) argv[n++] = "--endpoint";
  if (g.quiet) argv[n++] = "-q";
  argv[n++] = "--";
  for (int i = 0; i < command_words; ++i) argv[n++] = command[i];
  argv[n] = NULL;

  // srun has threads: between fork and exec the child only makes async-signal-safe calls, with
  // everything it needs prepared here.
  char exec_failed[PATH_MAX + 64];
  const int exec_failed_len =
      snprintf(exec_failed, sizeof(exec_failed), "rankscope: cannot run %s\n", g.bin);
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t child = fork();
  if (child == 0) {
    // Its own session: a Ctrl-C to srun's terminal must not cut the report short. srun's
    // blocked and ignored signals would survive the exec and make it deaf to our SIGTERM.
    setsid();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    struct sigaction default_action;
    memset(&default_action, 0, sizeof(default_action));
    default_action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, NULL);
    if (pipe_fds[1] == STDOUT_FILENO) {
      fcntl(STDOUT_FILENO, F_SETFD, 0);  // srun had no stdout: keep the pipe across exec
    } else {
      dup2(pipe_fds[1], STDOUT_FILENO);
    }
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    // Nothing else of srun's (its sockets) reaches the coordinator.
    close_range(3, ~0U, 0);
    execv(g.bin, (char* const*)argv);
    if (exec_failed_len > 0) (void)!write(STDERR_FILENO, exec_failed, (size_t)exec_failed_len);
    _exit(127);
  }
  if (null_fd >= 0) close(null_fd);
  close(pipe_fds[1]);
  if (child < 0) {
    slurm_error("rankscope: fork: %s; the step runs unprofiled", strerror(errno));
    close(pipe_fds[0]);
    rmdir(dir);
    return;
  }
  g_coordinator = child;
  g_coordinator_out = pipe_fds[0];
  char address[256], token[256];
  const int listening = ReadListeningAddress(g_coordinator_out, address, sizeof(address), 10);
  const int have_token = listening == 0 ? ReadToken(token_file, token, sizeof(token)) : -1;
  if (listening != 0 || have_token != 0) {
    slurm_error(
        "rankscope: the coordinator (%s coordinator) did not start; the step runs "
        "unprofiled",
        g.bin);
    StopCoordinator();  // first, so it cannot write the token after the clean-up
    close(g_coordinator_out);
    g_coordinator_out = -1;
  }
  unlink(token_file);
  rmdir(dir);
  if (g_coordinator <= 0) return;
  setenv("SLURM_RANKSCOPE_COORDINATOR", address, 1);
  setenv("SLURM_RANKSCOPE_TOKEN", token, 1);
  setenv("SLURM_RANKSCOPE_SESSION", session, 1);
  if (g.dormant) setenv("SLURM_RANKSCOPE_DORMANT", "1", 1);
  if (!g.quiet) {
    slurm_info("rankscope: profiling step %u.%u (%u tasks), coordinator %s, report in %s/", job,
               step, tasks, address, out);
  }
}

int slurm_spank_local_user_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!g.enabled) return ESPANK_SUCCESS;
  for (char *save = NULL, *w = strtok_r(g_user_options, ",", &save); w != NULL;
       w = strtok_r(NULL, ",", &save)) {
    if (!ApplyWord(w, 1)) {
      slurm_error(
          "rankscope: unknown --rankscope word '%s' (out=DIR, dormant, quiet, wait=S, "
          "bind=ADDR); the step runs unprofiled",
          w);
      return ESPANK_SUCCESS;
    }
  }
  if (getenv("RANKSCOPE_COORDINATOR") != NULL) {
    slurm_info("rankscope: this srun already runs under `rankscope run`; --rankscope ignored");
    return ESPANK_SUCCESS;
  }
  if (g.bin[0] == '\0' || access(g.bin, X_OK) != 0) {
    slurm_error(
        "rankscope: plugstack.conf gives no usable bin=PATH of rankscope ('%s'); the "
        "step runs unprofiled",
        g.bin);
    return ESPANK_SUCCESS;
  }
  StartCoordinator(sp);
  return ESPANK_SUCCESS;
}

// Waits up to `seconds` for the coordinator to exit; 1 when it did.
static int WaitCoordinator(int seconds) {
  for (long i = 0; i < (long)seconds * 10; ++i) {
    // Keep its stdout drained so it never blocks on a full pipe.
    char sink[256];
    while (read(g_coordinator_out, sink, sizeof(sink)) > 0) {
    }
    const pid_t reaped = waitpid(g_coordinator, NULL, WNOHANG);
    if (reaped == g_coordinator) return 1;
    // srun may reap children itself; then the pid is simply gone.
    if (reaped < 0 && kill(g_coordinator, 0) != 0 && errno == ESRCH) return 1;
    usleep(100 * 1000);
  }
  return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_LOCAL || g_coordinator <= 0) return ESPANK_SUCCESS;
  (void)sp;
  fcntl(g_coordinator_out, F_SETFL, O_NONBLOCK);
  // The tasks were the agents and have exited, so every record the coordinator will get is
  // there: a short grace for it to notice on its own, then ask it to write the report now.
  if (!WaitCoordinator(2)) {
    kill(g_coordinator, SIGTERM);
    if (!WaitCoordinator(g.wait_s)) {
      slurm_error(
          "rankscope: the coordinator (pid %d) is still writing the report after %d s; "
          "left running",
          (int)g_coordinator, g.wait_s);
    }
  }
  close(g_coordinator_out);
  g_coordinator = 0;
  return ESPANK_SUCCESS;
}

// ---- slurmstepd (remote context) ----

int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!g.enabled) return ESPANK_SUCCESS;
  char address[256];
  // No address: srun could not start the coordinator and said so; run the task as it is.
  if (spank_getenv(sp, "SLURM_RANKSCOPE_COORDINATOR", address, sizeof(address)) != ESPANK_SUCCESS) {
    return ESPANK_SUCCESS;
  }
  if (g.bin[0] == '\0' || access(g.bin, X_OK) != 0) {
    slurm_error("rankscope: no usable bin=PATH ('%s') on this node; this task runs unprofiled",
                g.bin);
    return ESPANK_SUCCESS;
  }
  int argc = 0;
  char** argv = NULL;
  if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1) {
    slurm_error("rankscope: no task argv; this task runs unprofiled");
    return ESPANK_SUCCESS;
  }
  if (spank_setenv(sp, "RANKSCOPE_SPANK_ARGV0", argv[0], 1) != ESPANK_SUCCESS) {
    slurm_error("rankscope: cannot set the task's environment; this task runs unprofiled");
    return ESPANK_SUCCESS;
  }
  // This process is the task (forked from slurmstepd, exec'ing next); the argv array is its
  // own copy of the step's, so the change is this task's alone.
  argv[0] = g.bin;
  return ESPANK_SUCCESS;
}

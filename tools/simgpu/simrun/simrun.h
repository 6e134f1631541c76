// simrun: starts N ranks of a command on this machine the way `torchrun --standalone --nproc-per-node N` does,
// for programs that run on simgpu. Each rank gets torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, ROLE_NAME, MASTER_ADDR=127.0.0.1,
// MASTER_PORT (a free port), TORCHELASTIC_RUN_ID (fresh per launch), TORCHELASTIC_RESTART_COUNT=0,
// TORCHELASTIC_MAX_RESTARTS=0, and OMP_NUM_THREADS=1 unless already set) and shares the launcher's stdin,
// stdout and stderr, unprefixed.
//
// When a rank fails (non-zero exit or a signal) the others get SIGTERM, then SIGKILL after a grace period; the
// launcher reports which rank failed and how and exits with that rank's status (128 + signal for a signal).
// SIGINT and SIGTERM sent to the launcher are forwarded to every rank; a second one kills them.
//
// Each rank runs in its own process group, so signals reach the processes it started too.
#ifndef TTRACE_TOOLS_SIMGPU_SIMRUN_SIMRUN_H_
#define TTRACE_TOOLS_SIMGPU_SIMRUN_SIMRUN_H_

#include <cstdio>
#include <string>
#include <vector>

namespace simgpu::simrun {

struct Options {
  int nprocs = 0;
  std::vector<std::string> command;    // argv of every rank; command[0] is searched in PATH
  double grace_seconds = 5;            // between SIGTERM and SIGKILL when a rank failed
  std::vector<std::string> extra_env;  // "NAME=VALUE" added to every rank's environment last (for tests)
};

// Parses `simrun [-n N] [--grace SECONDS] [--] CMD [ARGS...]` (argv[0] is the launcher). -n also reads as
// --nproc-per-node / --nproc_per_node, with the value as the next word or after '='. Returns false with a
// one-line *error on bad usage; sets *help for -h/--help.
bool ParseArgs(int argc, const char* const* argv, Options* options, bool* help, std::string* error);
std::string Usage();

// The environment of rank `rank`: `base` (NAME=VALUE entries) with the launcher's variables replaced or added.
std::vector<std::string> RankEnvironment(const Options& options, int rank, const std::string& run_id,
                                         int master_port, const char* const* base);

struct RankOutcome {
  int pid = -1;
  bool signaled = false;  // status is a signal number when true, an exit code otherwise
  int status = 0;
  bool killed_by_launcher = false;  // it was still running when the launcher terminated it
};

struct Result {
  int exit_code = 0;     // 0 when every rank exited 0; else the first failing rank's code or 128 + signal
  int failed_rank = -1;  // first rank that failed, -1 when none
  std::vector<RankOutcome> ranks;
};

// Starts the ranks and waits for all of them. Must be called from a process's only thread, or with SIGINT,
// SIGTERM and SIGCHLD blocked in every other thread: it blocks them in the calling thread and waits for them
// with sigtimedwait. Writes its own messages ("simrun: ...") to `log`. Waits only for the processes it started.
Result Run(const Options& options, FILE* log);

}  // namespace simgpu::simrun

#endif  // TTRACE_TOOLS_SIMGPU_SIMRUN_SIMRUN_H_

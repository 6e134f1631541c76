// Helpers of the end-to-end tests: run the tp_mlp workload on simgpu (optionally under libttrace.so and with a
// SIMGPU_FAULT), load its trace with the analyzer library.
#ifndef TTRACE_TESTS_E2E_UTIL_H_
#define TTRACE_TESTS_E2E_UTIL_H_

#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/trace_model.h"

namespace ttrace::e2e {

struct Job {
  int ranks = 4;
  int tp = 2;
  int steps = 2;
  std::string dtype = "bf16";
  std::string fault;      // SIMGPU_FAULT, empty for none
  bool shim = true;       // LD_PRELOAD libttrace.so
  std::string extra_env;  // "K=V K=V" added to the environment
};

struct JobResult {
  int exit_code = -1;
  std::string output;     // stdout + stderr of simrun and the ranks
  std::string trace_dir;  // where the shim wrote
};

// Runs the job under a fresh trace directory named `name` inside the test's temporary directory.
// CUPTI is off (TTRACE_CONTEXT=0) unless `job.extra_env` sets TTRACE_CONTEXT: the machine's libcupti does not steer
// a job's output.
JobResult RunJob(const std::string& name, const Job& job);

// The lines of `output` that start with `prefix`, sorted (ranks print in any order).
std::vector<std::string> Lines(const std::string& output, const std::string& prefix);

// Runs a shell command, returning its exit code and output (stdout + stderr).
int Shell(const std::string& command, std::string* output);

std::string BuildDir();
std::string TempDir();

}  // namespace ttrace::e2e

#endif  // TTRACE_TESTS_E2E_UTIL_H_

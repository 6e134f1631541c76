#include "tests/e2e_util.h"

#include "tests/support/scratch_dir.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ttrace::e2e {

std::string BuildDir() { return TTRACE_BUILD_DIR; }

std::string TempDir() { return ttrace::test_support::TestScratchDir(); }

int Shell(const std::string& command, std::string* output) {
  output->clear();
  FILE* p = popen(("(" + command + ") 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

JobResult RunJob(const std::string& name, const Job& job) {
  JobResult r;
  r.trace_dir = TempDir() + "/" + name;
  const std::string b = BuildDir();
  std::ostringstream cmd;
  cmd << "rm -rf '" << r.trace_dir << "' && env LD_LIBRARY_PATH=" << b << "/simgpu/lib TTRACE_DIR='" << r.trace_dir
      << "' ";
  if (job.shim) cmd << "LD_PRELOAD=" << b << "/lib/libttrace.so ";
  // The machine's libcupti (the toolkit's refuses to subscribe without a GPU, and the shim says so once per rank)
  // must not steer a job's output: CUPTI is off unless the job asks for it.
  if (job.extra_env.find("TTRACE_CONTEXT=") == std::string::npos) cmd << "TTRACE_CONTEXT=0 ";
  if (!job.fault.empty()) cmd << "SIMGPU_FAULT='" << job.fault << "' ";
  cmd << job.extra_env << " " << b << "/bin/simrun -n " << job.ranks << " -- " << b << "/bin/tp_mlp --tp " << job.tp
      << " --steps " << job.steps << " --dtype " << job.dtype << " --rdzv '" << r.trace_dir << ".rdzv'";
  r.exit_code = Shell(cmd.str(), &r.output);
  return r;
}

std::vector<std::string> Lines(const std::string& output, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ttrace::e2e

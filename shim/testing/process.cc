// fork + execve rather than system(3): the child's environment is built from scratch, and output goes to files
// so that a chatty child cannot fill a pipe and stall.
#include "shim/testing/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace ttrace::shim::testing {
namespace {

bool Steers(const std::string& name) {
  static const char* const kExact[] = {"LD_PRELOAD", "LD_LIBRARY_PATH", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                                       "LOCAL_WORLD_SIZE", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES"};
  for (const char* e : kExact)
    if (name == e) return true;
  return name.rfind("TTRACE_", 0) == 0 || name.rfind("SIMGPU_", 0) == 0 || name.rfind("NCCL_", 0) == 0;
}

int RemoveEntry(const char* path, const struct stat*, int, struct FTW*) { return remove(path); }

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

RunResult RunProgram(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              int timeout_seconds) {
  std::vector<std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (!Steers(kv.substr(0, kv.find('=')))) vars.push_back(kv);
  }
  for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
  // Whether this machine has a libcupti (and whether it can subscribe without a GPU: the toolkit's cannot, and
  // the shim says so) must not steer a test: CUPTI is off unless a test asks for it (context_capture_test).
  if (env.count("TTRACE_CONTEXT") == 0) vars.push_back("TTRACE_CONTEXT=0");
  ScratchDir io;
  const std::string out_path = io / "out", err_path = io / "err";
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    setpgid(0, 0);
    std::vector<char*> args, envp;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const std::string& v : vars) envp.push_back(const_cast<char*>(v.c_str()));
    envp.push_back(nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  RunResult r;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_seconds)) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

ScratchDir::ScratchDir() {
  const char* tmp = getenv("TMPDIR");
  std::string tmpl = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/ttrace_shim_XXXXXX";
  path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
}

ScratchDir::~ScratchDir() {
  if (!path_.empty()) nftw(path_.c_str(), RemoveEntry, 16, FTW_DEPTH | FTW_PHYS);
}

std::vector<std::string> ListStreams(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    const size_t n = strlen(e->d_name);
    if (n > 4 && strcmp(e->d_name + n - 4, ".ttr") == 0) names.push_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ttrace::shim::testing

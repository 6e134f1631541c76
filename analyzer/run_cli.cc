// The child is started with fork + execvp rather than posix_spawn so that a failed exec can report its errno
// through a close-on-exec pipe (126 vs 127, as shells distinguish them) and signal dispositions can be restored
// in the child before exec. The check runs in process through RunCli, so `run` and `check` share one parser and
// one report.
#include "analyzer/run_cli.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/cli.h"
#include "analyzer/trace_model.h"
#include "shim/options.h"

namespace ttrace::analyzer {

namespace {

struct RunArgs {
  std::string dir, job, preload;
  bool check = true;
  std::vector<std::string> check_options;
  std::vector<std::string> command;
};

// Parses argv[2..]; returns a usage problem or "".
std::string ParseRunArgs(int argc, const char* const* argv, RunArgs* args) {
  int i = 2;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--dir" || a == "--job" || a == "--preload") {
      if (i + 1 >= argc || argv[i + 1][0] == '\0') return absl::StrCat(a, " needs a value");
      (a == "--dir" ? args->dir : a == "--job" ? args->job : args->preload) = argv[++i];
    } else if (a == "--no-check") {
      args->check = false;
    } else if (a.size() > 1 && a[0] == '-') {
      // A check option; one that takes a value takes the next argument unless it is written --opt=value.
      args->check_options.push_back(a);
      if (a.find('=') == std::string::npos && a != "--allow-incomplete" && a != "--allow-truncated" &&
          i + 1 < argc && std::string(argv[i + 1]) != "--")
        args->check_options.push_back(argv[++i]);
    } else {
      return absl::StrCat("unexpected argument '", a, "' before -- (ttrace run [options] -- CMD [ARGS...])");
    }
  }
  for (; i < argc; ++i) args->command.push_back(argv[i]);
  if (args->command.empty()) return "no command to run (ttrace run [options] -- CMD [ARGS...])";
  if (args->job.find('/') != std::string::npos) return "--job must not contain '/'";
  return "";
}

std::string Getenv(const char* name) {
  const char* v = getenv(name);
  return v != nullptr ? v : "";
}

// <directory of this executable>/../lib/libttrace.so: build/bin + build/lib, or an install's bin + lib.
std::string DefaultPreload() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  std::string exe(self, static_cast<size_t>(n));
  const size_t slash = exe.rfind('/');
  if (slash == std::string::npos) return "";
  return exe.substr(0, slash) + "/../lib/libttrace.so";
}

std::string DefaultJob() {
  const time_t now = time(nullptr);
  struct tm tm_utc;
  gmtime_r(&now, &tm_utc);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm_utc);
  return absl::StrCat("run-", stamp, "-", getpid());
}

// mkdir -p; returns "" or the problem.
std::string MakeDirs(const std::string& dir) {
  std::string path;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    path = dir.substr(0, pos);
    if (path.empty()) continue;
    if (mkdir(path.c_str(), 0777) != 0 && errno != EEXIST)
      return absl::StrCat("cannot create ", path, ": ", strerror(errno));
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return absl::StrCat(dir, " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) return absl::StrCat("cannot write to ", dir, ": ", strerror(errno));
  return "";
}

// NVTX hands its ranges to CUPTI only through the injection library NVTX_INJECTION64_PATH names, read at the
// program's first NVTX call. The path of the libcupti the shim will load (shim::kCuptiSonames, found the way the
// shim's dlopen finds it: this process has the job's library path), when the shim will record the context
// (TTRACE_CONTEXT on, not TTRACE_DISABLE) and the variable is unset; "" otherwise.
std::string NvtxInjectionPath() {
  if (getenv("NVTX_INJECTION64_PATH") != nullptr) return "";
  const shim::Options options = shim::ParseOptions([](const char* name) { return getenv(name); }, nullptr);
  if (!options.context || options.disable) return "";
  for (const char* soname : shim::kCuptiSonames) {
    void* lib = dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
    if (lib == nullptr) continue;
    struct link_map* map = nullptr;
    std::string path;
    if (dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) path = map->l_name;
    dlclose(lib);
    if (!path.empty() && path[0] != '/') {  // found through a relative library path: the job may change directory
      char* absolute = realpath(path.c_str(), nullptr);
      path = absolute != nullptr ? absolute : "";
      free(absolute);
    }
    if (!path.empty()) return path;
  }
  return "";
}

volatile sig_atomic_t g_child = 0;

void Forward(int sig) {
  if (g_child > 0) kill(static_cast<pid_t>(g_child), sig);
}

// Runs `command` with `env` added; returns its wait status, or -errno when it could not be started (err said).
int RunChild(const std::vector<std::string>& command, const std::vector<std::pair<std::string, std::string>>& env,
             std::ostream& err) {
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    err << "ttrace: error: pipe: " << strerror(errno) << "\n";
    return -EAGAIN;
  }
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  struct sigaction ignore = {}, forward = {}, old_int = {}, old_quit = {}, old_term = {}, old_hup = {};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = Forward;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = SA_RESTART;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  sigaction(SIGTERM, &forward, &old_term);
  sigaction(SIGHUP, &forward, &old_hup);
  const pid_t pid = fork();
  if (pid == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execvp(argv[0], argv.data());
    const int e = errno;
    (void)!write(pipefd[1], &e, sizeof e);
    _exit(127);
  }
  close(pipefd[1]);
  int result = 0;
  if (pid < 0) {
    err << "ttrace: error: fork: " << strerror(errno) << "\n";
    result = -EAGAIN;
  } else {
    g_child = pid;
    int exec_errno = 0;
    ssize_t got;
    do {
      got = read(pipefd[0], &exec_errno, sizeof exec_errno);
    } while (got < 0 && errno == EINTR);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    g_child = 0;
    if (got == static_cast<ssize_t>(sizeof exec_errno)) {
      err << "ttrace: error: cannot run " << command[0] << ": " << strerror(exec_errno) << "\n";
      result = -exec_errno;
    } else {
      result = status;
    }
  }
  close(pipefd[0]);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  return result;
}

}  // namespace

int RunRunCommand(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  RunArgs args;
  std::string problem = ParseRunArgs(argc, argv, &args);
  if (problem.empty() && args.check) problem = CheckOptionsProblem(args.check_options);
  if (!problem.empty()) {
    err << "ttrace: run: " << problem << "\n";
    return kExitError;
  }
  if (args.job.empty()) args.job = Getenv("TTRACE_JOB");
  if (args.job.empty()) args.job = DefaultJob();
  if (args.dir.empty()) args.dir = Getenv("TTRACE_DIR");
  if (args.dir.empty()) args.dir = "ttrace-out/" + args.job;
  if (args.preload.empty()) args.preload = DefaultPreload();
  if (args.preload.empty() || access(args.preload.c_str(), R_OK) != 0) {
    err << "ttrace: error: libttrace.so not found at " << (args.preload.empty() ? "?" : args.preload)
        << " (--preload LIB names it)\n";
    return kExitError;
  }
  if (args.preload[0] != '/') {  // the child may change directory; the loader needs a path that stays valid
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) args.preload = absl::StrCat(cwd, "/", args.preload);
  }
  problem = MakeDirs(args.dir);
  if (problem.empty()) {
    absl::StatusOr<std::vector<std::string>> streams = ListStreams(args.dir);
    if (streams.ok() && !streams->empty())
      problem = absl::StrCat(args.dir, " already holds a trace (", BaseName(streams->front()),
                             "); name another with --dir, or remove it");
  }
  if (!problem.empty()) {
    err << "ttrace: error: " << problem << "\n";
    return kExitError;
  }
  std::string dir_abs = args.dir;
  if (dir_abs[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) dir_abs = absl::StrCat(cwd, "/", args.dir);
  }
  const std::string old_preload = Getenv("LD_PRELOAD");
  std::vector<std::pair<std::string, std::string>> env = {
      {"LD_PRELOAD", old_preload.empty() ? args.preload : absl::StrCat(args.preload, ":", old_preload)},
      {"TTRACE_DIR", dir_abs},
      {"TTRACE_JOB", args.job}};
  if (const std::string nvtx = NvtxInjectionPath(); !nvtx.empty()) env.emplace_back("NVTX_INJECTION64_PATH", nvtx);
  err << "ttrace: tracing " << args.command[0] << " into " << args.dir << "\n";
  err.flush();
  out.flush();
  const int status = RunChild(args.command, env, err);
  if (status < 0) return status == -ENOENT ? 127 : 126;
  int job_exit = 0;
  std::string how = "exited with status 0";
  if (WIFEXITED(status)) {
    job_exit = WEXITSTATUS(status);
    how = absl::StrCat("exited with status ", job_exit);
  } else if (WIFSIGNALED(status)) {
    job_exit = 128 + WTERMSIG(status);
    how = absl::StrCat("was killed by signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  }
  absl::StatusOr<std::vector<std::string>> streams = ListStreams(args.dir);
  const size_t n = streams.ok() ? streams->size() : 0;
  err << "ttrace: " << args.command[0] << " " << how << "; trace in " << args.dir << " (" << n
      << (n == 1 ? " stream)" : " streams)") << "\n";
  if (n == 0) {
    err << "ttrace: error: the job wrote no trace to " << args.dir
        << (job_exit != 0 ? " (it failed before any traced call?)\n"
                           : " (no cuBLAS, cuDNN or NCCL call reached the shim: a statically linked program "
                             "ignores LD_PRELOAD)\n");
    return job_exit != 0 ? job_exit : kExitError;
  }
  if (!args.check) return job_exit;
  std::vector<const char*> check_argv = {argv[0], "check", args.dir.c_str()};
  for (const std::string& o : args.check_options) check_argv.push_back(o.c_str());
  err.flush();
  const int verdict = RunCli(static_cast<int>(check_argv.size()), check_argv.data(), out, err);
  if (verdict == kExitFindings) return kExitFindings;
  if (job_exit != 0) {
    err << "ttrace: exit status " << job_exit << ": the job's (" << args.command[0] << " " << how << ")\n";
    return job_exit;
  }
  return verdict;
}

}  // namespace ttrace::analyzer

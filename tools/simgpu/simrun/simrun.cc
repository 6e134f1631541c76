// The child side of fork() only calls async-signal-safe functions (everything it needs is prepared before the
// fork), so Run may be used from a process that has threads. Exits are collected by polling waitpid on the
// ranks' pids, with sigtimedwait as the sleep, so a SIGCHLD consumed elsewhere never stalls the launcher and
// children the caller started itself are never reaped here.
#include "tools/simgpu/simrun/simrun.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace simgpu::simrun {
namespace {

using Clock = std::chrono::steady_clock;

bool ParseCount(const std::string& text, int* out) {
  if (text.empty() || text.size() > 5) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  *out = std::atoi(text.c_str());
  return *out >= 1 && *out <= 4096;
}

bool ParseSeconds(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && *out >= 0 && *out <= 3600;
}

std::string RunId() {
  unsigned char b[8] = {};
  if (getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) {
    auto t = static_cast<unsigned long long>(Clock::now().time_since_epoch().count()) ^ getpid();
    std::memcpy(b, &t, sizeof b);
  }
  char s[17];
  for (int i = 0; i < 8; ++i) std::snprintf(s + 2 * i, 3, "%02x", b[i]);
  return s;
}

// A port the kernel reports free on 127.0.0.1 right now (what torchrun --standalone does), or 29500.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 29500;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

void SignalAll(const std::vector<int>& pids, const std::vector<bool>& running, int sig) {
  for (size_t i = 0; i < pids.size(); ++i) {
    if (!running[i]) continue;
    if (kill(-pids[i], sig) != 0) kill(pids[i], sig);
  }
}

std::string Describe(const RankOutcome& o) {
  if (o.signaled) {
    return "was killed by signal " + std::to_string(o.status) + " (" + strsignal(o.status) + ")";
  }
  return "exited with status " + std::to_string(o.status);
}

}  // namespace

std::string Usage() {
  return "usage: simrun -n N [--grace SECONDS] [--] CMD [ARGS...]\n"
         "  Starts N ranks of CMD with torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,\n"
         "  MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, ...). If a rank fails, the others get SIGTERM, then\n"
         "  SIGKILL after the grace period (default 5 s); simrun exits with the failing rank's status.\n";
}

bool ParseArgs(int argc, const char* const* argv, Options* options, bool* help, std::string* error) {
  *help = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      *help = true;
      return true;
    }
    if (arg.empty() || arg[0] != '-') break;
    std::string name = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos && arg.rfind("--", 0) == 0) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    } else if (arg.size() > 2 && arg.rfind("-n", 0) == 0 && arg[2] != '-') {
      name = "-n";
      value = arg.substr(2);
      inline_value = true;
    }
    bool is_n = name == "-n" || name == "--nproc-per-node" || name == "--nproc_per_node";
    if (!is_n && name != "--grace") {
      *error = "unknown option " + arg;
      return false;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        *error = "option " + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (is_n && !ParseCount(value, &options->nprocs)) {
      *error = "-n needs a rank count between 1 and 4096, not \"" + value + "\"";
      return false;
    }
    if (!is_n && !ParseSeconds(value, &options->grace_seconds)) {
      *error = "--grace needs seconds between 0 and 3600, not \"" + value + "\"";
      return false;
    }
  }
  if (options->nprocs == 0) {
    *error = "missing -n N";
    return false;
  }
  options->command.assign(argv + i, argv + argc);
  if (options->command.empty()) {
    *error = "missing the command to run";
    return false;
  }
  return true;
}

std::vector<std::string> RankEnvironment(const Options& options, int rank, const std::string& run_id,
                                         int master_port, const char* const* base) {
  const std::string n = std::to_string(options.nprocs);
  const std::string r = std::to_string(rank);
  std::vector<std::pair<std::string, std::string>> vars = {
      {"RANK", r},
      {"LOCAL_RANK", r},
      {"WORLD_SIZE", n},
      {"LOCAL_WORLD_SIZE", n},
      {"GROUP_RANK", "0"},
      {"GROUP_WORLD_SIZE", "1"},
      {"ROLE_RANK", r},
      {"ROLE_WORLD_SIZE", n},
      {"ROLE_NAME", "default"},
      {"MASTER_ADDR", "127.0.0.1"},
      {"MASTER_PORT", std::to_string(master_port)},
      {"TORCHELASTIC_RUN_ID", run_id},
      {"TORCHELASTIC_RESTART_COUNT", "0"},
      {"TORCHELASTIC_MAX_RESTARTS", "0"},
  };
  std::vector<std::string> env;
  bool has_omp = false;
  for (const char* const* e = base; e != nullptr && *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& v : vars) replaced |= v.first == name;
    has_omp |= name == "OMP_NUM_THREADS";
    if (!replaced) env.push_back(entry);
  }
  for (const auto& v : vars) env.push_back(v.first + "=" + v.second);
  if (!has_omp) env.push_back("OMP_NUM_THREADS=1");
  for (const std::string& e : options.extra_env) {
    std::string name = e.substr(0, e.find('=') + 1);
    for (auto it = env.begin(); it != env.end();) {
      it = it->rfind(name, 0) == 0 ? env.erase(it) : it + 1;
    }
    env.push_back(e);
  }
  return env;
}

Result Run(const Options& options, FILE* log) {
  const int n = options.nprocs;
  Result result;
  result.ranks.resize(n);

  sigset_t watched, saved;
  sigemptyset(&watched);
  sigaddset(&watched, SIGINT);
  sigaddset(&watched, SIGTERM);
  sigaddset(&watched, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &watched, &saved);

  const std::string run_id = RunId();
  const int port = FreePort();
  std::vector<char*> argv;
  for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string exec_error = "simrun: cannot execute " + options.command[0] + "\n";

  std::vector<int> pids(n, -1);
  std::vector<bool> running(n, false);
  int alive = 0;
  for (int rank = 0; rank < n; ++rank) {
    std::vector<std::string> env = RankEnvironment(options, rank, run_id, port, environ);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      pthread_sigmask(SIG_SETMASK, &saved, nullptr);
      setpgid(0, 0);
      execvpe(argv[0], argv.data(), envp.data());
      ssize_t ignored = write(STDERR_FILENO, exec_error.data(), exec_error.size());
      (void)ignored;
      _exit(127);
    }
    if (pid < 0) {
      std::fprintf(log, "simrun: fork failed for rank %d: %s\n", rank, std::strerror(errno));
      result.exit_code = 1;
      result.failed_rank = rank;
      break;
    }
    setpgid(pid, pid);
    pids[rank] = pid;
    running[rank] = true;
    result.ranks[rank].pid = pid;
    ++alive;
  }

  bool term_sent = false;  // SIGTERM after a failure
  bool kill_sent = false;
  int forwarded = 0;  // SIGINT/SIGTERM received and passed on
  auto kill_deadline = Clock::now();
  auto terminate_others = [&] {
    SignalAll(pids, running, SIGTERM);
    term_sent = true;
    kill_deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(options.grace_seconds));
  };
  if (result.failed_rank >= 0) terminate_others();

  while (alive > 0) {
    for (int rank = 0; rank < n; ++rank) {
      if (!running[rank]) continue;
      int status = 0;
      if (waitpid(pids[rank], &status, WNOHANG) != pids[rank]) continue;
      running[rank] = false;
      --alive;
      RankOutcome& o = result.ranks[rank];
      o.signaled = WIFSIGNALED(status);
      o.status = o.signaled ? WTERMSIG(status) : WEXITSTATUS(status);
      o.killed_by_launcher = term_sent || kill_sent;
      if ((o.signaled || o.status != 0) && result.failed_rank < 0) {
        result.failed_rank = rank;
        result.exit_code = o.signaled ? 128 + o.status : o.status;
        if (alive > 0 && forwarded == 0) {
          std::fprintf(log, "simrun: rank %d (pid %d) %s; terminating the other %d rank(s)\n", rank, o.pid,
                       Describe(o).c_str(), alive);
          terminate_others();
        } else {
          std::fprintf(log, "simrun: rank %d (pid %d) %s\n", rank, o.pid, Describe(o).c_str());
        }
      }
    }
    if (alive == 0) break;
    if (term_sent && !kill_sent && Clock::now() >= kill_deadline) {
      std::fprintf(log, "simrun: %d rank(s) still running %g s after SIGTERM; sending SIGKILL\n", alive,
                   options.grace_seconds);
      SignalAll(pids, running, SIGKILL);
      kill_sent = true;
    }
    timespec ts{0, 20 * 1000 * 1000};
    int sig = sigtimedwait(&watched, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      if (++forwarded == 1) {
        SignalAll(pids, running, sig);
      } else {
        std::fprintf(log, "simrun: second %s; killing the ranks\n", strsignal(sig));
        SignalAll(pids, running, SIGKILL);
        kill_sent = true;
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  return result;
}

}  // namespace simgpu::simrun

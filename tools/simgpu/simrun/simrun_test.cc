#include "tools/simgpu/simrun/simrun.h"

#include <ftw.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace simgpu::simrun {
namespace {

using Clock = std::chrono::steady_clock;

// A scratch directory removed when the test process exits.
std::string MakeTempDir() {
  static std::vector<std::string>* dirs = [] {
    auto* v = new std::vector<std::string>;
    std::atexit([] {
      for (const std::string& d : *dirs) {
        nftw(d.c_str(), [](const char* p, const struct stat*, int, FTW*) { return remove(p); }, 16,
             FTW_DEPTH | FTW_PHYS);
      }
    });
    return v;
  }();
  char tmpl[] = "/tmp/simrun_test.XXXXXX";
  char* dir = mkdtemp(tmpl);
  if (dir == nullptr) return "";
  dirs->push_back(dir);
  return dir;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> ReadEnvFile(const std::string& path) {
  std::map<std::string, std::string> vars;
  std::istringstream in(ReadFile(path));
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) vars[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return vars;
}

Options Sh(int n, const std::string& script, const std::string& dir) {
  Options o;
  o.nprocs = n;
  o.command = {"/bin/sh", "-c", script, dir};
  return o;
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

bool Parse(std::vector<const char*> args, Options* o, std::string* error, bool* help = nullptr) {
  bool h = false;
  args.insert(args.begin(), "simrun");
  bool ok = ParseArgs(static_cast<int>(args.size()), args.data(), o, &h, error);
  if (help != nullptr) *help = h;
  return ok;
}

TEST(SimrunParseArgs, AcceptsTorchrunSpellings) {
  Options o;
  std::string error;
  ASSERT_TRUE(Parse({"-n", "3", "--", "prog", "-x", "y"}, &o, &error)) << error;
  EXPECT_EQ(o.nprocs, 3);
  EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "-x", "y"}));

  o = Options();
  ASSERT_TRUE(Parse({"--nproc-per-node=4", "prog", "--flag"}, &o, &error)) << error;
  EXPECT_EQ(o.nprocs, 4);
  EXPECT_EQ(o.command, (std::vector<std::string>{"prog", "--flag"}));

  o = Options();
  ASSERT_TRUE(Parse({"--nproc_per_node", "2", "--grace", "0.5", "prog"}, &o, &error)) << error;
  EXPECT_EQ(o.nprocs, 2);
  EXPECT_DOUBLE_EQ(o.grace_seconds, 0.5);

  o = Options();
  ASSERT_TRUE(Parse({"-n5", "prog"}, &o, &error)) << error;
  EXPECT_EQ(o.nprocs, 5);
}

TEST(SimrunParseArgs, RejectsBadUsage) {
  const std::vector<std::vector<const char*>> bad = {
      {"prog"}, {"-n", "0", "prog"}, {"-n", "x", "prog"}, {"-n", "2"}, {"-n"}, {"--bogus", "-n", "2", "prog"},
      {"-n", "2", "--grace", "-1", "prog"},
  };
  for (const auto& args : bad) {
    Options o;
    std::string error;
    EXPECT_FALSE(Parse(args, &o, &error)) << args.size();
    EXPECT_FALSE(error.empty());
  }
  Options o;
  std::string error;
  bool help = false;
  EXPECT_TRUE(Parse({"--help"}, &o, &error, &help));
  EXPECT_TRUE(help);
}

TEST(SimrunEnvironment, SetsTorchrunVariablesOverBase) {
  Options o;
  o.nprocs = 4;
  o.extra_env = {"FOO=override"};
  const char* base[] = {"RANK=99", "PATH=/bin", "FOO=base", "OMP_NUM_THREADS=7", nullptr};
  std::vector<std::string> env = RankEnvironment(o, 2, "abc", 12345, base);
  std::map<std::string, std::string> vars;
  for (const std::string& e : env) {
    ASSERT_EQ(vars.count(e.substr(0, e.find('='))), 0u) << "duplicate " << e;
    vars[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  }
  EXPECT_EQ(vars["RANK"], "2");
  EXPECT_EQ(vars["LOCAL_RANK"], "2");
  EXPECT_EQ(vars["WORLD_SIZE"], "4");
  EXPECT_EQ(vars["LOCAL_WORLD_SIZE"], "4");
  EXPECT_EQ(vars["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(vars["MASTER_PORT"], "12345");
  EXPECT_EQ(vars["TORCHELASTIC_RUN_ID"], "abc");
  EXPECT_EQ(vars["PATH"], "/bin");
  EXPECT_EQ(vars["FOO"], "override");
  EXPECT_EQ(vars["OMP_NUM_THREADS"], "7");
}

TEST(SimrunRun, EveryRankSeesItsEnvironment) {
  std::string dir = MakeTempDir();
  std::string run_ids[2];
  for (int launch = 0; launch < 2; ++launch) {
    Result r = simrun::Run(Sh(3, "env > \"$0/env.$RANK\"", dir), stderr);
    ASSERT_EQ(r.exit_code, 0);
    ASSERT_EQ(r.failed_rank, -1);
    std::string port;
    for (int rank = 0; rank < 3; ++rank) {
      auto vars = ReadEnvFile(dir + "/env." + std::to_string(rank));
      EXPECT_EQ(vars["RANK"], std::to_string(rank));
      EXPECT_EQ(vars["LOCAL_RANK"], std::to_string(rank));
      EXPECT_EQ(vars["WORLD_SIZE"], "3");
      EXPECT_EQ(vars["LOCAL_WORLD_SIZE"], "3");
      EXPECT_EQ(vars["MASTER_ADDR"], "127.0.0.1");
      ASSERT_FALSE(vars["MASTER_PORT"].empty());
      EXPECT_GT(std::stoi(vars["MASTER_PORT"]), 0);
      if (rank == 0) {
        port = vars["MASTER_PORT"];
        run_ids[launch] = vars["TORCHELASTIC_RUN_ID"];
      }
      EXPECT_EQ(vars["MASTER_PORT"], port);
      EXPECT_EQ(vars["TORCHELASTIC_RUN_ID"], run_ids[launch]);
    }
  }
  EXPECT_FALSE(run_ids[0].empty());
  EXPECT_NE(run_ids[0], run_ids[1]);
}

TEST(SimrunRun, FailingRankTerminatesTheOthers) {
  std::string dir = MakeTempDir();
  auto start = Clock::now();
  Result r = simrun::Run(Sh(3, "if [ $RANK = 1 ]; then exit 3; fi; sleep 30; touch \"$0/survived.$RANK\"", dir), stderr);
  EXPECT_LT(SecondsSince(start), 10.0);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.failed_rank, 1);
  for (int rank : {0, 2}) {
    EXPECT_TRUE(r.ranks[rank].signaled) << rank;
    EXPECT_EQ(r.ranks[rank].status, SIGTERM) << rank;
    EXPECT_TRUE(r.ranks[rank].killed_by_launcher) << rank;
    EXPECT_FALSE(Exists(dir + "/survived." + std::to_string(rank)));
  }
  EXPECT_FALSE(r.ranks[1].signaled);
  EXPECT_EQ(r.ranks[1].status, 3);
}

TEST(SimrunRun, RankKilledBySignalGives128PlusSignal) {
  std::string dir = MakeTempDir();
  Result r = simrun::Run(Sh(3, "if [ $RANK = 2 ]; then kill -SEGV $$; fi; sleep 30", dir), stderr);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
  EXPECT_EQ(r.failed_rank, 2);
  EXPECT_TRUE(r.ranks[2].signaled);
}

TEST(SimrunRun, RanksIgnoringSigtermAreKilledAfterGrace) {
  std::string dir = MakeTempDir();
  // Rank 0 fails once the others ignore SIGTERM.
  Options o = Sh(3,
                 "if [ $RANK = 0 ]; then while [ ! -e \"$0/ready.1\" ] || [ ! -e \"$0/ready.2\" ]; do sleep 0.01; "
                 "done; exit 1; fi; trap '' TERM; touch \"$0/ready.$RANK\"; sleep 30",
                 dir);
  o.grace_seconds = 0.5;
  auto start = Clock::now();
  Result r = simrun::Run(o, stderr);
  EXPECT_LT(SecondsSince(start), 10.0);
  EXPECT_EQ(r.exit_code, 1);
  for (int rank : {1, 2}) {
    EXPECT_TRUE(r.ranks[rank].signaled);
    EXPECT_EQ(r.ranks[rank].status, SIGKILL);
  }
}

TEST(SimrunRun, MissingProgramFailsWith127) {
  Options o;
  o.nprocs = 2;
  o.command = {"/nonexistent/simrun-test-program"};
  Result r = simrun::Run(o, stderr);
  EXPECT_EQ(r.exit_code, 127);
}

// The launcher binary: exit status, its report, usage errors and forwarding of SIGINT.
int RunBinary(const std::vector<std::string>& args, const std::string& stderr_path, pid_t* pid_out = nullptr) {
  pid_t pid = fork();
  if (pid == 0) {
    FILE* f = freopen(stderr_path.c_str(), "w", stderr);
    (void)f;
    std::vector<char*> argv = {const_cast<char*>(SIMRUN_BIN)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(SIMRUN_BIN, argv.data());
    _exit(126);
  }
  if (pid_out != nullptr) {
    *pid_out = pid;
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(SimrunBinary, ReportsTheFailingRankAndExitsWithItsStatus) {
  std::string dir = MakeTempDir();
  std::string err = dir + "/stderr";
  EXPECT_EQ(RunBinary({"-n", "3", "--", "/bin/sh", "-c", "[ $RANK = 1 ] && exit 7; sleep 30"}, err), 7);
  EXPECT_NE(ReadFile(err).find("simrun: rank 1 (pid"), std::string::npos) << ReadFile(err);
  EXPECT_NE(ReadFile(err).find("exited with status 7"), std::string::npos) << ReadFile(err);
  EXPECT_EQ(RunBinary({"-n", "2", "--", "/bin/true"}, err), 0);
  EXPECT_EQ(ReadFile(err), "");
  EXPECT_EQ(RunBinary({"--", "/bin/true"}, err), 2);
  EXPECT_NE(ReadFile(err).find("usage: simrun"), std::string::npos);
}

TEST(SimrunBinary, ForwardsSigintToEveryRank) {
  std::string dir = MakeTempDir();
  std::string script =
      "trap 'touch \"$0/int.$RANK\"; exit 0' INT; touch \"$0/ready.$RANK\"; "
      "i=0; while [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; exit 5";
  pid_t pid = -1;
  RunBinary({"-n", "3", "--", "/bin/sh", "-c", script, dir}, dir + "/stderr", &pid);
  auto start = Clock::now();
  while (!(Exists(dir + "/ready.0") && Exists(dir + "/ready.1") && Exists(dir + "/ready.2")) &&
         SecondsSince(start) < 20) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(pid, SIGINT), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_LT(SecondsSince(start), 20.0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << ReadFile(dir + "/stderr");
  for (int rank = 0; rank < 3; ++rank) EXPECT_TRUE(Exists(dir + "/int." + std::to_string(rank))) << rank;
}

}  // namespace
}  // namespace simgpu::simrun

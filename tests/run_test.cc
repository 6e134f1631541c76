// `ttrace run` end to end on simgpu: the real binary, the real libttrace.so beside it, simrun and tp_mlp as the
// job. What must hold: the job runs under the shim with TTRACE_DIR set (every rank's stream lands in the named
// directory), the trace is checked at the end, and the exit status is the documented one (run_cli.h): 0 clean,
// 1 findings even when the job succeeded, the job's own status when it failed, 126/127 when it cannot run, 2 for
// usage errors and refused directories, before the job runs.
#include <sys/stat.h>

#include <string>

#include "gtest/gtest.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

std::string Ttrace() { return BuildDir() + "/bin/ttrace"; }

// `ttrace run ARGS -- simrun -n 2 -- tp_mlp ...` with simgpu's libraries, from the test's temporary directory.
int RunTpMlp(const std::string& run_args, const std::string& env, const std::string& after, std::string* out) {
  const std::string b = BuildDir();
  return Shell("cd '" + TempDir() + "' && env LD_LIBRARY_PATH=" + b + "/simgpu/lib " + env + " " + Ttrace() +
                   " run " + run_args + " -- " + b + "/bin/simrun -n 2 -- " + b +
                   "/bin/tp_mlp --tp 1 --steps 2 --dtype fp32 --rdzv '" + TempDir() + "/rdzv'" + after,
               out);
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(RunTest, CleanJobIsTracedIntoTheNamedDirectoryAndChecked) {
  std::string out;
  const std::string dir = TempDir() + "/clean";
  const int rc = RunTpMlp("--dir '" + dir + "' --json '" + dir + ".json' --html '" + dir + ".html'", "", "", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ttrace: tracing " + BuildDir() + "/bin/simrun into " + dir), std::string::npos) << out;
  EXPECT_NE(out.find("exited with status 0; trace in " + dir + " (2 streams)"), std::string::npos) << out;
  EXPECT_NE(out.find("verdict:     CLEAN (every op checked)"), std::string::npos) << out;
  EXPECT_TRUE(Exists(dir + "/rank-0.ttr") && Exists(dir + "/rank-1.ttr")) << out;
  std::string json;
  Shell("cat '" + dir + ".json'", &json);
  EXPECT_NE(json.find("\"verdict\": \"clean\""), std::string::npos) << json;
  std::string html;  // check options such as --html are the check's (html_report_test checks the page)
  Shell("cat '" + dir + ".html'", &html);
  EXPECT_NE(html.find(">CLEAN (every op checked)<"), std::string::npos) << html.substr(0, 2000);
}

TEST(RunTest, DefaultDirectoryIsUnderTtraceOutNamedByTheJob) {
  std::string out;
  const int rc = RunTpMlp("--job myjob", "", "", &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(Exists(TempDir() + "/ttrace-out/myjob/rank-1.ttr")) << out;
  EXPECT_NE(out.find("job 'myjob', 2 streams"), std::string::npos) << out;
  // The same directory again is refused before the job runs: streams of two runs must not mix.
  const int again = RunTpMlp("--job myjob", "", "", &out);
  EXPECT_EQ(again, 2) << out;
  EXPECT_NE(out.find("already holds a trace"), std::string::npos) << out;
}

TEST(RunTest, FindingsExitOneWhileTheJobSucceeded) {
  std::string out;
  const std::string dir = TempDir() + "/fault";
  const int rc = RunTpMlp("--dir '" + dir + "'", "SIMGPU_FAULT='gemm:rank=1:call=2:elem=3:bit=30'", "", &out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("exited with status 0"), std::string::npos) << out;
  EXPECT_NE(out.find("first finding: rank 1 seq"), std::string::npos) << out;
}

TEST(RunTest, AFailedJobGivesItsOwnStatusAfterTheCheck) {
  std::string out;
  const std::string dir = TempDir() + "/failed";
  // The job's ranks succeed and the trace is clean; the command as a whole exits 5.
  const std::string b = BuildDir();
  const int rc = Shell("cd '" + TempDir() + "' && env LD_LIBRARY_PATH=" + b + "/simgpu/lib " + Ttrace() +
                           " run --dir '" + dir + "' -- sh -c '" + b + "/bin/simrun -n 2 -- " + b +
                           "/bin/tp_mlp --tp 1 --steps 1 --dtype fp32 --rdzv " + TempDir() + "/rdzv2; exit 5'",
                       &out);
  EXPECT_EQ(rc, 5) << out;
  EXPECT_NE(out.find("verdict:     CLEAN"), std::string::npos) << out;
  EXPECT_NE(out.find("exit status 5: the job's"), std::string::npos) << out;
}

TEST(RunTest, EnvironmentOfTheJob) {
  std::string out;
  const std::string dir = TempDir() + "/env";
  const int rc = Shell("cd '" + TempDir() + "' && LD_PRELOAD= " + Ttrace() + " run --dir env --job j1 -- sh -c " +
                           "'echo \"preload=$LD_PRELOAD dir=$TTRACE_DIR job=$TTRACE_JOB\"'",
                       &out);
  // No CUDA library call: no stream, a data error for a job that succeeded.
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("preload=" + BuildDir() + "/bin/../lib/libttrace.so dir=" + dir + " job=j1"), std::string::npos)
      << out;
  EXPECT_NE(out.find("the job wrote no trace"), std::string::npos) << out;
  EXPECT_NE(out.find("a statically linked program ignores LD_PRELOAD"), std::string::npos) << out;
  // A job that fails before any traced call: its own status, and no hint about static linking.
  EXPECT_EQ(Shell("cd '" + TempDir() + "' && " + Ttrace() + " run --dir early -- sh -c 'exit 4'", &out), 4) << out;
  EXPECT_NE(out.find("the job wrote no trace to early (it failed before any traced call?)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("statically linked"), std::string::npos) << out;
}

TEST(RunTest, CommandsThatCannotRunAndUsageErrors) {
  std::string out;
  EXPECT_EQ(Shell("cd '" + TempDir() + "' && " + Ttrace() + " run --dir nf -- ./no-such-program", &out), 127) << out;
  EXPECT_NE(out.find("cannot run ./no-such-program"), std::string::npos) << out;
  EXPECT_EQ(Shell("cd '" + TempDir() + "' && " + Ttrace() + " run --dir ne -- /dev/null", &out), 126) << out;
  // A bad check option is refused before the job runs.
  EXPECT_EQ(Shell("cd '" + TempDir() + "' && " + Ttrace() + " run --dir bad --jsn x -- touch ran-bad", &out), 2)
      << out;
  EXPECT_NE(out.find("unknown option --jsn"), std::string::npos) << out;
  EXPECT_FALSE(Exists(TempDir() + "/ran-bad"));
  EXPECT_EQ(Shell(Ttrace() + " run --dir x", &out), 2) << out;
  EXPECT_NE(out.find("no command to run"), std::string::npos) << out;
  EXPECT_EQ(Shell(Ttrace() + " run --preload /nonexistent/libttrace.so -- true", &out), 2) << out;
  EXPECT_NE(out.find("libttrace.so not found at /nonexistent/libttrace.so"), std::string::npos) << out;
  // A job killed by a signal: 128 + N, after saying so.
  EXPECT_EQ(Shell("cd '" + TempDir() + "' && " + Ttrace() + " run --dir killed -- sh -c 'kill -9 $$'", &out), 137)
      << out;
  EXPECT_NE(out.find("was killed by signal 9"), std::string::npos) << out;
}

}  // namespace
}  // namespace ttrace::e2e

// The context between ops end to end on simgpu: shim_context_workload under libttrace.so with a stand-in libcupti
// (standin_cupti.cc) whose hooks fire CUPTI's callback records for the workload's "launches" and NVTX ranges. The
// records reach the trace (ContextRecord, NameRecord once per name), the reader, `ttrace dump`, and the check
// report of a GEMM fault (terminal, JSON and HTML). When another tool holds CUPTI (the stand-in answers
// MULTIPLE_SUBSCRIBERS), and with the toolkit's real libcupti.so.13 (no GPU here: its subscribe fails), the shim
// says so once and nothing else changes: the program's output and exit status, the ops recorded.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/dump.h"
#include "analyzer/html_report.h"
#include "analyzer/json.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "shim/testing/process.h"
#include "store/trace_reader.h"

namespace ttrace::shim::testing {
namespace {

struct Traced {
  RunResult result;
  analyzer::TraceSet trace;
  std::string stream;
};

// libpath: directories searched before simgpu's ("" for none); shim: preload libttrace.so.
Traced RunWorkload(const ScratchDir& scratch, const std::string& tag, const std::string& libpath, bool shim,
                std::map<std::string, std::string> env = {}) {
  Traced run;
  const std::string dir = scratch / tag;
  env["LD_LIBRARY_PATH"] = (libpath.empty() ? "" : libpath + ":") + TTRACE_SIMGPU_LIBDIR;
  if (shim) env["LD_PRELOAD"] = TTRACE_SHIM_LIB;
  if (env.count("TTRACE_CONTEXT") == 0) env["TTRACE_CONTEXT"] = "1";  // the default, which RunProgram turns off
  if (env.count("TTRACE_DIR") == 0) env["TTRACE_DIR"] = dir;
  env["TTRACE_MODE"] = "full";
  if (env.count("RANK") == 0) env["RANK"] = "0";
  if (env.count("WORLD_SIZE") == 0) env["WORLD_SIZE"] = "1";
  run.result = RunProgram({TTRACE_CONTEXT_WORKLOAD}, env);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  if (!shim) return run;
  absl::StatusOr<analyzer::TraceSet> set = analyzer::LoadTraceDir(env["TTRACE_DIR"]);
  EXPECT_TRUE(set.ok()) << set.status();
  if (set.ok()) run.trace = std::move(*set);
  if (!run.trace.ranks.empty()) run.stream = run.trace.ranks[0].path;
  return run;
}

// Lines the shim wrote ("ttrace[<pid>]: ...").
int ShimLines(const std::string& err) {
  int n = 0;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);) n += line.rfind("ttrace[", 0) == 0;
  return n;
}

std::map<format::RecordType, int> RecordCounts(const std::string& path) {
  std::map<format::RecordType, int> counts;
  auto reader = store::TraceReader::Open(path);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return counts;
  store::RecordView r;
  while (true) {
    auto more = (*reader)->Next(&r);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    ++counts[r.type];
  }
  return counts;
}

TEST(ContextCaptureTest, LaunchesAndRangesBetweenOpsReachTheTraceAndTheReport) {
  ScratchDir scratch;
  const Traced plain = RunWorkload(scratch, "plain", TTRACE_CUPTI_STANDIN_DIR, /*shim=*/false);
  // GEMM call 1's output corrupted: the finding's op is the one with the launches and NVTX ranges before it.
  const Traced run = RunWorkload(scratch, "context", TTRACE_CUPTI_STANDIN_DIR, true,
                              {{"SIMGPU_FAULT", "gemm:rank=0:call=1:elem=3:bit=30"}});
  const Traced clean = RunWorkload(scratch, "clean", TTRACE_CUPTI_STANDIN_DIR, true);
  EXPECT_EQ(clean.result.out, plain.result.out);  // the program's results, with and without the shim
  EXPECT_EQ(ShimLines(clean.result.err), 0) << clean.result.err;
  EXPECT_NE(clean.result.err.find("standin_subscribes=1"), std::string::npos) << clean.result.err;
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const analyzer::RankTrace& t = run.trace.ranks[0];
  ASSERT_EQ(t.ops.size(), 4u);
  EXPECT_TRUE(t.warnings.empty());
  EXPECT_EQ(t.contexts, 2u);
  EXPECT_FALSE(t.ops[0].context.valid);  // launched before CUPTI was subscribed: nothing seen
  const analyzer::OpContext& c = t.ops[1].context;
  ASSERT_TRUE(c.valid);
  EXPECT_EQ(c.kernels, 5u);  // the other thread's four launches are not this thread's
  EXPECT_EQ(c.unnamed_kernels, 0u);
  EXPECT_EQ(c.graph_launches, 1u);
  using Named = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(c.kernel_names, (Named{{"_Z22vectorized_elementwiseILi4EEvPf", 3}, {"_Z11relu_kernelPf", 2}}));
  EXPECT_EQ(c.nvtx, (std::vector<std::string>{"forward", "layer3"}));
  EXPECT_EQ(c.nvtx_depth, 2u);
  EXPECT_FALSE(t.ops[2].context.valid);  // nothing ran between GEMM 1 and GEMM 2, no range open
  ASSERT_TRUE(t.ops[3].context.valid);
  EXPECT_EQ(t.ops[3].context.kernels, 1u);
  EXPECT_EQ(t.ops[3].context.kernel_names, (Named{{"_Z11relu_kernelPf", 1}}));
  EXPECT_TRUE(t.ops[3].context.nvtx.empty());
  // Each name once in the stream: the two kernels and the two ranges.
  const auto counts = RecordCounts(run.stream);
  EXPECT_EQ(counts.at(format::RecordType::kName), 4);
  EXPECT_EQ(counts.at(format::RecordType::kContext), 2);

  // The report names what ran before the corrupted op.
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  ASSERT_EQ(report.findings().size(), 1u);
  const analyzer::Finding& f = report.findings()[0];
  EXPECT_EQ(f.seq, 1u);
  ASSERT_TRUE(f.context.valid);
  const std::string expected =
      "after 5 kernels since the previous captured op on its thread: vectorized_elementwise x3, relu_kernel x2; "
      "1 graph launch; in NVTX range forward/layer3";
  EXPECT_EQ(analyzer::ContextText(f.context), expected);
  std::ostringstream terminal;
  analyzer::PrintReport(report, terminal);
  EXPECT_NE(terminal.str().find("  context: " + expected + "\n"), std::string::npos) << terminal.str();
  EXPECT_NE(analyzer::ReportToHtml(report).find("<br>context: " + expected), std::string::npos);
  const std::string json = analyzer::ReportToJson(report, nullptr, "");
  EXPECT_NE(json.find("\"context\": {\"kernels\": 5, \"unnamed_kernels\": 0, \"graph_launches\": 1, "
                      "\"kernel_names\": [{\"name\": \"_Z22vectorized_elementwiseILi4EEvPf\", \"short_name\": "
                      "\"vectorized_elementwise\", \"count\": 3}, {\"name\": \"_Z11relu_kernelPf\", \"short_name\": "
                      "\"relu_kernel\", \"count\": 2}], \"nvtx_depth\": 2, \"nvtx\": [\"forward\", \"layer3\"]"),
            std::string::npos)
      << json;
  // A clean run's report has no finding to annotate; its trace holds the same context.
  EXPECT_EQ(analyzer::RunChecks(clean.trace).verdict(), analyzer::Verdict::kClean);
  EXPECT_EQ(clean.trace.ranks[0].ops[1].context.kernel_names, c.kernel_names);

  // `ttrace dump --seq 1` shows the op's context record; the whole dump shows the names.
  std::ostringstream seq_dump, dump;
  std::string note, warning;
  ASSERT_TRUE(analyzer::DumpSeq(run.stream, 1, {}, seq_dump, &note, &warning).ok());
  EXPECT_NE(seq_dump.str().find("context seq=1 kernels=5 unnamed=0 graph_launches=1 names="), std::string::npos)
      << seq_dump.str();
  EXPECT_NE(seq_dump.str().find(" nvtx_depth=2 nvtx="), std::string::npos) << seq_dump.str();
  ASSERT_TRUE(analyzer::DumpStream(run.stream, {}, dump, &warning).ok());
  EXPECT_NE(dump.str().find("kind=kernel text=\"_Z11relu_kernelPf\""), std::string::npos) << dump.str();
  EXPECT_NE(dump.str().find("kind=nvtx text=\"layer3\""), std::string::npos) << dump.str();
}

TEST(ContextCaptureTest, AnotherToolHoldingCuptiIsSaidOnceAndChangesNothingElse) {
  ScratchDir scratch;
  const Traced plain = RunWorkload(scratch, "plain", TTRACE_CUPTI_STANDIN_DIR, false);
  const Traced busy = RunWorkload(scratch, "busy", TTRACE_CUPTI_STANDIN_DIR, true, {{"STANDIN_CUPTI", "busy"}});
  EXPECT_EQ(busy.result.out, plain.result.out);
  EXPECT_EQ(ShimLines(busy.result.err), 1) << busy.result.err;
  EXPECT_NE(busy.result.err.find("another tool nsight holds CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)"),
            std::string::npos)
      << busy.result.err;
  ASSERT_EQ(busy.trace.ranks.size(), 1u);
  EXPECT_EQ(busy.trace.ranks[0].ops.size(), 4u);
  EXPECT_EQ(busy.trace.ranks[0].contexts, 0u);
  EXPECT_TRUE(busy.trace.ranks[0].ended);
  EXPECT_EQ(analyzer::RunChecks(busy.trace).verdict(), analyzer::Verdict::kClean);
}

TEST(ContextCaptureTest, ContextOffNeverLoadsCupti) {
  ScratchDir scratch;
  const Traced off = RunWorkload(scratch, "off", TTRACE_CUPTI_STANDIN_DIR, true, {{"TTRACE_CONTEXT", "0"}});
  EXPECT_EQ(off.result.err.find("standin_subscribes"), std::string::npos) << off.result.err;  // never loaded
  ASSERT_EQ(off.trace.ranks.size(), 1u);
  EXPECT_EQ(off.trace.ranks[0].ops.size(), 4u);
  EXPECT_EQ(off.trace.ranks[0].contexts, 0u);
}

TEST(ContextCaptureTest, RealLibcuptiWithoutAGpuIsSaidOnce) {
  void* real = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_LOCAL);
  if (real == nullptr) GTEST_SKIP() << "no libcupti.so.13 on this machine";
  ScratchDir scratch;
  const Traced plain = RunWorkload(scratch, "plain", "", false);
  const Traced run = RunWorkload(scratch, "real", "", true);
  EXPECT_EQ(run.result.out, plain.result.out);
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  EXPECT_EQ(run.trace.ranks[0].ops.size(), 4u);
  EXPECT_EQ(run.trace.ranks[0].contexts, 0u);  // the workload fires nothing through the real library
  // No GPU: CUPTI refuses the subscription (CUPTI_ERROR_UNKNOWN here), said once. With a GPU it subscribes,
  // silently.
  if (access("/dev/nvidia0", F_OK) != 0) {
    EXPECT_EQ(ShimLines(run.result.err), 1) << run.result.err;
    EXPECT_NE(run.result.err.find("CUPTI (libcupti.so.13) cannot be used (cuptiSubscribe: "), std::string::npos)
        << run.result.err;
  } else {
    EXPECT_LE(ShimLines(run.result.err), 1) << run.result.err;
  }
  printf("real libcupti: %s\n", run.result.err.empty() ? "(subscribed, no message)" : run.result.err.c_str());
}

// Every rank of a job without a GPU meets the same refusal: said once for the job, not once per rank. Four ranks of
// one job (one parent: this test; one trace directory) give one line, from the first, and record their ops as
// before; a second job into the same directory (another parent: a shell) says it again, and so does a rank writing
// elsewhere. Before: one line per rank (4).
TEST(ContextCaptureTest, RealLibcuptiWithoutAGpuIsSaidOncePerJob) {
  void* real = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_LOCAL);
  if (real == nullptr) GTEST_SKIP() << "no libcupti.so.13 on this machine";
  if (access("/dev/nvidia0", F_OK) == 0) GTEST_SKIP() << "a GPU: CUPTI subscribes, nothing to say";
  ScratchDir scratch;
  const std::string dir = scratch / "job";
  int lines = 0;
  for (int rank = 0; rank < 4; ++rank) {
    const Traced run = RunWorkload(scratch, "job", "", true,
                                   {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", "4"}, {"TTRACE_DIR", dir}});
    EXPECT_EQ(ShimLines(run.result.err), rank == 0 ? 1 : 0) << rank << ": " << run.result.err;
    if (rank == 0)
      EXPECT_NE(run.result.err.find("cannot be used (cuptiSubscribe: "), std::string::npos) << run.result.err;
    if (rank == 0) EXPECT_NE(run.result.err.find("(said once for the job)"), std::string::npos) << run.result.err;
    lines += ShimLines(run.result.err);
    ASSERT_EQ(run.trace.ranks.size(), static_cast<size_t>(rank + 1));
    for (const analyzer::RankTrace& t : run.trace.ranks) EXPECT_EQ(t.ops.size(), 4u);
  }
  EXPECT_EQ(lines, 1);
  const RunResult other = RunProgram({"/bin/sh", "-c", std::string(TTRACE_CONTEXT_WORKLOAD) + "; exit $?"},
                                     {{"LD_LIBRARY_PATH", TTRACE_SIMGPU_LIBDIR},
                                      {"LD_PRELOAD", TTRACE_SHIM_LIB},
                                      {"TTRACE_CONTEXT", "1"},
                                      {"TTRACE_DIR", dir},
                                      {"RANK", "4"},
                                      {"WORLD_SIZE", "5"}});
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(ShimLines(other.err), 1) << "another job: " << other.err;
  const Traced elsewhere = RunWorkload(scratch, "elsewhere", "", true, {{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(ShimLines(elsewhere.result.err), 1) << elsewhere.result.err;
}

// What `ttrace run` gives the job as NVTX_INJECTION64_PATH ("unset" when nothing), with the stand-in libcupti first
// on the library path and `env` added.
std::string NvtxPathUnderRun(const ScratchDir& scratch, const std::string& tag,
                             std::map<std::string, std::string> env) {
  const std::string file = scratch / (tag + ".nvtx");
  env["LD_LIBRARY_PATH"] = std::string(TTRACE_CUPTI_STANDIN_DIR) + ":" + TTRACE_SIMGPU_LIBDIR;
  const RunResult r = RunProgram({TTRACE_CLI, "run", "--no-check", "--preload", TTRACE_SHIM_LIB, "--dir",
                                  scratch / tag, "--", "/bin/sh", "-c",
                                  "printf %s \"${NVTX_INJECTION64_PATH-unset}\" > '" + file + "'"},
                                 env);
  EXPECT_NE(r.err.find("exited with status 0"), std::string::npos) << r.err;  // no trace: ttrace's own status
  return ReadFile(file);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// NVTX reports ranges to CUPTI only through NVTX_INJECTION64_PATH: `ttrace run` points it at the libcupti the shim
// loads (the first of its sonames on the job's library path: here the stand-in, ahead of the toolkit's), as an
// absolute path, unless the user set it or the context is off.
TEST(ContextCaptureTest, TtraceRunPointsNvtxAtTheLibcuptiTheShimLoads) {
  if (getenv("NVTX_INJECTION64_PATH") != nullptr) GTEST_SKIP() << "NVTX_INJECTION64_PATH is set for the test";
  ScratchDir scratch;
  const std::string on = NvtxPathUnderRun(scratch, "on", {{"TTRACE_CONTEXT", "1"}});
  EXPECT_EQ(on.rfind('/', 0), 0u) << on;
  EXPECT_TRUE(SameFile(on, std::string(TTRACE_CUPTI_STANDIN_DIR) + "/libcupti.so.13")) << on;
  EXPECT_EQ(NvtxPathUnderRun(scratch, "user", {{"TTRACE_CONTEXT", "1"}, {"NVTX_INJECTION64_PATH", "/opt/x.so"}}),
            "/opt/x.so");
  EXPECT_EQ(NvtxPathUnderRun(scratch, "off", {{"TTRACE_CONTEXT", "0"}}), "unset");
  EXPECT_EQ(NvtxPathUnderRun(scratch, "disabled", {{"TTRACE_CONTEXT", "1"}, {"TTRACE_DISABLE", "1"}}), "unset");
}

}  // namespace
}  // namespace ttrace::shim::testing

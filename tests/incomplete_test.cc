// End to end: a run whose evidence is lost is never called clean. A rank killed with SIGKILL while its peers get
// SIGTERM (what torchrun does when one rank fails), a full disk, a meta-mode trace: `ttrace check` says
// incomplete (exit 3) and names what is missing, while a fault injected before the kill is still a finding
// (exit 1). And the shim's close on SIGTERM never changes how the program ends: killed by the signal under the
// default disposition, the application's own handler run, an ignored SIGTERM still ignored.
#include <csignal>
#include <string>

#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "tests/e2e_util.h"

namespace ttrace::e2e {
namespace {

std::string Ttrace() { return BuildDir() + "/bin/ttrace"; }

// The environment of a traced run on simgpu writing to `dir`.
std::string TracedEnv(const std::string& dir) {
  const std::string b = BuildDir();
  return "env LD_LIBRARY_PATH=" + b + "/simgpu/lib LD_PRELOAD=" + b + "/lib/libttrace.so TTRACE_DIR=" + dir +
         " TTRACE_FLUSH_MS=100 ";
}

// A 4-rank job (tp 2) that would train for hours: after `seconds`, rank 2 gets SIGKILL and every other rank
// SIGTERM, each by the pid its stream header names. A SIGTERMed rank's close (drain, end record, fsync, closing
// manifest entry) is bounded by TTRACE_EXIT_WAIT_MS + 2 s, 5 s by default: on a machine loaded by parallel builds
// and suites a close once ran past it after its end record and before its manifest entry (rank 1 read "open").
// These tests are about what a finished close leaves, so it gets 30 s, and simrun's SIGKILL comes after 60.
std::string KillJob(const std::string& name, const std::string& fault, double seconds) {
  const std::string dir = TempDir() + "/" + name;
  const std::string b = BuildDir();
  const std::string pid_of = "$(od -An -t u4 -j 28 -N 4 " + dir + "/rank-";
  std::string out;
  const std::string script =
      "rm -rf " + dir + "; " + TracedEnv(dir) + "TTRACE_EXIT_WAIT_MS=30000 " +
      (fault.empty() ? "" : "SIMGPU_FAULT='" + fault + "' ") + b + "/bin/simrun -n 4 --grace 60 -- " + b +
      "/bin/tp_mlp --tp 2 --steps 1000000 --rdzv " + dir + ".rdzv & S=$!; sleep " +
      std::to_string(seconds) + "; kill -KILL " + pid_of + "2.ttr); for r in 0 1 3; do kill -TERM " + pid_of +
      "$r.ttr); done; wait $S; echo simrun=$?";
  Shell(script, &out);
  EXPECT_NE(out.find("simrun="), std::string::npos) << out;
  return dir;
}

TEST(Incomplete, KilledRankIsNamedAndTheOthersAreStillChecked) {
  const std::string dir = KillJob("kill9", "", 3);
  std::string out;
  EXPECT_EQ(Shell(Ttrace() + " check " + dir + " --json " + dir + ".json", &out), 3) << out;
  EXPECT_NE(out.find("verdict:     INCOMPLETE"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 2's stream ends at seq "), std::string::npos) << out;
  EXPECT_NE(out.find("without an end record"), std::string::npos) << out;
  for (const char* other : {"rank 0's stream ends", "rank 1's stream ends", "rank 3's stream ends"})
    EXPECT_EQ(out.find(other), std::string::npos) << other << "\n" << out;
  std::string json;
  EXPECT_EQ(Shell("grep -c '\"verdict\": \"incomplete\"' " + dir + ".json", &json), 0) << json;
  analyzer::LoadOptions lo;
  lo.allow_truncated = true;
  auto set = analyzer::LoadTraceDir(dir, lo);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->ranks.size(), 4u);
  int by_signal = 0;
  for (const auto& t : set->ranks) {
    if (t.rank() == 2) {
      EXPECT_FALSE(t.ended);
      continue;
    }
    EXPECT_TRUE(t.ended) << "rank " << t.rank() << " closed its stream";
    by_signal += t.end.reason == static_cast<uint32_t>(format::EndReason::kSignal) && t.end.signal == SIGTERM;
    EXPECT_GT(t.ops.size(), 20u) << "rank " << t.rank() << ": several steps recorded";
  }
  EXPECT_GE(by_signal, 1) << "the SIGTERMed ranks say so in their end records";
  analyzer::CheckReport report = analyzer::RunChecks(*set);
  EXPECT_TRUE(report.no_findings());
  EXPECT_GT(report.summary().checked.at("gemm"), 60u) << "the complete ranks' GEMMs are checked";
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kIncomplete);
  EXPECT_EQ(Shell(Ttrace() + " check " + dir + " --allow-incomplete", &out), 0) << out;

  // The killed rank's store: its manifest entry still says open (it never closed), the others closed with their
  // end records' counts; its last op reads back through the index (which may lag by one frame: scanned past),
  // the same lines as a scan of the whole stream, and without the index from a scan, with one note.
  EXPECT_EQ(Shell(Ttrace() + " dump " + dir + " --manifest", &out), 0) << out;
  EXPECT_NE(out.find("rank-2.ttr open rank=2 world=4"), std::string::npos) << out;
  EXPECT_NE(out.find("libcublas.so.13"), std::string::npos) << "the vendor libraries of the job: " << out;
  for (const char* closed : {"rank-0.ttr closed rank=0", "rank-1.ttr closed rank=1", "rank-3.ttr closed rank=3"})
    EXPECT_NE(out.find(closed), std::string::npos) << closed << "\n" << out;
  const analyzer::RankTrace& killed = set->ranks[2];
  ASSERT_EQ(killed.rank(), 2);
  ASSERT_FALSE(killed.ops.empty());
  const std::string last = std::to_string(killed.ops.back().seq);
  const std::string seq_lines = " | grep -v '^#' | sort";
  std::string scanned, indexed;
  ASSERT_EQ(Shell(Ttrace() + " dump " + dir + "/rank-2.ttr --allow-truncated 2>/dev/null | grep -E '^(tensor |notice code=[0-9]+ )?seq=" +
                      last + " '" + seq_lines,
                  &scanned),
            0);
  ASSERT_EQ(Shell(Ttrace() + " dump " + dir + " --rank 2 --seq " + last + " --allow-truncated 2>&1 >/dev/null", &out), 0)
      << out;
  EXPECT_EQ(out.find("note"), std::string::npos) << "the index is used: " << out;
  ASSERT_EQ(Shell(Ttrace() + " dump " + dir + " --rank 2 --seq " + last + " --allow-truncated 2>/dev/null" + seq_lines,
                  &indexed),
            0);
  EXPECT_FALSE(indexed.empty());
  EXPECT_EQ(indexed, scanned);
  ASSERT_EQ(Shell(Ttrace() + " dump " + dir + " --rank 2 --seq " + last + " --allow-truncated 2>/dev/null | tail -1", &out),
            0);
  EXPECT_NE(out.find("frames (index)"), std::string::npos) << out;
  ASSERT_EQ(Shell("rm " + dir + "/rank-2.ttr.idx && " + Ttrace() + " dump " + dir + " --rank 2 --seq " + last +
                      " --allow-truncated 2>&1 >/dev/null",
                  &out),
            0);
  EXPECT_NE(out.find("ttrace: note: " + dir + "/rank-2.ttr.idx: no index"), std::string::npos) << out;
  ASSERT_EQ(Shell(Ttrace() + " dump " + dir + " --rank 2 --seq " + last + " --allow-truncated 2>/dev/null" + seq_lines,
                  &indexed),
            0);
  EXPECT_EQ(indexed, scanned);
}

TEST(Incomplete, FaultBeforeTheKillIsStillAFinding) {
  const std::string dir = KillJob("kill9_fault", "gemm:rank=1:call=5:elem=3:bit=30", 3);
  std::string out;
  EXPECT_EQ(Shell(Ttrace() + " check " + dir, &out), 1) << out;
  EXPECT_NE(out.find("first finding: rank 1 seq "), std::string::npos) << out;
  EXPECT_NE(out.find("rank 2's stream ends at seq "), std::string::npos) << out;
}

// One rank, tp 1, that runs until stopped; `prefix` wraps the command (a signal after a delay, limits).
int RunSingle(const std::string& dir, const std::string& prefix, const std::string& args, std::string* out) {
  const std::string b = BuildDir();
  return Shell("rm -rf " + dir + "; " + prefix + " " + TracedEnv(dir) + b + "/bin/tp_mlp --tp 1 --rdzv " + dir +
                   ".rdzv " + args,
               out);
}

TEST(Incomplete, FullDiskMetaModeAndHeaderOnly) {
  std::string out;
  // A full disk: the stream stops growing at 4 MiB (EFBIG, as ENOSPC would) and the shim stops capturing.
  const std::string full = TempDir() + "/fulldisk";
  EXPECT_EQ(RunSingle(full, "bash -c \"trap '' XFSZ; ulimit -f 4096; exec", "--steps 400\"", &out), 0) << out;
  EXPECT_NE(out.find("capture disabled"), std::string::npos) << out;
  EXPECT_EQ(Shell(Ttrace() + " check " + full, &out), 3) << out;
  EXPECT_NE(out.find("stream ends at seq "), std::string::npos) << out;
  EXPECT_NE(out.find("without an end record"), std::string::npos) << out;

  const std::string meta = TempDir() + "/meta";
  EXPECT_EQ(RunSingle(meta, "TTRACE_MODE=meta", "--steps 2", &out), 0) << out;
  EXPECT_EQ(Shell(Ttrace() + " check " + meta, &out), 3) << out;
  EXPECT_NE(out.find("ops not checked: tensors not captured (TTRACE_MODE=meta)"), std::string::npos) << out;
  EXPECT_NE(out.find("checked:     0 ops"), std::string::npos) << out;

  const std::string clean = TempDir() + "/single_clean";
  EXPECT_EQ(RunSingle(clean, "", "--steps 2", &out), 0) << out;
  EXPECT_EQ(Shell(Ttrace() + " check " + clean, &out), 0) << out;
  EXPECT_NE(out.find("verdict:     CLEAN"), std::string::npos) << out;
  EXPECT_EQ(Shell("truncate -s 128 " + clean + "/pid-*.ttr && " + Ttrace() + " check " + clean, &out), 3) << out;
  EXPECT_NE(out.find("stream ends before its first op, after 0 frames without an end record"), std::string::npos)
      << out;
}

// Exit status of a single rank sent SIGTERM 0.5 s after its stream holds its first frame (the shim and the
// application's handlers are installed, steps are running; a fixed delay from the start raced the shim's
// initialisation on a loaded machine), and how its stream ended.
struct Terminated {
  int status;
  bool ended;
  format::EndRecord end;
};
Terminated Terminate(const std::string& name, const std::string& args) {
  const std::string dir = TempDir() + "/" + name;
  std::string out;
  Terminated t{};
  const std::string term_when_streaming =
      "bash -c '\"$@\" & p=$!; for i in $(seq 600); do [ \"$(cat " + dir +
      "/*.ttr 2>/dev/null | wc -c)\" -gt 128 ] && break; sleep 0.1; done; sleep 0.5; kill -TERM $p; wait $p' _";
  t.status = RunSingle(dir, term_when_streaming, args, &out);
  auto set = analyzer::LoadTraceDir(dir);
  EXPECT_TRUE(set.ok()) << set.status() << "\n" << out;
  if (set.ok() && set->ranks.size() == 1) {
    t.ended = set->ranks[0].ended;
    t.end = set->ranks[0].end;
  }
  return t;
}

TEST(Incomplete, SigtermEndsTheProcessAsItWouldHaveWithoutTheShim) {
  const Terminated dfl = Terminate("term_default", "--steps 1000000");
  EXPECT_EQ(dfl.status, 128 + SIGTERM) << "killed by SIGTERM, as without the shim";
  EXPECT_TRUE(dfl.ended);
  EXPECT_EQ(dfl.end.reason, static_cast<uint32_t>(format::EndReason::kSignal));
  EXPECT_EQ(dfl.end.signal, SIGTERM);

  const Terminated stop = Terminate("term_stop", "--steps 1000000 --on-sigterm stop");
  EXPECT_EQ(stop.status, 0) << "the application's handler ran and it finished its step";
  EXPECT_TRUE(stop.ended);
  EXPECT_EQ(stop.end.reason, static_cast<uint32_t>(format::EndReason::kExit));

  const Terminated exit7 = Terminate("term_exit7", "--steps 1000000 --on-sigterm exit7");
  EXPECT_EQ(exit7.status, 7) << "the application's handler decided";
  EXPECT_FALSE(exit7.ended) << "_exit in a handler: the shim cannot know the stream is complete";

  const Terminated ignored = Terminate("term_ignore", "--steps 150 --on-sigterm ignore");
  EXPECT_EQ(ignored.status, 0) << "an ignored SIGTERM stays ignored";
  EXPECT_TRUE(ignored.ended);
  EXPECT_EQ(ignored.end.reason, static_cast<uint32_t>(format::EndReason::kExit));
}

}  // namespace
}  // namespace ttrace::e2e

// libttrace.so preloaded into real programs (shim_status_probe, shim_workload: built against the CUDA headers,
// linked to the toolkit's shared libraries) running on NVIDIA's libraries (no GPU) and on simgpu.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/trace_model.h"
#include "store/trace_reader.h"
#include "gtest/gtest.h"
#include "shim/comm_registry.h"
#include "shim/testing/dump.h"
#include "shim/testing/process.h"
#include "shim/testing/trace_compare.h"
#include "ttrace/byte_shuffle.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {
namespace {

using format::RecordType;

const std::string kShim = TTRACE_SHIM_LIB;
const std::string kSimgpu = TTRACE_SIMGPU_LIBDIR;
const std::string kCuda = TTRACE_CUDA_LIBDIR;
const std::string kProbe = TTRACE_PROBE;
const std::string kWorkload = TTRACE_WORKLOAD;
const std::string kSimrun = TTRACE_SIMRUN;

using Env = std::map<std::string, std::string>;

Env Preloaded(const std::string& libdir, const std::string& trace_dir, Env extra = {}) {
  extra["LD_LIBRARY_PATH"] = libdir;
  extra["LD_PRELOAD"] = kShim;
  extra["TTRACE_DIR"] = trace_dir;
  return extra;
}

// Compares the call records of a trace with what the program says it did, in order; each communicator handle keeps
// one hash throughout. Returns the first communicator's hash.
uint64_t ExpectSameCalls(const std::vector<DumpEntry>& want, const std::vector<DumpEntry>& got,
                         const std::string& where) {
  uint64_t hash = 0;
  std::map<uint64_t, uint64_t> by_handle;
  auto same_hash = [&](uint64_t handle, uint64_t h, const std::string& at) {
    if (hash == 0) hash = h;
    auto [it, added] = by_handle.emplace(handle, h);
    EXPECT_EQ(h, it->second) << at << ": communicator " << handle << " changed its hash";
  };
  EXPECT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    const std::string at = where + " record " + std::to_string(i);
    if (got[i].type != want[i].type) {
      ADD_FAILURE() << at << ": record type " << static_cast<int>(got[i].type) << ", expected "
                    << static_cast<int>(want[i].type);
      return hash;
    }
    switch (want[i].type) {
      case RecordType::kGemm: {
        auto w = want[i].As<format::GemmRecord>(), g = got[i].As<format::GemmRecord>();
        EXPECT_GT(g.t_ns, 0u) << at;
        w.t_ns = g.t_ns;
        EXPECT_EQ(memcmp(&w, &g, sizeof w), 0)
            << at << ": GEMM record differs (seq " << g.seq << " vs " << w.seq << ", api " << g.api << " vs "
            << w.api << ", m " << g.m << " vs " << w.m << ", lda " << g.lda << " vs " << w.lda << ", flags "
            << g.flags << " vs " << w.flags << ", alpha " << g.alpha << " vs " << w.alpha << ", beta " << g.beta
            << " vs " << w.beta << ", compute " << g.compute_type << " vs " << w.compute_type << ")";
        break;
      }
      case RecordType::kCollective: {
        auto w = want[i].As<format::CollectiveRecord>(), g = got[i].As<format::CollectiveRecord>();
        EXPECT_NE(g.comm_hash, 0u) << at;
        same_hash(g.comm_handle, g.comm_hash, at);
        w.t_ns = g.t_ns;
        w.comm_hash = g.comm_hash;
        EXPECT_EQ(memcmp(&w, &g, sizeof w), 0)
            << at << ": collective record differs (seq " << g.seq << " vs " << w.seq << ", index "
            << g.comm_op_index << " vs " << w.comm_op_index << ", in_group " << int(g.in_group) << " vs "
            << int(w.in_group) << ", count " << g.count << " vs " << w.count << ")";
        break;
      }
      case RecordType::kCommInit: {
        const auto w = want[i].As<format::CommInitRecord>(), g = got[i].As<format::CommInitRecord>();
        EXPECT_EQ(g.api, w.api) << at;
        EXPECT_EQ(g.status, w.status) << at;
        EXPECT_EQ(g.comm_handle, w.comm_handle) << at;
        EXPECT_EQ(g.comm_rank, w.comm_rank) << at;
        EXPECT_EQ(g.comm_size, w.comm_size) << at;
        EXPECT_EQ(g.cuda_device, w.cuda_device) << at;
        same_hash(g.comm_handle, g.comm_hash, at);
        break;
      }
      case RecordType::kCommDestroy: {
        const auto w = want[i].As<format::CommDestroyRecord>(), g = got[i].As<format::CommDestroyRecord>();
        EXPECT_EQ(g.api, w.api) << at;
        EXPECT_EQ(g.status, w.status) << at;
        EXPECT_EQ(g.comm_handle, w.comm_handle) << at;
        same_hash(g.comm_handle, g.comm_hash, at);
        break;
      }
      case RecordType::kGroup: {
        const auto w = want[i].As<format::GroupRecord>(), g = got[i].As<format::GroupRecord>();
        EXPECT_EQ(g.api, w.api) << at;
        EXPECT_EQ(g.status, w.status) << at;
        EXPECT_EQ(g.depth, w.depth) << at;
        break;
      }
      default:
        ADD_FAILURE() << at << ": unexpected record type " << static_cast<int>(want[i].type);
    }
  }
  return hash;
}

// ---- status pass-through ----------------------------------------------------------------------------------------

// "call=status" lines of the probe for the op calls (GEMMs, cuDNN convolutions, all-reduces), in call order.
std::vector<int> OpStatuses(const std::string& probe_out) {
  std::vector<int> out;
  std::istringstream in(probe_out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cublas", 0) == 0 && line.find("gemm") == std::string::npos &&
        line.find("Gemm") == std::string::npos)
      continue;
    if (line.rfind("cublas", 0) != 0 && line.rfind("ncclAllReduce", 0) != 0 &&
        line.rfind("cudnnConvolution", 0) != 0 && line.rfind("cudnnBackendExecute", 0) != 0 &&
        line.find("CudaGraph.") == std::string::npos)
      continue;
    out.push_back(std::stoi(line.substr(line.find('=') + 1)));
  }
  return out;
}

void CheckProbe(const std::string& libdir, const std::string& what, size_t ops) {
  ScratchDir dir;
  const RunResult plain = RunProgram({kProbe}, {{"LD_LIBRARY_PATH", libdir}});
  const RunResult shimmed = RunProgram({kProbe}, Preloaded(libdir, dir.path()));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(shimmed.exit_code, 0) << shimmed.err;
  // 14 GEMM, 4 pointer-array GEMM (and 2 complex ones where the library has them), 6 convolution, 2 cuDNN graph
  // execution, 4 cuDNN native CUDA graph (populate, update) and 5 all-reduce calls
  EXPECT_EQ(OpStatuses(plain.out).size(), ops) << plain.out;
  EXPECT_EQ(shimmed.out, plain.out) << what << ": statuses differ with the shim";
  // The trace records the same statuses the application saw, one op record per GEMM / all-reduce call.
  const std::vector<std::string> files = ListStreams(dir.path());
  ASSERT_EQ(files.size(), 1u) << shimmed.err;
  std::vector<int> recorded;
  for (const DumpEntry& e : ReadTrace(dir / files[0])) {
    if (e.type == RecordType::kGemm) recorded.push_back(e.As<format::GemmRecord>().status);
    if (e.type == RecordType::kCollective) recorded.push_back(e.As<format::CollectiveRecord>().status);
    if (e.type == RecordType::kConv) recorded.push_back(e.As<format::ConvRecord>().status);
    if (e.type == RecordType::kBackendGraph) recorded.push_back(e.As<format::BackendGraphRecord>().status);
  }
  EXPECT_EQ(recorded, OpStatuses(plain.out)) << what;
}

// Host-pointer alpha/beta are read in the type the compute type implies (half for CUBLAS_COMPUTE_16F).
TEST(ShimIntegrationTest, ScalarsReadInComputeType) {
  ScratchDir dir;
  const RunResult r = RunProgram({kProbe}, Preloaded(kSimgpu, dir.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = ListStreams(dir.path());
  ASSERT_EQ(files.size(), 1u);
  int half_calls = 0;
  for (const DumpEntry& e : ReadTrace(dir / files[0])) {
    if (e.type != RecordType::kGemm) continue;
    const auto g = e.As<format::GemmRecord>();
    if (g.compute_type != 64 /* CUBLAS_COMPUTE_16F */) continue;
    ++half_calls;
    EXPECT_EQ(g.flags & format::kScalarsUnknown, 0u);
    EXPECT_EQ(g.alpha, 0.75);
    EXPECT_EQ(g.beta, 0.25);
  }
  EXPECT_EQ(half_calls, 1);
}

TEST(ShimIntegrationTest, StatusesPassThroughNvidiaLibraries) { CheckProbe(kCuda, "NVIDIA libraries", 37); }

TEST(ShimIntegrationTest, StatusesPassThroughSimgpuInvalidArguments) {
  CheckProbe(kSimgpu, "simgpu", 35);
  const RunResult plain = RunProgram({kProbe}, {{"LD_LIBRARY_PATH", kSimgpu}});
  // The probe's invalid calls really are rejected by simgpu (else this test would prove little).
  EXPECT_NE(plain.out.find("cublasSgemm_v2.negative_m=7\n"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("ncclAllReduce.null_comm=4\n"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("ncclAllReduce.valid=0\n"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("cudnnConvolutionForward.valid=0\n"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("cudnnConvolutionForward.bad_output_shape=2000\n"), std::string::npos) << plain.out;
}

TEST(ShimIntegrationTest, UnwritableTraceDirDisablesCaptureOnly) {
  const RunResult plain = RunProgram({kProbe}, {{"LD_LIBRARY_PATH", kSimgpu}});
  const RunResult shimmed = RunProgram({kProbe}, Preloaded(kSimgpu, "/dev/null/cannot-exist"));
  ASSERT_EQ(shimmed.exit_code, 0) << shimmed.err;
  EXPECT_EQ(shimmed.out, plain.out);
  EXPECT_NE(shimmed.err.find("capture disabled: cannot create the trace stream"), std::string::npos) << shimmed.err;
  EXPECT_EQ(shimmed.err.find("capture disabled", shimmed.err.find("capture disabled") + 1), std::string::npos)
      << "said more than once: " << shimmed.err;
}

// ---- the workload -----------------------------------------------------------------------------------------------

struct WorkloadRun {
  RunResult result;
  std::vector<std::vector<DumpEntry>> dumps;  // per rank
};

WorkloadRun RunWorkload(const ScratchDir& scratch, const std::string& tag, int ranks, Env env,
                        std::vector<std::string> args = {}) {
  const std::string rdzv = scratch / ("rdzv-" + tag);
  mkdir(rdzv.c_str(), 0755);
  std::vector<std::string> argv = {kSimrun, "-n", std::to_string(ranks), "--", "/bin/sh", "-c",
                                   kWorkload + " --rdzv " + rdzv + " --dump " + scratch.path() + "/" + tag +
                                       "-$RANK.dump \"$@\"",
                                   "sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (env.count("LD_LIBRARY_PATH") == 0) env["LD_LIBRARY_PATH"] = kSimgpu;
  WorkloadRun run;
  run.result = RunProgram(argv, env);
  for (int r = 0; r < ranks; ++r) {
    run.dumps.emplace_back();
    EXPECT_TRUE(ReadDump(scratch / (tag + "-" + std::to_string(r) + ".dump"), &run.dumps.back())) << tag << r;
  }
  return run;
}

TEST(ShimIntegrationTest, MultiRankTraceMatchesWhatTheProgramDid) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  const WorkloadRun plain = RunWorkload(scratch, "plain", 3, {}, {"--iters", "2"});
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  const WorkloadRun traced =
      RunWorkload(scratch, "traced", 3, Preloaded(kSimgpu, traces), {"--iters", "2", "--fork"});
  ASSERT_EQ(traced.result.exit_code, 0) << traced.result.err;
  EXPECT_EQ(traced.result.err.find("ttrace"), std::string::npos) << "the shim complained:\n" << traced.result.err;

  // The forked child recorded nothing and opened no stream of its own.
  EXPECT_EQ(ListStreams(traces), (std::vector<std::string>{"rank-0.ttr", "rank-1.ttr", "rank-2.ttr"}));
  const std::string id = ReadFile(scratch / "rdzv-traced/nccl-id");
  ASSERT_EQ(id.size(), 128u);
  const uint64_t id_hash = Fnv1a64(id.data(), id.size());
  for (int r = 0; r < 3; ++r) {
    const std::string where = "rank " + std::to_string(r);
    // Same program, same data: every tensor the program saw is bitwise the same with the shim.
    const auto want_plain = TensorsByKey(plain.dumps[r]);
    const auto want = TensorsByKey(traced.dumps[r]);
    ASSERT_EQ(want.size(), 52u) << where;  // 2 iterations x (18 GEMM operands, 2 device scalars, 6 buffers)
    ASSERT_EQ(want_plain.size(), want.size()) << where;
    for (const auto& [key, entry] : want)
      EXPECT_TRUE(want_plain.at(key).payload == entry.payload)
          << where << " seq " << key.first << " slot " << int(key.second) << ": results differ with the shim";

    format::FileHeader header;
    const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-" + std::to_string(r) + ".ttr", &header);
    EXPECT_EQ(header.rank, r);
    EXPECT_EQ(header.world_size, 3);
    EXPECT_TRUE(Notices(trace).empty()) << where;
    const uint64_t hash = ExpectSameCalls(Select(traced.dumps[r], false), Select(trace, false), where);
    EXPECT_EQ(hash, id_hash) << where << ": comm hash is not FNV-1a of the unique id";
    const auto got = TensorsByKey(trace);
    EXPECT_EQ(got.size(), want.size()) << where;
    for (const auto& [key, entry] : want) {
      const std::string at = where + " seq " + std::to_string(key.first) + " slot " + std::to_string(key.second);
      auto it = got.find(key);
      if (it == got.end()) {
        ADD_FAILURE() << at << ": not captured";
        continue;
      }
      ExpectSameTensor(entry, it->second, at);
    }
  }
}

// Every collective and point-to-point call (workload --collectives: out of place and in place, inside and outside
// groups, a split communicator) on 3 ranks: the trace holds exactly the calls and the buffer contents the program
// saw, only the buffers NCCL uses on each rank; children of one split agree on their identity; `ttrace check` is
// clean; and simgpu's collective faults (a swapped all-gather chunk, a reduce-scatter missing a contribution, a
// broadcast with a stuck element and one returning a stale result) are found at their (rank, seq), by name.
TEST(ShimIntegrationTest, EveryCollectiveIsTracedAndChecked) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  const WorkloadRun plain = RunWorkload(scratch, "plain", 3, {}, {"--collectives"});
  ASSERT_EQ(plain.result.exit_code, 0) << plain.result.err;
  const WorkloadRun traced = RunWorkload(scratch, "traced", 3, Preloaded(kSimgpu, traces), {"--collectives"});
  ASSERT_EQ(traced.result.exit_code, 0) << traced.result.err;
  EXPECT_EQ(traced.result.err.find("ttrace"), std::string::npos) << "the shim complained:\n" << traced.result.err;
  std::vector<uint64_t> child_hash;
  for (int r = 0; r < 3; ++r) {
    const std::string where = "rank " + std::to_string(r);
    const auto want = TensorsByKey(traced.dumps[r]), want_plain = TensorsByKey(plain.dumps[r]);
    ASSERT_EQ(want.size(), want_plain.size()) << where;
    for (const auto& [key, entry] : want)
      EXPECT_TRUE(want_plain.at(key).payload == entry.payload)
          << where << " seq " << key.first << " slot " << int(key.second) << ": results differ with the shim";
    const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-" + std::to_string(r) + ".ttr");
    EXPECT_TRUE(Notices(trace).empty()) << where;
    ExpectSameCalls(Select(traced.dumps[r], false), Select(trace, false), where);
    ExpectSameTensors(want, TensorsByKey(trace));
    for (const DumpEntry& e : trace)
      if (e.type == RecordType::kCommInit &&
          e.As<format::CommInitRecord>().api == static_cast<uint16_t>(format::ApiId::kNcclCommSplit))
        child_hash.push_back(e.As<format::CommInitRecord>().comm_hash);
  }
  ASSERT_EQ(child_hash.size(), 3u);
  EXPECT_EQ(child_hash[0], child_hash[2]) << "ranks 0 and 2 share color 0";
  EXPECT_NE(child_hash[0], child_hash[1]);

  auto check = [](const std::string& dir) {
    auto set = analyzer::LoadTraceDir(dir);
    EXPECT_TRUE(set.ok()) << set.status();
    return set.ok() ? analyzer::RunChecks(*set) : analyzer::CheckReport();
  };
  const analyzer::CheckReport clean = check(traces);
  EXPECT_EQ(clean.verdict(), analyzer::Verdict::kClean)
      << (clean.no_findings() ? "" : clean.findings()[0].check + ": " + clean.findings()[0].message);
  const std::map<std::string, uint64_t> kinds = {{"allgather", 12}, {"allreduce", 6},  {"alltoall", 3},
                                                 {"broadcast", 9},  {"gather", 3},     {"reduce", 6},
                                                 {"reducescatter", 9}, {"scatter", 3}, {"sendrecv", 12}};
  EXPECT_EQ(clean.summary().checked, kinds);

  const std::string faults = scratch / "faults";
  const WorkloadRun faulted = RunWorkload(
      scratch, "faulted", 3,
      Preloaded(kSimgpu, faults,
                {{"SIMGPU_FAULT", "coll:rank=1:call=0:swap=0,1;coll:rank=2:call=2:drop=0;"
                                  "coll:rank=0:call=4:elem=3:value=100;coll:rank=2:call=4:stale"}}),
      {"--collectives"});
  ASSERT_EQ(faulted.result.exit_code, 0) << faulted.result.err;
  const analyzer::CheckReport found = check(faults);
  std::set<std::tuple<std::string, int, uint64_t>> got;
  for (const analyzer::Finding& f : found.findings()) got.insert({f.check, f.rank, f.seq});
  const std::set<std::tuple<std::string, int, uint64_t>> want = {{"allgather.exact", 1, 0},
                                                                 {"reducescatter.bound", 2, 2},
                                                                 {"broadcast.exact", 0, 4},
                                                                 {"broadcast.exact", 2, 4}};
  EXPECT_EQ(got, want);
  for (const analyzer::Finding& f : found.findings())
    if (f.rank == 0) EXPECT_EQ(f.first.index, 3u) << f.message;
}

TEST(ShimIntegrationTest, CommInitAllInOneProcess) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  const RunResult r = RunProgram({kWorkload, "--init-all", "3", "--dump", scratch / "initall.dump"},
                          Preloaded(kSimgpu, traces, {{"RANK", "0"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<DumpEntry> dump;
  ASSERT_TRUE(ReadDump(scratch / "initall.dump", &dump));
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-0.ttr");
  const uint64_t hash = ExpectSameCalls(Select(dump, false), Select(trace, false), "init-all");
  EXPECT_NE(hash, 0u);
  const auto want = TensorsByKey(dump), got = TensorsByKey(trace);
  ASSERT_EQ(want.size(), 6u);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, entry] : want) ExpectSameTensor(entry, got.at(key), "seq " + std::to_string(key.first));
}

// ---- capture modes and limits -----------------------------------------------------------------------------------

std::vector<DumpEntry> RunSingle(const ScratchDir& scratch, const std::string& tag, const Env& env,
                                 const std::vector<std::string>& extra, RunResult* result) {
  const std::string rdzv = scratch / ("rdzv-" + tag);
  mkdir(rdzv.c_str(), 0755);
  std::vector<std::string> argv = {kWorkload, "--rdzv", rdzv, "--dump", scratch / (tag + ".dump")};
  argv.insert(argv.end(), extra.begin(), extra.end());
  *result = RunProgram(argv, env);
  std::vector<DumpEntry> dump;
  EXPECT_TRUE(ReadDump(scratch / (tag + ".dump"), &dump)) << tag;
  return dump;
}

// ncclCommDestroy flushes: a process killed right after it (no exit handlers) leaves a complete stream, although
// the periodic flush would not have run yet. (One rank: a launcher would stop the other ranks at the first kill.)
TEST(ShimIntegrationTest, CommDestroyFlushesBeforeAKill) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult r;
  const std::vector<DumpEntry> dump =
      RunSingle(scratch, "killed", Preloaded(kSimgpu, traces, {{"TTRACE_FLUSH_MS", "600000"}, {"RANK", "0"}}),
                {"--kill-after-destroy"}, &r);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
  ASSERT_EQ(ListStreams(traces), (std::vector<std::string>{"rank-0.ttr"}));
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-0.ttr");
  ExpectSameCalls(Select(dump, false), Select(trace, false), "killed");
  EXPECT_EQ(TensorsByKey(trace).size(), TensorsByKey(dump).size());
}

// A non-blocking communicator: the all-reduce and the group end answer ncclInProgress and the program polls
// ncclCommGetAsyncError. Every output snapshot is taken once NCCL reports the work enqueued, so the trace holds
// exactly the data the program downloaded, with no notice.
TEST(ShimIntegrationTest, NonBlockingCommunicatorOutputsAreCapturedOnceEnqueued) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult r;
  const std::vector<DumpEntry> dump = RunSingle(
      scratch, "nonblocking", Preloaded(kSimgpu, traces, {{"RANK", "0"}, {"SIMGPU_NCCL_ASYNC_DELAY_MS", "20"}}),
      {"--nonblocking", "--iters", "2"}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(ListStreams(traces), (std::vector<std::string>{"rank-0.ttr"}));
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-0.ttr");
  ExpectSameCalls(Select(dump, false), Select(trace, false), "nonblocking");
  ExpectSameTensors(TensorsByKey(dump), TensorsByKey(trace));
  EXPECT_EQ(Notices(trace).size(), 0u);
}

// A non-blocking all-reduce whose communicator is aborted before NCCL reports it enqueued: its input is in the
// trace, its output snapshot is dropped with one notice naming ncclCommAbort, and the abort is recorded.
TEST(ShimIntegrationTest, AbortDropsPendingNonBlockingOutputsWithANotice) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult r;
  const std::vector<DumpEntry> dump = RunSingle(
      scratch, "abort", Preloaded(kSimgpu, traces, {{"RANK", "0"}, {"SIMGPU_NCCL_ASYNC_DELAY_MS", "200"}}),
      {"--abort-pending"}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-0.ttr");
  ExpectSameCalls(Select(dump, false), Select(trace, false), "abort");
  ExpectSameTensors(TensorsByKey(dump), TensorsByKey(trace));
  const std::vector<DumpEntry> notices = Notices(trace);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].As<format::NoticeRecord>().seq, 8u);
  EXPECT_NE(notices[0].payload.find("ncclCommAbort"), std::string::npos) << notices[0].payload;
}

// cublas{D,H}gemm, cublas{S,D,H}gemmStridedBatched, their _64 forms, cublasGemmEx_64 and
// cublasGemmStridedBatchedEx_64: recorded as the program called them, every operand captured, and every one
// checked clean by the analyzer (each resolves to an error model).
TEST(ShimIntegrationTest, TypedAnd64BitGemmEntryPointsAreTracedAndChecked) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult r;
  const std::vector<DumpEntry> dump =
      RunSingle(scratch, "typed", Preloaded(kSimgpu, traces, {{"RANK", "0"}}), {"--typed-gemms"}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-0.ttr");
  ExpectSameCalls(Select(dump, false), Select(trace, false), "typed");
  ExpectSameTensors(TensorsByKey(dump), TensorsByKey(trace));
  auto set = analyzer::LoadTraceDir(traces);
  ASSERT_TRUE(set.ok()) << set.status();
  const analyzer::CheckReport report = analyzer::RunChecks(*set);
  ASSERT_TRUE(report.no_findings()) << report.findings()[0].message;
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
  // The loop's 5 GEMMs (7 with its alpha and beta read from the device) and the 12 typed ones.
  EXPECT_EQ(report.summary().checked.at("gemm"), 5u + 12u);
  EXPECT_EQ(report.summary().not_checked_total(), 0u);

  // A flipped exponent bit in the output of the cublasHgemmStridedBatched call (GEMM call 13: 5 in the loop, then
  // the typed ones in order) is found at its op (seq 16) and element.
  const std::string faulty = scratch / "faulty";
  RunSingle(scratch, "typed-fault",
            Preloaded(kSimgpu, faulty, {{"RANK", "0"}, {"SIMGPU_FAULT", "gemm:rank=0:call=13:elem=7:bit=14"}}),
            {"--typed-gemms"}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto bad = analyzer::LoadTraceDir(faulty);
  ASSERT_TRUE(bad.ok()) << bad.status();
  const analyzer::CheckReport found = analyzer::RunChecks(*bad);
  ASSERT_EQ(found.findings().size(), 1u);
  EXPECT_EQ(found.findings()[0].seq, 16u);
  EXPECT_EQ(found.findings()[0].api, "cublasHgemmStridedBatched");
  EXPECT_EQ(found.findings()[0].first.index, 7u);
}

// A process whose stream never finishes (blocked for 10 minutes) returns from main with a GEMM queued behind it:
// the shim waits TTRACE_EXIT_WAIT_MS for that GEMM's copies, drops their payloads with notices and lets the
// process exit; everything before is in the trace.
TEST(ShimIntegrationTest, ExitIsNotHeldByAHungStream) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult r;
  const std::vector<DumpEntry> dump =
      RunSingle(scratch, "hung", Preloaded(kSimgpu, traces, {{"TTRACE_EXIT_WAIT_MS", "500"}, {"RANK", "0"}}),
                {"--hang-at-exit"}, &r);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(r.seconds, 60.0);
  ASSERT_EQ(ListStreams(traces), (std::vector<std::string>{"rank-0.ttr"}));
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/rank-0.ttr");
  std::vector<DumpEntry> calls = Select(trace, false);
  ASSERT_FALSE(calls.empty());
  calls.pop_back();  // the GEMM queued behind the hang, which the program does not dump
  ExpectSameCalls(Select(dump, false), calls, "hung");
  uint64_t last = 0;
  for (const DumpEntry& e : trace)
    if (e.type == RecordType::kGemm) last = std::max(last, e.As<format::GemmRecord>().seq);
  EXPECT_EQ(TensorsByKey(trace).size(), TensorsByKey(dump).size()) << "every payload before the hang";
  const std::vector<DumpEntry> notices = Notices(trace);
  ASSERT_GE(notices.size(), 2u) << "A and B of the last GEMM at least";
  for (const DumpEntry& n : notices) {
    EXPECT_EQ(n.As<format::NoticeRecord>().seq, last);
    EXPECT_NE(n.payload.find("TTRACE_EXIT_WAIT_MS"), std::string::npos) << n.payload;
  }
}

TEST(ShimIntegrationTest, TinyBufferDropsPayloadsWithNoticesAndKeepsResults) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  const std::vector<std::string> big = {"--scale", "20"};  // some operands exceed 1 MiB
  RunResult plain, traced;
  const auto want_plain = TensorsByKey(RunSingle(scratch, "plain", {{"LD_LIBRARY_PATH", kSimgpu}}, big, &plain));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const std::vector<DumpEntry> dump =
      RunSingle(scratch, "tiny", Preloaded(kSimgpu, traces, {{"TTRACE_BUFFER_MB", "1"}}), big, &traced);
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  const auto want = TensorsByKey(dump);
  for (const auto& [key, entry] : want) EXPECT_TRUE(want_plain.at(key).payload == entry.payload);

  const std::vector<std::string> files = ListStreams(traces);
  ASSERT_EQ(files.size(), 1u);
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/" + files[0]);
  ExpectSameCalls(Select(dump, false), Select(trace, false), "tiny buffer");
  const auto got = TensorsByKey(trace);
  for (const auto& [key, entry] : got) ExpectSameTensor(want.at(key), entry, "seq " + std::to_string(key.first));
  std::set<uint64_t> missing_seqs;
  for (const auto& [key, entry] : want)
    if (got.count(key) == 0) missing_seqs.insert(key.first);
  const std::vector<DumpEntry> notices = Notices(trace);
  EXPECT_GT(notices.size(), 0u);
  EXPECT_EQ(notices.size(), want.size() - got.size()) << "one notice per dropped payload";
  uint64_t last_count = 0;
  for (const DumpEntry& n : notices) {
    const auto rec = n.As<format::NoticeRecord>();
    EXPECT_EQ(rec.code, static_cast<uint32_t>(format::NoticeCode::kPayloadDropped));
    EXPECT_EQ(missing_seqs.count(rec.seq), 1u) << "notice for seq " << rec.seq << " which lost nothing";
    EXPECT_EQ(rec.count, last_count + 1);
    last_count = rec.count;
  }
  const size_t first = traced.err.find("dropping tensor payloads");
  EXPECT_NE(first, std::string::npos) << traced.err;
  EXPECT_EQ(traced.err.find("dropping tensor payloads", first + 1), std::string::npos) << "said more than once";
}

TEST(ShimIntegrationTest, MetaModeRecordsCallsWithoutTensors) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult r;
  const std::vector<DumpEntry> dump = RunSingle(scratch, "meta", Preloaded(kSimgpu, traces, {{"TTRACE_MODE", "meta"}}),
                                                {}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = ListStreams(traces);
  ASSERT_EQ(files.size(), 1u);
  const std::vector<DumpEntry> trace = ReadTrace(traces + "/" + files[0]);
  ExpectSameCalls(Select(dump, false), Select(trace, false), "meta");
  EXPECT_TRUE(Select(trace, true).empty());
  EXPECT_TRUE(Notices(trace).empty());
}

TEST(ShimIntegrationTest, DisabledWritesNothingAndChangesNothing) {
  ScratchDir scratch;
  const std::string traces = scratch / "traces";
  RunResult plain, disabled;
  const auto want = TensorsByKey(RunSingle(scratch, "plain", {{"LD_LIBRARY_PATH", kSimgpu}}, {}, &plain));
  const auto got =
      TensorsByKey(RunSingle(scratch, "off", Preloaded(kSimgpu, traces, {{"TTRACE_DISABLE", "1"}}), {}, &disabled));
  ASSERT_EQ(disabled.exit_code, 0) << disabled.err;
  EXPECT_TRUE(disabled.err.empty()) << disabled.err;
  EXPECT_TRUE(ListStreams(traces).empty());
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [key, entry] : want) EXPECT_TRUE(got.at(key).payload == entry.payload);
}

// TTRACE_OPS: only the selected calls are recorded, numbered 0, 1, ... among themselves, with their operands; the
// others pass straight through (the program's data is unchanged either way). The one-rank workload makes five GEMMs
// (two of them cublasGemmEx) and three all-reduces per iteration.
TEST(ShimIntegrationTest, OpsFilterRecordsOnlyTheSelectedCalls) {
  ScratchDir scratch;
  RunResult plain;
  const auto want = TensorsByKey(RunSingle(scratch, "plain", {{"LD_LIBRARY_PATH", kSimgpu}}, {}, &plain));
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  struct Case {
    std::string filter;
    size_t ops;
    bool gemm_ex_only;  // else: collectives only
  };
  for (const Case& c : {Case{"nccl", 3, false}, Case{"cublasGemmEx", 2, true}}) {
    const std::string traces = scratch / ("traces-" + c.filter);
    RunResult r;
    const auto got =
        TensorsByKey(RunSingle(scratch, c.filter, Preloaded(kSimgpu, traces, {{"TTRACE_OPS", c.filter}}), {}, &r));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [key, entry] : want) EXPECT_TRUE(got.at(key).payload == entry.payload) << c.filter;
    auto set = analyzer::LoadTraceDir(traces);
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_EQ(set->ranks.size(), 1u);
    const analyzer::RankTrace& rank = set->ranks[0];
    ASSERT_EQ(rank.ops.size(), c.ops) << c.filter;
    for (size_t i = 0; i < rank.ops.size(); ++i) {
      const analyzer::Op& op = rank.ops[i];
      EXPECT_EQ(op.seq, i) << c.filter;
      if (c.gemm_ex_only) {
        EXPECT_EQ(op.api, static_cast<uint16_t>(format::ApiId::kCublasGemmEx)) << c.filter;
        EXPECT_NE(op.tensor(format::TensorSlot::kCOut), nullptr) << c.filter << ": operands still captured";
      } else {
        EXPECT_EQ(op.kind, analyzer::OpKind::kCollective) << c.filter << " seq " << i << " " << op.api_name();
      }
    }
    EXPECT_EQ(rank.comm_inits.empty(), c.gemm_ex_only) << c.filter << ": communicators follow NCCL's ops";
    const analyzer::CheckReport report = analyzer::RunChecks(*set);
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << c.filter;
  }
}

}  // namespace
}  // namespace ttrace::shim::testing

// Pointer-array batched GEMMs under libttrace.so on simgpu (batched_workload): every batch of every operand captured
// equals the program's data, the checks are clean under several SIMGPU_ACCUM orders (also through FP32 slices, for
// the BF16 GEMM of k = 2048), a gemm fault in one batch is
// found at that op and batch, the program's results are bitwise the same without the shim; arrays in device memory
// and arrays the stream rewrites after the call are recorded and counted as not checked, with the reason.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "shim/testing/operands.h"
#include "shim/testing/process.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {
namespace {

using analyzer::OpKind;
using format::ApiId;
using format::TensorSlot;

struct Traced {
  RunResult result;
  std::string dump;
  std::vector<Operand> operands;
  analyzer::TraceSet trace;
};

Traced RunWorkload(const ScratchDir& scratch, const std::string& tag, std::map<std::string, std::string> env,
                   bool host_arrays_only, bool shim = true) {
  Traced run;
  const std::string dir = scratch / tag;
  env["LD_LIBRARY_PATH"] = TTRACE_SIMGPU_LIBDIR;
  if (shim) {
    env["LD_PRELOAD"] = TTRACE_SHIM_LIB;
    env["TTRACE_DIR"] = dir;
    env["TTRACE_MODE"] = "full";
  }
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  std::vector<std::string> argv = {TTRACE_BATCHED_WORKLOAD, "--dump", scratch / (tag + ".dump")};
  if (host_arrays_only) argv.push_back("--host-arrays-only");
  if (env.count("SIMGPU_FAULT")) argv.push_back("--no-verify");
  run.result = RunProgram(argv, env);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  run.dump = ReadFile(scratch / (tag + ".dump"));
  run.operands = ReadOperands(scratch / (tag + ".dump"));
  if (!shim) return run;
  absl::StatusOr<analyzer::TraceSet> set = analyzer::LoadTraceDir(dir);
  EXPECT_TRUE(set.ok()) << set.status();
  if (set.ok()) run.trace = std::move(*set);
  return run;
}

TEST(BatchedCaptureTest, EveryBatchCapturedCheckedAndTheRestNotCheckedWithItsReason) {
  ScratchDir scratch;
  const Traced run = RunWorkload(scratch, "all", {}, /*host_arrays_only=*/false);
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 6u);
  const ApiId apis[] = {ApiId::kCublasSgemmBatched, ApiId::kCublasGemmBatchedEx, ApiId::kCublasHgemmBatched64,
                        ApiId::kCublasDgemmBatched, ApiId::kCublasGemmBatchedEx, ApiId::kCublasSgemmBatched};
  const int64_t batches[] = {3, 4, 2, 2, 2, 2};
  for (int i = 0; i < 6; ++i) {
    ASSERT_EQ(ops[i].kind, OpKind::kGemm);
    EXPECT_EQ(ops[i].api, static_cast<uint16_t>(apis[i])) << i;
    EXPECT_EQ(ops[i].gemm.status, 0);
    EXPECT_EQ(ops[i].gemm.batch_count, batches[i]);
    EXPECT_NE(ops[i].gemm.flags & format::kPointerArrays, 0u) << i;
    EXPECT_NE(ops[i].gemm.a_ptr, 0u);
    EXPECT_EQ(ops[i].gemm.stride_a, 0);
  }
  EXPECT_EQ(ops[0].gemm.lda, 7);
  EXPECT_EQ(ops[0].gemm.beta, 0.5);
  EXPECT_EQ(ops[2].gemm.transa, 1);
  // 4 operands of seq 0 (beta != 0), 3 of seqs 1-3.
  ASSERT_EQ(run.operands.size(), 13u);
  for (const Operand& o : run.operands) {
    const analyzer::Tensor* t = ops[o.seq].tensor(static_cast<TensorSlot>(o.slot));
    ASSERT_NE(t, nullptr) << "seq " << o.seq << " slot " << int(o.slot);
    EXPECT_EQ(t->meta.batch, batches[o.seq]);
    EXPECT_EQ(t->data, o.bytes) << "seq " << o.seq << " slot " << int(o.slot);
  }
  for (int i : {4, 5}) {
    for (TensorSlot s : {TensorSlot::kA, TensorSlot::kB, TensorSlot::kCOut})
      EXPECT_EQ(ops[i].tensor(s), nullptr) << "seq " << i << ": nothing of it may be captured";
  }
  EXPECT_NE(ops[4].missing_tensors.find("device memory"), std::string::npos) << ops[4].missing_tensors;
  EXPECT_NE(ops[5].missing_tensors.find("pointer array changed"), std::string::npos) << ops[5].missing_tensors;

  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_TRUE(report.findings().empty());
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kIncomplete);
  EXPECT_EQ(report.summary().checked.at("gemm"), 4u);
  EXPECT_EQ(report.summary().not_checked_total(), 2u);
  for (const auto& [reason, count] : report.summary().not_checked) printf("not checked (%llu): %s\n",
                                                                          static_cast<unsigned long long>(count),
                                                                          reason.c_str());
}

TEST(BatchedCaptureTest, CleanUnderAccumulationOrdersAndBitwiseTheSameWithoutTheShim) {
  ScratchDir scratch;
  const Traced plain = RunWorkload(scratch, "plain", {}, /*host_arrays_only=*/false, /*shim=*/false);
  const Traced traced = RunWorkload(scratch, "traced", {}, false);
  ASSERT_FALSE(plain.dump.empty());
  EXPECT_EQ(traced.dump, plain.dump) << "every operand and result, byte for byte";
  for (const char* order : {"sequential", "pairwise", "splitk:3", "random:11", "blocked:8"}) {
    const Traced run = RunWorkload(scratch, std::string("o") + order[0] + order[1], {{"SIMGPU_ACCUM", order}},
                                   /*host_arrays_only=*/true);
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << order;
    EXPECT_EQ(report.summary().checked.at("gemm"), 4u) << order;
    // The same trace through FP32 slices (auto uses them above 2^30 multiply-adds): the BF16 GEMM of k = 2048 and
    // the FP16 one, clean under every order, with full replay's tightness.
    // With P = |A|·|B| computed in every panel the tightness is full replay's; bounded only (where its bounds
    // decide, the default), the decided elements are reported at P's lower end: at least full replay's, at most 1.
    for (analyzer::Fp32P p : {analyzer::Fp32P::kAlways, analyzer::Fp32P::kNever}) {
      analyzer::CheckOptions slices;
      slices.gemm.method = analyzer::GemmMethod::kFullFp32;
      slices.gemm.fp32_p = p;
      const analyzer::CheckReport fp32 = analyzer::RunChecks(run.trace, {}, slices);
      EXPECT_EQ(fp32.verdict(), analyzer::Verdict::kClean) << order;
      EXPECT_EQ(fp32.summary().gemm_methods.count("full-fp32"), 1u) << order;
      EXPECT_EQ(fp32.summary().gemm_methods.at("full-fp32").ops, 2u) << order;
      if (p == analyzer::Fp32P::kAlways) {
        EXPECT_NEAR(fp32.summary().overall.max_ratio, report.summary().overall.max_ratio,
                    1e-3 * report.summary().overall.max_ratio) << order;
      } else {
        EXPECT_GE(fp32.summary().overall.max_ratio, report.summary().overall.max_ratio * (1 - 1e-9)) << order;
        EXPECT_LE(fp32.summary().overall.max_ratio, 1) << order;
      }
    }
    const auto& tight = report.summary().tightness;
    if (tight.count("gemm"))
      printf("SIMGPU_ACCUM=%s: gemm tightness %.3f at seq %llu\n", order, tight.at("gemm").max_ratio,
             static_cast<unsigned long long>(tight.at("gemm").op.seq));
  }
}

TEST(BatchedCaptureTest, FaultInOneBatchFoundAtItsOpAndBatch) {
  ScratchDir scratch;
  struct Fault {
    int call;
    int64_t batch, elem_in_batch, mn;
    int bit;
  };
  // gemm calls in order: 0 FP32 (5x4), 1 BF16 (16x8), 2 FP16 (8x8), 3 FP64 (4x4); the exponent's top bit.
  for (const Fault f : {Fault{0, 2, 7, 20, 30}, Fault{1, 3, 77, 128, 14}, Fault{2, 1, 5, 64, 14},
                        Fault{3, 1, 9, 16, 62}}) {
    const int64_t elem = f.batch * f.mn + f.elem_in_batch;
    const Traced run = RunWorkload(scratch, "fault" + std::to_string(f.call),
                                   {{"SIMGPU_FAULT", "gemm:rank=0:call=" + std::to_string(f.call) +
                                                         ":elem=" + std::to_string(elem) + ":bit=" +
                                                         std::to_string(f.bit)}},
                                   /*host_arrays_only=*/true);
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    ASSERT_EQ(report.findings().size(), 1u) << "call " << f.call;
    const analyzer::Finding& x = report.findings()[0];
    EXPECT_EQ(x.check, "gemm.replay");
    EXPECT_EQ(x.seq, static_cast<uint64_t>(f.call));
    EXPECT_EQ(x.first.batch, f.batch);
    EXPECT_EQ(x.first.index, static_cast<uint64_t>(elem));
    EXPECT_EQ(x.violations, 1u);
  }
}

}  // namespace
}  // namespace ttrace::shim::testing

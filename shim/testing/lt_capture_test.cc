// cublasLtMatmul under libttrace.so on simgpu (lt_workload: FP32, BF16 with bias + GELU, FP8 E4M3 with scales and
// amax): every operand captured equals the program's data, the trace checks clean under several SIMGPU_ACCUM orders,
// a gemm fault in a cuBLASLt call is found at its op and element, and a cuBLAS GEMM after them is recorded once.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
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
using format::TensorSlot;

struct Traced {
  RunResult result;
  std::vector<Operand> operands;
  analyzer::TraceSet trace;
};

Traced RunWorkload(const ScratchDir& scratch, const std::string& tag, std::map<std::string, std::string> env) {
  Traced run;
  const std::string dir = scratch / tag;
  env["LD_LIBRARY_PATH"] = TTRACE_SIMGPU_LIBDIR;
  env["LD_PRELOAD"] = TTRACE_SHIM_LIB;
  env["TTRACE_DIR"] = dir;
  env["TTRACE_MODE"] = "full";
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  run.result = RunProgram({TTRACE_LT_WORKLOAD, "--dump", scratch / (tag + ".dump"), "--gemm-ex"}, env);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  run.operands = ReadOperands(scratch / (tag + ".dump"));
  absl::StatusOr<analyzer::TraceSet> set = analyzer::LoadTraceDir(dir);
  EXPECT_TRUE(set.ok()) << set.status();
  if (set.ok()) run.trace = std::move(*set);
  return run;
}

TEST(LtCaptureTest, OperandsCapturedAndCheckedClean) {
  ScratchDir scratch;
  const Traced run = RunWorkload(scratch, "clean", {});
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 4u);  // three cublasLtMatmul, one cublasGemmEx: each recorded once
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ops[i].kind, OpKind::kLtMatmul);
    EXPECT_EQ(ops[i].lt.status, 0);
  }
  EXPECT_EQ(ops[3].kind, OpKind::kGemm);
  EXPECT_EQ(ops[2].lt.a.type, 28 /* CUDA_R_8F_E4M3 */);
  EXPECT_EQ(ops[2].lt.d.type, 28 /* CUDA_R_8F_E4M3 */);
  EXPECT_EQ(ops[1].lt.epilogue, 36u /* GELU_BIAS */);
  EXPECT_EQ(ops[1].lt.transb, 1);
  EXPECT_EQ(ops[0].lt.beta, 0.5);
  EXPECT_NE(ops[2].lt.amax_d_ptr, 0u);
  ASSERT_EQ(run.operands.size(), 15u);
  for (const Operand& o : run.operands) {
    const analyzer::Tensor* t = ops[o.seq].tensor(static_cast<TensorSlot>(o.slot));
    ASSERT_NE(t, nullptr) << "seq " << o.seq << " slot " << int(o.slot);
    EXPECT_EQ(t->data, o.bytes) << "seq " << o.seq << " slot " << int(o.slot);
  }
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
  EXPECT_EQ(report.summary().checked.at("ltmatmul"), 3u);
  const auto& tight = report.summary().tightness;
  if (tight.count("ltmatmul"))
    printf("ltmatmul tightness (default order) %.3f at seq %llu\n", tight.at("ltmatmul").max_ratio,
           static_cast<unsigned long long>(tight.at("ltmatmul").op.seq));
}

TEST(LtCaptureTest, CleanUnderAccumulationOrders) {
  ScratchDir scratch;
  for (const char* order : {"pairwise", "splitk:3", "random:7", "blocked:16"}) {
    for (const char* bits : {"", "14"}) {
      std::map<std::string, std::string> env{{"SIMGPU_ACCUM", order}};
      if (*bits) env["SIMGPU_FP8_ACC_BITS"] = bits;
      const Traced run = RunWorkload(scratch, std::string("o") + order[0] + bits, env);
      const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
      EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << order << " " << bits;
      const auto& tight = report.summary().tightness;
      if (tight.count("ltmatmul"))
        printf("SIMGPU_ACCUM=%s FP8 bits %s: ltmatmul tightness %.3f at seq %llu\n", order, *bits ? bits : "fp32",
               tight.at("ltmatmul").max_ratio, static_cast<unsigned long long>(tight.at("ltmatmul").op.seq));
    }
  }
}

TEST(LtCaptureTest, GemmFaultFoundAtItsOpAndElement) {
  ScratchDir scratch;
  struct Fault {
    int call;
    int elem;
    int bit;
  };
  // gemm call numbers count the cuBLASLt calls: 0 FP32, 1 BF16 GELU, 2 FP8; the exponent's top bit of each type.
  for (const Fault f : {Fault{0, 77, 30}, Fault{1, 300, 14}, Fault{2, 33, 6}}) {
    const Traced run = RunWorkload(scratch, "fault" + std::to_string(f.call),
                                {{"SIMGPU_FAULT", "gemm:rank=0:call=" + std::to_string(f.call) + ":elem=" +
                                                      std::to_string(f.elem) + ":bit=" + std::to_string(f.bit)}});
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    ASSERT_EQ(report.findings().size(), 1u) << "call " << f.call;
    const analyzer::Finding& x = report.findings()[0];
    EXPECT_EQ(x.check, "ltmatmul.replay");
    EXPECT_EQ(x.seq, static_cast<uint64_t>(f.call));
    EXPECT_EQ(x.first.index, static_cast<uint64_t>(f.elem));
    printf("fault in call %d: err/bound %.3g\n", f.call, x.ratio);
  }
}

}  // namespace
}  // namespace ttrace::shim::testing

// cuDNN convolutions under libttrace.so on simgpu (cudnn_workload: forward, backward data and backward filter in
// FP32 NCHW with groups, and BF16 NHWC with dilation): every operand captured equals the program's data, the
// program's results are bitwise those of a run without the shim, the trace checks clean under several
// SIMGPU_ACCUM orders, and a conv fault in each call is found at its op and element.
#include <algorithm>
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
using format::TensorSlot;

struct Traced {
  RunResult result;
  std::vector<Operand> operands;
  analyzer::TraceSet trace;
};

Traced RunWorkload(const ScratchDir& scratch, const std::string& tag, std::map<std::string, std::string> env,
                   bool shim = true) {
  Traced run;
  const std::string dir = scratch / tag;
  env["LD_LIBRARY_PATH"] = TTRACE_SIMGPU_LIBDIR;
  if (shim) env["LD_PRELOAD"] = TTRACE_SHIM_LIB;
  env["TTRACE_DIR"] = dir;
  env["TTRACE_MODE"] = "full";
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  run.result = RunProgram({TTRACE_CUDNN_WORKLOAD, "--dump", scratch / (tag + ".dump")}, env);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  run.operands = ReadOperands(scratch / (tag + ".dump"));
  if (!shim) return run;
  absl::StatusOr<analyzer::TraceSet> set = analyzer::LoadTraceDir(dir);
  EXPECT_TRUE(set.ok()) << set.status();
  if (set.ok()) run.trace = std::move(*set);
  return run;
}

TEST(CudnnCaptureTest, ConvolutionsCapturedAndCheckedClean) {
  ScratchDir scratch;
  const Traced run = RunWorkload(scratch, "clean", {});
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 5u);
  const format::ApiId apis[] = {format::ApiId::kCudnnConvolutionForward, format::ApiId::kCudnnConvolutionBackwardData,
                                format::ApiId::kCudnnConvolutionBackwardFilter, format::ApiId::kCudnnConvolutionForward,
                                format::ApiId::kCudnnConvolutionBackwardFilter};
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(ops[i].kind, OpKind::kConv);
    EXPECT_EQ(ops[i].api, static_cast<uint16_t>(apis[i]));
    EXPECT_EQ(ops[i].conv.status, 0);
    EXPECT_EQ(ops[i].conv.nb_dims, 4);
    EXPECT_NE(ops[i].conv.stream, 0u);  // the handle's own stream
  }
  const format::ConvRecord& c0 = ops[0].conv;
  EXPECT_EQ(c0.groups, 2);
  EXPECT_EQ(c0.mode, 1);        // cross-correlation
  EXPECT_EQ(c0.math_type, 3);   // FMA
  EXPECT_EQ(c0.stride[0], 2);
  EXPECT_EQ(c0.pad[1], 1);
  EXPECT_EQ(c0.y_dims[2], 5);   // (9 + 2 - 3) / 2 + 1
  EXPECT_EQ(ops[1].conv.mode, 0);
  EXPECT_EQ(ops[1].conv.beta, 0.5);
  const format::ConvRecord& c3 = ops[3].conv;
  EXPECT_EQ(c3.x_type, 9);      // BF16
  EXPECT_EQ(c3.w_format, 1);    // NHWC
  EXPECT_EQ(c3.x_strides[1], 1);
  EXPECT_EQ(c3.dilation[0], 2);
  EXPECT_EQ(c3.beta, 1.0);
  ASSERT_EQ(run.operands.size(), 17u);
  for (const Operand& o : run.operands) {
    const analyzer::Tensor* t = ops[o.seq].tensor(static_cast<TensorSlot>(o.slot));
    ASSERT_NE(t, nullptr) << "seq " << o.seq << " slot " << int(o.slot);
    EXPECT_EQ(t->data, o.bytes) << "seq " << o.seq << " slot " << int(o.slot);
  }
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
  EXPECT_EQ(report.summary().checked.at("conv"), 5u);
  const auto& tight = report.summary().tightness;
  if (tight.count("conv"))
    printf("conv tightness (default order) %.3f at seq %llu\n", tight.at("conv").max_ratio,
           static_cast<unsigned long long>(tight.at("conv").op.seq));
  // Non-interference: every buffer the program downloaded is bitwise what it gets without the shim.
  const Traced bare = RunWorkload(scratch, "bare", {}, /*shim=*/false);
  ASSERT_EQ(bare.operands.size(), run.operands.size());
  for (size_t i = 0; i < run.operands.size(); ++i) EXPECT_EQ(bare.operands[i].bytes, run.operands[i].bytes) << i;
}

TEST(CudnnCaptureTest, CleanUnderAccumulationOrders) {
  ScratchDir scratch;
  for (const char* order : {"pairwise", "splitk:3", "random:7", "blocked:16"}) {
    const Traced run = RunWorkload(scratch, std::string("o") + order[0], {{"SIMGPU_ACCUM", order}});
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << order;
    const auto& tight = report.summary().tightness;
    if (tight.count("conv"))
      printf("SIMGPU_ACCUM=%s: conv tightness %.3f at seq %llu\n", order, tight.at("conv").max_ratio,
             static_cast<unsigned long long>(tight.at("conv").op.seq));
  }
}

// A simgpu conv fault names an element in memory order; the finding names it by its row-major logical index.
uint64_t LogicalIndex(const format::ConvRecord& r, bool filter_out, uint64_t memory_elem) {
  const int64_t* dims = filter_out ? r.w_dims : r.api == 81 ? r.x_dims : r.y_dims;
  const int64_t* strides = filter_out ? r.w_strides : r.api == 81 ? r.x_strides : r.y_strides;
  // Dimensions by decreasing stride give the memory order.
  std::vector<int> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return strides[a] > strides[b]; });
  int64_t at[4];
  for (int i = 3; i >= 0; --i) at[order[i]] = static_cast<int64_t>(memory_elem % dims[order[i]]), memory_elem /= dims[order[i]];
  return static_cast<uint64_t>(((at[0] * dims[1] + at[1]) * dims[2] + at[2]) * dims[3] + at[3]);
}

TEST(CudnnCaptureTest, ConvFaultFoundAtItsOpAndElement) {
  ScratchDir scratch;
  const Traced clean = RunWorkload(scratch, "ref", {});
  ASSERT_EQ(clean.trace.ranks.size(), 1u);
  // conv call numbers count every convolution in call order (= seq here); the exponent's top bit of each type.
  for (int call = 0; call < 5; ++call) {
    const int elem = 7 + 5 * call, bit = call < 3 ? 30 : 14;
    const Traced run = RunWorkload(scratch, "fault" + std::to_string(call),
                                   {{"SIMGPU_FAULT", "conv:rank=0:call=" + std::to_string(call) + ":elem=" +
                                                         std::to_string(elem) + ":bit=" + std::to_string(bit)}});
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    ASSERT_EQ(report.findings().size(), 1u) << "call " << call;
    const analyzer::Finding& x = report.findings()[0];
    EXPECT_EQ(x.check, "conv.replay");
    EXPECT_EQ(x.seq, static_cast<uint64_t>(call));
    const format::ConvRecord& r = clean.trace.ranks[0].ops[call].conv;
    EXPECT_EQ(x.first.index, LogicalIndex(r, r.api == 82, elem)) << x.message;
    printf("fault in call %d: %s (err/bound %.3g)\n", call, x.message.c_str(), x.ratio);
  }
}

}  // namespace
}  // namespace ttrace::shim::testing

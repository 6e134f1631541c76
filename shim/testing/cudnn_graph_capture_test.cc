// cuDNN backend graphs under libttrace.so on simgpu (cudnn_graph_workload: a convolution graph, fused SDPA with
// grouped-query heads, cudnn-frontend's composite causal attention, the composite with padding and causal masks
// and with a bias and custom dropout, three convolution + pointwise fusions, the composite with a bias, ALiBi and Max
// and Sum_exp outputs): the shadow of the program's
// descriptors records each graph (operations, tensors with uids, dims, strides, types), every non-virtual tensor
// captured equals the program's data, results are bitwise those of a run without the shim, the trace checks clean
// under several SIMGPU_ACCUM orders (a leaky, clipped ReLU epilogue too, and judged as a plain ReLU it is a false
// alarm), a conv or attn fault is found at its op, and graphs without a checker (RNG
// dropout, a lone ReLU, a paged cache load) are counted as not checked, by name. cuDNN's native CUDA graph API
// (populate / update into the program's cudaGraph_t): each launch is an op with that launch's data.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/graph_check.h"
#include "analyzer/json.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "shim/testing/process.h"
#include "ttrace/format.h"

namespace ttrace::shim::testing {
namespace {

using analyzer::OpKind;

struct Dumped {
  uint64_t seq;
  uint8_t slot;
  int64_t uid;
  std::string bytes;
};

std::vector<Dumped> ReadDumped(const std::string& path) {
  std::vector<Dumped> out;
  const std::string data = ReadFile(path);
  size_t at = 0;
  while (at + 25 <= data.size()) {
    Dumped d;
    uint64_t bytes;
    memcpy(&d.seq, &data[at], 8);
    d.slot = static_cast<uint8_t>(data[at + 8]);
    memcpy(&d.uid, &data[at + 9], 8);
    memcpy(&bytes, &data[at + 17], 8);
    at += 25;
    d.bytes = data.substr(at, bytes);
    at += bytes;
    out.push_back(std::move(d));
  }
  return out;
}

struct Traced {
  RunResult result;
  std::vector<Dumped> dumped;
  analyzer::TraceSet trace;
};

Traced RunGraphs(const ScratchDir& scratch, const std::string& tag, std::map<std::string, std::string> env,
           bool shim = true, bool unchecked = false, bool sink = false, bool paged = false, bool fused = false,
           bool native_graph = false, bool stream_graph = false, const std::string& mode = "") {
  Traced run;
  env["LD_LIBRARY_PATH"] = TTRACE_SIMGPU_LIBDIR;
  if (shim) env["LD_PRELOAD"] = TTRACE_SHIM_LIB;
  env["TTRACE_DIR"] = scratch / tag;
  env["TTRACE_MODE"] = "full";
  env["RANK"] = "0";
  env["WORLD_SIZE"] = "1";
  std::vector<std::string> argv = {TTRACE_CUDNN_GRAPH_WORKLOAD, "--dump", scratch / (tag + ".dump")};
  if (unchecked) argv.push_back("--unchecked");
  if (sink) argv.push_back("--sink");
  if (paged) argv.push_back(fused ? "--paged-fused" : "--paged");
  if (native_graph) argv.push_back("--native-graph");
  if (stream_graph) argv.push_back("--stream-graph");
  if (!mode.empty()) argv.push_back(mode);
  run.result = RunProgram(argv, env);
  EXPECT_EQ(run.result.exit_code, 0) << run.result.err;
  run.dumped = ReadDumped(scratch / (tag + ".dump"));
  if (!shim) return run;
  absl::StatusOr<analyzer::TraceSet> set = analyzer::LoadTraceDir(scratch / tag);
  EXPECT_TRUE(set.ok()) << set.status();
  if (set.ok()) run.trace = std::move(*set);
  return run;
}

const analyzer::Tensor* Captured(const analyzer::Op& op, uint8_t slot, int64_t uid) {
  for (size_t i = 0; i < op.graph_tensors.size(); ++i) {
    if (op.graph_tensors[i].uid != uid) continue;
    const auto& map = slot == static_cast<uint8_t>(format::TensorSlot::kGraphIn) ? op.graph_in : op.graph_out;
    auto it = map.find(static_cast<uint32_t>(i));
    return it == map.end() ? nullptr : it->second.get();
  }
  return nullptr;
}

// A one-attention-graph run: every tensor the program dumped is what the shim captured for the op, and the check
// finds the op clean, one sdpa checked, its sdpa.forward tightness (printed as `what`) above `min_tightness` (0.6 of
// the measured value: the bound is not looser than needed).
void ExpectCapturedAndClean(const Traced& run, const char* what, double min_tightness) {
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  ASSERT_EQ(run.trace.ranks[0].ops.size(), 1u);
  const analyzer::Op& op = run.trace.ranks[0].ops[0];
  for (const Dumped& d : run.dumped) {
    const analyzer::Tensor* t = Captured(op, d.slot, d.uid);
    ASSERT_NE(t, nullptr) << "uid " << d.uid;
    EXPECT_EQ(t->data, d.bytes) << "uid " << d.uid;
  }
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
  ASSERT_EQ(report.summary().checked.count("sdpa"), 1u);
  EXPECT_EQ(report.summary().checked.at("sdpa"), 1u);
  printf("%s tightness %.3f\n", what, report.summary().tightness.at("sdpa").max_ratio);
  EXPECT_GT(report.summary().tightness.at("sdpa").max_ratio, min_tightness);
}

// A paged attention's captured INT32 page table (uid `uid`, 12 blocks in the container): batch 0's first entry
// pointed at the next block, the op checked and `moved_expect` run on its report (with the table still moved); then
// the entry outside the container: no finding, not checked by `outside_reason`.
void MovePageThenOutside(analyzer::Op* op, int64_t uid, const std::string& outside_reason,
                         const std::function<void(const analyzer::CheckReport&)>& moved_expect) {
  size_t i = 0;
  while (i < op->graph_tensors.size() && op->graph_tensors[i].uid != uid) ++i;
  ASSERT_LT(i, op->graph_tensors.size()) << "no tensor of uid " << uid;
  ASSERT_EQ(op->graph_in.count(static_cast<uint32_t>(i)), 1u) << "uid " << uid << " not captured";
  std::string& bytes = op->graph_in.at(static_cast<uint32_t>(i))->data;
  int32_t page;
  memcpy(&page, &bytes[0], 4);
  page = (page + 1) % 12;
  memcpy(&bytes[0], &page, 4);
  analyzer::CheckReport moved;
  analyzer::CheckGraphOp(0, *op, &moved, uint64_t{1} << 30);
  moved_expect(moved);
  page = 12;
  memcpy(&bytes[0], &page, 4);
  analyzer::CheckReport outside;
  analyzer::CheckGraphOp(0, *op, &outside, uint64_t{1} << 30);
  EXPECT_EQ(outside.findings().size(), 0u);
  EXPECT_EQ(outside.summary().not_checked.count(outside_reason), 1u);
}

// A composite attention checked in slices (one query row at a time, a few rows, the default) gives the report of
// the whole-tensor evaluation byte for byte (graph_attention.cc).
void ExpectSlicedIsWhole(const analyzer::Op& op) {
  auto text = [&](int64_t slice) {
    analyzer::CheckReport report;
    EXPECT_TRUE(analyzer::CheckCompositeAttention(0, op, &report, uint64_t{1} << 30, slice));
    report.Finish();
    std::ostringstream out;
    analyzer::PrintReport(report, out, 1000);
    return out.str() + "\n" + analyzer::ReportToJson(report);
  };
  const std::string whole = text(0);
  for (const int64_t slice : {int64_t{1}, int64_t{9}, analyzer::kAttentionSliceScores})
    EXPECT_EQ(text(slice), whole) << "slices of " << slice << " scores";
}

TEST(CudnnGraphCaptureTest, GraphsRecordedCapturedAndCheckedClean) {
  ScratchDir scratch;
  Traced run = RunGraphs(scratch, "clean", {});
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 10u);
  const size_t op_counts[] = {1, 1, 14, 20, 4, 2, 4, 17, 4, 24};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ops[i].kind, OpKind::kGraph);
    EXPECT_EQ(ops[i].graph.status, 0);
    EXPECT_EQ(ops[i].graph.flags, 0u);
    EXPECT_NE(ops[i].graph.stream, 0u);
    EXPECT_EQ(ops[i].graph_ops.size(), op_counts[i]);
  }
  EXPECT_EQ(ops[0].graph_ops[0].type, 10);  // CONVOLUTION_FORWARD
  EXPECT_EQ(ops[0].graph_ops[0].stride[1], 2);
  EXPECT_EQ(ops[1].graph_ops[0].type, 41);  // SDPA_FWD
  const format::GraphTensor& scale = ops[1].graph_tensors[static_cast<size_t>(ops[1].graph_ops[0].operands[5])];
  EXPECT_EQ(scale.uid, 6);
  EXPECT_TRUE(scale.by_value);
  EXPECT_EQ(scale.value, 0.35f);
  const format::GraphTensor& kt = ops[2].graph_tensors[static_cast<size_t>(ops[2].graph_ops[0].operands[1])];
  EXPECT_EQ(kt.uid, 2);
  EXPECT_EQ(kt.strides[3], 8);  // Kᵀ through swapped strides
  // The padded attention's matmuls carry the sequence lengths as overrides: M and N, then M and K.
  int matmuls = 0;
  for (const format::GraphOp& g : ops[3].graph_ops) {
    if (g.type != 19) continue;
    const int32_t m = g.operands[3], nk = g.operands[matmuls == 0 ? 4 : 5];
    ASSERT_GE(m, 0);
    ASSERT_GE(nk, 0);
    EXPECT_EQ(ops[3].graph_tensors[static_cast<size_t>(m)].uid, 8);
    EXPECT_EQ(ops[3].graph_tensors[static_cast<size_t>(nk)].uid, 9);
    ++matmuls;
  }
  EXPECT_EQ(matmuls, 2);
  // The leaky, clipped ReLU's attributes (seq 8), as the program set them; seq 4's ReLU sets none.
  const format::GraphOp& leaky = ops[8].graph_ops[3];
  EXPECT_EQ(leaky.mode, 100);
  EXPECT_EQ(leaky.params_set,
            format::kParamReluLowerClip | format::kParamReluUpperClip | format::kParamReluLowerClipSlope);
  EXPECT_EQ(leaky.relu_lower_clip, -0.2);
  EXPECT_EQ(leaky.relu_upper_clip, 0.8);
  EXPECT_EQ(leaky.relu_lower_clip_slope, 0.15);
  EXPECT_EQ(ops[4].graph_ops[3].params_set, 0u);
  // conv x, w, y; per attention Q, K, V, O, Stats; the two sequence lengths; the fusions' 5, 4 and 5 tensors;
  // the dropout attention's bias and mask; the leaky fusion's 5; the max-and-sum-exp attention's Q, K, V, bias,
  // slopes, two lengths, O, Max, Sum_exp
  ASSERT_EQ(run.dumped.size(), 56u);
  for (const Dumped& d : run.dumped) {
    const analyzer::Tensor* t = Captured(ops[d.seq], d.slot, d.uid);
    ASSERT_NE(t, nullptr) << "seq " << d.seq << " uid " << d.uid;
    EXPECT_EQ(t->data, d.bytes) << "seq " << d.seq << " uid " << d.uid;
  }
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean);
  EXPECT_EQ(report.summary().checked.at("conv"), 5u);
  EXPECT_EQ(report.summary().checked.at("sdpa"), 5u);
  // sdpa.forward is not looser than needed: measured 0.586 (the fused BF16 attention), 0.699 with the padded
  // composite; 0.6 of the first asserted. The
  // convolution graph has no math type, so its FP32 bound allows TF32 inputs and sits far above simgpu's exact
  // FP32 error (conv_check_test pins conv.deterministic's tightness).
  EXPECT_GT(report.summary().tightness.at("sdpa").max_ratio, 0.35);
  for (const auto& [kind, t] : report.summary().tightness)
    printf("%s tightness (default order) %.3f at seq %llu\n", kind.c_str(), t.max_ratio,
           static_cast<unsigned long long>(t.op.seq));
  for (size_t seq : {4, 5, 6, 8}) {  // each fusion alone (conv.fused): clean, and how close to its bound
    analyzer::CheckReport alone;
    analyzer::CheckGraphOp(0, ops[seq], &alone, uint64_t{1} << 30);
    ASSERT_EQ(alone.summary().checked.count("conv"), 1u) << seq;
    printf("conv.fused seq %zu tightness %.3f\n", seq, alone.summary().tightness.at("conv").max_ratio);
  }
  for (size_t seq : {3, 7, 9}) {  // padded; bias and custom dropout; bias, ALiBi, Max and Sum_exp
    analyzer::CheckReport alone;
    analyzer::CheckGraphOp(0, ops[seq], &alone, uint64_t{1} << 30);
    ASSERT_EQ(alone.summary().checked.count("sdpa"), 1u) << seq;
    printf("sdpa.forward seq %zu tightness %.3f\n", seq, alone.summary().tightness.at("sdpa").max_ratio);
  }
  // The leaky, clipped ReLU judged as a plain one (its clips dropped, as traces held it before they were
  // recorded): a false alarm.
  analyzer::Op plain = std::move(run.trace.ranks[0].ops[8]);
  plain.graph_ops[3].params_set = 0;
  analyzer::CheckReport as_plain;
  analyzer::CheckGraphOp(0, plain, &as_plain, uint64_t{1} << 30);
  EXPECT_EQ(as_plain.findings().size(), 1u);
  // Max and Sum_exp (seq 9) are compared: one value of each moved in the trace is found, at its row.
  analyzer::Op& attn = run.trace.ranks[0].ops[9];
  for (const auto& [uid, check] : {std::pair<int64_t, const char*>{5, "sdpa.max"}, {6, "sdpa.sum_exp"}}) {
    for (size_t i = 0; i < attn.graph_tensors.size(); ++i) {
      if (attn.graph_tensors[i].uid != uid) continue;
      std::string& bytes = attn.graph_out.at(static_cast<uint32_t>(i))->data;
      const std::string saved = bytes;
      float x;
      memcpy(&x, &bytes[4 * 7], 4);  // batch 0, head 1, row 1
      x *= 1.001f;
      memcpy(&bytes[4 * 7], &x, 4);
      analyzer::CheckReport moved;
      analyzer::CheckGraphOp(0, attn, &moved, uint64_t{1} << 30);
      ASSERT_EQ(moved.findings().size(), 1u) << check;
      EXPECT_EQ(moved.findings()[0].check, check);
      EXPECT_EQ(moved.findings()[0].first.index, 7u);
      bytes = saved;
    }
  }
  for (const size_t seq : {2, 3, 7, 9}) ExpectSlicedIsWhole(ops[seq]);  // the composite attentions
  const Traced bare = RunGraphs(scratch, "bare", {}, /*shim=*/false);
  ASSERT_EQ(bare.dumped.size(), run.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i) EXPECT_EQ(bare.dumped[i].bytes, run.dumped[i].bytes) << i;
}

TEST(CudnnGraphCaptureTest, CleanUnderAccumulationOrders) {
  ScratchDir scratch;
  for (const char* order : {"pairwise", "splitk:3", "random:7", "blocked:16"}) {
    const Traced run = RunGraphs(scratch, std::string("o") + order[0], {{"SIMGPU_ACCUM", order}});
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    EXPECT_EQ(report.verdict(), analyzer::Verdict::kClean) << order;
    for (const auto& [kind, t] : report.summary().tightness)
      printf("SIMGPU_ACCUM=%s: %s tightness %.3f at seq %llu\n", order, kind.c_str(), t.max_ratio,
             static_cast<unsigned long long>(t.op.seq));
  }
}

TEST(CudnnGraphCaptureTest, FaultsFoundAtTheirOp) {
  ScratchDir scratch;
  struct Case {
    const char* fault;
    uint64_t seq;
    const char* check;
    uint64_t elem;
  };
  // conv: the graph's convolution; attn: the fused (call 0) and composite (call 1) attention outputs O (packed,
  // so memory order is the logical order); the exponent's top bit of FP32 (30) and BF16 (14).
  for (const Case& c : {Case{"conv:rank=0:call=0:elem=17:bit=30", 0, "conv.replay", 17},
                        Case{"attn:rank=0:call=0:elem=21:bit=14", 1, "sdpa.replay", 21},
                        Case{"attn:rank=0:call=1:elem=40:bit=14", 2, "sdpa.replay", 40},
                        // padded: batch 1, head 0, row 2 (seq_len_q 3), column 3
                        Case{"attn:rank=0:call=2:elem=115:bit=14", 3, "sdpa.replay", 115},
                        Case{"attn:rank=0:call=3:elem=50:bit=14", 7, "sdpa.replay", 50},  // custom dropout
                        // the fusions: the convolution's (virtual FP32) output, through the epilogue
                        Case{"conv:rank=0:call=1:elem=17:bit=30", 4, "conv.replay", 17},
                        Case{"conv:rank=0:call=2:elem=18:bit=30", 5, "conv.replay", 18},  // x > 0 there: ReLU passes it
                        Case{"conv:rank=0:call=3:elem=17:bit=14", 6, "conv.replay", 17},  // dw: BF16
                        // through the leaky, clipped ReLU
                        Case{"conv:rank=0:call=4:elem=17:bit=30", 8, "conv.replay", 17},
                        // bias, ALiBi, padding and causal masks, Max and Sum_exp: batch 0, head 1, row 0
                        Case{"attn:rank=0:call=4:elem=50:bit=14", 9, "sdpa.replay", 50}}) {
    const Traced run = RunGraphs(scratch, std::string("f") + std::to_string(c.seq), {{"SIMGPU_FAULT", c.fault}});
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    ASSERT_EQ(report.findings().size(), 1u) << c.fault;
    const analyzer::Finding& f = report.findings()[0];
    EXPECT_EQ(f.check, c.check);
    EXPECT_EQ(f.seq, c.seq);
    EXPECT_EQ(f.first.index, c.elem) << f.message;
    printf("%s: %s (err/bound %.3g)\n", c.fault, f.message.c_str(), f.ratio);
  }
}

// cudnn-frontend's composite attention with a sink token (the workload's --sink: bias, ALiBi, padding and causal
// masks, sinks below, among and above the logits): recorded with the sink's pointwise MAX of a larger operand,
// every captured tensor the program's, results bitwise a run's without the shim, checked clean under sdpa.forward
// in several accumulation orders; an attn fault in O is found at its element; the sink is part of what is checked
// (a captured sink moved is found in Stats and O).
TEST(CudnnGraphCaptureTest, SinkAttentionRecordedAndChecked) {
  ScratchDir scratch;
  Traced run = RunGraphs(scratch, "sink", {}, true, false, /*sink=*/true);
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].graph.status, 0);
  EXPECT_EQ(ops[0].graph_ops.size(), 30u);
  int larger = 0;  // the pointwise MAX whose x is [b, h, s_q, s_kv] and y [b, h, s_q, 1]
  for (const format::GraphOp& g : ops[0].graph_ops) {
    if (g.type != 13 || g.mode != 3) continue;
    const format::GraphTensor &x = ops[0].graph_tensors[static_cast<size_t>(g.operands[0])],
                              &y = ops[0].graph_tensors[static_cast<size_t>(g.operands[2])];
    larger += x.dims[3] == 7 && y.dims[3] == 1;
  }
  EXPECT_EQ(larger, 1);
  ASSERT_EQ(run.dumped.size(), 10u);  // Q, K, V, bias, slopes, sink, two lengths; O, Stats
  ExpectCapturedAndClean(run, "sink attention", 0.46);  // 0.6 of the 0.772 measured
  // The sink read by the check: head 3's (6.0, above every logit) lowered to 0 moves its rows' Stats and O.
  for (size_t i = 0; i < ops[0].graph_tensors.size(); ++i) {
    if (ops[0].graph_tensors[i].uid != 16) continue;
    std::string& bytes = ops[0].graph_in.at(static_cast<uint32_t>(i))->data;
    const float zero = 0.0f;
    memcpy(&bytes[4 * 3], &zero, 4);
  }
  analyzer::CheckReport moved;
  analyzer::CheckGraphOp(0, ops[0], &moved, uint64_t{1} << 30);
  ASSERT_GE(moved.findings().size(), 1u);
  ExpectSlicedIsWhole(ops[0]);
  const Traced bare = RunGraphs(scratch, "sink_bare", {}, /*shim=*/false, false, true);
  ASSERT_EQ(bare.dumped.size(), run.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i) EXPECT_EQ(bare.dumped[i].bytes, run.dumped[i].bytes) << i;
  for (const char* order : {"pairwise", "splitk:3", "random:7", "blocked:16"}) {
    const Traced o = RunGraphs(scratch, std::string("sink_o") + order[0], {{"SIMGPU_ACCUM", order}}, true, false, true);
    const analyzer::CheckReport r = analyzer::RunChecks(o.trace);
    EXPECT_EQ(r.verdict(), analyzer::Verdict::kClean) << order;
    printf("SIMGPU_ACCUM=%s: sink attention tightness %.3f\n", order, r.summary().tightness.at("sdpa").max_ratio);
  }
  // batch 0, head 1, row 0 (seq_len_q 6), column 2
  const Traced f = RunGraphs(scratch, "sink_f", {{"SIMGPU_FAULT", "attn:rank=0:call=0:elem=50:bit=14"}}, true, false, true);
  const analyzer::CheckReport fr = analyzer::RunChecks(f.trace);
  ASSERT_EQ(fr.findings().size(), 1u);
  EXPECT_EQ(fr.findings()[0].check, "sdpa.replay");
  EXPECT_EQ(fr.findings()[0].first.index, 50u);
  ExpectSlicedIsWhole(run.trace.ranks[0].ops[0]);
  ExpectSlicedIsWhole(f.trace.ranks[0].ops[0]);
}

// cudnn-frontend's paged attention (the workload's --paged: seq 3's padded causal composite with K and V in shuffled
// page containers, read by two PAGED_CACHE_LOAD operations into virtual K^T and V): recorded with both loads'
// container, page table and sequence lengths captured, results bitwise a run's without the shim, checked clean
// (the loads replayed through the captured tables) under several accumulation orders; an attn fault in O is found;
// a page table entry moved in the trace is found; one outside the container is not checked, by that reason.
TEST(CudnnGraphCaptureTest, PagedAttentionRecordedAndChecked) {
  ScratchDir scratch;
  Traced run = RunGraphs(scratch, "paged", {}, true, false, false, /*paged=*/true);
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].graph.status, 0);
  EXPECT_EQ(ops[0].graph_ops.size(), 22u);
  int loads = 0;
  for (const format::GraphOp& g : ops[0].graph_ops) loads += g.type == 35;
  EXPECT_EQ(loads, 2);
  ASSERT_EQ(run.dumped.size(), 9u);  // Q, two containers, two lengths, two page tables; O, Stats
  ExpectCapturedAndClean(run, "paged attention", 0.37);  // 0.6 of the 0.617 measured
  // K's load given its own sequence lengths, batch 1's (5) lowered to 1: its rows keep keys 0..2, past what the load
  // defines, so the graph is not checked (with the lengths shared, as cudnn-frontend builds it, the matmul
  // overrides already keep such keys out).
  {
    analyzer::Op shorter;
    shorter.seq = ops[0].seq;
    shorter.api = ops[0].api;
    shorter.kind = ops[0].kind;
    shorter.graph = ops[0].graph;
    shorter.graph_ops = ops[0].graph_ops;
    shorter.graph_tensors = ops[0].graph_tensors;
    for (const auto& [i, t] : ops[0].graph_in) shorter.graph_in[i] = std::make_unique<analyzer::Tensor>(*t);
    for (const auto& [i, t] : ops[0].graph_out) shorter.graph_out[i] = std::make_unique<analyzer::Tensor>(*t);
    for (format::GraphOp& g : shorter.graph_ops) {
      if (g.type != 35 || shorter.graph_tensors[static_cast<size_t>(g.operands[3])].strides[2] != 1) continue;
      const int32_t len = g.operands[2];
      format::GraphTensor own = shorter.graph_tensors[static_cast<size_t>(len)];
      own.uid = 99;
      const uint32_t index = static_cast<uint32_t>(shorter.graph_tensors.size());
      shorter.graph_tensors.push_back(own);
      auto t = std::make_unique<analyzer::Tensor>(*shorter.graph_in.at(static_cast<uint32_t>(len)));
      const int32_t one = 1;
      memcpy(&t->data[4], &one, 4);
      shorter.graph_in[index] = std::move(t);
      g.operands[2] = static_cast<int32_t>(index);
    }
    analyzer::CheckReport past;
    analyzer::CheckGraphOp(0, shorter, &past, uint64_t{1} << 30);
    EXPECT_EQ(past.findings().size(), 0u);
    EXPECT_EQ(past.summary().not_checked.count("cuDNN paged attention keeps keys past its paged cache load's lengths"),
              1u);
    ExpectSlicedIsWhole(shorter);
  }
  ExpectSlicedIsWhole(ops[0]);
  const Traced bare = RunGraphs(scratch, "paged_bare", {}, /*shim=*/false, false, false, true);
  ASSERT_EQ(bare.dumped.size(), run.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i) EXPECT_EQ(bare.dumped[i].bytes, run.dumped[i].bytes) << i;
  for (const char* order : {"pairwise", "splitk:3", "random:7", "blocked:16"}) {
    const Traced o = RunGraphs(scratch, std::string("paged_o") + order[0], {{"SIMGPU_ACCUM", order}}, true, false,
                               false, true);
    const analyzer::CheckReport r = analyzer::RunChecks(o.trace);
    EXPECT_EQ(r.verdict(), analyzer::Verdict::kClean) << order;
  }
  // batch 1, head 0, row 2 (seq_len_q 3), column 3
  const Traced f = RunGraphs(scratch, "paged_f", {{"SIMGPU_FAULT", "attn:rank=0:call=0:elem=115:bit=14"}}, true, false,
                             false, true);
  const analyzer::CheckReport fr = analyzer::RunChecks(f.trace);
  ASSERT_EQ(fr.findings().size(), 1u);
  EXPECT_EQ(fr.findings()[0].check, "sdpa.replay");
  EXPECT_EQ(fr.findings()[0].first.index, 115u);
  ExpectSlicedIsWhole(f.trace.ranks[0].ops[0]);
  // K's page table (uid 12): batch 0's first block pointed at another block, then outside the container.
  MovePageThenOutside(&ops[0], 12, "cuDNN paged attention: a page table entry outside the container",
                      [&](const analyzer::CheckReport& moved) {
                        EXPECT_GE(moved.findings().size(), 1u);
                        ExpectSlicedIsWhole(ops[0]);
                      });
}

// The fused SDPA_FWD with page tables (the workload's --paged-fused: --paged's attention without its causal mask, as
// one operation reading the shuffled containers through PAGE_TABLE_KDESC / _VDESC, as Transformer Engine's KV cache
// builds it): recorded with the tables in roles 8 and 9, every input captured (containers, tables, lengths), results
// bitwise a run's without the shim, checked clean (K and V gathered through the captured tables) under several
// accumulation orders; an attn fault in O is found at its element; a page table entry moved in the trace is found;
// one outside the container, or a table dropped from the capture, is not checked, by its reason.
TEST(CudnnGraphCaptureTest, PagedFusedAttentionRecordedAndChecked) {
  ScratchDir scratch;
  Traced run = RunGraphs(scratch, "pfused", {}, true, false, false, /*paged=*/true, /*fused=*/true);
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].graph.status, 0);
  EXPECT_EQ(ops[0].graph.op_entry_bytes, sizeof(format::GraphOp));
  ASSERT_EQ(ops[0].graph_ops.size(), 1u);
  const format::GraphOp& sdpa = ops[0].graph_ops[0];
  EXPECT_EQ(sdpa.type, 41);
  for (const auto& [role, uid] : {std::pair{1, 2}, {2, 3}, {6, 8}, {7, 9}, {8, 12}, {9, 13}}) {
    const int32_t i = format::GraphOperand(sdpa, role);
    ASSERT_GE(i, 0) << role;
    EXPECT_EQ(ops[0].graph_tensors[static_cast<size_t>(i)].uid, uid) << role;
  }
  for (int role = 10; role < format::kGraphOpMaxOperands; ++role) EXPECT_EQ(format::GraphOperand(sdpa, role), -1);
  ASSERT_EQ(run.dumped.size(), 9u);  // Q, two containers, two lengths, two page tables; O, Stats
  ExpectCapturedAndClean(run, "paged fused attention", 0.38);  // 0.6 of the 0.637 measured
  const Traced bare = RunGraphs(scratch, "pfused_bare", {}, /*shim=*/false, false, false, true, true);
  ASSERT_EQ(bare.dumped.size(), run.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i) EXPECT_EQ(bare.dumped[i].bytes, run.dumped[i].bytes) << i;
  for (const char* order : {"pairwise", "splitk:3", "random:7", "blocked:16"}) {
    const Traced o = RunGraphs(scratch, std::string("pfused_o") + order[0], {{"SIMGPU_ACCUM", order}}, true, false,
                               false, true, true);
    const analyzer::CheckReport r = analyzer::RunChecks(o.trace);
    EXPECT_EQ(r.verdict(), analyzer::Verdict::kClean) << order;
  }
  // batch 1, head 0, row 2 (seq_len_q 3), column 3
  const Traced f = RunGraphs(scratch, "pfused_f", {{"SIMGPU_FAULT", "attn:rank=0:call=0:elem=115:bit=14"}}, true,
                             false, false, true, true);
  const analyzer::CheckReport fr = analyzer::RunChecks(f.trace);
  ASSERT_EQ(fr.findings().size(), 1u);
  EXPECT_EQ(fr.findings()[0].check, "sdpa.replay");
  EXPECT_EQ(fr.findings()[0].first.index, 115u);
  // V's page table (uid 13): batch 0's first block pointed at another block, then outside the container; then K's
  // table missing from the capture.
  MovePageThenOutside(&ops[0], 13, "cuDNN paged SDPA: a page table entry outside the container",
                      [](const analyzer::CheckReport& moved) {
                        ASSERT_GE(moved.findings().size(), 1u);
                        EXPECT_EQ(moved.findings()[0].check, "sdpa.replay");
                      });
  ops[0].graph_in.erase(static_cast<uint32_t>(format::GraphOperand(sdpa, 8)));
  analyzer::CheckReport missing;
  analyzer::CheckGraphOp(0, ops[0], &missing, uint64_t{1} << 30);
  EXPECT_EQ(missing.findings().size(), 0u);
  EXPECT_EQ(missing.summary().checked.count("sdpa"), 0u);
  EXPECT_EQ(missing.summary().not_checked.size(), 1u);
}

TEST(CudnnGraphCaptureTest, GraphWithoutCheckerCountedByName) {
  ScratchDir scratch;
  const Traced run = RunGraphs(scratch, "unchecked", {}, true, /*unchecked=*/true);
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_EQ(report.verdict(), analyzer::Verdict::kIncomplete);
  EXPECT_EQ(report.summary().not_checked.at("cuDNN graph of pointwise (no checker)"), 1u);
  EXPECT_EQ(report.summary().not_checked.at("cuDNN attention with RNG dropout (Philox inside cuDNN: not replayable)"),
            1u);
  EXPECT_EQ(report.summary().checked.at("sdpa"), 5u);
  // The transpose (seq 12): the reshape recorded with its operands, named; simgpu's result is xᵀ, captured as the
  // program downloaded it.
  EXPECT_EQ(report.summary().not_checked.at("cuDNN graph of reshape, pointwise (no checker)"), 1u);
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 14u);
  ASSERT_EQ(ops[12].graph_ops.size(), 2u);
  const format::GraphOp& reshape = ops[12].graph_ops[0];
  EXPECT_EQ(reshape.type, 31);
  ASSERT_GE(reshape.operands[0], 0);
  ASSERT_GE(reshape.operands[1], 0);
  EXPECT_EQ(ops[12].graph_tensors[static_cast<size_t>(reshape.operands[0])].uid, 1);
  const format::GraphTensor& view = ops[12].graph_tensors[static_cast<size_t>(reshape.operands[1])];
  EXPECT_EQ(view.uid, 100);
  EXPECT_EQ(view.strides[2], 1);
  EXPECT_EQ(view.strides[3], 8);
  std::string x, y;
  for (const Dumped& d : run.dumped) {
    if (d.seq != 12) continue;
    (d.uid == 1 ? x : y) = d.bytes;
    const analyzer::Tensor* t = Captured(ops[12], d.slot, d.uid);
    ASSERT_NE(t, nullptr) << "uid " << d.uid;
    EXPECT_EQ(t->data, d.bytes) << "uid " << d.uid;
  }
  ASSERT_EQ(x.size(), 128u);
  ASSERT_EQ(y.size(), 128u);
  for (int r = 0; r < 8; ++r) {
    for (int c = 0; c < 4; ++c) EXPECT_EQ(y.substr((r * 4 + c) * 4, 4), x.substr((c * 8 + r) * 4, 4)) << r << c;
  }
  // The paged cache load (seq 13): recorded with its container, page table, sequence lengths and y, each captured
  // as the program uploaded or downloaded it, named as not checked; simgpu's y is the gather through the table
  // (rows past the sequence length +0).
  EXPECT_EQ(report.summary().not_checked.at("cuDNN graph of paged_cache_load (no checker)"), 1u);
  ASSERT_EQ(ops[13].graph_ops.size(), 1u);
  const format::GraphOp& load = ops[13].graph_ops[0];
  EXPECT_EQ(load.type, 35);
  for (int r = 0; r < 4; ++r) {
    ASSERT_GE(load.operands[r], 0) << r;
    EXPECT_EQ(ops[13].graph_tensors[static_cast<size_t>(load.operands[r])].uid, r == 0 ? 1 : r == 1 ? 2 : r == 2 ? 3 : 4);
  }
  std::map<int64_t, std::string> paged;
  for (const Dumped& d : run.dumped) {
    if (d.seq != 13) continue;
    paged[d.uid] = d.bytes;
    const analyzer::Tensor* t = Captured(ops[13], d.slot, d.uid);
    ASSERT_NE(t, nullptr) << "uid " << d.uid;
    EXPECT_EQ(t->data, d.bytes) << "uid " << d.uid;
  }
  ASSERT_EQ(paged.size(), 4u);
  const int32_t pages[6] = {4, 0, 5, 2, 3, 1}, len[2] = {5, 6};
  const std::string zero(4, '\0');
  for (int i = 0; i < 2; ++i)
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 6; ++j)
        for (int t = 0; t < 3; ++t) {
          const int at = ((i * 2 + h) * 6 + j) * 3 + t, page = pages[i * 3 + j / 2];
          EXPECT_EQ(paged[4].substr(static_cast<size_t>(at) * 4, 4),
                    j < len[i] ? paged[1].substr(static_cast<size_t>(((page * 2 + h) * 2 + j % 2) * 3 + t) * 4, 4) : zero)
              << at;
        }
}

// Counts `needle` in `haystack`.
size_t Occurrences(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = haystack.find(needle, at)) != std::string::npos; ++at) ++n;
  return n;
}

// The workload's --native-graph runs, by dumped seq: 100-102 launches of the populated graph, 103 a launch after an
// update cuDNN refused, 104-106 launches after the update (child node set, exec update, fresh instantiation), 107
// the direct execution. Outputs (slot 23) by seq.
std::map<uint64_t, std::string> NativeOutputs(const Traced& run) {
  std::map<uint64_t, std::string> y;
  for (const Dumped& d : run.dumped)
    if (d.slot == 23) y[d.seq] = d.bytes;
  return y;
}

// The plain run's status line for cuDNN's refused update.
std::string BadUpdateLine(const Traced& run) {
  const size_t at = run.result.out.find("bad update status ");
  return at == std::string::npos ? "" : run.result.out.substr(at, run.result.out.find('\n', at) - at);
}

// The workload's printed lines starting with `label`.
std::string GraphLines(const Traced& run, const std::string& label) {
  std::string lines;
  std::istringstream in(run.result.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(label + ":", 0) == 0) lines += line + "\n";
  return lines;
}

// cuDNN's native CUDA graph API as cudnn-frontend drives it (the workload's --native-graph: populate into a scratch
// graph cloned into a child node of the program's graph, launches, an update cuDNN refuses, the update of the
// embedded graph to a new pack, launches through cudaGraphExecChildGraphNodeSetParams, cudaGraphExecUpdate and a
// fresh instantiation, then a direct execution): under the shim every result is bitwise the one without it and the
// refused update's status is cuDNN's; populate and update are the templates of the graph's launches, and each launch
// is an op whose captured tensors are that launch's data (each launch's x differs; after the update, the new pack's
// buffers), checked clean as the direct execution is.
TEST(CudnnGraphCaptureTest, NativeCudaGraphLaunchesCaptured) {
  ScratchDir scratch;
  const Traced plain = RunGraphs(scratch, "native_plain", {}, /*shim=*/false, false, false, false, false, true);
  const Traced run = RunGraphs(scratch, "native", {}, /*shim=*/true, false, false, false, false, true);
  ASSERT_EQ(plain.dumped.size(), 15u);
  ASSERT_EQ(run.dumped.size(), plain.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i)
    EXPECT_EQ(run.dumped[i].bytes, plain.dumped[i].bytes) << "seq " << run.dumped[i].seq;
  ASSERT_NE(BadUpdateLine(plain), "");
  EXPECT_EQ(BadUpdateLine(run), BadUpdateLine(plain)) << "the refused update's status is cuDNN's";
  // Each launch read x as the program had just written it: different results; the last launch is the direct
  // execution's, bitwise.
  const std::map<uint64_t, std::string> y = NativeOutputs(run);
  for (uint64_t k = 100; k < 106; ++k) EXPECT_NE(y.at(k), y.at(k + 1)) << k;
  EXPECT_EQ(y.at(106), y.at(107));

  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const analyzer::RankTrace& t = run.trace.ranks[0];
  EXPECT_EQ(t.graph_templates, 2u) << "the populate and the update that succeeded";
  const auto& ops = t.ops;
  // Launches 100-102, the refused update, launch 103, launches 104-106, the execution.
  ASSERT_EQ(ops.size(), 9u);
  const uint64_t dumped_seq[9] = {100, 101, 102, 0, 103, 104, 105, 106, 107};
  const char* api[9] = {"cudnnBackendPopulateCudaGraph", "cudnnBackendPopulateCudaGraph",
                        "cudnnBackendPopulateCudaGraph", "cudnnBackendUpdateCudaGraph",
                        "cudnnBackendPopulateCudaGraph", "cudnnBackendUpdateCudaGraph",
                        "cudnnBackendUpdateCudaGraph",   "cudnnBackendUpdateCudaGraph",
                        "cudnnBackendExecute"};
  std::string w;
  for (size_t i = 0; i < ops.size(); ++i) {
    const analyzer::Op& op = ops[i];
    EXPECT_EQ(format::ApiName(op.api), std::string(api[i])) << i;
    if (i == 3) {
      EXPECT_NE(op.graph.status, 0) << "the refused update";
      EXPECT_TRUE(op.graph_in.empty() && op.graph_out.empty());
      continue;
    }
    EXPECT_EQ(op.graph.status, 0) << i;
    EXPECT_EQ(op.missing_tensors, "") << i;
    for (const Dumped& d : run.dumped) {
      if (d.seq != dumped_seq[i]) continue;
      const analyzer::Tensor* captured = Captured(op, d.slot, d.uid);
      ASSERT_NE(captured, nullptr) << "launch " << d.seq << " uid " << d.uid << " slot " << int{d.slot};
      EXPECT_EQ(captured->data, d.bytes) << "launch " << d.seq << " uid " << d.uid << " slot " << int{d.slot};
    }
    const analyzer::Tensor* wt = Captured(op, 22, 2);
    ASSERT_NE(wt, nullptr) << i;
    if (w.empty()) w = wt->data;
    EXPECT_EQ(wt->data, w) << "w, " << i;
    EXPECT_EQ(op.graph_in.size(), 2u) << i;
    EXPECT_EQ(op.graph_out.size(), 1u) << i;
  }
  EXPECT_EQ(Occurrences(run.result.err, "not captured (cuDNN native CUDA graph)"), 0u) << run.result.err;
  // The graphs as the program sees them: the snapshot copies of the inputs before cuDNN's node, of the output after
  // it, the host node last; after the update, the copies read the new pack.
  EXPECT_EQ(GraphLines(plain, "populated"), "populated: kernel after -\n");
  EXPECT_EQ(GraphLines(run, "populated"),
            "populated: copy(w) after -\n"
            "populated: copy(x1) after -\n"
            "populated: copy(y1) after kernel\n"
            "populated: host after copy(y1)\n"
            "populated: kernel after copy(w),copy(x1)\n");
  EXPECT_EQ(GraphLines(run, "updated"),
            "updated: copy(w) after -\n"
            "updated: copy(x2) after -\n"
            "updated: copy(y2) after kernel\n"
            "updated: host after copy(y2)\n"
            "updated: kernel after copy(w),copy(x2)\n");
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  ASSERT_EQ(report.summary().checked.count("conv"), 1u);
  EXPECT_EQ(report.summary().checked.at("conv"), 8u) << "seven launches and the execution";
  EXPECT_TRUE(report.findings().empty());
}

// A fault in the graph's work is found at the launches that ran it: simgpu numbers a convolution's fault site when
// the work is populated (call 0: launches 100-103) or updated (call 1: launches 104-106), as cuDNN's host part runs
// then; the direct execution is call 2.
TEST(CudnnGraphCaptureTest, NativeCudaGraphFaultFoundAtItsLaunches) {
  ScratchDir scratch;
  struct Case {
    const char* fault;
    std::vector<size_t> ops;  // indices into the trace's ops (see NativeCudaGraphLaunchesCaptured)
  };
  for (const Case& c : {Case{"conv:rank=0:call=0:elem=17:bit=30", {0, 1, 2, 4}},
                        Case{"conv:rank=0:call=1:elem=17:bit=30", {5, 6, 7}},
                        Case{"conv:rank=0:call=2:elem=17:bit=30", {8}}}) {
    const Traced run = RunGraphs(scratch, std::string("nf") + c.fault[15], {{"SIMGPU_FAULT", c.fault}}, true, false,
                                 false, false, false, true);
    ASSERT_EQ(run.trace.ranks.size(), 1u);
    const auto& ops = run.trace.ranks[0].ops;
    ASSERT_EQ(ops.size(), 9u);
    const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
    ASSERT_EQ(report.findings().size(), c.ops.size()) << c.fault;
    for (size_t i = 0; i < c.ops.size(); ++i) {
      const analyzer::Finding& f = report.findings()[i];
      EXPECT_EQ(f.check, "conv.replay") << c.fault;
      EXPECT_EQ(f.seq, ops[c.ops[i]].seq) << c.fault;
      EXPECT_EQ(f.first.index, 17u) << f.message;
    }
  }
}

// TTRACE_GRAPH_MB=0: the snapshot staging does not fit, so populate and update are recorded as ops named not captured
// (said once), the launches are not ops, and the program's results and the refused update's status are unchanged.
TEST(CudnnGraphCaptureTest, NativeCudaGraphOverTheGraphBudgetNotCaptured) {
  ScratchDir scratch;
  const Traced plain = RunGraphs(scratch, "nb_plain", {}, /*shim=*/false, false, false, false, false, true);
  const Traced run = RunGraphs(scratch, "nb", {{"TTRACE_GRAPH_MB", "0"}}, true, false, false, false, false, true);
  ASSERT_EQ(run.dumped.size(), plain.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i)
    EXPECT_EQ(run.dumped[i].bytes, plain.dumped[i].bytes) << "seq " << run.dumped[i].seq;
  EXPECT_EQ(BadUpdateLine(run), BadUpdateLine(plain));
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  EXPECT_EQ(run.trace.ranks[0].graph_templates, 0u);
  ASSERT_EQ(ops.size(), 4u);
  const char* names[4] = {"cudnnBackendPopulateCudaGraph", "cudnnBackendUpdateCudaGraph",
                          "cudnnBackendUpdateCudaGraph", "cudnnBackendExecute"};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(format::ApiName(ops[i].api), std::string(names[i]));
  for (size_t i : {0, 2}) {
    EXPECT_EQ(ops[i].graph.status, 0) << names[i];
    EXPECT_TRUE(ops[i].graph_in.empty() && ops[i].graph_out.empty()) << names[i];
    EXPECT_EQ(ops[i].missing_tensors, "tensors dropped (graph capture)") << names[i];
  }
  EXPECT_EQ(ops[3].graph_out.size(), 1u);
  EXPECT_EQ(Occurrences(run.result.err, "not captured (cuDNN native CUDA graph): CUDA graph staging would exceed "
                                        "TTRACE_GRAPH_MB; recorded"),
            1u)
      << "one line, for the populate: " << run.result.err;
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  EXPECT_EQ(report.summary().checked.at("conv"), 1u);
  EXPECT_TRUE(report.findings().empty());
}

// Tensor capture stops between the populate and the update (the workload's --native-graph-execute: a direct
// execution after launch 103 is the shim's first stream capture, and its pinned ring of TTRACE_BUFFER_MB cannot be
// allocated, so tensor capture is disabled, said once): the update keeps the snapshot nodes in the application's
// graph, retargeted to the new pack, so the executable instantiated from the populated graph still takes the updated
// graph (cudaGraphExecChildGraphNodeSetParams and cudaGraphExecUpdate, which refuse a changed topology) and every
// result is bitwise the one without the shim; the launches after the stop are not ops.
TEST(CudnnGraphCaptureTest, NativeCudaGraphUpdatedAfterCaptureStopped) {
  ScratchDir scratch;
  std::map<std::string, std::string> env = {{"TTRACE_BUFFER_MB", "2147483647"}};  // 2^31 - 1 MiB: never pinned
  // The failed allocation must return null under a sanitizer (whose default is to abort). Set in this process's
  // environment, which RunProgram passes on first: an entry of `env` would come after the inherited
  // ASAN_OPTIONS of the sanitizer builds' tests (TtraceSanitize.cmake), and the first entry wins.
  for (const char* sanitizer : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* v = getenv(sanitizer);
    const std::string value =
        (v != nullptr && *v != '\0' ? std::string(v) + ":" : std::string()) + "allocator_may_return_null=1";
    setenv(sanitizer, value.c_str(), 1);
  }
  const Traced plain = RunGraphs(scratch, "ns_plain", {}, /*shim=*/false, false, false, false, false, false, false,
                                 "--native-graph-execute");
  const Traced run = RunGraphs(scratch, "ns", env, /*shim=*/true, false, false, false, false, false, false,
                               "--native-graph-execute");
  ASSERT_EQ(plain.dumped.size(), 16u);
  ASSERT_EQ(run.dumped.size(), plain.dumped.size()) << run.result.err;
  for (size_t i = 0; i < run.dumped.size(); ++i)
    EXPECT_EQ(run.dumped[i].bytes, plain.dumped[i].bytes) << "seq " << run.dumped[i].seq;
  EXPECT_EQ(BadUpdateLine(run), BadUpdateLine(plain));
  const std::map<uint64_t, std::string> y = NativeOutputs(run);
  EXPECT_EQ(y.at(99), y.at(103)) << "the direct execution on launch 103's x1";
  EXPECT_EQ(y.at(106), y.at(107));
  EXPECT_EQ(Occurrences(run.result.err, "tensor capture disabled: cannot allocate the"), 1u) << run.result.err;
  // The program's graph after the update: the snapshot nodes are still there, their copies on the new pack.
  EXPECT_EQ(GraphLines(run, "updated"),
            "updated: copy(w) after -\n"
            "updated: copy(x2) after -\n"
            "updated: copy(y2) after kernel\n"
            "updated: host after copy(y2)\n"
            "updated: kernel after copy(w),copy(x2)\n");
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  const auto& ops = run.trace.ranks[0].ops;
  // Launches 100-102, the refused update, launch 103 (captured), then records only: the execution, the update, the
  // last execution.
  EXPECT_EQ(run.trace.ranks[0].graph_templates, 1u) << "the populate";
  ASSERT_EQ(ops.size(), 8u);
  const char* api[8] = {"cudnnBackendPopulateCudaGraph", "cudnnBackendPopulateCudaGraph",
                        "cudnnBackendPopulateCudaGraph", "cudnnBackendUpdateCudaGraph",
                        "cudnnBackendPopulateCudaGraph", "cudnnBackendExecute",
                        "cudnnBackendUpdateCudaGraph",   "cudnnBackendExecute"};
  for (size_t i = 0; i < ops.size(); ++i) EXPECT_EQ(format::ApiName(ops[i].api), std::string(api[i])) << i;
  EXPECT_EQ(ops[4].graph_out.size(), 1u) << "launch 103, before the stop";
  for (size_t i : {5, 6, 7}) EXPECT_TRUE(ops[i].graph_in.empty() && ops[i].graph_out.empty()) << i;
  EXPECT_EQ(ops[6].graph.status, 0);
}

// A graph execution captured on a capturing stream (stream capture, not the native API; the workload's
// --stream-graph): the execution is the template, each of the 3 launches an op whose record carries the graph (its
// tensors and operations) and whose captured x, w and y are that launch's; checked clean, results unchanged.
TEST(CudnnGraphCaptureTest, StreamCapturedExecutionLaunchesCaptured) {
  ScratchDir scratch;
  const Traced plain = RunGraphs(scratch, "sg_plain", {}, /*shim=*/false, false, false, false, false, false, true);
  const Traced run = RunGraphs(scratch, "sg", {}, /*shim=*/true, false, false, false, false, false, true);
  ASSERT_EQ(plain.dumped.size(), 6u);
  ASSERT_EQ(run.dumped.size(), plain.dumped.size());
  for (size_t i = 0; i < run.dumped.size(); ++i)
    EXPECT_EQ(run.dumped[i].bytes, plain.dumped[i].bytes) << "seq " << run.dumped[i].seq;
  ASSERT_EQ(run.trace.ranks.size(), 1u);
  EXPECT_EQ(run.trace.ranks[0].graph_templates, 1u);
  const auto& ops = run.trace.ranks[0].ops;
  ASSERT_EQ(ops.size(), 3u);
  std::string w;
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(format::ApiName(ops[i].api), std::string("cudnnBackendExecute"));
    ASSERT_EQ(ops[i].graph_tensors.size(), 3u) << i;
    EXPECT_EQ(ops[i].graph_ops.size(), 1u) << i;
    for (const Dumped& d : run.dumped) {
      if (d.seq != 200 + i) continue;
      const analyzer::Tensor* captured = Captured(ops[i], d.slot, d.uid);
      ASSERT_NE(captured, nullptr) << "launch " << i << " uid " << d.uid;
      EXPECT_EQ(captured->data, d.bytes) << "launch " << i << " uid " << d.uid;
    }
    const analyzer::Tensor* wt = Captured(ops[i], 22, 2);
    ASSERT_NE(wt, nullptr) << i;
    if (w.empty()) w = wt->data;
    EXPECT_EQ(wt->data, w) << i;
  }
  const analyzer::CheckReport report = analyzer::RunChecks(run.trace);
  ASSERT_EQ(report.summary().checked.count("conv"), 1u);
  EXPECT_EQ(report.summary().checked.at("conv"), 3u);
  EXPECT_TRUE(report.findings().empty());
}

}  // namespace
}  // namespace ttrace::shim::testing

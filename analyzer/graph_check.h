// cuDNN backend graph executions (cudnnBackendExecute, format.h: BackendGraphRecord): the graphs the analyzer can
// check, against an FP64 reference, and the others counted as not checked, named by their operations.
//
// Checked: a graph of one convolution (forward, backward data, backward filter) under conv.deterministic
// (conv_check.h); a convolution with a pointwise prologue or epilogue (add, sub, mul, ReLU forward and backward:
// cudnn-frontend's CSBR, dgrad + dReLU, scale-bias-ReLU + wgrad) under conv.fused (graph_conv.cc); and scaled dot-product attention forward under sdpa.forward (docs/error-models.md): the fused
// SDPA_FWD operation (scale, optional Stats; with both sequence lengths, NVIDIA's padding mask: rows past seq_len_q
// not compared, keys past seq_len_kv masked; with page tables, K and V gathered from their captured containers
// through the captured tables, GatherPaged, as Transformer Engine's KV-cache inference builds it), and the
// composite graph
// cudnn-frontend builds for it (PyTorch's cuDNN attention, Transformer Engine): Q·Kᵀ matmul, then pointwise and
// reduction operations (scale, causal or padding mask, max, subtract, exp, sum, divide; log and add for Stats),
// then P·V matmul (K and V may be read through paged cache loads, replayed from their captured container and page
// table; a sink token: an extra per-head logit with no value row, in the softmax's maximum and sum;
// with a padding mask, sequence lengths as matmul overrides and mask inputs: rows past seq_len_q
// are not written and not compared; additive terms on the scaled scores: an attention bias, ALiBi computed in the
// graph from index operations and per-head slopes, each with its own error bound; a dropout mask and scale the
// program supplies, multiplied into P after the softmax; Stats, or Max and Sum_exp, as outputs). The composite's middle operations are evaluated in FP64 on the reference
// scores; the bound assumes they compute a masked, scaled softmax, which is verified on the reference for each row
// (P ≥ 0, rows sum to 1 or 0) — a graph that fails this is not checked. The composite is evaluated in slices (one
// (batch, head) and a block of query rows, kAttentionSliceScores), so what it holds is one slice's intermediates,
// not b·h·s_q·s_kv FP64 values per tensor (GraphWorkingSet: check.cc counts it against --memory-limit); its report
// is the whole-tensor evaluation's.
// Single-threaded, no I/O.
#ifndef TTRACE_ANALYZER_GRAPH_CHECK_H_
#define TTRACE_ANALYZER_GRAPH_CHECK_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyzer/conv_check.h"
#include "analyzer/element_stats.h"
#include "analyzer/error_model.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// One attention forward problem, decoded: Q [b, h, s_q, d], K [b, h_k, s_kv, d], V [b, h_k, s_kv, d_v] (h a
// multiple of h_k: grouped-query heads share K/V), O [b, h, s_q, d_v], Stats [b, h, s_q] (optional), each dense
// row-major in that order.
struct SdpaProblem {
  int64_t b = 0, h = 0, h_k = 0, s_q = 0, s_kv = 0, d = 0, d_v = 0;
  double scale = 1;
  std::vector<double> q, k, v, o;
  std::vector<double> stats;  // empty: not captured
  // Max (the row's largest logit) and Sum_exp (Σ_j e^{logit_j − Max}), FP32 [b, h, s_q] as the graph wrote them
  // (cudnn-frontend's set_logit_max / set_score_sum_exp); empty: not an output.
  std::vector<double> max, sum_exp;
  // mask[i * s_kv + j] (s_q x s_kv, shared by every head) or mask[r * s_kv + j] (r = (b·h + head)·s_q + i, one
  // row per query row: padding masks differ per batch) true where query i may see key j; empty: every key visible.
  std::vector<bool> mask;
  // unwritten[r] (b·h·s_q entries, empty: none): rows the graph does not write (the second matmul's M override,
  // seq_len_q, without a padding value): neither O nor Stats is compared there.
  std::vector<bool> unwritten;
  // sink[r] (b·h·s_q entries, empty: none): an extra logit of row r, exact (a captured FP32 value: cudnn-frontend's
  // sink token, one per head), taken into the softmax's maximum and sum of exponentials but with no value row: O =
  // Σ_j e^{s_j − m} V_j / (Σ_j e^{s_j − m} + e^{sink − m}), m = max(max_j s_j, sink); Stats, Max and Sum_exp
  // include it.
  std::vector<double> sink;
  // Per score element ((b·h + head)·s_q + i)·s_kv + j, empty: none. bias: an additive term the graph adds to
  // scale·S in FP32 (an attention bias input); drop: the factor P·V reads P times (a dropout mask the program
  // supplies, times its scale), applied with drop_roundings more FP32 roundings of P.
  std::vector<double> bias, drop;
  int drop_roundings = 0;
  // With bias: the additive terms' count (FP32 additions, in graph order: an attention bias, ALiBi), and per
  // score element Σ|term| and Σ (each term's own error bound: ALiBi's product by its slope); empty: one exact term.
  int bias_adds = 1;
  std::vector<double> bias_abs, bias_err;
  double u_in = 0, eta_in = 0;  // unit roundoff and subnormal spacing / 2 of Q's type: P is rounded to it before P·V
  double u_out = 0, eta_out = 0;  // O's type
  // The first row the per-score arrays (a per-row mask, bias, bias_abs, bias_err, drop) hold: the composite
  // attention fills them one slice of rows at a time (graph_attention.cc); 0 when they hold every row.
  int64_t row0 = 0;
};

struct SdpaOutputs {
  ElementStats o, stats, max, sum_exp;
};

// What the Stats, Max and Sum_exp comparisons need of one query row: its reference maximum logit m, the sum l of
// e^{logit − m}, the scores' error bound E and the terms of the maximum and the sum (the visible keys, and a sink;
// 0: nothing compared).
struct SdpaRow {
  double m = -HUGE_VAL, l = 0, E = 0;
  int64_t terms = 0;
};

// Compares O and Stats with the FP64 reference under sdpa.forward.
SdpaOutputs ReplaySdpa(const SdpaProblem& p);
// ReplaySdpa in parts: O's rows [row_begin, row_end) into out->o (rows in order, the per-score arrays from p.row0),
// their summaries into rows[0 .. row_end − row_begin); then Stats, Max and Sum_exp of every row from the summaries
// of all rows. Called over consecutive row ranges, the same comparisons in the same order as ReplaySdpa.
void ReplaySdpaRows(const SdpaProblem& p, int64_t row_begin, int64_t row_end, SdpaOutputs* out, SdpaRow* rows);
void CompareSdpaRows(const SdpaProblem& p, const std::vector<SdpaRow>& rows, SdpaOutputs* out);

// Checks one cudnnBackendExecute op of `rank` into `report`.
void CheckGraphOp(int rank, const Op& op, CheckReport* report, uint64_t max_work);

// Internal to graph_check.cc and graph_attention.cc: a captured graph tensor (`after`: as the execution left it)
// dense in row-major order of its dims, false when missing or not as the record says; fills an attention problem from graph tensors q, k
// ([b, h_k, s_kv, d]), v, o, stats (-1: none), returning the not-checked reason or ""; reports a replay; checks a
// composite attention graph (false when the graph is not one).
// `as` (null: the tensor's own entry): the entry K is read through (Kᵀ's with its last two dims swapped); `data`
// (null: the captured tensor): the data read (a paged cache load's replayed output); the same for K and V in FillSdpa.
bool Dense(const Op& op, bool after, int32_t index, std::vector<double>* out, const format::GraphTensor* as = nullptr,
           const Tensor* data = nullptr);
std::string FillSdpa(const Op& op, int32_t q, int32_t k, int32_t v, int32_t o, int32_t stats, SdpaProblem* p,
                     const format::GraphTensor* k_as = nullptr, const Tensor* k_data = nullptr,
                     const Tensor* v_data = nullptr, const format::GraphTensor* v_as = nullptr);
// A paged cache rebuilt from its captured container `c` [blocks, h, block size, d], page table `t` [b, 1, n, 1] and
// sequence lengths `l` [b, 1, 1, 1] into `out` as if a tensor of entry `y` ([b, h, s, d], or [b, h, d, s] with
// stride 1 on its third dimension: K^T) had been captured, exact (element bytes copied): row j < len[i] of sequence i
// is container row (table[i, j / block size], head, j % block size); rows past len are +0. "" or the not-checked
// reason (a table entry read outside the container among them). graph_attention.cc: a PAGED_CACHE_LOAD's replay, and
// the fused SDPA_FWD's paged K and V.
std::string GatherPaged(const Op& op, int32_t c, int32_t t, int32_t l, const format::GraphTensor& y,
                        uint64_t max_work, Tensor* out, std::vector<int64_t>* len);
void ReportSdpa(int rank, const Op& op, const SdpaProblem& p, CheckReport* report, const std::string& form);
// ReportSdpa of outputs already compared (`p` names the problem: shapes, masks, terms, unwritten rows).
void ReportSdpaOutputs(int rank, const Op& op, const SdpaProblem& p, const SdpaOutputs& s, CheckReport* report,
                       const std::string& form);
// The composite is evaluated in slices of about `slice_scores` scores (graph_attention.cc): one (batch, head) and
// a block of its query rows at a time, where the graph allows it; 0: the whole tensors at once.
inline constexpr int64_t kAttentionSliceScores = int64_t{1} << 16;
bool CheckCompositeAttention(int rank, const Op& op, CheckReport* report, uint64_t max_work,
                             int64_t slice_scores = kAttentionSliceScores);
// Bytes checking graph `op` holds beyond its payloads and their FP64 copies (check.cc: OpCost): one slice of the
// composite attention's intermediates (at kAttentionSliceScores), conv.fused's intermediates; 0 for other graphs.
uint64_t GraphWorkingSet(const Op& op);
uint64_t AttentionWorkingSet(const Op& op, int64_t slice_scores);  // 0: not a composite attention
uint64_t ConvFusionWorkingSet(const Op& op);                        // 0: not a conv.fused graph
// The geometry of a graph's convolution `g` (operands x, w, y) into `p`: direction, sizes, groups, padding, strides,
// dilations, alpha, beta; false when cuDNN's shape rules do not hold or ConvProblem cannot express it (asymmetric
// padding, more than 3 spatial dims).
bool ConvGraphGeometry(const format::GraphOp& g, const format::GraphTensor& x, const format::GraphTensor& w,
                       const format::GraphTensor& y, ConvProblem* p);
// A convolution with a pointwise prologue or epilogue (graph_conv.cc: conv.fused); false when the graph is not one.
bool CheckConvFusion(int rank, const Op& op, CheckReport* report, uint64_t max_work);
// conv.fused's (value, error bound) pairs of a tensor, dense row-major (graph_conv.cc).
struct BoundedTensor {
  std::vector<double> v, e;
};
using BoundedValues = std::map<int32_t, BoundedTensor>;
// One pointwise operation under conv.fused's rules (ADD, SUB, MUL, RELU_FWD and RELU_BWD with their clips,
// IDENTITY, GEN_INDEX; FP32 math, or INT32 math on exact integers) on inputs in `v`, its output put in `v`; "" or
// the reason it cannot be evaluated.
// `index_base` (null: zeros): what GEN_INDEX adds per axis (the origin of a slice of the tensors).
std::string EvalBoundedPointwise(const format::GraphOp& g, const std::vector<format::GraphTensor>& T, BoundedValues* v,
                                 const int64_t* index_base = nullptr);
// Offset of y's multi-index `idx` in a dense tensor `t` that broadcasts (size-1 dims) to y's shape.
int64_t BroadcastOffset(const format::GraphTensor& t, const format::GraphTensor& y, const int64_t* idx);
// A finding about the first violating element of an output (`what`: "O elements", ...).
Finding GraphElementFinding(int rank, const Op& op, const char* check, ErrorModelId model, const char* what,
                            const ElementStats& st, const std::string& detail);

// A ReLU's clips (format.h: cuDNN's defaults where the program set none: lower 0, upper +inf, slope 0):
//   RELU_FWD  y = x ≤ lower ? lower + slope·(x − lower) : x ≥ upper ? upper : x
//   RELU_BWD  dx = x ≤ lower ? slope·dy : x ≥ upper ? 0 : dy   (x the forward input)
struct ReluClips {
  double lower = 0, upper = HUGE_VAL, slope = 0;
};
ReluClips ReluClipsOf(const format::GraphOp& g);
// The FP64 value of pointwise operation g at its inputs x (alpha1 already applied), b (alpha2 applied; RELU_BWD:
// dy), t (BINARY_SELECT's condition), index (GEN_INDEX's along g.axis); false for a mode not evaluated here.
bool PointwiseValue(const format::GraphOp& g, double x, double b, double t, double index, double* r);

// "matmul, pointwise(mul), reduction(max), ...": a graph's operations, for not-checked reasons.
std::string GraphOpNames(const std::vector<format::GraphOp>& ops);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_GRAPH_CHECK_H_

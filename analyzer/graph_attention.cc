// The composite attention graph of cudnn-frontend (graph_check.h): the two matmuls are found by their operands
// (S = Q·Kᵀ from two graph inputs, O = P·V to a graph output), the pointwise and reduction operations between them
// are evaluated in FP64 from the exact scores, and the graph is checked under sdpa.forward only when what they
// compute is a scaled, masked softmax: P must equal softmax(scale·S) over the keys P leaves non-zero, to 1e-9, in
// every row (the scale is the scalar a pointwise MUL applies to S; masked keys are those whose P is exactly 0,
// which they are on the device too: exp(−inf) or exp of FLOAT's lowest minus the row maximum), and a Stats
// output, when there is one, must equal the log-sum-exp of the visible scaled scores. The mask is per query row
// (padding masks differ per batch); the matmuls' M/N/K overrides (sequence lengths) are read from their captured
// tensors: rows past the second matmul's M override are not written, so not compared, and every key kept in a
// written row must lie inside both matmuls' overrides. An attention bias (one pointwise ADD of a captured tensor)
// is part of the logits, and so is ALiBi (cudnn-frontend's set_alibi_mask: column − row indices in INT32 times a
// per-head slope tensor, added to the logits): every pointwise ADD of a term that does not depend on the scores to
// one that does is an additive term, carried with its own error bound (conv.fused's rules through the operations that
// compute it); pointwise MULs after the softmax by scalars and captured tensors (custom dropout: its scale
// and mask) are the factor P·V reads P times, and P before them is what is verified. The graph's other outputs must
// each equal, row by row, the log-sum-exp (Stats), the largest logit (Max) or the sum of exponentials relative to it
// (Sum_exp: set_logit_max / set_score_sum_exp); each is compared under sdpa.forward. A sink token (set_sink_token: a
// captured per-head value a pointwise MAX takes into the row maximum) is an extra logit in the maximum and the sum
// with no value row; P, Stats, Max and Sum_exp are verified and compared with it. A graph with an RNG operation
// (Philox dropout inside cuDNN) is not checked: its mask cannot be replayed. Paged K and V (PAGED_CACHE_LOAD
// operations writing K^T and V from a captured container through a captured page table, cudnn-frontend's paged
// attention) are replayed by copying the container's elements through the table (ReplayPagedLoad), exact; a page
// index outside the container, or a key the softmax keeps at or past the load's sequence length, is not checked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/graph_check.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

namespace {

using format::GraphOp;
using format::GraphTensor;
using Values = std::map<int32_t, std::vector<double>>;

constexpr int32_t kPointwise = 13, kMatmul = 19, kReduction = 22, kRng = 33, kPagedLoad = 35;

int64_t Count(const GraphTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.nb_dims; ++i) n *= t.dims[i];
  return n;
}

// A tensor the evaluation can index: every dim at least 1 (a trace is hostile input: a 0 or negative dim would size
// the output empty or wrap its count).
bool Indexable(const GraphTensor& t) {
  for (int i = 0; i < t.nb_dims; ++i)
    if (t.dims[i] < 1) return false;
  return true;
}

// Operand i is evaluated and holds one value per element of its tensor.
bool Evaluated(const std::vector<GraphTensor>& T, const Values& v, int32_t i) {
  const auto it = v.find(i);
  const GraphTensor& t = T[static_cast<size_t>(i)];
  return it != v.end() && Indexable(t) && it->second.size() == static_cast<size_t>(Count(t));
}

// The middle operations' operands: a pointwise operation's x, b, y, t; a reduction's x, y.
std::vector<int32_t> Operands(const GraphOp& g) {
  std::vector<int32_t> out;
  for (int r : {0, 1, 2, 3})
    if (g.operands[r] >= 0 && (g.type == kPointwise || r < 2)) out.push_back(g.operands[r]);
  return out;
}

// `index_base`: what GEN_INDEX adds per axis (the box's origin where y spans the axis).
bool Pointwise(const GraphOp& g, const std::vector<GraphTensor>& T, Values* v, const int64_t* index_base) {
  const int32_t xi = g.operands[0], bi = g.operands[1], yi = g.operands[2], ti = g.operands[3];
  if (xi < 0 || yi < 0 || g.operands[4] >= 0 || g.operands[5] >= 0) return false;
  const GraphTensor& y = T[static_cast<size_t>(yi)];
  if (!Indexable(y)) return false;
  for (int32_t i : {xi, bi, ti})
    if (i >= 0 && (T[static_cast<size_t>(i)].nb_dims != y.nb_dims || !Evaluated(T, *v, i))) return false;
  // An operand larger than y where y has 1 (cudnn-frontend's softmax with a sink token: a pointwise MAX of the
  // unreduced scores and the sink into the row maximum): MAX and MIN only, y the extremum over the results that
  // map to it (simgpu's reading; cuDNN documents none). Other modes are not evaluated.
  GraphTensor whole = y;
  for (int32_t i : {xi, bi, ti}) {
    if (i < 0) continue;
    const GraphTensor& t = T[static_cast<size_t>(i)];
    for (int d = 0; d < y.nb_dims; ++d) {
      if (t.dims[d] == y.dims[d] || t.dims[d] == 1) continue;
      if (y.dims[d] != 1 || (g.mode != 2 && g.mode != 3) || ti >= 0) return false;
      whole.dims[d] = std::max(whole.dims[d], t.dims[d]);
    }
  }
  if (Count(whole) != Count(y)) {
    std::vector<double> out(static_cast<size_t>(Count(y)), g.mode == 3 ? -HUGE_VAL : HUGE_VAL);
    int64_t idx[format::kGraphMaxDims] = {};
    for (int64_t e = 0; e < Count(whole); ++e) {
      auto at = [&](int32_t i) {
        return (*v)[i][static_cast<size_t>(BroadcastOffset(T[static_cast<size_t>(i)], whole, idx))];
      };
      const double x = at(xi) * (g.alpha == 0 ? 1 : g.alpha), b = bi >= 0 ? at(bi) * (g.beta == 0 ? 1 : g.beta) : 0;
      double r;
      if (!PointwiseValue(g, x, b, 0, 0, &r)) return false;
      double& o = out[static_cast<size_t>(BroadcastOffset(y, whole, idx))];
      o = std::isnan(o) || std::isnan(r) ? NAN : g.mode == 3 ? std::max(o, r) : std::min(o, r);
      for (int d = whole.nb_dims - 1; d >= 0 && ++idx[d] == whole.dims[d]; --d) idx[d] = 0;
    }
    (*v)[yi] = std::move(out);
    return true;
  }
  std::vector<double> out(static_cast<size_t>(Count(y)));
  int64_t idx[format::kGraphMaxDims] = {};
  for (size_t e = 0; e < out.size(); ++e) {
    auto at = [&](int32_t i) { return (*v)[i][static_cast<size_t>(BroadcastOffset(T[static_cast<size_t>(i)], y, idx))]; };
    const double x = at(xi) * (g.alpha == 0 ? 1 : g.alpha), b = bi >= 0 ? at(bi) * (g.beta == 0 ? 1 : g.beta) : 0;
    if (g.mode == 501 && (g.axis < 0 || g.axis >= y.nb_dims)) return false;
    if (g.mode == 601 && ti < 0) return false;
    double r;
    if (!PointwiseValue(g, x, b, ti >= 0 ? at(ti) : 0,
                        g.mode == 501 ? static_cast<double>(idx[g.axis] + index_base[g.axis]) : 0, &r))
      return false;
    out[e] = r;
    for (int d = y.nb_dims - 1; d >= 0 && ++idx[d] == y.dims[d]; --d) idx[d] = 0;
  }
  (*v)[yi] = std::move(out);
  return true;
}

bool Reduction(const GraphOp& g, const std::vector<GraphTensor>& T, Values* v) {
  const int32_t xi = g.operands[0], yi = g.operands[1];
  if (xi < 0 || yi < 0 || !Evaluated(T, *v, xi)) return false;
  const GraphTensor &x = T[static_cast<size_t>(xi)], &y = T[static_cast<size_t>(yi)];
  if (x.nb_dims != y.nb_dims || !Indexable(y)) return false;
  const double init = g.mode == 0 ? 0 : g.mode == 1 ? 1 : g.mode == 2 ? HUGE_VAL : g.mode == 3 ? -HUGE_VAL : NAN;
  if (std::isnan(init)) return false;
  std::vector<double> out(static_cast<size_t>(Count(y)), init);
  const std::vector<double>& in = (*v)[xi];
  int64_t idx[format::kGraphMaxDims] = {};
  for (double value : in) {
    double& r = out[static_cast<size_t>(BroadcastOffset(y, x, idx))];
    r = g.mode == 0 ? r + value : g.mode == 1 ? r * value : g.mode == 2 ? std::min(r, value) : std::max(r, value);
    for (int d = x.nb_dims - 1; d >= 0 && ++idx[d] == x.dims[d]; --d) idx[d] = 0;
  }
  (*v)[yi] = std::move(out);
  return true;
}

// The scalar a pointwise MUL applies to tensor s, 1 when none does; false when s is multiplied by a non-scalar
// (`T` the whole tensors: a slice of a per-batch tensor is no scalar).
bool ScaleOf(const std::vector<GraphOp>& ops, const std::vector<GraphTensor>& T, const Values& v, int32_t s,
             double* scale) {
  *scale = 1;
  for (const GraphOp& g : ops) {
    if (g.type != kPointwise || g.operands[0] != s) continue;
    if (g.mode != 1) continue;
    const int32_t b = g.operands[1];
    if (b < 0 || Count(T[static_cast<size_t>(b)]) != 1 || v.count(b) == 0) return false;
    *scale = v.at(b)[0];
  }
  return true;
}

// A box of the scores' index space [b, h, s_q, s_kv]: its origin and extent per axis.
struct Box {
  int64_t lo[format::kGraphMaxDims] = {}, n[4] = {};
};

// What GEN_INDEX writing `y` (whole dims) adds per axis in `box`: the origin where y spans the axis.
void IndexBase(const GraphTensor& y, const Box& box, int64_t* base) {
  for (int a = 0; a < format::kGraphMaxDims; ++a) base[a] = a < 4 && a < y.nb_dims && y.dims[a] != 1 ? box.lo[a] : 0;
}

// Additive term f with its error bound into `bv`: captured and by-value tensors exact (their values in `v`),
// virtual ones through the pointwise operations that write them, none of which may read the scores (`dep`).
// `T` the whole tensors, `Ts` their slices in `box` (the values').
std::string BoundTerm(const std::vector<GraphOp>& ops, const std::vector<GraphTensor>& T,
                      const std::vector<GraphTensor>& Ts, const Box& box, const Values& v,
                      const std::set<int32_t>& dep, int32_t f, BoundedValues* bv, int depth) {
  if (bv->count(f) > 0) return "";
  if (depth > 32 || dep.count(f) > 0) return "it depends on the scores";
  const GraphTensor& t = T[static_cast<size_t>(f)];
  if (!t.is_virtual || t.by_value) {
    auto it = v.find(f);
    if (it == v.end()) return "a tensor not captured";
    (*bv)[f] = BoundedTensor{it->second, std::vector<double>(it->second.size(), 0)};
    return "";
  }
  const GraphOp* w = nullptr;
  for (const GraphOp& g : ops)
    if (g.operands[g.type == kReduction ? 1 : 2] == f) w = &g;
  if (w == nullptr || w->type != kPointwise || w->operands[3] >= 0) return "an operation other than add, sub, mul";
  for (int r : {0, 1}) {
    const int32_t i = w->operands[r];
    if (i < 0 || (r == 0 && w->mode == 501)) continue;  // GEN_INDEX reads its input's shape only
    const std::string why = BoundTerm(ops, T, Ts, box, v, dep, i, bv, depth + 1);
    if (!why.empty()) return why;
  }
  int64_t base[format::kGraphMaxDims];
  IndexBase(T[static_cast<size_t>(w->operands[2])], box, base);
  return EvalBoundedPointwise(*w, Ts, bv, base);
}

// A PAGED_CACHE_LOAD's output g (container, page table, sequence lengths, y: format.md) rebuilt from its captured
// inputs as if y had been captured (`out`: y's own layout, the container's element bytes copied, exact), with the
// sequence lengths per batch (`len`); "" or why not. Row j < len[i] of sequence i is container row
// (table[i, j / block size], head, j % block size) (simgpu's graph_kernels.h reading, the reconstruction
// cudnn-frontend's tests invert); rows past len are left +0 — NVIDIA defines nothing there, so the caller compares
// only rows whose softmax keeps no key past len. y [b, h, s, d], or [b, h, d, s] with stride 1 on its third
// dimension (K^T).
std::string ReplayPagedLoad(const Op& op, const GraphOp& g, uint64_t max_work, Tensor* out, std::vector<int64_t>* len) {
  const int32_t ci = g.operands[0], ti = g.operands[1], li = g.operands[2], yi = g.operands[3];
  if (ci < 0 || ti < 0 || li < 0 || yi < 0) return "a paged cache load without its operands";
  return GatherPaged(op, ci, ti, li, op.graph_tensors[static_cast<size_t>(yi)], max_work, out, len);
}

}  // namespace

std::string GatherPaged(const Op& op, int32_t ci, int32_t ti, int32_t li, const GraphTensor& y, uint64_t max_work,
                        Tensor* out, std::vector<int64_t>* len) {
  const auto& T = op.graph_tensors;
  const GraphTensor &c = T[static_cast<size_t>(ci)], &t = T[static_cast<size_t>(ti)], &l = T[static_cast<size_t>(li)];
  if (c.nb_dims != 4 || t.nb_dims != 4 || l.nb_dims != 4 || y.nb_dims != 4 || c.data_type != y.data_type)
    return "a paged cache load of another shape";
  const bool transposed = y.strides[2] == 1 && y.strides[3] != 1;
  const int64_t b = y.dims[0], h = y.dims[1], s = transposed ? y.dims[3] : y.dims[2], d = transposed ? y.dims[2] : y.dims[3];
  const int64_t block = c.dims[2], n = t.dims[2];
  if (d != c.dims[3] || h != c.dims[1] || t.dims[0] != b || t.dims[1] != 1 || t.dims[3] != 1 || l.dims[0] != b ||
      l.dims[1] != 1 || l.dims[2] != 1 || l.dims[3] != 1 || block < 1 || (s + block - 1) / block > n)
    return "a paged cache load of another shape";
  std::vector<double> table, lengths;
  auto captured = op.graph_in.find(static_cast<uint32_t>(ci));
  if (!Dense(op, false, ti, &table) || !Dense(op, false, li, &lengths) || captured == op.graph_in.end() ||
      c.is_virtual)
    return op.MissingTensorsReason();
  const Tensor& cc = *captured->second;
  const int64_t c_span = StridedSpan(4, c.dims, c.strides), y_span = StridedSpan(4, y.dims, y.strides);
  if (c_span <= 0 || y_span <= 0 || cc.meta.rows != c_span || cc.meta.cols != 1 || cc.meta.batch != 1 ||
      cc.data.size() % static_cast<size_t>(c_span) != 0)
    return op.MissingTensorsReason();
  const size_t es = cc.data.size() / static_cast<size_t>(c_span);
  if (static_cast<uint64_t>(y_span) > max_work) return "replay over the work budget";
  out->meta = cc.meta;
  out->meta.rows = static_cast<uint64_t>(y_span);
  out->data.assign(static_cast<size_t>(y_span) * es, '\0');
  len->assign(static_cast<size_t>(b), 0);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t li_ = std::max<int64_t>(0, std::min<int64_t>(s, static_cast<int64_t>(lengths[static_cast<size_t>(i)])));
    (*len)[static_cast<size_t>(i)] = li_;
    for (int64_t j = 0; j < li_; ++j) {
      const double page = table[static_cast<size_t>(i * n + j / block)];
      if (!(page >= 0 && page < static_cast<double>(c.dims[0]))) return "a page table entry outside the container";
      for (int64_t hh = 0; hh < h; ++hh)
        for (int64_t e = 0; e < d; ++e) {
          const int64_t from = static_cast<int64_t>(page) * c.strides[0] + hh * c.strides[1] + (j % block) * c.strides[2] +
                               e * c.strides[3];
          const int64_t to = i * y.strides[0] + hh * y.strides[1] +
                             (transposed ? e * y.strides[2] + j * y.strides[3] : j * y.strides[2] + e * y.strides[3]);
          memcpy(&out->data[static_cast<size_t>(to) * es], &cc.data[static_cast<size_t>(from) * es], es);
        }
    }
  }
  return "";
}

namespace {

// The composite's two matmuls, S = Q·Kᵀ (m1) and O = P·V (m2): 0 when `op` is not a composite attention, 2 when
// it is one with an RNG operation, else 1.
int FindAttention(const Op& op, const GraphOp** m1_out, const GraphOp** m2_out,
                  std::map<int32_t, const GraphOp*>* loads_out = nullptr) {
  const auto& T = op.graph_tensors;
  std::vector<const GraphOp*> mm;
  bool rng = false;
  std::map<int32_t, const GraphOp*> loads;  // paged cache loads by the tensor they write
  for (const GraphOp& g : op.graph_ops) {
    if (g.type == kMatmul) mm.push_back(&g);
    else if (g.type == kRng) rng = true;
    else if (g.type == kPagedLoad) loads[g.operands[3]] = &g;
    else if (g.type != kPointwise && g.type != kReduction) return 0;
  }
  if (mm.size() != 2) return 0;
  const GraphOp *m1 = mm[0], *m2 = mm[1];
  if (m1->operands[2] == m2->operands[0]) std::swap(m1, m2);  // graph order is free
  const int32_t qi = m1->operands[0], kti = m1->operands[1], si = m1->operands[2];
  const int32_t pi = m2->operands[0], vi = m2->operands[1], oi = m2->operands[2];
  // Overrides (operands 3, 4, 5: M, N, K): the first matmul's M and N (seq_len_q, seq_len_kv), the second's M and K
  // (seq_len_q, seq_len_kv), as cudnn-frontend sets them with a padding mask; no other.
  // K and V may be paged: each the output of a paged cache load (cudnn-frontend's paged attention), no other tensor.
  for (const auto& [y, g] : loads)
    if (y != kti && y != vi) return 0;
  auto virt = [&](int32_t i) { return T[static_cast<size_t>(i)].is_virtual && loads.count(i) == 0; };
  if (qi < 0 || kti < 0 || si < 0 || pi < 0 || vi < 0 || oi < 0 || virt(qi) || virt(kti) ||
      !T[static_cast<size_t>(pi)].is_virtual || T[static_cast<size_t>(oi)].is_virtual || m1->operands[5] >= 0 ||
      m2->operands[4] >= 0)
    return 0;
  *m1_out = m1, *m2_out = m2;
  if (loads_out != nullptr) *loads_out = std::move(loads);
  return rng ? 2 : 1;
}

// The order the middle operations are evaluated in (each once its inputs are known: the scores, scalars by value,
// captured graph inputs), `stuck` when some operation never becomes ready; and the tensors whose values depend on
// the scores (GEN_INDEX reads only its input's shape).
void Schedule(const Op& op, const GraphOp* m1, const GraphOp* m2, std::vector<const GraphOp*>* order, bool* stuck,
              std::set<int32_t>* dep) {
  const auto& T = op.graph_tensors;
  const int32_t si = m1->operands[2];
  std::set<int32_t> known = {si}, outputs;
  for (size_t i = 0; i < T.size(); ++i)
    if (T[i].by_value && Count(T[i]) == 1) known.insert(static_cast<int32_t>(i));
  for (const GraphOp& g : op.graph_ops)
    if (&g != m1 && &g != m2 && g.type != kPagedLoad) outputs.insert(g.operands[g.type == kReduction ? 1 : 2]);
  for (const GraphOp& g : op.graph_ops) {
    if (&g == m1 || &g == m2 || g.type == kPagedLoad) continue;
    for (int r : {0, 1, 3}) {
      const int32_t i = g.operands[r];
      if (i >= 0 && !(g.type == kReduction && r != 0) && !T[static_cast<size_t>(i)].is_virtual && outputs.count(i) == 0)
        known.insert(i);
    }
  }
  std::vector<const GraphOp*> pending;
  for (const GraphOp& g : op.graph_ops)
    if (&g != m1 && &g != m2 && g.type != kPagedLoad) pending.push_back(&g);
  *stuck = false;
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const GraphOp* g) {
      for (int r : {0, 1, 3})
        if (g->operands[r] >= 0 && !(g->type == kReduction && r != 0) && known.count(g->operands[r]) == 0) return false;
      return true;
    });
    if (ready == pending.end()) {
      *stuck = true;
      break;
    }
    known.insert((*ready)->operands[(*ready)->type == kReduction ? 1 : 2]);
    order->push_back(*ready);
    pending.erase(ready);
  }
  *dep = {si};
  for (const GraphOp* g : *order) {
    bool reads = false;
    for (int r : {0, 1, 3}) {
      const int32_t i = g->operands[r];
      if (i >= 0 && !(g->type == kReduction && r != 0) && !(r == 0 && g->type == kPointwise && g->mode == 501) &&
          dep->count(i) > 0)
        reads = true;
    }
    if (reads) dep->insert(g->operands[g->type == kReduction ? 1 : 2]);
  }
}

// How the middle operations are evaluated: per (batch, head) and block of `rows` query rows (about slice_scores
// scores) when every tensor they read or write is [b or 1, h or 1, s_q or 1, s_kv or 1] (or a single element) and
// no reduction reduces the batch or head axis (nor the rows: else whole rows per box); otherwise (or slice_scores
// 0) over the whole tensors, one box. Attention is independent across (batch, head), its forward across query rows;
// a box's GEN_INDEX sees the box's true indices, tensors of extent 1 on an axis broadcast, sequence lengths and
// the matmuls' overrides are read per batch whole.
struct SlicePlan {
  int64_t full[4] = {1, 1, 1, 1};  // the scores' dims
  bool sliced = false;
  int64_t rows = 0;  // query rows per box, when sliced
};

SlicePlan PlanSlices(const Op& op, const GraphOp* m1, const GraphOp* m2, int64_t slice_scores) {
  const auto& T = op.graph_tensors;
  SlicePlan plan;
  const GraphTensor& ts = T[static_cast<size_t>(m1->operands[2])];
  if (ts.nb_dims != 4) {
    plan.full[0] = Count(ts);
    return plan;
  }
  std::copy(ts.dims, ts.dims + 4, plan.full);
  if (slice_scores <= 0) return plan;
  bool rows_ok = true;
  for (const GraphOp& g : op.graph_ops) {
    if (&g == m1 || &g == m2 || g.type == kPagedLoad) continue;
    for (const int32_t i : Operands(g)) {
      const GraphTensor& t = T[static_cast<size_t>(i)];
      if (Count(t) == 1) continue;
      if (t.nb_dims != 4) return plan;
      for (int a = 0; a < 4; ++a)
        if (t.dims[a] != 1 && t.dims[a] != plan.full[a]) return plan;
    }
    // Reductions, and pointwise MAX or MIN of an operand larger than their output (a sink's row maximum), reduce
    // where the output has extent 1 and an input does not.
    const int32_t yi = g.operands[g.type == kReduction ? 1 : 2];
    if (yi < 0) continue;
    const GraphTensor& y = T[static_cast<size_t>(yi)];
    for (int r : {0, 1, 3}) {
      const int32_t xi = g.operands[r];
      if (xi < 0 || (g.type == kReduction && r != 0)) continue;
      const GraphTensor& x = T[static_cast<size_t>(xi)];
      if (Count(x) == 1) continue;
      if (y.nb_dims != 4 || (x.dims[0] != y.dims[0] && y.dims[0] == 1) || (x.dims[1] != y.dims[1] && y.dims[1] == 1))
        return plan;
      rows_ok = rows_ok && !(x.dims[2] != y.dims[2] && y.dims[2] == 1);
    }
  }
  plan.sliced = true;
  plan.rows = rows_ok ? std::clamp<int64_t>(slice_scores / std::max<int64_t>(1, plan.full[3]), 1,
                                            std::max<int64_t>(1, plan.full[2]))
                      : plan.full[2];
  return plan;
}

// The boxes of a plan, in the order of the rows they hold: their count, and box k with its first row (b·h·s_q
// numbering) and row count.
struct PlannedBox {
  Box box;
  int64_t row0, rows;
};
int64_t BoxCount(const SlicePlan& plan) {
  const int64_t* f = plan.full;
  return plan.sliced ? f[0] * f[1] * ((f[2] + plan.rows - 1) / plan.rows) : 1;
}
PlannedBox BoxAt(const SlicePlan& plan, int64_t k) {
  const int64_t* f = plan.full;
  PlannedBox b{};
  if (!plan.sliced) {
    std::copy(f, f + 4, b.box.n);
    b.row0 = 0, b.rows = f[0] * f[1] * f[2];
    return b;
  }
  const int64_t per_head = (f[2] + plan.rows - 1) / plan.rows, bh = k / per_head, i0 = k % per_head * plan.rows;
  b.box.lo[0] = bh / f[1], b.box.lo[1] = bh % f[1], b.box.lo[2] = i0;
  b.box.n[0] = b.box.n[1] = 1, b.box.n[2] = std::min(plan.rows, f[2] - i0), b.box.n[3] = f[3];
  b.row0 = bh * f[2] + i0, b.rows = b.box.n[2];
  return b;
}

// Tensor t's slice in `box` (dims of extent 1 broadcast and stay; packed row-major).
GraphTensor SliceOf(const GraphTensor& t, const Box& box) {
  GraphTensor s = t;
  for (int a = 0; a < 4 && a < t.nb_dims; ++a)
    if (t.dims[a] != 1) s.dims[a] = box.n[a];
  int64_t stride = 1;
  for (int d = s.nb_dims - 1; d >= 0; --d) s.strides[d] = stride, stride *= s.dims[d];
  return s;
}

// The values of slice `ts` of `t` (whole values dense row-major) in `box`.
std::vector<double> Extract(const std::vector<double>& whole, const GraphTensor& t, const GraphTensor& ts,
                            const Box& box) {
  int64_t stride[format::kGraphMaxDims], s = 1;
  for (int d = t.nb_dims - 1; d >= 0; --d) stride[d] = s, s *= t.dims[d];
  std::vector<double> out(static_cast<size_t>(Count(ts)));
  int64_t idx[format::kGraphMaxDims] = {};
  for (size_t e = 0; e < out.size(); ++e) {
    int64_t off = 0;
    for (int d = 0; d < t.nb_dims; ++d) off += (idx[d] + (d < 4 && t.dims[d] != 1 ? box.lo[d] : 0)) * stride[d];
    out[e] = whole[static_cast<size_t>(off)];
    for (int d = ts.nb_dims - 1; d >= 0 && ++idx[d] == ts.dims[d]; --d) idx[d] = 0;
  }
  return out;
}

// Bytes one box of `plan` holds: every middle tensor's values (8 per element), the additive terms' (value, bound)
// pairs (16 more per element of each tensor that does not read the scores: a bound over them), the per-score arrays
// of SdpaProblem (bias, its magnitude and bound, the dropout factor, the mask: 33); and per row of the whole
// problem the summaries and flags (40).
uint64_t BoxBytes(const Op& op, const GraphOp* m1, const GraphOp* m2, const SlicePlan& plan) {
  const auto& T = op.graph_tensors;
  if (BoxCount(plan) == 0) return 0;
  const Box box = BoxAt(plan, 0).box;
  std::set<int32_t> seen, dep;
  std::vector<const GraphOp*> order;
  bool stuck;
  Schedule(op, m1, m2, &order, &stuck, &dep);
  // Counts fit int64 (the reader refuses tensors whose dims do not: trace_model.cc Sizeable); their bytes need not
  // fit uint64: summed wide, saturated at the end.
  unsigned __int128 bytes = 0;
  for (const GraphOp& g : op.graph_ops) {
    if (&g == m1 || &g == m2 || g.type == kPagedLoad) continue;
    for (const int32_t i : Operands(g)) {
      if (!seen.insert(i).second) continue;
      const unsigned __int128 n = static_cast<uint64_t>(Count(plan.sliced ? SliceOf(T[static_cast<size_t>(i)], box) : T[static_cast<size_t>(i)]));
      bytes += 8 * n + (dep.count(i) == 0 ? 16 * n : 0);
    }
  }
  // Paged K and V, replayed from their containers (not payloads of the op): their bytes (at most 8 an element)
  // and FP64 copies.
  for (const GraphOp& g : op.graph_ops)
    if (g.type == kPagedLoad && g.operands[3] >= 0)
      bytes += 16 * static_cast<unsigned __int128>(Count(T[static_cast<size_t>(g.operands[3])]));
  const unsigned __int128 scores = static_cast<uint64_t>(box.n[0] * box.n[1] * box.n[2] * box.n[3]);
  const unsigned __int128 rows = static_cast<uint64_t>(plan.full[0] * plan.full[1] * plan.full[2]);
  bytes += 33 * scores + 40 * rows;
  return bytes > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

}  // namespace

uint64_t AttentionWorkingSet(const Op& op, int64_t slice_scores) {
  const GraphOp *m1 = nullptr, *m2 = nullptr;
  if (FindAttention(op, &m1, &m2) != 1) return 0;
  return BoxBytes(op, m1, m2, PlanSlices(op, m1, m2, slice_scores));
}

bool CheckCompositeAttention(int rank, const Op& op, CheckReport* report, uint64_t max_work, int64_t slice_scores) {
  const auto& ops = op.graph_ops;
  const auto& T = op.graph_tensors;
  const GraphOp *m1 = nullptr, *m2 = nullptr;
  std::map<int32_t, const GraphOp*> loads;  // paged cache loads by the tensor they write (K or V)
  const int found = FindAttention(op, &m1, &m2, &loads);
  if (found == 0) return false;
  if (found == 2) return report->AddNotChecked("cuDNN attention with RNG dropout (Philox inside cuDNN: not replayable)"), true;
  const int32_t qi = m1->operands[0], kti = m1->operands[1], si = m1->operands[2];
  const int32_t pi = m2->operands[0], vi = m2->operands[1], oi = m2->operands[2];
  // Q, Kᵀ given as [b, h_k, d, s_kv]: FillSdpa wants K, read through Kᵀ's entry with dims and strides swapped.
  GraphTensor k_entry = T[static_cast<size_t>(kti)];
  std::swap(k_entry.dims[2], k_entry.dims[3]);
  std::swap(k_entry.strides[2], k_entry.strides[3]);
  // Paged K and V: the loads replayed from their captured container, page table and sequence lengths, read as if
  // captured.
  std::map<int32_t, Tensor> replayed;
  std::map<int32_t, std::vector<int64_t>> load_len;
  for (const auto& [y, g] : loads) {
    const std::string why = ReplayPagedLoad(op, *g, max_work, &replayed[y], &load_len[y]);
    if (!why.empty()) return report->AddNotChecked(absl::StrCat("cuDNN paged attention: ", why)), true;
  }
  // The other graph outputs of the middle operations (Stats; or Max and Sum_exp), told apart by their values below.
  std::vector<int32_t> extras;
  for (const GraphOp& g : ops) {
    if (&g == m1 || &g == m2 || g.type == kPagedLoad) continue;
    const int32_t y = g.operands[g.type == kReduction ? 1 : 2];
    if (y < 0 || T[static_cast<size_t>(y)].is_virtual) continue;
    if (extras.size() == 3) return report->AddNotChecked("cuDNN attention graph with extra outputs"), true;
    extras.push_back(y);
  }
  SdpaProblem p;
  const std::string why = FillSdpa(op, qi, kti, vi, oi, -1, &p, &k_entry,
                                   replayed.count(kti) > 0 ? &replayed.at(kti) : nullptr,
                                   replayed.count(vi) > 0 ? &replayed.at(vi) : nullptr);
  if (!why.empty()) return report->AddNotChecked(why), true;
  if (static_cast<uint64_t>(p.b * p.h * p.s_q * p.s_kv * (p.d + p.d_v + 8)) > max_work)
    return report->AddNotChecked("replay over the work budget"), true;
  const GraphTensor& tc1 = T[static_cast<size_t>(si)];
  if (tc1.nb_dims != 4 || tc1.dims[0] != p.b || tc1.dims[1] != p.h || tc1.dims[2] != p.s_q || tc1.dims[3] != p.s_kv)
    return report->AddNotChecked("cuDNN attention shapes disagree"), true;
  // Scalars by value and captured graph inputs the middle operations read (sequence lengths, a dropout mask), whole.
  Values whole;
  for (size_t i = 0; i < T.size(); ++i) {
    const GraphTensor& t = T[i];
    if (t.by_value && Count(t) == 1) whole[static_cast<int32_t>(i)] = {t.value};
  }
  std::set<int32_t> outputs;  // written by a middle operation (Max, Sum_exp are read by others): not inputs
  for (const GraphOp& g : ops)
    if (&g != m1 && &g != m2 && g.type != kPagedLoad) outputs.insert(g.operands[g.type == kReduction ? 1 : 2]);
  for (const GraphOp& g : ops) {
    if (&g == m1 || &g == m2 || g.type == kPagedLoad) continue;
    for (int r : {0, 1, 3}) {
      const int32_t i = g.operands[r];
      if (i < 0 || (g.type == kReduction && r != 0) || T[static_cast<size_t>(i)].is_virtual || whole.count(i) > 0 ||
          outputs.count(i) > 0)
        continue;
      if (!Dense(op, false, i, &whole[i])) return report->AddNotChecked(op.MissingTensorsReason()), true;
    }
  }
  // Per (batch, head): the rows and columns each matmul computes (its overrides; the whole extent without one).
  const int64_t bh_count = p.b * p.h;
  std::vector<int64_t> limit1_m, limit1_n, limit2_m, limit2_k;
  auto limits = [&](int32_t ov, int64_t extent, std::vector<int64_t>* out) {
    out->assign(static_cast<size_t>(bh_count), extent);
    if (ov < 0) return true;
    const GraphTensor& t = T[static_cast<size_t>(ov)];
    std::vector<double> values;
    if (t.nb_dims != 4 || t.dims[2] != 1 || t.dims[3] != 1 || (t.dims[0] != 1 && t.dims[0] != p.b) ||
        (t.dims[1] != 1 && t.dims[1] != p.h) || !Dense(op, false, ov, &values))
      return false;
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      const int64_t idx[4] = {bh / p.h, bh % p.h, 0, 0};
      const double x = values[static_cast<size_t>(BroadcastOffset(t, tc1, idx))];
      (*out)[static_cast<size_t>(bh)] = std::max<int64_t>(0, std::min<int64_t>(extent, static_cast<int64_t>(x)));
    }
    return true;
  };
  if (!limits(m1->operands[3], p.s_q, &limit1_m) || !limits(m1->operands[4], p.s_kv, &limit1_n) ||
      !limits(m2->operands[3], p.s_q, &limit2_m) || !limits(m2->operands[5], p.s_kv, &limit2_k))
    return report->AddNotChecked("cuDNN attention matmul overrides unreadable"), true;
  std::vector<const GraphOp*> order;
  bool stuck;
  std::set<int32_t> dep;
  Schedule(op, m1, m2, &order, &stuck, &dep);
  // A sink token (cudnn-frontend's set_sink_token): a captured tensor of one value per head ([1 or b, 1 or h, 1, 1])
  // that a pointwise MAX takes with score-dependent values into the row maximum, an extra logit in the softmax's
  // maximum and sum that has no value row. The softmax verification below holds P to that reading.
  int32_t sink = -1;
  bool two_sinks = false;
  for (const GraphOp* g : order) {
    const int32_t x = g->operands[0], b = g->operands[1];
    if (g->type != kPointwise || g->mode != 3 || x < 0 || b < 0 || dep.count(x) + dep.count(b) != 1) continue;
    const int32_t f = dep.count(x) > 0 ? b : x;
    const GraphTensor& tf = T[static_cast<size_t>(f)];
    if (tf.is_virtual || tf.nb_dims != 4 || tf.dims[2] != 1 || tf.dims[3] != 1 || (tf.dims[0] != 1 && tf.dims[0] != p.b) ||
        (tf.dims[1] != 1 && tf.dims[1] != p.h) || whole.count(f) == 0)
      continue;
    if (sink >= 0 && sink != f) two_sinks = true;
    if (sink < 0) sink = f;
  }
  if (sink >= 0 && !two_sinks) {
    const GraphTensor& tf = T[static_cast<size_t>(sink)];
    p.sink.resize(static_cast<size_t>(p.b * p.h * p.s_q));
    for (size_t row = 0; row < p.sink.size(); ++row) {
      const int64_t bh = static_cast<int64_t>(row) / p.s_q, bi = bh / p.h, hi = bh % p.h;
      p.sink[row] = whole[sink][static_cast<size_t>((tf.dims[0] == 1 ? 0 : bi) * tf.dims[1] + (tf.dims[1] == 1 ? 0 : hi))];
    }
  }
  const int64_t score_count = bh_count * p.s_q * p.s_kv, row_count = bh_count * p.s_q;
  p.unwritten.assign(static_cast<size_t>(row_count), false);
  std::vector<int> kinds(extras.size(), 1 | 2 | 4);  // which of Stats, Max, Sum_exp each extra output may be
  std::vector<SdpaRow> summaries(static_cast<size_t>(row_count));
  SdpaOutputs compared;
  // One box: its slice of every tensor, the scores, the middle operations, then the same verification and
  // comparisons as over the whole tensors, for the box's rows. "" or the not-checked reason.
  const SlicePlan plan = PlanSlices(op, m1, m2, slice_scores);
  const int64_t boxes = BoxCount(plan);
  auto check_box = [&](const PlannedBox& pb) -> std::string {
    const Box& box = pb.box;
    std::vector<GraphTensor> sliced;
    if (plan.sliced) {
      sliced.reserve(T.size());
      for (const GraphTensor& t : T) sliced.push_back(SliceOf(t, box));
    }
    const std::vector<GraphTensor>& Ts = plan.sliced ? sliced : T;
    Values v;
    if (boxes == 1) {
      v = std::move(whole);
    } else {
      for (const auto& [i, values] : whole)
        v[i] = Count(T[static_cast<size_t>(i)]) == 1 ? values : Extract(values, T[static_cast<size_t>(i)], Ts[static_cast<size_t>(i)], box);
    }
    // Scores in FP64, for the box's rows.
    const int64_t slice_scores_n = pb.rows * p.s_kv;
    std::vector<double>& s = v[si];
    s.assign(static_cast<size_t>(slice_scores_n), 0);
    const int64_t group = p.h / p.h_k;
    for (int64_t r = 0; r < pb.rows; ++r) {
      const int64_t row = pb.row0 + r, bh = row / p.s_q, i = row % p.s_q;
      const int64_t kbh = bh / p.h * p.h_k + bh % p.h / group;
      for (int64_t j = 0; j < p.s_kv; ++j) {
        double dot = 0;
        for (int64_t t = 0; t < p.d; ++t)
          dot += p.q[static_cast<size_t>((bh * p.s_q + i) * p.d + t)] * p.k[static_cast<size_t>((kbh * p.s_kv + j) * p.d + t)];
        s[static_cast<size_t>(r * p.s_kv + j)] = dot;
      }
    }
    for (const GraphOp* g : order) {
      int64_t base[format::kGraphMaxDims];
      IndexBase(T[static_cast<size_t>(g->operands[g->type == kReduction ? 1 : 2])], box, base);
      const bool ok = g->type == kPointwise ? Pointwise(*g, Ts, &v, base) : Reduction(*g, Ts, &v);
      if (!ok) return absl::StrCat("cuDNN attention graph with pointwise mode ", g->mode);
    }
    if (stuck) return "cuDNN attention graph not evaluable";
    if (two_sinks) return "cuDNN attention graph with two sink tokens";
    if (v.count(pi) == 0 || !ScaleOf(ops, T, v, si, &p.scale)) return "cuDNN attention graph is not a scaled softmax";
    // Dropout with a mask the program supplies (cudnn-frontend's custom dropout): P·V reads softmax·D, D the product
    // of the scalars and captured tensors that pointwise MULs apply after the softmax (its scale, its mask).
    p.row0 = pb.row0;
    p.drop.clear();
    p.drop_roundings = 0;
    int32_t soft = pi;
    for (bool more = true; more;) {
      more = false;
      for (const GraphOp& g : ops) {
        const int32_t f = g.operands[1];
        if (g.type != kPointwise || g.mode != 1 || g.operands[2] != soft || f < 0 || g.operands[0] < 0) continue;
        const GraphTensor &tf = T[static_cast<size_t>(f)], &ty = T[static_cast<size_t>(soft)];
        if (tf.is_virtual || v.count(f) == 0 || v.count(g.operands[0]) == 0 || tf.nb_dims != ty.nb_dims ||
            Count(ty) != score_count)
          break;
        const GraphTensor &sf = Ts[static_cast<size_t>(f)], &sy = Ts[static_cast<size_t>(soft)];
        if (p.drop.empty()) p.drop.assign(static_cast<size_t>(slice_scores_n), 1);
        int64_t idx[format::kGraphMaxDims] = {};
        for (size_t e = 0; e < p.drop.size(); ++e) {
          p.drop[e] *= v[f][static_cast<size_t>(BroadcastOffset(sf, sy, idx))];
          for (int d = sy.nb_dims - 1; d >= 0 && ++idx[d] == sy.dims[d]; --d) idx[d] = 0;
        }
        ++p.drop_roundings;
        soft = g.operands[0], more = true;
        break;
      }
    }
    // Additive terms: each pointwise ADD, in graph order, of a term that does not depend on the scores to one that
    // does, of the scores' size (cudnn-frontend adds an attention bias, then ALiBi, to scale·S); the softmax
    // verification below confirms where they sit. Each term with its own error bound (a captured bias: exact).
    p.bias.clear(), p.bias_abs.clear(), p.bias_err.clear();
    p.bias_adds = 1;
    for (const GraphOp* g : order) {
      const int32_t x = g->operands[0], b = g->operands[1], y = g->operands[2];
      if (g->type != kPointwise || g->mode != 0 || x < 0 || b < 0 || y < 0 || dep.count(x) + dep.count(b) != 1)
        continue;
      const int32_t f = dep.count(x) > 0 ? b : x;
      const GraphTensor &tf = T[static_cast<size_t>(f)], &ty = T[static_cast<size_t>(y)];
      if (tf.nb_dims != ty.nb_dims || Count(ty) != score_count || (g->alpha != 0 && g->alpha != 1) ||
          (g->beta != 0 && g->beta != 1))
        return "cuDNN attention graph with an additive term not of the scores' shape";
      BoundedValues bv;
      const std::string term_why = BoundTerm(ops, T, Ts, box, v, dep, f, &bv, 0);
      if (!term_why.empty()) return absl::StrCat("cuDNN attention graph's additive term: ", term_why);
      const BoundedTensor& term = bv.at(f);
      if (p.bias.empty()) {
        p.bias.assign(static_cast<size_t>(slice_scores_n), 0);
        p.bias_abs.assign(p.bias.size(), 0);
        p.bias_err.assign(p.bias.size(), 0);
        p.bias_adds = 0;
      }
      ++p.bias_adds;
      const GraphTensor &sf = Ts[static_cast<size_t>(f)], &sy = Ts[static_cast<size_t>(y)];
      int64_t idx[format::kGraphMaxDims] = {};
      for (size_t e = 0; e < p.bias.size(); ++e) {
        const size_t k = static_cast<size_t>(BroadcastOffset(sf, sy, idx));
        p.bias[e] += term.v[k], p.bias_abs[e] += std::fabs(term.v[k]), p.bias_err[e] += term.e[k];
        for (int d = sy.nb_dims - 1; d >= 0 && ++idx[d] == sy.dims[d]; --d) idx[d] = 0;
      }
    }
    auto logit = [&](int64_t local_row, int64_t j) {
      const size_t e = static_cast<size_t>(local_row * p.s_kv + j);
      return p.scale * s[e] + (p.bias.empty() ? 0 : p.bias[e]);
    };
    // The mask P leaves, per row (a padding mask differs per batch), and P against softmax(scale·S) over it. Rows
    // past the second matmul's M override (seq_len_q) are not written to O: not compared (their P, all keys masked,
    // is NaN under a −inf fill). In the rows it writes, every score outside the first matmul's overrides (the
    // matmul's padding value) and every key past the second's K override must be masked out.
    const std::vector<double>& P = v[soft];
    if (Count(T[static_cast<size_t>(soft)]) != score_count || P.size() != static_cast<size_t>(slice_scores_n))
      return "cuDNN attention graph is not a scaled softmax";
    p.mask.assign(P.size(), false);
    for (int64_t r = 0; r < pb.rows; ++r) {
      const int64_t row = pb.row0 + r, i = row % p.s_q, bh = row / p.s_q;
      if (i >= limit2_m[static_cast<size_t>(bh)]) {
        p.unwritten[static_cast<size_t>(row)] = true;
        continue;
      }
      const bool row_computed = i < limit1_m[static_cast<size_t>(bh)];
      for (int64_t j = 0; j < p.s_kv; ++j) {
        const size_t e = static_cast<size_t>(r * p.s_kv + j);
        p.mask[e] = P[e] != 0;
        const bool computed = row_computed && j < limit1_n[static_cast<size_t>(bh)] && j < limit2_k[static_cast<size_t>(bh)];
        if (p.mask[e] && !computed) return "cuDNN attention reads scores outside its matmul overrides";
        for (const auto& [y, len] : load_len)
          if (p.mask[e] && j >= len[static_cast<size_t>(bh / p.h)])
            return "cuDNN paged attention keeps keys past its paged cache load's lengths";
      }
    }
    for (const int32_t x : extras)
      if (Count(T[static_cast<size_t>(x)]) != row_count || v[x].size() != static_cast<size_t>(pb.rows))
        return "cuDNN attention graph's extra outputs are not FP32 Stats, Max and Sum_exp";
    for (int64_t r = 0; r < pb.rows; ++r) {
      if (p.unwritten[static_cast<size_t>(pb.row0 + r)]) continue;
      const size_t mrow = static_cast<size_t>(r * p.s_kv);
      const size_t row = static_cast<size_t>(pb.row0 + r);
      double m = p.sink.empty() ? -HUGE_VAL : p.sink[row], l = 0;
      for (int64_t j = 0; j < p.s_kv; ++j)
        if (p.mask[mrow + static_cast<size_t>(j)]) m = std::max(m, logit(r, j));
      for (int64_t j = 0; j < p.s_kv; ++j)
        if (p.mask[mrow + static_cast<size_t>(j)]) l += std::exp(logit(r, j) - m);
      if (!p.sink.empty()) l += std::exp(p.sink[row] - m);
      for (int64_t j = 0; j < p.s_kv; ++j) {
        const bool visible = p.mask[mrow + static_cast<size_t>(j)];
        const double want = visible ? std::exp(logit(r, j) - m) / l : 0;
        if (!(std::fabs(P[static_cast<size_t>(r * p.s_kv + j)] - want) <= 1e-9))
          return "cuDNN attention graph is not a scaled softmax";
      }
      if (l == 0) continue;  // no visible key: nothing to tell the outputs apart by (and nothing compared)
      for (size_t x = 0; x < extras.size(); ++x) {
        const double got = v[extras[x]][static_cast<size_t>(r)], tol = 1e-9 * (1 + std::fabs(m));
        if (!(std::fabs(got - (m + std::log(l))) <= tol)) kinds[x] &= ~1;
        if (!(std::fabs(got - m) <= tol)) kinds[x] &= ~2;
        if (!(std::fabs(got - l) <= 1e-9 * l)) kinds[x] &= ~4;
      }
    }
    ReplaySdpaRows(p, pb.row0, pb.row0 + pb.rows, &compared, &summaries[static_cast<size_t>(pb.row0)]);
    return "";
  };
  for (int64_t k = 0; k < boxes; ++k) {
    const std::string box_why = check_box(BoxAt(plan, k));
    if (!box_why.empty()) return report->AddNotChecked(box_why), true;
  }
  // Each extra output is Stats, Max or Sum_exp (the first that fits every row), FP32 [b, h, s_q, 1], at most one
  // of each kind.
  for (size_t x = 0; x < extras.size(); ++x) {
    const int kind = kinds[x] & 1 ? 1 : kinds[x] & 2 ? 2 : kinds[x] & 4 ? 4 : 0;
    std::vector<double>* into = kind == 1 ? &p.stats : kind == 2 ? &p.max : kind == 4 ? &p.sum_exp : nullptr;
    if (into == nullptr)
      return report->AddNotChecked("cuDNN attention graph's extra output is not log-sum-exp, max or sum of exp"), true;
    const GraphTensor& t = T[static_cast<size_t>(extras[x])];
    if (!into->empty() || t.nb_dims != 4 || t.dims[2] != p.s_q || t.dims[3] != 1 ||
        DTypeFromCudnn(t.data_type) != format::DType::kF32)
      return report->AddNotChecked("cuDNN attention graph's extra outputs are not FP32 Stats, Max and Sum_exp"), true;
    if (!Dense(op, true, extras[x], into) || into->size() != static_cast<size_t>(row_count))
      return report->AddNotChecked(op.MissingTensorsReason()), true;
  }
  CompareSdpaRows(p, summaries, &compared);
  ReportSdpaOutputs(rank, op, p, compared, report, "composite attention (cudnn-frontend)");
  return true;
}

}  // namespace ttrace::analyzer

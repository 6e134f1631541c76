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

bool Pointwise(const GraphOp& g, const std::vector<GraphTensor>& T, Values* v) {
  const int32_t xi = g.operands[0], bi = g.operands[1], yi = g.operands[2], ti = g.operands[3];
  if (xi < 0 || yi < 0 || g.operands[4] >= 0 || g.operands[5] >= 0) return false;
  const GraphTensor& y = T[static_cast<size_t>(yi)];
  for (int32_t i : {xi, bi, ti})
    if (i >= 0 && (T[static_cast<size_t>(i)].nb_dims != y.nb_dims || v->count(i) == 0)) return false;
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
    if (!PointwiseValue(g, x, b, ti >= 0 ? at(ti) : 0, g.mode == 501 ? static_cast<double>(idx[g.axis]) : 0, &r))
      return false;
    out[e] = r;
    for (int d = y.nb_dims - 1; d >= 0 && ++idx[d] == y.dims[d]; --d) idx[d] = 0;
  }
  (*v)[yi] = std::move(out);
  return true;
}

bool Reduction(const GraphOp& g, const std::vector<GraphTensor>& T, Values* v) {
  const int32_t xi = g.operands[0], yi = g.operands[1];
  if (xi < 0 || yi < 0 || v->count(xi) == 0) return false;
  const GraphTensor &x = T[static_cast<size_t>(xi)], &y = T[static_cast<size_t>(yi)];
  if (x.nb_dims != y.nb_dims) return false;
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

// The scalar a pointwise MUL applies to tensor s, 1 when none does; false when s is multiplied by a non-scalar.
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

// Additive term f with its error bound into `bv`: captured and by-value tensors exact (their values in `v`),
// virtual ones through the pointwise operations that write them, none of which may read the scores (`dep`).
std::string BoundTerm(const std::vector<GraphOp>& ops, const std::vector<GraphTensor>& T, const Values& v,
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
    const std::string why = BoundTerm(ops, T, v, dep, i, bv, depth + 1);
    if (!why.empty()) return why;
  }
  return EvalBoundedPointwise(*w, T, bv);
}

// A PAGED_CACHE_LOAD's output g (container, page table, sequence lengths, y: format.md) rebuilt from its captured
// inputs as if y had been captured (`out`: y's own layout, the container's element bytes copied, exact), with the
// sequence lengths per batch (`len`); "" or why not. Row j < len[i] of sequence i is container row
// (table[i, j / block size], head, j % block size) (simgpu's graph_kernels.h reading, the reconstruction
// cudnn-frontend's tests invert); rows past len are left +0 — NVIDIA defines nothing there, so the caller compares
// only rows whose softmax keeps no key past len. y [b, h, s, d], or [b, h, d, s] with stride 1 on its third
// dimension (K^T).
std::string ReplayPagedLoad(const Op& op, const GraphOp& g, uint64_t max_work, Tensor* out, std::vector<int64_t>* len) {
  const auto& T = op.graph_tensors;
  const int32_t ci = g.operands[0], ti = g.operands[1], li = g.operands[2], yi = g.operands[3];
  if (ci < 0 || ti < 0 || li < 0 || yi < 0) return "a paged cache load without its operands";
  const GraphTensor &c = T[static_cast<size_t>(ci)], &t = T[static_cast<size_t>(ti)], &l = T[static_cast<size_t>(li)],
                    &y = T[static_cast<size_t>(yi)];
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

}  // namespace

bool CheckCompositeAttention(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const auto& ops = op.graph_ops;
  const auto& T = op.graph_tensors;
  std::vector<const GraphOp*> mm;
  bool rng = false;
  std::map<int32_t, const GraphOp*> loads;  // paged cache loads by the tensor they write
  for (const GraphOp& g : ops) {
    if (g.type == kMatmul) mm.push_back(&g);
    else if (g.type == kRng) rng = true;
    else if (g.type == kPagedLoad) loads[g.operands[3]] = &g;
    else if (g.type != kPointwise && g.type != kReduction) return false;
  }
  if (mm.size() != 2) return false;
  const GraphOp *m1 = mm[0], *m2 = mm[1];
  if (m1->operands[2] == m2->operands[0]) std::swap(m1, m2);  // graph order is free
  const int32_t qi = m1->operands[0], kti = m1->operands[1], si = m1->operands[2];
  const int32_t pi = m2->operands[0], vi = m2->operands[1], oi = m2->operands[2];
  // Overrides (operands 3, 4, 5: M, N, K): the first matmul's M and N (seq_len_q, seq_len_kv), the second's M and K
  // (seq_len_q, seq_len_kv), as cudnn-frontend sets them with a padding mask; no other.
  // K and V may be paged: each the output of a paged cache load (cudnn-frontend's paged attention), no other tensor.
  for (const auto& [y, g] : loads)
    if (y != kti && y != vi) return false;
  auto virt = [&](int32_t i) { return T[static_cast<size_t>(i)].is_virtual && loads.count(i) == 0; };
  if (qi < 0 || kti < 0 || si < 0 || pi < 0 || vi < 0 || oi < 0 || virt(qi) || virt(kti) ||
      !T[static_cast<size_t>(pi)].is_virtual || T[static_cast<size_t>(oi)].is_virtual || m1->operands[5] >= 0 ||
      m2->operands[4] >= 0)
    return false;
  if (rng) return report->AddNotChecked("cuDNN attention with RNG dropout (Philox inside cuDNN: not replayable)"), true;
  // Q, Kᵀ given as [b, h_k, d, s_kv]: FillSdpa wants K; a transposed view of the same tensor entry does it.
  Op view;  // shares nothing with op but the entries it needs
  view.seq = op.seq;
  view.api = op.api;
  view.graph_tensors = T;
  GraphTensor& kt = view.graph_tensors[static_cast<size_t>(kti)];
  std::swap(kt.dims[2], kt.dims[3]);
  std::swap(kt.strides[2], kt.strides[3]);
  for (const auto& [i, t] : op.graph_in) view.graph_in[i] = std::make_unique<Tensor>(*t);
  for (const auto& [i, t] : op.graph_out) view.graph_out[i] = std::make_unique<Tensor>(*t);
  view.missing_tensors = op.missing_tensors;
  // Paged K and V: the loads replayed from their captured container, page table and sequence lengths.
  std::map<int32_t, std::vector<int64_t>> load_len;
  for (const auto& [y, g] : loads) {
    Tensor t;
    const std::string why = ReplayPagedLoad(op, *g, max_work, &t, &load_len[y]);
    if (!why.empty()) return report->AddNotChecked(absl::StrCat("cuDNN paged attention: ", why)), true;
    view.graph_tensors[static_cast<size_t>(y)].is_virtual = false;
    view.graph_in[static_cast<uint32_t>(y)] = std::make_unique<Tensor>(std::move(t));
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
  const std::string why = FillSdpa(view, qi, kti, vi, oi, -1, &p);
  if (!why.empty()) return report->AddNotChecked(why), true;
  if (static_cast<uint64_t>(p.b * p.h * p.s_q * p.s_kv * (p.d + p.d_v + 8)) > max_work)
    return report->AddNotChecked("replay over the work budget"), true;
  // Scores in FP64, then the middle operations, which may read scalars by value and captured graph inputs
  // (sequence lengths, a dropout mask).
  Values v;
  for (size_t i = 0; i < T.size(); ++i) {
    const GraphTensor& t = T[i];
    if (t.by_value && Count(t) == 1) v[static_cast<int32_t>(i)] = {t.value};
  }
  std::set<int32_t> outputs;  // written by a middle operation (Max, Sum_exp are read by others): not inputs
  for (const GraphOp& g : ops)
    if (&g != m1 && &g != m2 && g.type != kPagedLoad) outputs.insert(g.operands[g.type == kReduction ? 1 : 2]);
  for (const GraphOp& g : ops) {
    if (&g == m1 || &g == m2 || g.type == kPagedLoad) continue;
    for (int r : {0, 1, 3}) {
      const int32_t i = g.operands[r];
      if (i < 0 || (g.type == kReduction && r != 0) || T[static_cast<size_t>(i)].is_virtual || v.count(i) > 0 ||
          outputs.count(i) > 0)
        continue;
      if (!Dense(op, false, i, &v[i])) return report->AddNotChecked(op.MissingTensorsReason()), true;
    }
  }
  // Per (batch, head): the rows and columns each matmul computes (its overrides; the whole extent without one).
  const int64_t bh_count = p.b * p.h;
  std::vector<int64_t> limit1_m, limit1_n, limit2_m, limit2_k;
  const GraphTensor& tc1 = T[static_cast<size_t>(si)];
  auto limits = [&](int32_t ov, int64_t whole, std::vector<int64_t>* out) {
    out->assign(static_cast<size_t>(bh_count), whole);
    if (ov < 0) return true;
    const GraphTensor& t = T[static_cast<size_t>(ov)];
    std::vector<double> values;
    if (t.nb_dims != 4 || tc1.nb_dims != 4 || t.dims[2] != 1 || t.dims[3] != 1 || (t.dims[0] != 1 && t.dims[0] != p.b) ||
        (t.dims[1] != 1 && t.dims[1] != p.h) || !Dense(op, false, ov, &values))
      return false;
    for (int64_t bh = 0; bh < bh_count; ++bh) {
      const int64_t idx[4] = {bh / p.h, bh % p.h, 0, 0};
      const double x = values[static_cast<size_t>(BroadcastOffset(t, tc1, idx))];
      (*out)[static_cast<size_t>(bh)] = std::max<int64_t>(0, std::min<int64_t>(whole, static_cast<int64_t>(x)));
    }
    return true;
  };
  if (!limits(m1->operands[3], p.s_q, &limit1_m) || !limits(m1->operands[4], p.s_kv, &limit1_n) ||
      !limits(m2->operands[3], p.s_q, &limit2_m) || !limits(m2->operands[5], p.s_kv, &limit2_k))
    return report->AddNotChecked("cuDNN attention matmul overrides unreadable"), true;
  std::vector<double>& s = v[si];
  s.assign(static_cast<size_t>(p.b * p.h * p.s_q * p.s_kv), 0);
  const int64_t group = p.h / p.h_k;
  for (int64_t bh = 0; bh < p.b * p.h; ++bh)
    for (int64_t i = 0; i < p.s_q; ++i)
      for (int64_t j = 0; j < p.s_kv; ++j) {
        double dot = 0;
        const int64_t kbh = bh / p.h * p.h_k + bh % p.h / group;
        for (int64_t t = 0; t < p.d; ++t)
          dot += p.q[static_cast<size_t>((bh * p.s_q + i) * p.d + t)] * p.k[static_cast<size_t>((kbh * p.s_kv + j) * p.d + t)];
        s[static_cast<size_t>((bh * p.s_q + i) * p.s_kv + j)] = dot;
      }
  std::vector<const GraphOp*> pending, order;
  for (const GraphOp& g : ops)
    if (&g != m1 && &g != m2 && g.type != kPagedLoad) pending.push_back(&g);
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const GraphOp* g) {
      for (int r : {0, 1, 3})
        if (g->operands[r] >= 0 && !(g->type == kReduction && r != 0) && v.count(g->operands[r]) == 0) return false;
      return true;
    });
    if (ready == pending.end()) return report->AddNotChecked("cuDNN attention graph not evaluable"), true;
    const bool ok = (*ready)->type == kPointwise ? Pointwise(**ready, T, &v) : Reduction(**ready, T, &v);
    if (!ok) return report->AddNotChecked(absl::StrCat("cuDNN attention graph with pointwise mode ", (*ready)->mode)), true;
    order.push_back(*ready);
    pending.erase(ready);
  }
  // The tensors whose values depend on the scores (GEN_INDEX reads only its input's shape).
  std::set<int32_t> dep = {si};
  for (const GraphOp* g : order) {
    bool reads = false;
    for (int r : {0, 1, 3}) {
      const int32_t i = g->operands[r];
      if (i >= 0 && !(g->type == kReduction && r != 0) && !(r == 0 && g->type == kPointwise && g->mode == 501) &&
          dep.count(i) > 0)
        reads = true;
    }
    if (reads) dep.insert(g->operands[g->type == kReduction ? 1 : 2]);
  }
  // A sink token (cudnn-frontend's set_sink_token): a captured tensor of one value per head ([1 or b, 1 or h, 1, 1])
  // that a pointwise MAX takes with score-dependent values into the row maximum, an extra logit in the softmax's
  // maximum and sum that has no value row. The softmax verification below holds P to that reading.
  int32_t sink = -1;
  for (const GraphOp* g : order) {
    const int32_t x = g->operands[0], b = g->operands[1];
    if (g->type != kPointwise || g->mode != 3 || x < 0 || b < 0 || dep.count(x) + dep.count(b) != 1) continue;
    const int32_t f = dep.count(x) > 0 ? b : x;
    const GraphTensor& tf = T[static_cast<size_t>(f)];
    if (tf.is_virtual || tf.nb_dims != 4 || tf.dims[2] != 1 || tf.dims[3] != 1 || (tf.dims[0] != 1 && tf.dims[0] != p.b) ||
        (tf.dims[1] != 1 && tf.dims[1] != p.h) || v.count(f) == 0)
      continue;
    if (sink >= 0 && sink != f) return report->AddNotChecked("cuDNN attention graph with two sink tokens"), true;
    sink = f;
  }
  if (sink >= 0) {
    const GraphTensor& tf = T[static_cast<size_t>(sink)];
    p.sink.resize(static_cast<size_t>(p.b * p.h * p.s_q));
    for (size_t row = 0; row < p.sink.size(); ++row) {
      const int64_t bh = static_cast<int64_t>(row) / p.s_q, bi = bh / p.h, hi = bh % p.h;
      p.sink[row] = v[sink][static_cast<size_t>((tf.dims[0] == 1 ? 0 : bi) * tf.dims[1] + (tf.dims[1] == 1 ? 0 : hi))];
    }
  }
  if (v.count(pi) == 0 || !ScaleOf(ops, T, v, si, &p.scale))
    return report->AddNotChecked("cuDNN attention graph is not a scaled softmax"), true;
  // Dropout with a mask the program supplies (cudnn-frontend's custom dropout): P·V reads softmax·D, D the product
  // of the scalars and captured tensors that pointwise MULs apply after the softmax (its scale, its mask).
  const int64_t score_count = bh_count * p.s_q * p.s_kv;
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
      if (p.drop.empty()) p.drop.assign(static_cast<size_t>(score_count), 1);
      int64_t idx[format::kGraphMaxDims] = {};
      for (size_t e = 0; e < p.drop.size(); ++e) {
        p.drop[e] *= v[f][static_cast<size_t>(BroadcastOffset(tf, ty, idx))];
        for (int d = ty.nb_dims - 1; d >= 0 && ++idx[d] == ty.dims[d]; --d) idx[d] = 0;
      }
      ++p.drop_roundings;
      soft = g.operands[0], more = true;
      break;
    }
  }
  // Additive terms: each pointwise ADD, in graph order, of a term that does not depend on the scores to one that
  // does, of the scores' size (cudnn-frontend adds an attention bias, then ALiBi, to scale·S); the softmax
  // verification below confirms where they sit. Each term with its own error bound (a captured bias: exact).
  for (const GraphOp* g : order) {
    const int32_t x = g->operands[0], b = g->operands[1], y = g->operands[2];
    if (g->type != kPointwise || g->mode != 0 || x < 0 || b < 0 || y < 0 || dep.count(x) + dep.count(b) != 1)
      continue;
    const int32_t f = dep.count(x) > 0 ? b : x;
    const GraphTensor &tf = T[static_cast<size_t>(f)], &ty = T[static_cast<size_t>(y)];
    if (tf.nb_dims != ty.nb_dims || Count(ty) != score_count || (g->alpha != 0 && g->alpha != 1) ||
        (g->beta != 0 && g->beta != 1))
      return report->AddNotChecked("cuDNN attention graph with an additive term not of the scores' shape"), true;
    BoundedValues bv;
    const std::string term_why = BoundTerm(ops, T, v, dep, f, &bv, 0);
    if (!term_why.empty())
      return report->AddNotChecked(absl::StrCat("cuDNN attention graph's additive term: ", term_why)), true;
    const BoundedTensor& term = bv.at(f);
    if (p.bias.empty()) {
      p.bias.assign(static_cast<size_t>(score_count), 0);
      p.bias_abs.assign(p.bias.size(), 0);
      p.bias_err.assign(p.bias.size(), 0);
      p.bias_adds = 0;
    }
    ++p.bias_adds;
    int64_t idx[format::kGraphMaxDims] = {};
    for (size_t e = 0; e < p.bias.size(); ++e) {
      const size_t k = static_cast<size_t>(BroadcastOffset(tf, ty, idx));
      p.bias[e] += term.v[k], p.bias_abs[e] += std::fabs(term.v[k]), p.bias_err[e] += term.e[k];
      for (int d = ty.nb_dims - 1; d >= 0 && ++idx[d] == ty.dims[d]; --d) idx[d] = 0;
    }
  }
  auto logit = [&](int64_t row, int64_t j) {
    const size_t e = static_cast<size_t>(row * p.s_kv + j);
    return p.scale * s[e] + (p.bias.empty() ? 0 : p.bias[e]);
  };
  // The mask P leaves, per row (a padding mask differs per batch), and P against softmax(scale·S) over it. Rows
  // past the second matmul's M override (seq_len_q) are not written to O: not compared (their P, all keys masked,
  // is NaN under a −inf fill). In the rows it writes, every score outside the first matmul's overrides (the
  // matmul's padding value) and every key past the second's K override must be masked out.
  const std::vector<double>& P = v[soft];
  if (P.size() != static_cast<size_t>(score_count))
    return report->AddNotChecked("cuDNN attention graph is not a scaled softmax"), true;
  p.mask.assign(P.size(), false);
  p.unwritten.assign(static_cast<size_t>(bh_count * p.s_q), false);
  for (int64_t row = 0; row < bh_count * p.s_q; ++row) {
    const int64_t i = row % p.s_q, bh = row / p.s_q;
    if (i >= limit2_m[static_cast<size_t>(bh)]) {
      p.unwritten[static_cast<size_t>(row)] = true;
      continue;
    }
    const bool row_computed = i < limit1_m[static_cast<size_t>(bh)];
    for (int64_t j = 0; j < p.s_kv; ++j) {
      const size_t e = static_cast<size_t>(row * p.s_kv + j);
      p.mask[e] = P[e] != 0;
      const bool computed = row_computed && j < limit1_n[static_cast<size_t>(bh)] && j < limit2_k[static_cast<size_t>(bh)];
      if (p.mask[e] && !computed)
        return report->AddNotChecked("cuDNN attention reads scores outside its matmul overrides"), true;
      for (const auto& [y, len] : load_len)
        if (p.mask[e] && j >= len[static_cast<size_t>(bh / p.h)])
          return report->AddNotChecked("cuDNN paged attention keeps keys past its paged cache load's lengths"), true;
    }
  }
  std::vector<int> kinds(extras.size(), 1 | 2 | 4);  // which of Stats, Max, Sum_exp each extra output may be
  for (const int32_t x : extras)
    if (v[x].size() != static_cast<size_t>(bh_count * p.s_q))
      return report->AddNotChecked("cuDNN attention graph's extra outputs are not FP32 Stats, Max and Sum_exp"), true;
  for (int64_t row = 0; row < bh_count * p.s_q; ++row) {
    if (p.unwritten[static_cast<size_t>(row)]) continue;
    const size_t mrow = static_cast<size_t>(row * p.s_kv);
    double m = p.sink.empty() ? -HUGE_VAL : p.sink[static_cast<size_t>(row)], l = 0;
    for (int64_t j = 0; j < p.s_kv; ++j)
      if (p.mask[mrow + static_cast<size_t>(j)]) m = std::max(m, logit(row, j));
    for (int64_t j = 0; j < p.s_kv; ++j)
      if (p.mask[mrow + static_cast<size_t>(j)]) l += std::exp(logit(row, j) - m);
    if (!p.sink.empty()) l += std::exp(p.sink[static_cast<size_t>(row)] - m);
    for (int64_t j = 0; j < p.s_kv; ++j) {
      const bool visible = p.mask[mrow + static_cast<size_t>(j)];
      const double want = visible ? std::exp(logit(row, j) - m) / l : 0;
      if (!(std::fabs(P[static_cast<size_t>(row * p.s_kv + j)] - want) <= 1e-9))
        return report->AddNotChecked("cuDNN attention graph is not a scaled softmax"), true;
    }
    if (l == 0) continue;  // no visible key: nothing to tell the outputs apart by (and nothing compared)
    for (size_t x = 0; x < extras.size(); ++x) {
      const double got = v[extras[x]][static_cast<size_t>(row)], tol = 1e-9 * (1 + std::fabs(m));
      if (!(std::fabs(got - (m + std::log(l))) <= tol)) kinds[x] &= ~1;
      if (!(std::fabs(got - m) <= tol)) kinds[x] &= ~2;
      if (!(std::fabs(got - l) <= 1e-9 * l)) kinds[x] &= ~4;
    }
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
    if (!Dense(op, true, extras[x], into) || into->size() != static_cast<size_t>(bh_count * p.s_q))
      return report->AddNotChecked(op.MissingTensorsReason()), true;
  }
  ReportSdpa(rank, op, p, report, "composite attention (cudnn-frontend)");
  return true;
}

}  // namespace ttrace::analyzer

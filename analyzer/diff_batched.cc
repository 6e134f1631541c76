// Entries are matched on A and B scaled to unit norm, so that a data-parallel run whose gradients carry the DP size
// (per-rank mean losses) still finds its entries; the scale is then chosen as for plain GEMMs, from the data-parallel
// communicators' sizes. Everything is FP64 from the captured tensors.
#include "analyzer/diff_batched.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "analyzer/diff_sharded.h"
#include "analyzer/error_model.h"
#include "analyzer/gemm_check.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

bool IsPerEntryBatched(const Op& op) {
  return op.kind == OpKind::kGemm && op.gemm.batch_count > 1 &&
         (op.gemm.stride_a != 0 || (op.gemm.flags & format::kPointerArrays));
}

namespace {

// One batched GEMM, entry by entry: op(A) m x k, op(B) k x n, C m x n, column-major.
struct Entries {
  int64_t m = 0, n = 0, k = 0, batch = 0;
  double alpha = 1;
  DType ab = DType::kInvalid, c_type = DType::kInvalid;
  GemmPrecision precision;
  std::vector<std::vector<double>> a, b, c;
};

std::vector<double> OpOf(const std::vector<double>& x, size_t at, int64_t rows, int64_t cols, bool trans) {
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i) {
      const size_t src = at + static_cast<size_t>(i + j * rows);
      out[static_cast<size_t>(trans ? j + i * cols : i + j * rows)] = x[src];
    }
  return out;
}

std::string Decode(const Op& op, Entries* e) {
  const format::GemmRecord& g = op.gemm;
  if (g.status != 0) return "call failed";
  if (g.beta != 0 || (g.flags & format::kScalarsUnknown)) return "batched GEMM with beta != 0 or device scalars";
  const Tensor *a = op.tensor(TensorSlot::kA), *b = op.tensor(TensorSlot::kB), *c = op.tensor(TensorSlot::kCOut);
  if (a == nullptr || b == nullptr || c == nullptr) return op.MissingTensorsReason();
  e->m = g.m;
  e->n = g.n;
  e->k = g.k;
  e->batch = g.batch_count;
  e->alpha = g.alpha;
  e->ab = static_cast<DType>(a->meta.dtype);
  e->c_type = static_cast<DType>(c->meta.dtype);
  absl::StatusOr<GemmPrecision> p = ResolveGemmPrecision(g.api, g.compute_type, g.math_mode, e->ab,
                                                         static_cast<DType>(b->meta.dtype), e->c_type);
  if (!p.ok()) return "no error model";
  e->precision = *p;
  const bool ta = g.transa != 0, tb = g.transb != 0;
  const std::vector<double> av = DecodeAll(e->ab, a->data), bv = DecodeAll(static_cast<DType>(b->meta.dtype), b->data),
                            cv = DecodeAll(e->c_type, c->data);
  const size_t pa = static_cast<size_t>(g.m * g.k), pb = static_cast<size_t>(g.k * g.n),
               pc = static_cast<size_t>(g.m * g.n);
  if (a->meta.batch != g.batch_count || (b->meta.batch != g.batch_count && b->meta.batch != 1) ||
      c->meta.batch != g.batch_count || av.size() < pa * e->batch || cv.size() < pc * e->batch || bv.size() < pb)
    return "shape mismatch";
  for (int64_t x = 0; x < e->batch; ++x) {
    e->a.push_back(OpOf(av, pa * x, ta ? g.k : g.m, ta ? g.m : g.k, ta));
    e->b.push_back(OpOf(bv, b->meta.batch == 1 ? 0 : pb * x, tb ? g.n : g.k, tb ? g.k : g.n, tb));
    e->c.emplace_back(cv.begin() + pc * x, cv.begin() + pc * (x + 1));
  }
  return "";
}

double Norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// ‖x/‖x‖ − r/‖r‖‖²: a distance blind to a constant scale.
double Direction(const std::vector<double>& x, const std::vector<double>& r) {
  const double nx = Norm(x), nr = Norm(r);
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = (nx > 0 ? x[i] / nx : 0) - (nr > 0 ? r[i] / nr : 0);
    d += t * t;
  }
  return d;
}

}  // namespace

BatchedComparison CompareBatchedGemm(const Op& ref, const std::vector<std::pair<int, const Op*>>& shards,
                                     const std::vector<double>& scales) {
  BatchedComparison out;
  Entries r;
  if (std::string why = Decode(ref, &r); !why.empty()) return out.not_checked = "reference: " + why, out;
  std::vector<Entries> cands(shards.size());
  for (size_t s = 0; s < shards.size(); ++s) {
    if (std::string why = Decode(*shards[s].second, &cands[s]); !why.empty()) return out.not_checked = why, out;
    if (cands[s].m != r.m || cands[s].n != r.n || cands[s].k != r.k || r.batch % cands[s].batch != 0)
      return out.not_checked = "batched GEMM split other than along its batch", out;
  }
  // Nearest candidate entry of each reference entry.
  std::vector<std::pair<size_t, int64_t>> match(static_cast<size_t>(r.batch));
  for (int64_t i = 0; i < r.batch; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < cands.size(); ++s)
      for (int64_t j = 0; j < cands[s].batch; ++j) {
        const double d = Direction(cands[s].a[j], r.a[i]) + Direction(cands[s].b[j], r.b[i]);
        if (d < best) {
          best = d;
          match[static_cast<size_t>(i)] = {s, j};
        }
      }
  }
  std::vector<double> ma, mb, ra, rb;
  for (int64_t i = 0; i < r.batch; ++i) {
    const auto [s, j] = match[static_cast<size_t>(i)];
    ma.insert(ma.end(), cands[s].a[j].begin(), cands[s].a[j].end());
    mb.insert(mb.end(), cands[s].b[j].begin(), cands[s].b[j].end());
    ra.insert(ra.end(), r.a[i].begin(), r.a[i].end());
    rb.insert(rb.end(), r.b[i].begin(), r.b[i].end());
  }
  double sa = 1, sb = 1;
  auto best_scale = [&](std::vector<double>* x, const std::vector<double>& ref_v, double* rel) {
    double best = 1;
    *rel = RelFrobenius(*x, ref_v);
    for (double sc : scales) {
      std::vector<double> y(*x);
      for (double& v : y) v /= sc;
      const double e = RelFrobenius(y, ref_v);
      if (e < *rel) *rel = e, best = sc;
    }
    for (double& v : *x) v /= best;
    return best;
  };
  sa = best_scale(&ma, ra, &out.rel_a);
  sb = best_scale(&mb, rb, &out.rel_b);
  out.scale = sa * sb;
  out.abs_a = MaxAbsDiff(ma, ra);
  out.abs_b = MaxAbsDiff(mb, rb);
  out.eps_in = Epsilon(r.ab);
  out.eps_out = Epsilon(r.c_type);
  const size_t pa = static_cast<size_t>(r.m * r.k), pb = static_cast<size_t>(r.k * r.n);
  const GemmBound bound(r.precision, r.k, r.alpha, 0);
  std::vector<double> got, want;
  double worst = -1;
  for (int64_t i = 0; i < r.batch; ++i) {
    const auto [s, j] = match[static_cast<size_t>(i)];
    GemmProblem rp, cp;
    rp.m = cp.m = r.m;
    rp.n = cp.n = r.n;
    rp.k = cp.k = r.k;
    rp.alpha = r.alpha;
    cp.alpha = cands[s].alpha;
    rp.a = r.a[i];
    rp.b = r.b[i];
    cp.a = cands[s].a[j];
    cp.b = cands[s].b[j];
    const std::vector<GemmElementTerms> rt = GemmReference(rp), ct = GemmReference(cp);
    const double* a = ma.data() + pa * i;
    const double* b = mb.data() + pb * i;
    for (int64_t col = 0; col < r.n; ++col)
      for (int64_t row = 0; row < r.m; ++row) {
        double prop = 0;
        for (int64_t l = 0; l < r.k; ++l) {
          const double ar = r.a[i][row + l * r.m], br = r.b[i][l + col * r.k], bc = b[l + col * r.k];
          prop += std::fabs(a[row + l * r.m] - ar) * std::fabs(bc) + std::fabs(ar) * std::fabs(bc - br);
        }
        const size_t x = static_cast<size_t>(row + col * r.m);
        const double g = cands[s].c[j][x] / out.scale, w = r.c[i][x];
        const double bnd = std::fabs(r.alpha) * prop + bound.Bound(rt[x]) + bound.Bound(ct[x]) / out.scale;
        const uint64_t index = static_cast<uint64_t>(i) * r.m * r.n + x;
        out.stats.Add(index, g, w, bnd, false);
        got.push_back(g);
        want.push_back(w);
        const double ratio = bnd > 0 ? std::fabs(g - w) / bnd : 0;
        if (ratio > worst) {
          worst = ratio;
          const Op& op = *shards[s].second;
          out.worst = {shards[s].first, op.seq, op.api_name()};
        }
      }
  }
  out.rel_c = RelFrobenius(got, want);
  out.detail = absl::StrCat("batch ", r.batch, " matched entry by entry from ", shards.size(), " shards of batch ",
                            cands[0].batch, sa != 1 || sb != 1 ? absl::StrCat("; inputs scaled by ", sa, " and ", sb)
                                                               : std::string());
  return out;
}

}  // namespace ttrace::analyzer

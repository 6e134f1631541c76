// The replay runs through BLAS (blas.h): per batch, C_ref = op(A)·op(B) and P = |op(A)|·|op(B)| as two FP64
// GEMMs over column blocks of C, so memory stays O(m·k + k·n + m·block) and the FP64 work runs at the machine's
// GEMM speed (2048^3 FP32: 22.5 s with the former hand loop on one thread). The summation order inside BLAS is its
// own; the model's E_ref = θ_{k+3}(2^-53)·(|α|P + |β|Z) and P's inflation hold for any order, so the bound is
// unchanged. Row sums of |op(A)| and column sums of |op(B)| are plain loops (O(m·k + k·n)). Elements are
// compared column by column, batch after batch: the same order, hence the same first violation, as before.
#include "analyzer/gemm_check.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "analyzer/blas.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

namespace {

// Columns of C per BLAS block: C_ref and P blocks of at most 2^20 elements each (8 MiB).
int64_t ColumnBlock(int64_t m, int64_t n) { return std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(m, 1), 1, std::max<int64_t>(n, 1)); }

// Calls fn(index, terms) for every output element, batch by batch, column by column.
template <typename Fn>
void ForEachGemmElement(const GemmProblem& p, Fn fn) {
  const int64_t m = p.m, n = p.n, k = p.k;
  if (m == 0 || n == 0) return;
  const bool use_ab = p.alpha != 0;
  const bool use_c = p.beta != 0;
  // Without α·A·B, k is bounded by no payload: neither computed with nor allocated.
  const size_t a_size = use_ab ? static_cast<size_t>(m * k) : 0, b_size = use_ab ? static_cast<size_t>(k * n) : 0;
  const size_t c_size = static_cast<size_t>(m * n);
  const bool ta = p.transa != 0, tb = p.transb != 0;
  const int64_t lda = ta ? k : m, ldb = tb ? n : k;
  std::vector<double> abs_a(a_size), abs_b(b_size), row_a(use_ab ? static_cast<size_t>(m) : 0),
      col_b(use_ab ? static_cast<size_t>(n) : 0);
  const int64_t block = ColumnBlock(m, n);
  std::vector<double> ref(use_ab ? static_cast<size_t>(m * block) : 0), mag(ref.size());
  // Every operand shared by all batches: the reference of batch 0 is every batch's (kept, m·n terms).
  const bool shared = p.batch > 1 && (!use_ab || (p.a.size() <= a_size && p.b.size() <= b_size)) &&
                      (!use_c || p.c_in.size() <= c_size);
  std::vector<GemmElementTerms> first_batch(shared ? c_size : 0);
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    if (shared && bt > 0) {
      for (size_t x = 0; x < c_size; ++x) fn(static_cast<uint64_t>(bt) * c_size + x, first_batch[x]);
      continue;
    }
    const double* a = nullptr;
    const double* b = nullptr;
    if (use_ab) {
      a = p.a.data() + (p.a.size() > a_size ? bt * a_size : 0);
      b = p.b.data() + (p.b.size() > b_size ? bt * b_size : 0);
      for (size_t x = 0; x < a_size; ++x) abs_a[x] = std::fabs(a[x]);
      for (size_t x = 0; x < b_size; ++x) abs_b[x] = std::fabs(b[x]);
      // Row sums of |op(A)| (op(A)_il = a[i + l·m], or a[l + i·k] when transposed) and column sums of |op(B)|.
      std::fill(row_a.begin(), row_a.end(), 0.0);
      for (int64_t l = 0; l < k; ++l)
        for (int64_t i = 0; i < m; ++i) row_a[i] += abs_a[ta ? l + i * k : i + l * m];
      std::fill(col_b.begin(), col_b.end(), 0.0);
      for (int64_t l = 0; l < k; ++l)
        for (int64_t j = 0; j < n; ++j) col_b[j] += abs_b[tb ? j + l * n : l + j * k];
    }
    const size_t c_off = p.c_in.size() > c_size ? bt * c_size : 0;
    for (int64_t j0 = 0; j0 < n; j0 += block) {
      const int64_t cols = std::min(block, n - j0);
      if (use_ab) {
        // Column j0 of op(B): b + j0·k when stored k x n, b + j0 when stored n x k (transposed).
        const int64_t b_col = tb ? j0 : j0 * k;
        MatMul(ta, tb, m, cols, k, a, lda, b + b_col, ldb, ref.data(), m);
        MatMul(ta, tb, m, cols, k, abs_a.data(), lda, abs_b.data() + b_col, ldb, mag.data(), m);
      }
      for (int64_t jj = 0; jj < cols; ++jj) {
        const int64_t j = j0 + jj;
        for (int64_t i = 0; i < m; ++i) {
          GemmElementTerms t;
          if (use_ab) {
            t.ref = p.alpha * ref[i + jj * m];
            t.abs_ab = mag[i + jj * m];
            t.abs_row_a = row_a[i];
            t.abs_col_b = col_b[j];
          }
          if (use_c) {
            const double c0 = p.c_in[c_off + i + j * m];
            t.ref += p.beta * c0;
            t.abs_c0 = std::fabs(c0);
          }
          if (shared) first_batch[static_cast<size_t>(i + j * m)] = t;
          fn(static_cast<uint64_t>(bt * c_size + i + j * m), t);
        }
      }
    }
  }
}

bool ShapeIs(const Tensor* t, int64_t rows, int64_t cols, int64_t batch) {
  return t->meta.rows == rows && t->meta.cols == cols && (t->meta.batch == batch || t->meta.batch == 1);
}

double MaxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

unsigned __int128 Product(std::initializer_list<uint64_t> factors) {
  unsigned __int128 p = 1;
  for (uint64_t f : factors) {
    p *= f;
    if (p > UINT64_MAX) return static_cast<unsigned __int128>(UINT64_MAX) + 1;  // saturates past 2^64
  }
  return p;
}

}  // namespace

uint64_t GemmReplayWork(int64_t m, int64_t n, int64_t k, int64_t batch, bool use_ab, bool use_c, bool shared) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v < 0 ? 0 : v); };
  const unsigned __int128 work =
      Product({shared ? 1 : u(batch), u(m), u(n), use_ab ? u(k) : 1}) + Product({u(batch), u(m), u(n)});
  return work > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(work);
}

std::vector<GemmElementTerms> GemmReference(const GemmProblem& p) {
  std::vector<GemmElementTerms> out(static_cast<size_t>(p.m * p.n * p.batch));
  ForEachGemmElement(p, [&](uint64_t index, const GemmElementTerms& t) { out[index] = t; });
  return out;
}

ElementStats ReplayGemm(const GemmProblem& p, const GemmPrecision& precision) {
  ElementStats stats;
  const bool input_overflow = precision.in_max > 0 && p.alpha != 0 &&
                              (MaxAbs(p.a) > precision.in_max || MaxAbs(p.b) > precision.in_max);
  const GemmBound bound(precision, p.k, p.alpha, p.beta);
  ForEachGemmElement(p, [&](uint64_t index, const GemmElementTerms& t) {
    const double b = bound.Bound(t);
    stats.Add(index, p.c_out[index], t.ref, b, input_overflow || bound.OverflowPossible(t));
  });
  return stats;
}

void CheckGemmOp(int rank, const Op& op, CheckReport* report, uint64_t max_work) {
  const format::GemmRecord& g = op.gemm;
  const OpName name{rank, op.seq, op.api_name()};
  const std::string where = absl::StrCat("rank ", rank, " seq ", op.seq, " ", name.api, ": ");
  if (g.status != 0) return report->AddNotChecked("call failed");
  if (!op.tensor_problem.empty()) return report->AddNotChecked("tensor unusable");
  // Device pointer mode: alpha and beta as the shim snapshotted them on the call's stream (slots kAlpha, kBeta).
  double alpha = g.alpha, beta = g.beta;
  if (g.flags & format::kScalarsUnknown) {
    const Tensor* at = op.tensor(TensorSlot::kAlpha);
    const Tensor* bt = op.tensor(TensorSlot::kBeta);
    auto scalar = [](const Tensor* t, double* out) {
      if (t == nullptr || t->meta.rows != 1 || t->meta.cols != 1 || t->meta.batch != 1) return false;
      const std::vector<double> v = DecodeAll(static_cast<DType>(t->meta.dtype), t->data);
      if (v.size() != 1) return false;
      *out = v[0];
      return true;
    };
    if (!scalar(at, &alpha) || !scalar(bt, &beta)) return report->AddNotChecked("alpha/beta on device");
  }
  const bool need_ab = alpha != 0, need_c = beta != 0;
  const Tensor* a = op.tensor(TensorSlot::kA);
  const Tensor* b = op.tensor(TensorSlot::kB);
  const Tensor* c_in = op.tensor(TensorSlot::kCIn);
  const Tensor* c_out = op.tensor(TensorSlot::kCOut);
  if (c_out == nullptr || (need_ab && (a == nullptr || b == nullptr)) || (need_c && c_in == nullptr))
    return report->AddNotChecked(op.MissingTensorsReason());
  const int64_t m = g.m, n = g.n, k = g.k, batch = g.batch_count;
  const bool ta = g.transa != 0, tb = g.transb != 0;
  bool shape_ok = m >= 0 && n >= 0 && k >= 0 && batch >= 1 && g.transa <= 2 && g.transb <= 2 &&
                  ShapeIs(c_out, m, n, batch) && c_out->meta.batch == batch;
  if (need_ab) shape_ok = shape_ok && ShapeIs(a, ta ? k : m, ta ? m : k, batch) && ShapeIs(b, tb ? n : k, tb ? k : n, batch);
  if (need_c) shape_ok = shape_ok && ShapeIs(c_in, m, n, batch);
  if (!shape_ok) {
    report->Warn(absl::StrCat(where, "captured tensor shapes do not match m=", m, " n=", n, " k=", k,
                              " batch=", batch));
    return report->AddNotChecked("shape mismatch");
  }
  const DType a_dt = need_ab ? static_cast<DType>(a->meta.dtype) : DTypeFromCuda(g.a_type);
  const DType b_dt = need_ab ? static_cast<DType>(b->meta.dtype) : DTypeFromCuda(g.b_type);
  const DType c_dt = static_cast<DType>(c_out->meta.dtype);
  if ((need_ab && (a_dt != DTypeFromCuda(g.a_type) || b_dt != DTypeFromCuda(g.b_type))) ||
      c_dt != DTypeFromCuda(g.c_type) || (need_c && c_in->meta.dtype != c_out->meta.dtype)) {
    report->Warn(absl::StrCat(where, "captured tensor dtypes differ from the call's (A ", CudaTypeName(g.a_type),
                              ", B ", CudaTypeName(g.b_type), ", C ", CudaTypeName(g.c_type), ")"));
    return report->AddNotChecked("dtype mismatch");
  }
  absl::StatusOr<GemmPrecision> precision =
      ResolveGemmPrecision(g.api, g.compute_type, g.math_mode, a_dt, b_dt, c_dt);
  if (!precision.ok()) {
    report->Warn(absl::StrCat("not checked: ", precision.status().message()));
    return report->AddNotChecked("no error model");
  }
  if (!GemmBound(*precision, k, alpha, beta).finite()) {
    report->Warn(absl::StrCat(where, "k=", k, " is beyond what the error model can bound for ",
                              precision->description, ": not checked"));
    return report->AddNotChecked("no finite error bound");
  }
  const bool shared = (!need_ab || (a->meta.batch == 1 && b->meta.batch == 1)) && (!need_c || c_in->meta.batch == 1);
  const uint64_t work = GemmReplayWork(m, n, k, batch, need_ab, need_c, shared);
  if (need_ab && (!FitsBlas(m, n, k) || !FitsBlas(m * k, k * n, m * n))) {
    report->Warn(absl::StrCat(where, "m=", m, " n=", n, " k=", k, " exceed BLAS's 32-bit indices: not checked"));
    return report->AddNotChecked("dimensions beyond BLAS indices");
  }
  if (work > max_work) {
    report->Warn(absl::StrCat(where, "replaying m=", m, " n=", n, " k=", k, " batch=", batch,
                              shared ? " (operands shared by every batch)" : "", " costs ", FormatCount(work),
                              " multiply-adds, over the budget of ", FormatCount(max_work), ": not checked"));
    return report->AddNotChecked("replay over the work budget");
  }
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch = batch;
  p.transa = g.transa;
  p.transb = g.transb;
  p.alpha = alpha;
  p.beta = beta;
  if (need_ab) {
    p.a = DecodeAll(a_dt, a->data);
    p.b = DecodeAll(b_dt, b->data);
  }
  if (need_c) p.c_in = DecodeAll(c_dt, c_in->data);
  p.c_out = DecodeAll(c_dt, c_out->data);
  const ElementStats s = ReplayGemm(p, *precision);
  const bool clean = s.violations == 0;
  report->AddChecked("gemm", name, s, clean);
  if (clean) return;
  Finding f;
  f.check = "gemm.replay";
  f.rank = rank;
  f.seq = op.seq;
  f.api = name.api;
  f.model = GetErrorModel(ErrorModelId::kGemmDeterministic).name;
  f.max_abs_err = s.max_abs_err;
  f.max_rel_err = s.max_rel_err;
  f.threshold = s.worst_bound;
  f.ratio = s.worst_ratio;
  f.elements = s.elements;
  f.violations = s.violations;
  f.has_element = true;
  const uint64_t mn = static_cast<uint64_t>(m * n);
  f.first.index = s.first_index;
  f.first.batch = static_cast<int64_t>(s.first_index / mn);
  f.first.col = static_cast<int64_t>(s.first_index % mn / static_cast<uint64_t>(m));
  f.first.row = static_cast<int64_t>(s.first_index % static_cast<uint64_t>(m));
  f.first.got = s.first_got;
  f.first.expected = s.first_ref;
  f.first.threshold = s.first_bound;
  const std::string at = absl::StrCat("element ", f.first.index, " (row ", f.first.row, ", col ", f.first.col,
                                      ", batch ", f.first.batch, ")");
  if (!std::isfinite(s.first_got) || !std::isfinite(s.first_ref)) {
    f.message = absl::StrCat("non-finite mismatch at ", at, ": got ", FormatNumber(s.first_got),
                             " where the FP64 replay gives ", FormatNumber(s.first_ref), "; ", s.violations, " of ",
                             s.elements, " elements violate");
  } else {
    f.message = absl::StrCat(s.violations, " of ", s.elements, " output elements exceed the bound; first at ", at,
                             ": got ", FormatNumber(s.first_got), ", FP64 replay ", FormatNumber(s.first_ref),
                             ", |err| ", FormatNumber(std::fabs(s.first_got - s.first_ref)), " > bound ",
                             FormatNumber(s.first_bound));
  }
  f.detail = absl::StrCat(precision->description, "; m=", m, " n=", n, " k=", k, " batch=", batch, " op(A)=",
                          std::string(1, "NTC"[g.transa]), " op(B)=", std::string(1, "NTC"[g.transb]), " alpha=", FormatNumber(alpha),
                          " beta=", FormatNumber(beta));
  report->AddFinding(std::move(f));
}

}  // namespace ttrace::analyzer

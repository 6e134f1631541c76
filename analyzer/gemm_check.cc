// Full replay runs through BLAS (blas.h): per batch, C_ref = op(A)·op(B) and P = |op(A)|·|op(B)| as two FP64 GEMMs
// over blocks of C, so memory stays O(m·k + k·n + block) and the FP64 work runs at the machine's GEMM speed (2048^3
// FP32: 22.5 s with the former hand loop on one thread, about 1 s of CPU now). The summation order inside BLAS is
// its own; the model's E_ref = θ_{k+3}(2^-53)·(|α|P + |β|Z) and P's inflation hold for any order. Row sums of
// |op(A)| and column sums of |op(B)| are plain loops. Full replay compares elements column by column, batch after
// batch, so the first violation is the lowest index.
//
// Projection (docs/error-models.md, "Projection check"): for x with x_j = ±1, with D = Ĉ - C (C exact) and
// |D_ij| <= β_ij = E_ij + u_out|Ĉ_ij| + η_out on a correct device (GemmBound::SumBound), |(D·x)_i| <= Σ_j β_ij, which
// is linear in Σ_j P_ij = (|op(A)|·(|op(B)|·1))_i, Σ_j |c0_ij|, Σ_j |Ĉ_ij|, n·R_i + Σ_j S_j: O(m·k + k·n + m·n). The
// FP64 evaluation of T = Ĉx - α·op(A)(op(B)x) - β·C0x errs by at most θ_{n+k+4}(2^-53)·M_i with
// M_i = (|Ĉ|·1)_i + |α|(|op(A)|(|op(B)|·1))_i + |β|(|C0|·1)_i (each product and sum of nonnegative terms, then
// three combining operations), added to the bound. A row whose |T_i| exceeds it is proven wrong. Rows whose
// |T_i|/bound stands out from the median over all rows (screening) are replayed as well: their elements are
// judged by the full replay's elementwise bound, so screening costs time, never a false finding. Columns likewise
// with yᵀ. A random sample (random rows × random columns) adds elements replayed with known probability. Elements
// replayed twice are judged once, in index order. The projection never forms |A| or |B| nor an FP64 copy of an
// operand: it reads the captured bytes a panel of columns at a time (RunPass: the panel converted to FP64 in a small
// buffer, its products and sums through BLAS), and replays gather and convert the rows and columns they need.
#include "analyzer/gemm_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <random>

#include <sys/mman.h>

#include "absl/strings/str_cat.h"
#include "analyzer/bf16_slices.h"
#include "analyzer/blas.h"
#include "analyzer/tensor_data.h"
#include "kernels/dtype.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

namespace {

constexpr double kU64 = 0x1p-53;

// One batch's operands: pointers into a GemmProblem and absolute values made once per batch.
struct BatchView {
  const GemmProblem* p = nullptr;
  int64_t bt = 0;
  const double* a = nullptr;      // as stored: m x k (k x m when transposed), lda
  const double* b = nullptr;      // k x n (n x k when transposed), ldb
  const double* c0 = nullptr;     // m x n, null when β = 0
  const double* c_out = nullptr;  // m x n
  std::vector<double> abs_a, abs_b;
  std::vector<double> row_a, col_b;  // Σ_l |op(A)_il| per row, Σ_l |op(B)_lj| per column (empty when α = 0)
  int64_t lda = 1, ldb = 1;
  bool ta = false, tb = false;

  // Also |A|, |B| and their row/column sums (full replay's BLAS GEMM of absolute values needs them); the projection
  // path reads the operands through ProjectionView instead (no O(m·k + k·n) copies).
  BatchView(const GemmProblem& prob, int64_t batch) : p(&prob), bt(batch) {
    const int64_t m = p->m, n = p->n, k = p->k;
    ta = p->transa != 0;
    tb = p->transb != 0;
    lda = ta ? k : m;
    ldb = tb ? n : k;
    const size_t c_size = static_cast<size_t>(m * n);
    c_out = p->c_out.data() + bt * c_size;
    if (p->beta != 0) c0 = p->c_in.data() + (p->c_in.size() > c_size ? bt * c_size : 0);
    if (p->alpha != 0) {
      const size_t a_size = static_cast<size_t>(m * k), b_size = static_cast<size_t>(k * n);
      a = p->a.data() + (p->a.size() > a_size ? bt * a_size : 0);
      b = p->b.data() + (p->b.size() > b_size ? bt * b_size : 0);
      abs_a.resize(a_size);
      abs_b.resize(b_size);
      for (size_t x = 0; x < a_size; ++x) abs_a[x] = std::fabs(a[x]);
      for (size_t x = 0; x < b_size; ++x) abs_b[x] = std::fabs(b[x]);
      // Once per batch (every replayed block reads them): O(m·k + k·n).
      row_a.assign(static_cast<size_t>(m), 0.0);
      col_b.assign(static_cast<size_t>(n), 0.0);
      for (int64_t l = 0; l < k; ++l)
        for (int64_t i = 0; i < m; ++i) row_a[i] += op_a_abs(i, l);
      for (int64_t j = 0; j < n; ++j)
        for (int64_t l = 0; l < k; ++l) col_b[j] += op_b_abs(l, j);
    }
  }
  double op_a_abs(int64_t i, int64_t l) const { return abs_a[ta ? l + i * p->k : i + l * p->m]; }
  double op_b_abs(int64_t l, int64_t j) const { return abs_b[tb ? j + l * p->n : l + j * p->k]; }
};

// The reference terms of the block rows [i0, i0 + rows) x columns [j0, j0 + cols) of one batch, through two BLAS
// GEMMs; calls fn(i, j, terms) column by column. `ref` and `mag` are scratch of at least rows·cols.
template <typename Fn>
void ReplayBlock(const BatchView& v, int64_t i0, int64_t rows, int64_t j0, int64_t cols, std::vector<double>* ref,
                 std::vector<double>* mag, Fn fn) {
  const GemmProblem& p = *v.p;
  const int64_t m = p.m, k = p.k;
  const bool use_ab = p.alpha != 0;
  if (use_ab) {
    const size_t need = static_cast<size_t>(rows * cols);
    if (ref->size() < need) ref->resize(need), mag->resize(need);
    // Row i0 of op(A): a + i0 when stored m x k, a + i0·k when stored k x m; column j0 of op(B) likewise.
    const int64_t a_row = v.ta ? i0 * k : i0, b_col = v.tb ? j0 : j0 * k;
    MatMul(v.ta, v.tb, rows, cols, k, v.a + a_row, v.lda, v.b + b_col, v.ldb, ref->data(), rows);
    MatMul(v.ta, v.tb, rows, cols, k, v.abs_a.data() + a_row, v.lda, v.abs_b.data() + b_col, v.ldb, mag->data(), rows);
  }
  for (int64_t jj = 0; jj < cols; ++jj) {
    const int64_t j = j0 + jj;
    for (int64_t ii = 0; ii < rows; ++ii) {
      const int64_t i = i0 + ii;
      GemmElementTerms t;
      if (use_ab) {
        t.ref = p.alpha * (*ref)[ii + jj * rows];
        t.abs_ab = (*mag)[ii + jj * rows];
        t.abs_row_a = v.row_a[i];
        t.abs_col_b = v.col_b[j];
      }
      if (v.c0 != nullptr) {
        const double c0 = v.c0[i + j * m];
        t.ref += p.beta * c0;
        t.abs_c0 = std::fabs(c0);
      }
      fn(i, j, t);
    }
  }
}

// Columns of C per BLAS block: C_ref and P blocks of at most 2^20 elements each (8 MiB).
int64_t ColumnBlock(int64_t m, int64_t n) {
  return std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(m, 1), 1, std::max<int64_t>(n, 1));
}

// Calls fn(index, terms) for every output element, batch by batch, column by column.
template <typename Fn>
void ForEachGemmElement(const GemmProblem& p, Fn fn) {
  const int64_t m = p.m, n = p.n;
  if (m == 0 || n == 0) return;
  const bool use_ab = p.alpha != 0, use_c = p.beta != 0;
  const size_t a_size = use_ab ? static_cast<size_t>(m * p.k) : 0, b_size = use_ab ? static_cast<size_t>(p.k * n) : 0;
  const size_t c_size = static_cast<size_t>(m * n);
  // Every operand shared by all batches: the reference of batch 0 is every batch's (kept, m·n terms).
  const bool shared = p.batch > 1 && (!use_ab || (p.a.size() <= a_size && p.b.size() <= b_size)) &&
                      (!use_c || p.c_in.size() <= c_size);
  std::vector<GemmElementTerms> first_batch(shared ? c_size : 0);
  const int64_t block = ColumnBlock(m, n);
  std::vector<double> ref, mag;
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    if (shared && bt > 0) {
      for (size_t x = 0; x < c_size; ++x) fn(static_cast<uint64_t>(bt) * c_size + x, first_batch[x]);
      continue;
    }
    const BatchView v(p, bt);
    for (int64_t j0 = 0; j0 < n; j0 += block) {
      ReplayBlock(v, 0, m, j0, std::min(block, n - j0), &ref, &mag,
                  [&](int64_t i, int64_t j, const GemmElementTerms& t) {
                    if (shared) first_batch[static_cast<size_t>(i + j * m)] = t;
                    fn(static_cast<uint64_t>(bt) * c_size + static_cast<uint64_t>(i + j * m), t);
                  });
    }
  }
}

// `p` with its captured operands decoded into its vectors (full replay works on FP64 copies); `p` itself when it has
// none.
const GemmProblem& Decoded(const GemmProblem& p, GemmProblem* storage) {
  if (p.raw_a.data == nullptr && p.raw_b.data == nullptr && p.raw_c_in.data == nullptr && p.raw_c_out.data == nullptr)
    return p;
  *storage = p;
  auto decode = [](const GemmOperand& raw, std::vector<double>* out) {
    if (raw.data == nullptr) return;
    out->resize(static_cast<size_t>(raw.size));
    DecodeStrided(raw.dtype, raw.data, 0, 1, raw.size, out->data());
  };
  decode(p.raw_a, &storage->a);
  decode(p.raw_b, &storage->b);
  decode(p.raw_c_in, &storage->c_in);
  decode(p.raw_c_out, &storage->c_out);
  storage->raw_a = storage->raw_b = storage->raw_c_in = storage->raw_c_out = GemmOperand{};
  return *storage;
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

bool InputOverflow(const GemmProblem& p, const GemmPrecision& precision) {
  return precision.in_max > 0 && p.alpha != 0 && (MaxAbs(p.a) > precision.in_max || MaxAbs(p.b) > precision.in_max);
}

}  // namespace

uint64_t GemmReplayWork(int64_t m, int64_t n, int64_t k, int64_t batch, bool use_ab, bool use_c, bool shared) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v < 0 ? 0 : v); };
  const unsigned __int128 work =
      Product({shared ? 1 : u(batch), u(m), u(n), use_ab ? u(k) : 1}) + Product({u(batch), u(m), u(n)});
  return work > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(work);
}

std::vector<GemmElementTerms> GemmReference(const GemmProblem& problem) {
  GemmProblem storage;
  const GemmProblem& p = Decoded(problem, &storage);
  std::vector<GemmElementTerms> out(static_cast<size_t>(p.m * p.n * p.batch));
  ForEachGemmElement(p, [&](uint64_t index, const GemmElementTerms& t) { out[index] = t; });
  return out;
}


namespace {

// Full replay; `max_bound` (may be null) gets the largest element bound.
ElementStats ReplayAll(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind, double* max_bound) {
  ElementStats stats;
  const bool input_overflow = InputOverflow(p, precision);
  const GemmBound bound(precision, p.k, p.alpha, p.beta, kind);
  double worst = 0;
  ForEachGemmElement(p, [&](uint64_t index, const GemmElementTerms& t) {
    const double b = bound.Bound(t);
    worst = std::max(worst, b);
    stats.Add(index, p.c_out[index], t.ref, b, input_overflow || bound.OverflowPossible(t));
  });
  if (max_bound != nullptr) *max_bound = worst;
  return stats;
}

}  // namespace

ElementStats ReplayGemm(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind) {
  GemmProblem storage;
  return ReplayAll(Decoded(p, &storage), precision, kind, nullptr);
}

const char* GemmMethodName(GemmMethod method) {
  switch (method) {
    case GemmMethod::kFull: return "full";
    case GemmMethod::kProjection: return "projection";
    case GemmMethod::kAuto: return "auto";
    case GemmMethod::kFullFp32: return "full-fp32";
  }
  return "?";
}

namespace {

// Median of the finite values (0 when none); reorders `v`.
double Median(std::vector<double>* v) {
  v->erase(std::remove_if(v->begin(), v->end(), [](double x) { return !std::isfinite(x); }), v->end());
  if (v->empty()) return 0;
  std::nth_element(v->begin(), v->begin() + v->size() / 2, v->end());
  return (*v)[v->size() / 2];
}

// One batch's operands as captured (or decoded: FP64 vectors), for the projection: elements are read a panel at a
// time, never copied whole.
struct Operand {
  GemmOperand op;
  uint64_t base = 0;    // the batch's first element
  bool direct = false;  // FP64 elements in a std::vector (aligned): panels are read in place
  double At(uint64_t i) const { return DecodeElement(op.dtype, op.data, base + i); }
  void Decode(uint64_t first, uint64_t stride, uint64_t count, double* out, uint64_t out_stride = 1) const {
    DecodeStrided(op.dtype, op.data, base + first, stride, count, out, out_stride);
  }
  void Gather(uint64_t first, const int64_t* offsets, int64_t count, double* out) const {
    DecodeGather(op.dtype, op.data, base + first, offsets, static_cast<uint64_t>(count), out);
  }
  const double* F64() const { return reinterpret_cast<const double*>(op.data) + base; }
};

Operand OperandOf(const std::vector<double>& decoded, const GemmOperand& raw, uint64_t batch_size, int64_t bt) {
  Operand o;
  if (raw.data != nullptr) {
    o.op = raw;
  } else {
    o.op = GemmOperand{DType::kF64, reinterpret_cast<const char*>(decoded.data()), decoded.size()};
    o.direct = true;
  }
  o.base = o.op.size > batch_size ? static_cast<uint64_t>(bt) * batch_size : 0;
  return o;
}

// One batch of a GemmProblem for the projection path.
struct ProjectionView {
  const GemmProblem* p = nullptr;
  int64_t bt = 0;
  Operand a, b, c0, c_out;  // a and b when α != 0, c0 when β != 0
  bool ta = false, tb = false;

  ProjectionView(const GemmProblem& prob, int64_t batch) : p(&prob), bt(batch) {
    const uint64_t m = static_cast<uint64_t>(p->m), n = static_cast<uint64_t>(p->n), k = static_cast<uint64_t>(p->k);
    ta = p->transa != 0;
    tb = p->transb != 0;
    c_out = OperandOf(p->c_out, p->raw_c_out, m * n, bt);
    if (p->beta != 0) c0 = OperandOf(p->c_in, p->raw_c_in, m * n, bt);
    if (p->alpha != 0) {
      a = OperandOf(p->a, p->raw_a, m * k, bt);
      b = OperandOf(p->b, p->raw_b, k * n, bt);
    }
  }
};

// One pass over a stored column-major matrix S (rows x cols), a panel of columns at a time (converted to FP64 in a
// buffer of about 2^15 elements, or read in place when FP64 already): any of S·R (R: cols x r, ld cols),
// Sᵀ·L (L: rows x r, ld rows), |S|·u (u: cols), |S|ᵀ·w (w: rows), and with `sums` the row and column sums of |S| and
// of its squares. Always: the largest |element| and whether an element is Inf or NaN. Products and sums go through
// BLAS on the panel (any summation order: the projection's evaluation bound holds for every order).
struct MatrixPass {
  const double* right = nullptr;
  int64_t right_cols = 0;
  const double* left = nullptr;
  int64_t left_cols = 0;
  const double* abs_right = nullptr;
  const double* abs_left = nullptr;
  bool sums = false;
  bool squares = false;  // with sums: also the sums of squares

  std::vector<double> s_right, s_left, abs_s_right, abs_s_left;  // rows x right_cols, cols x left_cols, rows, cols
  std::vector<double> row_sum, col_sum, row_sq, col_sq;
  double max = 0;
  bool nonfinite = false;
};

// ab[x] = |d[x]| (d may be ab), the largest into *mx, whether any is Inf or NaN into *bad; four independent lanes.
void AbsInto(const double* d, size_t count, double* ab, double* mx, bool* bad) {
  double m0 = *mx, m1 = 0, m2 = 0, m3 = 0, z0 = 0, z1 = 0, z2 = 0, z3 = 0;  // z: Σ 0·e, NaN iff some e is not finite
  size_t x = 0;
  for (; x + 4 <= count; x += 4) {
    const double e0 = std::fabs(d[x]), e1 = std::fabs(d[x + 1]), e2 = std::fabs(d[x + 2]), e3 = std::fabs(d[x + 3]);
    ab[x] = e0, ab[x + 1] = e1, ab[x + 2] = e2, ab[x + 3] = e3;
    m0 = e0 > m0 ? e0 : m0, m1 = e1 > m1 ? e1 : m1, m2 = e2 > m2 ? e2 : m2, m3 = e3 > m3 ? e3 : m3;
    z0 += 0 * e0, z1 += 0 * e1, z2 += 0 * e2, z3 += 0 * e3;
  }
  for (; x < count; ++x) {
    const double e = std::fabs(d[x]);
    ab[x] = e;
    m0 = e > m0 ? e : m0;
    z0 += 0 * e;
  }
  *mx = std::max({m0, m1, m2, m3});
  *bad |= std::isnan(z0 + z1 + z2 + z3);
}

void RunPass(const Operand& s, int64_t rows, int64_t cols, MatrixPass* ps) {
  if (ps->right_cols == 0) ps->right = nullptr;
  if (ps->left_cols == 0) ps->left = nullptr;
  if (ps->right != nullptr) ps->s_right.assign(static_cast<size_t>(rows * ps->right_cols), 0.0);
  if (ps->left != nullptr) ps->s_left.assign(static_cast<size_t>(cols * ps->left_cols), 0.0);
  if (ps->abs_right != nullptr) ps->abs_s_right.assign(static_cast<size_t>(rows), 0.0);
  if (ps->abs_left != nullptr) ps->abs_s_left.assign(static_cast<size_t>(cols), 0.0);
  if (ps->sums) {
    ps->row_sum.assign(static_cast<size_t>(rows), 0.0);
    ps->row_sq.assign(static_cast<size_t>(rows), 0.0);
    ps->col_sum.assign(static_cast<size_t>(cols), 0.0);
    ps->col_sq.assign(static_cast<size_t>(cols), 0.0);
  }
  if (rows == 0 || cols == 0) return;
  const int64_t pc = std::clamp<int64_t>((int64_t{1} << 15) / rows, 1, cols);
  std::vector<double> buf(static_cast<size_t>(rows * pc));
  std::vector<double> ones(static_cast<size_t>(std::max(rows, pc)), 1.0);
  double mx = 0;
  bool bad = false;
  for (int64_t c0 = 0; c0 < cols; c0 += pc) {
    const int64_t w = std::min(pc, cols - c0);
    const size_t count = static_cast<size_t>(rows * w);
    const double* d = buf.data();
    if (s.direct) {
      d = s.F64() + c0 * rows;
    } else {
      s.Decode(static_cast<uint64_t>(c0 * rows), 1, count, buf.data());
    }
    if (ps->right != nullptr)
      MatMulAdd(false, false, rows, ps->right_cols, w, d, rows, ps->right + c0, cols, ps->s_right.data(), rows);
    if (ps->left != nullptr)
      MatMul(true, false, w, ps->left_cols, rows, d, rows, ps->left, rows, ps->s_left.data() + c0, cols);
    double* ab = buf.data();
    AbsInto(d, count, ab, &mx, &bad);
    if (ps->abs_right != nullptr)
      MatMulAdd(false, false, rows, 1, w, ab, rows, ps->abs_right + c0, cols, ps->abs_s_right.data(), rows);
    if (ps->abs_left != nullptr)
      MatMul(true, false, w, 1, rows, ab, rows, ps->abs_left, rows, ps->abs_s_left.data() + c0, cols);
    if (ps->sums) {
      MatMulAdd(false, false, rows, 1, w, ab, rows, ones.data(), w, ps->row_sum.data(), rows);
      MatMul(true, false, w, 1, rows, ab, rows, ones.data(), rows, ps->col_sum.data() + c0, cols);
      if (ps->squares) {
        for (size_t x = 0; x < count; ++x) ab[x] *= ab[x];
        MatMulAdd(false, false, rows, 1, w, ab, rows, ones.data(), w, ps->row_sq.data(), rows);
        MatMul(true, false, w, 1, rows, ab, rows, ones.data(), rows, ps->col_sq.data() + c0, cols);
      }
    }
  }
  ps->max = mx;
  ps->nonfinite = bad;
}

// Everything the projection needs of one batch's absolute values, in O(m·k + k·n + m·n) and without forming |A|,
// |B| or |A|·|B|.
struct ProjectionSums {
  std::vector<double> row_a, col_b;  // R_i = Σ_l |op(A)_il| (m), S_j = Σ_l |op(B)_lj| (n)
  std::vector<double> p_row, p_col;  // (|op(A)|·(|op(B)|·1))_i (m), ((1ᵀ|op(A)|)·|op(B)|)_j (n)
  std::vector<double> out_row, out_col, c0_row, c0_col;  // Σ|Ĉ| and Σ|C0| per row and per column
  double max_a = 0, max_b = 0, norm_a = 0, norm_b = 0, max_c0 = 0;  // norms: the largest row of op(A), column of op(B)
  double max_out = 0;
};

// The passes of one batch: its sums, and the raw projections T = Ĉ·X − β·C0·X − α·op(A)·(op(B)·X) (m x rx) and
// Ĉᵀ·Y − β·C0ᵀ·Y − α·op(B)ᵀ·(op(A)ᵀ·Y) (n x ry), from X (n x rx) and Y (m x ry). A is read once, B twice (the second
// pass needs 1ᵀ|op(A)|), C and C0 once. `input_problem`: an Inf or NaN in A, B or C0, or |A| or |B| beyond
// `in_max` (> 0): the projection does not apply.
struct BatchPasses {
  ProjectionSums sums;
  std::vector<double> t_rows, t_cols;
  bool input_problem = false;
};

BatchPasses RunBatchPasses(const ProjectionView& v, const std::vector<double>& x, const std::vector<double>& y,
                           double in_max) {
  const GemmProblem& p = *v.p;
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t rx = n > 0 ? static_cast<int64_t>(x.size()) / n : 0, ry = m > 0 ? static_cast<int64_t>(y.size()) / m : 0;
  BatchPasses out;
  ProjectionSums& s = out.sums;
  s.row_a.assign(static_cast<size_t>(m), 0.0);
  s.col_b.assign(static_cast<size_t>(n), 0.0);
  s.p_row.assign(static_cast<size_t>(m), 0.0);
  s.p_col.assign(static_cast<size_t>(n), 0.0);
  std::vector<double> ab_rows, ab_cols;
  if (p.alpha != 0) {
    // op(B) is k x n: stored k x n, or n x k when transposed. First pass: its sums and op(B)·X.
    MatrixPass b1;
    b1.sums = b1.squares = true;
    (v.tb ? b1.left : b1.right) = x.data();
    (v.tb ? b1.left_cols : b1.right_cols) = rx;
    RunPass(v.b, v.tb ? n : k, v.tb ? k : n, &b1);
    const std::vector<double>& mid = v.tb ? b1.s_left : b1.s_right;  // k x rx
    const std::vector<double>& b_row = v.tb ? b1.col_sum : b1.row_sum;  // |op(B)|·1 (k)
    s.col_b = v.tb ? b1.row_sum : b1.col_sum;
    const std::vector<double>& b_col_sq = v.tb ? b1.row_sq : b1.col_sq;
    s.max_b = b1.max;
    // op(A) is m x k: stored m x k, or k x m when transposed. Its sums, |op(A)|·b_row, op(A)·mid, op(A)ᵀ·Y.
    MatrixPass a;
    a.sums = a.squares = true;
    (v.ta ? a.abs_left : a.abs_right) = b_row.data();
    (v.ta ? a.left : a.right) = mid.data();
    (v.ta ? a.left_cols : a.right_cols) = rx;
    (v.ta ? a.right : a.left) = y.data();
    (v.ta ? a.right_cols : a.left_cols) = ry;
    RunPass(v.a, v.ta ? k : m, v.ta ? m : k, &a);
    s.row_a = v.ta ? a.col_sum : a.row_sum;
    const std::vector<double>& a_col = v.ta ? a.row_sum : a.col_sum;  // 1ᵀ|op(A)| (k)
    const std::vector<double>& a_row_sq = v.ta ? a.col_sq : a.row_sq;
    s.max_a = a.max;
    s.p_row = v.ta ? a.abs_s_left : a.abs_s_right;
    ab_rows = v.ta ? a.s_left : a.s_right;            // m x rx
    const std::vector<double>& mid2 = v.ta ? a.s_right : a.s_left;  // op(A)ᵀ·Y: k x ry
    // Second pass over B: |op(B)|ᵀ·(1ᵀ|op(A)|)ᵀ and op(B)ᵀ·mid2.
    MatrixPass b2;
    (v.tb ? b2.abs_right : b2.abs_left) = a_col.data();
    (v.tb ? b2.right : b2.left) = mid2.data();
    (v.tb ? b2.right_cols : b2.left_cols) = ry;
    RunPass(v.b, v.tb ? n : k, v.tb ? k : n, &b2);
    s.p_col = v.tb ? b2.abs_s_right : b2.abs_s_left;
    ab_cols = v.tb ? b2.s_right : b2.s_left;          // n x ry
    if (m > 0 && k > 0) s.norm_a = std::sqrt(*std::max_element(a_row_sq.begin(), a_row_sq.end()));
    if (n > 0 && k > 0) s.norm_b = std::sqrt(*std::max_element(b_col_sq.begin(), b_col_sq.end()));
    out.input_problem |= a.nonfinite || b1.nonfinite || (in_max > 0 && (a.max > in_max || b1.max > in_max));
  }
  MatrixPass c;
  c.sums = true;
  c.right = x.data();
  c.right_cols = rx;
  c.left = y.data();
  c.left_cols = ry;
  RunPass(v.c_out, m, n, &c);
  s.out_row = c.row_sum;
  s.out_col = c.col_sum;
  s.max_out = c.max;
  out.t_rows = std::move(c.s_right);
  out.t_cols = std::move(c.s_left);
  if (p.beta != 0) {
    MatrixPass c0 = c;
    c0.s_right.clear();
    c0.s_left.clear();
    RunPass(v.c0, m, n, &c0);
    s.c0_row = c0.row_sum;
    s.c0_col = c0.col_sum;
    s.max_c0 = c0.max;
    for (size_t e = 0; e < out.t_rows.size(); ++e) out.t_rows[e] -= p.beta * c0.s_right[e];
    for (size_t e = 0; e < out.t_cols.size(); ++e) out.t_cols[e] -= p.beta * c0.s_left[e];
    out.input_problem |= c0.nonfinite;
  } else {
    s.c0_row.assign(static_cast<size_t>(m), 0.0);
    s.c0_col.assign(static_cast<size_t>(n), 0.0);
  }
  if (p.alpha != 0) {
    for (size_t e = 0; e < out.t_rows.size(); ++e) out.t_rows[e] -= p.alpha * ab_rows[e];
    for (size_t e = 0; e < out.t_cols.size(); ++e) out.t_cols[e] -= p.alpha * ab_cols[e];
  }
  return out;
}

// An upper bound on the largest elementwise bound of one batch, from its sums (for the sensitivity the projection
// method states: an element flagged for replay is found when its error exceeds twice its own bound).
// P_ij = Σ_l |a_il||b_lj| is at most ‖a_i‖₂‖b_j‖₂ (Cauchy-Schwarz), R_i·max|B| and S_j·max|A|; |ref| at most
// |α|P + |β||c0|; the bound is increasing in each term.
double MaxElementBound(const GemmProblem& p, const ProjectionSums& s, const GemmBound& bound) {
  GemmElementTerms t;
  t.abs_c0 = s.max_c0;
  if (p.alpha != 0 && p.m > 0 && p.n > 0) {
    t.abs_row_a = *std::max_element(s.row_a.begin(), s.row_a.end());
    t.abs_col_b = *std::max_element(s.col_b.begin(), s.col_b.end());
    // 1 + 2^-40 covers the evaluation of these sums and the square roots.
    t.abs_ab = std::min({s.norm_a * s.norm_b, t.abs_row_a * s.max_b, t.abs_col_b * s.max_a}) * (1 + 0x1p-40 * (p.k + 4));
  }
  t.ref = std::fabs(p.alpha) * t.abs_ab + std::fabs(p.beta) * t.abs_c0;
  return bound.Bound(t);
}

// One side of the projection check of one batch: rows (x of length n) or columns (y of length m).
struct SideResult {
  std::vector<double> ratio;      // per row/column: max over the vectors of |T| / rigorous bound
  std::vector<double> bound;      // the rigorous bound per row/column
  std::vector<double> eval;       // its FP64-evaluation part
};

// Judges one side: `t` holds T = Ĉx − α·op(A)(op(B)x) − β·C0x for r vectors (out x r; columns: the same on the
// transposed problem). `deviations` (may be null) gets |T| (out x r).
SideResult JudgeSide(const GemmProblem& p, const ProjectionSums& sums, const GemmBound& bound, bool columns,
                     const std::vector<double>& t, std::vector<double>* deviations = nullptr) {
  const int64_t m = p.m, n = p.n, k = p.k;
  const int64_t len = columns ? m : n;  // length of the random vectors
  const int64_t out = columns ? n : m;  // rows/columns judged
  const int r = out > 0 ? static_cast<int>(t.size() / static_cast<size_t>(out)) : 0;
  const std::vector<double>& abs_out = columns ? sums.out_col : sums.out_row;
  const std::vector<double>& abs_c0 = columns ? sums.c0_col : sums.c0_row;
  const std::vector<double>& sum_p = columns ? sums.p_col : sums.p_row;
  std::vector<double> rs(static_cast<size_t>(out), 0.0);
  if (p.alpha != 0) {
    double r_total = 0, s_total = 0;
    for (double e : sums.row_a) r_total += e;
    for (double e : sums.col_b) s_total += e;
    for (int64_t o = 0; o < out; ++o)
      rs[o] = columns ? r_total + static_cast<double>(m) * sums.col_b[o] : static_cast<double>(n) * sums.row_a[o] + s_total;
  }
  // Every sum above is of nonnegative terms over at most n + k (or m + k) of them, each product exact to u64:
  // relative error at most θ_{len+k}(u64) (θ_{len+k+4} covers the combinations); inflated by 2θ.
  const double theta = Theta(kU64, static_cast<double>(len + k + 4));
  const double inflate = 1 + 2 * theta;
  SideResult res;
  res.ratio.assign(static_cast<size_t>(out), 0.0);
  res.bound.resize(static_cast<size_t>(out));
  res.eval.resize(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    GemmSumTerms st;
    st.abs_ab = sum_p[o] * inflate;
    st.abs_rs = rs[o] * inflate;
    st.abs_c0 = abs_c0[o] * inflate;
    st.abs_out = abs_out[o] * inflate;
    st.count = static_cast<double>(len);
    const double mag = (abs_out[o] + std::fabs(p.alpha) * sum_p[o] + std::fabs(p.beta) * abs_c0[o]) * inflate;
    res.eval[o] = 2 * theta * mag;
    res.bound[o] = bound.SumBound(st) + res.eval[o];
    for (int s = 0; s < r; ++s) {
      const double dev = std::fabs(t[o + s * out]);
      if (deviations != nullptr) deviations->push_back(dev);
      // NaN marks a projection that is not finite (an Inf or NaN output): the row is replayed, not judged here.
      const double ratio = !std::isfinite(dev) ? NAN : dev == 0 ? 0 : res.bound[o] > 0 ? dev / res.bound[o] : HUGE_VAL;
      res.ratio[o] = std::isnan(ratio) || std::isnan(res.ratio[o]) ? NAN : std::max(res.ratio[o], ratio);
    }
  }
  return res;
}

// Scratch of ReplaySubset, kept across calls of one verification.
struct SubsetScratch {
  std::vector<double> a, abs_a, b, abs_b, ref, mag;
};

// Replays the elements rows × cols of one batch (any index sets, each without repeats): the rows of op(A) and the
// columns of op(B) are gathered, signed and absolute, in blocks of at most 256 (fewer when k is large: a gathered
// block holds at most 2^20 elements), and each pair of blocks is two BLAS GEMMs; calls fn(i, j, terms). Memory is
// O(block·k) whatever the sets, so a row flagged by the projection costs one pass over B, not a copy of |B|.
template <typename Fn>
void ReplaySubset(const ProjectionView& v, const ProjectionSums& sums, const std::vector<int64_t>& rows,
                  const std::vector<int64_t>& cols, SubsetScratch* sc, Fn fn) {
  const GemmProblem& p = *v.p;
  const int64_t m = p.m, n = p.n, k = p.k;
  const bool use_ab = p.alpha != 0;
  const int64_t blk = std::clamp<int64_t>((int64_t{1} << 20) / std::max<int64_t>(k, 1), 1, 256);
  const size_t gather = static_cast<size_t>(blk * k);
  if (use_ab && sc->a.size() < gather) {
    sc->a.resize(gather), sc->abs_a.resize(gather), sc->b.resize(gather), sc->abs_b.resize(gather);
    sc->ref.resize(static_cast<size_t>(blk * blk)), sc->mag.resize(static_cast<size_t>(blk * blk));
  }
  const int64_t nr = static_cast<int64_t>(rows.size()), nc = static_cast<int64_t>(cols.size());
  for (int64_t r0 = 0; r0 < nr; r0 += blk) {
    const int64_t br = std::min(blk, nr - r0);
    if (use_ab) {  // op(A) rows r0.. as a br x k block, ld = br
      if (v.ta) {  // a row of op(A) is a stored column
        for (int64_t ii = 0; ii < br; ++ii)
          v.a.Decode(static_cast<uint64_t>(rows[r0 + ii] * k), 1, static_cast<uint64_t>(k), sc->a.data() + ii,
                     static_cast<uint64_t>(br));
      } else {  // stored column by stored column (memory order), the block's rows of each
        for (int64_t l = 0; l < k; ++l) v.a.Gather(static_cast<uint64_t>(l * m), rows.data() + r0, br, sc->a.data() + l * br);
      }
      for (size_t x = 0; x < static_cast<size_t>(br * k); ++x) sc->abs_a[x] = std::fabs(sc->a[x]);
    }
    for (int64_t c0 = 0; c0 < nc; c0 += blk) {
      const int64_t bc = std::min(blk, nc - c0);
      if (use_ab) {  // op(B) columns c0.. as a k x bc block, ld = k
        for (int64_t jj = 0; jj < bc; ++jj) {
          const int64_t j = cols[c0 + jj];
          if (v.tb) {
            v.b.Decode(static_cast<uint64_t>(j), static_cast<uint64_t>(n), static_cast<uint64_t>(k), sc->b.data() + jj * k);
          } else {
            v.b.Decode(static_cast<uint64_t>(j * k), 1, static_cast<uint64_t>(k), sc->b.data() + jj * k);
          }
        }
        for (size_t x = 0; x < static_cast<size_t>(bc * k); ++x) sc->abs_b[x] = std::fabs(sc->b[x]);
        MatMul(false, false, br, bc, k, sc->a.data(), br, sc->b.data(), k, sc->ref.data(), br);
        MatMul(false, false, br, bc, k, sc->abs_a.data(), br, sc->abs_b.data(), k, sc->mag.data(), br);
      }
      for (int64_t jj = 0; jj < bc; ++jj) {
        const int64_t j = cols[c0 + jj];
        for (int64_t ii = 0; ii < br; ++ii) {
          const int64_t i = rows[r0 + ii];
          GemmElementTerms t;
          if (use_ab) {
            t.ref = p.alpha * sc->ref[ii + jj * br];
            t.abs_ab = sc->mag[ii + jj * br];
            t.abs_row_a = sums.row_a[i];
            t.abs_col_b = sums.col_b[j];
          }
          if (p.beta != 0) {
            const double c0v = v.c0.At(static_cast<uint64_t>(i + j * m));
            t.ref += p.beta * c0v;
            t.abs_c0 = std::fabs(c0v);
          }
          fn(i, j, t);
        }
      }
    }
  }
}

// `count` distinct indices of [0, size), drawn uniformly by a partial Fisher-Yates shuffle, in increasing order.
std::vector<int64_t> RandomSubset(int64_t size, int64_t count, std::mt19937_64* rng) {
  std::vector<int64_t> all(static_cast<size_t>(size));
  for (int64_t x = 0; x < size; ++x) all[x] = x;
  count = std::min(count, size);
  for (int64_t x = 0; x < count; ++x) std::swap(all[x], all[x + static_cast<int64_t>((*rng)() % static_cast<uint64_t>(size - x))]);
  all.resize(static_cast<size_t>(count));
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<int64_t> AllIndices(int64_t size) {
  std::vector<int64_t> all(static_cast<size_t>(size));
  for (int64_t x = 0; x < size; ++x) all[x] = x;
  return all;
}

// The rows (or columns) to replay: every one whose projection is not finite (an Inf or NaN output: the elementwise
// rules decide whether a correct device could give it, so it is replayed, never counted as proven, and never capped),
// every one proven wrong (ratio > 1), then those above the screening threshold, highest first, at most `cap` besides
// the non-finite ones (proven ones first). Returns the threshold used.
double Flag(const SideResult& side, double screen, size_t cap, std::vector<int64_t>* picked, uint64_t* proven,
            double* max_ratio) {
  std::vector<double> sorted = side.ratio;
  const double typical = Median(&sorted) / 0.6745;
  // Where every deviation is exactly zero (exact arithmetic), any nonzero one is flagged: but not below the FP64
  // evaluation error, which a correct row may show.
  const double threshold = std::min(1.0, screen * typical);
  std::vector<std::pair<double, int64_t>> cand;
  for (size_t o = 0; o < side.ratio.size(); ++o) {
    const double r = side.ratio[o];
    const double floor_ratio = side.bound[o] > 0 ? side.eval[o] / side.bound[o] : 0;
    if (std::isnan(r)) {
      picked->push_back(static_cast<int64_t>(o));
    } else if (r > 1) {
      ++*proven;
      cand.emplace_back(HUGE_VAL, static_cast<int64_t>(o));
    } else if (r > threshold && r > 2 * floor_ratio) {
      cand.emplace_back(r, static_cast<int64_t>(o));
    }
    if (!std::isnan(r)) *max_ratio = std::max(*max_ratio, r);
  }
  std::stable_sort(cand.begin(), cand.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t c = 0; c < cand.size() && c < cap; ++c) picked->push_back(cand[c].second);
  return threshold;
}

std::vector<double> RandomSigns(size_t count, std::mt19937_64* rng) {
  std::vector<double> x(count);
  for (double& e : x) e = ((*rng)() & 1) ? 1.0 : -1.0;
  return x;
}

GemmProjection ProjectOneSide(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind,
                              const std::vector<double>& x, int64_t batch, bool columns) {
  const ProjectionView v(p, batch);
  const GemmBound bound(precision, p.k, p.alpha, p.beta, kind);
  const std::vector<double> none;
  const BatchPasses passes = RunBatchPasses(v, columns ? none : x, columns ? x : none, 0);
  GemmProjection out;
  out.bound = JudgeSide(p, passes.sums, bound, columns, columns ? passes.t_cols : passes.t_rows, &out.deviation).bound;
  return out;
}

}  // namespace

GemmProjection ProjectRows(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind,
                           const std::vector<double>& x, int64_t batch) {
  return ProjectOneSide(p, precision, kind, x, batch, false);
}

GemmProjection ProjectColumns(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind,
                              const std::vector<double>& y, int64_t batch) {
  return ProjectOneSide(p, precision, kind, y, batch, true);
}

namespace {

// Full replay of every element (decoding captured operands).
GemmVerdict FullVerdict(const GemmProblem& problem, const GemmPrecision& precision, const GemmCheckOptions& o) {
  GemmProblem storage;
  const GemmProblem& p = Decoded(problem, &storage);
  GemmVerdict verdict;
  for (double x : p.c_out) verdict.max_abs_out = std::max(verdict.max_abs_out, std::fabs(x));
  verdict.method = GemmMethod::kFull;
  // An error d on top of a clean error e exceeds the bound b when |d| > b + |e|: certain beyond 2·b.
  double worst = 0;
  verdict.stats = ReplayAll(p, precision, o.bound, &worst);
  verdict.guaranteed = verdict.screened = 2 * worst;
  return verdict;
}

// Full replay in FP32 slices (GemmMethod::kFullFp32; docs/error-models.md, "Full replay in FP32 slices"). Inputs of
// at most 12 significant bits (BF16, FP16, FP8) multiply exactly in FP32, so an FP32 GEMM errs only by its additions:
// over a slice of k_s terms by at most θ_{k_s}(2^-24) times the slice's Σ|a||b| (plus 2^-126 per operation should a
// product or a sum underflow). The reference is the FP64 sum of G = 4 such slices and |op(A)|·|op(B)| one FP32 GEMM
// over all k (nonnegative terms: within θ_k(2^-24) relative). For each element the FP64 full replay's numbers lie in
// known intervals: |C_ref64 − ref| ≤ E (this reference's error plus the FP64 replay's own), P within
// [P_lo, P_hi]. The element passes when |Ĉ − ref| + E stays within the bound evaluated at P_lo and |ref| − E (the
// bound increases with both): then full replay passes it too. Every other element (and every non-finite one) is
// recomputed in FP64 from the same operands (two dot products of length k) and judged by GemmBound::Bound, as
// full replay judges it. Elements are visited in index order, so the first violation is full replay's.
// The slices run on OpenBLAS's SGEMM or, where the CPU has AVX512-BF16 and the values are BF16 numbers, on
// vdpbf16ps (bf16_slices.h: the same model, its sums formed in the same slice order; SliceKernel).

constexpr double kU32 = 0x1p-24, kEta32 = 0x1p-126;
// Slices of k the reference is summed over (G): its error is θ_{k/G}(2^-24)·P, while the lower end of P they give
// (Σ|ŝ_g|, about √(G·k) terms' worth) grows with √G: G = 2·∛k keeps the first below the model's slack at the second
// for Gaussian and uniform data (docs/error-models.md), within [4, 64].
int64_t Fp32Slices(int64_t k) {
  return std::min<int64_t>(k, std::clamp<int64_t>(std::llround(2 * std::cbrt(static_cast<double>(k))), 4, 64));
}

// Whether d is 0 or a normal FP32 number of at most 12 significant bits (then it is stored in *out). FP32 subnormals
// are refused: a CPU with denormals-are-zero would read them as 0.
bool FitsSlices(double d, float* out) {
  const float f = static_cast<float>(d);
  if (!(static_cast<double>(f) == d)) return false;  // NaN, or not an FP32 value
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) == 0) {
    *out = f;
    return true;
  }
  const uint32_t exp = (bits >> 23) & 0xff;
  if (exp == 0 || exp == 0xff) return false;  // subnormal, Inf
  if ((bits & 0xfffu) != 0) return false;     // more than 12 significant bits
  *out = f;
  return true;
}

// A buffer of trivially copyable values whose contents start undefined (no zeroing pass over hundreds of MB), in
// 2 MiB-aligned storage advised for transparent huge pages when it spans one (a first touch faults once per 2 MiB
// instead of once per 4 KiB where the kernel allows it: madvise mode). resize() discards the contents.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) { resize(n); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(p_); }
  void resize(size_t n) {
    if (n > cap_) {
      std::free(p_);
      constexpr size_t kHuge = size_t{1} << 21;
      const size_t bytes = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
      p_ = static_cast<T*>(std::aligned_alloc(kHuge, bytes));
      if (p_ == nullptr) throw std::bad_alloc();
      madvise(p_, bytes, MADV_HUGEPAGE);  // advice only: its failure changes nothing but speed
      cap_ = n;
    }
    n_ = n;
  }
  T* data() { return p_; }
  const T* data() const { return p_; }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0, cap_ = 0;
};

// Slices computed before one pass adds them up (each pass reads and writes ref and abs_sl once: memory traffic).
constexpr int kSlicesPerPass = 4;

// The slices' FP32 sums over a panel, in slice order with one rounding per addition (as adding one slice at a time):
// ref[x] = (..(ref[x] + t[0][x]) + t[1][x]) ..) and abs[x] likewise of |t[s][x]|; `first`: they start from t[0].
// Eight lanes at a time (GCC vector extensions: IEEE additions lane by lane, whatever the vector unit), compiled for
// AVX2 too and chosen at run time (the panel stays in cache: the SSE2 build's spills were most of the cost).
typedef float F8 __attribute__((vector_size(32)));
typedef uint32_t U8 __attribute__((vector_size(32)));
inline __attribute__((always_inline)) void AddSlicesBody(const float* const* t, int count_slices, bool first,
                                                         size_t count, float* ref, float* abs) {
  const U8 no_sign = {0x7fffffffu, 0x7fffffffu, 0x7fffffffu, 0x7fffffffu,
                      0x7fffffffu, 0x7fffffffu, 0x7fffffffu, 0x7fffffffu};
  const int s0 = first ? 1 : 0;
  size_t x = 0;
  for (; x + 8 <= count; x += 8) {
    F8 r, a, v;
    if (first) {
      std::memcpy(&r, t[0] + x, sizeof r);
      a = reinterpret_cast<F8>(reinterpret_cast<U8>(r) & no_sign);
    } else {
      std::memcpy(&r, ref + x, sizeof r);
      std::memcpy(&a, abs + x, sizeof a);
    }
    for (int sl = s0; sl < count_slices; ++sl) {
      std::memcpy(&v, t[sl] + x, sizeof v);
      r += v;
      a += reinterpret_cast<F8>(reinterpret_cast<U8>(v) & no_sign);
    }
    std::memcpy(ref + x, &r, sizeof r);
    std::memcpy(abs + x, &a, sizeof a);
  }
  for (; x < count; ++x) {
    float r = first ? t[0][x] : ref[x], a = first ? std::fabs(t[0][x]) : abs[x];
    for (int sl = s0; sl < count_slices; ++sl) r += t[sl][x], a += std::fabs(t[sl][x]);
    ref[x] = r, abs[x] = a;
  }
}

void AddSlicesDefault(const float* const* t, int count_slices, bool first, size_t count, float* ref, float* abs) {
  AddSlicesBody(t, count_slices, first, count, ref, abs);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) void AddSlicesAvx2(const float* const* t, int count_slices, bool first, size_t count,
                                                   float* ref, float* abs) {
  AddSlicesBody(t, count_slices, first, count, ref, abs);
}
#endif

void AddSlices(const float* const* t, int count_slices, bool first, size_t count, float* ref, float* abs) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return AddSlicesAvx2(t, count_slices, first, count, ref, abs);
#endif
  AddSlicesDefault(t, count_slices, first, count, ref, abs);
}

// One batch's operands as FP32, laid out for the slices: op(A) row by row (k x m column-major: row i of op(A) is
// at i·k), and one panel of op(B)'s columns at a time (k x cols: bc, read by ReadSlicePanel); with the FP64 row sums
// of |op(A)| and column sums of |op(B)| (as full replay's BatchView sums them), the row and column sums of squares and
// largest magnitudes (the bounds on P), and the largest magnitudes (of A; of the panel's columns of B). False when a
// value does not fit. |op(A)| is made only when P is computed (abs_at).
struct SliceOperands {
  Buffer<float> at, abs_at, bc;
  std::vector<double> row_a, col_b, row_norm_a, col_norm_b, row_max, col_max;
  double max_a = 0, max_b = 0;
};

// BF16 and FP16 operands converted from their bits (exactly: at most 11 significant bits; an FP16 subnormal is an FP32
// normal), so the values FitsSlices refuses are told by their exponent bits: Inf and NaN, and BF16 subnormals (FP32
// subnormals). The largest magnitude from the bits (ordered as the values are, for finite ones); the transpose in
// tiles of 64 x 64. Arguments as ReadFp32's.
template <bool kBf16>
bool ReadFp32Half(const Operand& s, int64_t first, int64_t ld, int64_t rows, int64_t cols, bool transpose, float* o,
                  double* max) {
  const char* in = s.op.data + (s.base + static_cast<uint64_t>(first)) * 2;
  uint32_t bad = 0;
  uint16_t mx = 0;
  auto take = [&](int64_t r, int64_t c) -> float {
    uint16_t u;
    std::memcpy(&u, in + 2 * (r + c * ld), 2);
    const uint16_t mag = u & 0x7fffu;
    if (kBf16) {
      bad |= static_cast<uint32_t>(mag >= 0x7f80u) | static_cast<uint32_t>(mag != 0 && mag < 0x80u);
    } else {
      bad |= static_cast<uint32_t>(mag >= 0x7c00u);
    }
    mx = std::max(mx, mag);
    return kBf16 ? kernels::Bf16ToFloat(u) : kernels::HalfToFloat(u);
  };
  if (!transpose) {
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = 0; r < rows; ++r) o[static_cast<size_t>(r + c * rows)] = take(r, c);
  } else {
    constexpr int64_t kTile = 64;
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      for (int64_t r0 = 0; r0 < rows; r0 += kTile)
        for (int64_t c = c0; c < std::min(cols, c0 + kTile); ++c)
          for (int64_t r = r0; r < std::min(rows, r0 + kTile); ++r) o[static_cast<size_t>(c + r * cols)] = take(r, c);
  }
  *max = kBf16 ? kernels::Bf16ToFloat(mx) : kernels::HalfToFloat(mx);
  return bad == 0;
}

// Reads the rows x cols block of a stored column-major operand whose element (r, c) is at first + r + c·ld into `o`
// as it is (rows x cols) or as its transpose (cols x rows), checking every value (FitsSlices), and its largest
// magnitude into *max.
bool ReadFp32(const Operand& s, int64_t first, int64_t ld, int64_t rows, int64_t cols, bool transpose, float* o,
              double* max) {
  if (!s.direct && s.op.dtype == DType::kBF16) return ReadFp32Half<true>(s, first, ld, rows, cols, transpose, o, max);
  if (!s.direct && s.op.dtype == DType::kF16) return ReadFp32Half<false>(s, first, ld, rows, cols, transpose, o, max);
  std::vector<double> tmp(static_cast<size_t>(rows));
  double mx = 0;
  for (int64_t c = 0; c < cols; ++c) {
    s.Decode(static_cast<uint64_t>(first + c * ld), 1, static_cast<uint64_t>(rows), tmp.data());
    for (int64_t r = 0; r < rows; ++r) {
      float f;
      if (!FitsSlices(tmp[r], &f)) return false;
      mx = std::max(mx, std::fabs(tmp[r]));
      o[static_cast<size_t>(transpose ? c + r * cols : r + c * rows)] = f;
    }
  }
  *max = mx;
  return true;
}

// Sums over each of `count` vectors of length k stored back to back: Σ|x|, √(Σx²) and max|x| (FP64; each x² is
// exact, the values having at most 12 significant bits; the sums within θ_k(2^-53) relative, the root 2^-53 more).
void VectorSums(const float* v, int64_t count, int64_t k, double* abs_sum, double* norm, double* max) {
  for (int64_t i = 0; i < count; ++i) {
    const float* x = v + i * k;
    double s = 0, q = 0, mx = 0;
    for (int64_t l = 0; l < k; ++l) {
      const double a = std::fabs(static_cast<double>(x[l]));
      s += a;
      q += a * a;
      mx = std::max(mx, a);
    }
    abs_sum[i] = s, norm[i] = std::sqrt(q), max[i] = mx;
  }
}

// op(A) whole, and room for op(B)'s column sums (ReadSlicePanel fills them panel by panel).
bool ReadSliceOperands(const ProjectionView& v, SliceOperands* o) {
  const GemmProblem& p = *v.p;
  const int64_t m = p.m, n = p.n, k = p.k;
  // op(A) m x k row by row = the stored k x m when transposed, the transpose of the stored m x k otherwise.
  o->at.resize(static_cast<size_t>(m * k));
  if (!ReadFp32(v.a, 0, v.ta ? k : m, v.ta ? k : m, v.ta ? m : k, !v.ta, o->at.data(), &o->max_a)) return false;
  for (auto* x : {&o->row_a, &o->row_norm_a, &o->row_max}) x->resize(static_cast<size_t>(m));
  for (auto* x : {&o->col_b, &o->col_norm_b, &o->col_max}) x->resize(static_cast<size_t>(n));
  VectorSums(o->at.data(), m, k, o->row_a.data(), o->row_norm_a.data(), o->row_max.data());
  return true;
}

// op(B)'s columns j0 .. j0 + cols − 1 into o->bc (k x cols), their sums into col_b etc. at j0, their largest
// magnitude into max_b. op(B) k x n = the stored k x n (columns j0.. contiguous), or the transpose of the stored n x k
// (its rows j0..).
bool ReadSlicePanel(const ProjectionView& v, int64_t j0, int64_t cols, SliceOperands* o) {
  const int64_t n = v.p->n, k = v.p->k;
  o->bc.resize(static_cast<size_t>(k * cols));
  const bool ok = v.tb ? ReadFp32(v.b, j0, n, cols, k, true, o->bc.data(), &o->max_b)
                       : ReadFp32(v.b, j0 * k, k, k, cols, false, o->bc.data(), &o->max_b);
  if (!ok) return false;
  VectorSums(o->bc.data(), cols, k, o->col_b.data() + j0, o->col_norm_b.data() + j0, o->col_max.data() + j0);
  return true;
}

// Full replay through FP32 slices; FullVerdict when the data does not fit (a value of more than 12 significant bits,
// an FP32 subnormal, Inf or NaN, partial sums that could overflow FP32) or too many elements stay undecided (more
// than 1/32 of them: recomputing each costs 2k, full replay is cheaper then).
// P = |op(A)|·|op(B)| is bracketed first without a GEMM (below: the slices' |partial sums| from below, Cauchy–Schwarz
// and row sum x column max from above); a panel where more than 1/32 of the elements stay undecided computes P as an
// SGEMM (P32) and decides again (o.fp32_p: always, or never).
// Sets *fits to false (and returns nothing) when the data does not fit: the caller chooses another method.
GemmVerdict Fp32SlicesVerdict(const GemmProblem& p, const GemmPrecision& precision, const GemmCheckOptions& o,
                              bool* fits) {
  const int64_t m = p.m, n = p.n, k = p.k;
  *fits = false;
  if (p.alpha == 0 || m == 0 || n == 0 || k == 0 || !FitsBlas(m, n, k) || !FitsBlas(m * k, k * n, m * n)) return {};
  const GemmBound bound(precision, k, p.alpha, p.beta, o.bound);
  const GemmBoundAffine aff = bound.Affine();
  const double alpha = std::fabs(p.alpha), beta = std::fabs(p.beta);
  const int64_t slices = Fp32Slices(k), ks = (k + slices - 1) / slices;
  const double kd = static_cast<double>(k);
  // |P32 − P| ≤ θ_k(u32)·P + 2k·η32 (k products, k − 1 additions, each exact or within η32 when it underflows).
  const double th_p = Theta(kU32, kd), eta_p = 2 * kd * kEta32;
  // A slice: |ŝ_g − s_g| ≤ θ_{k_s}(u32)·P_g + 2k_s·η32. The slices are summed in FP32 in order, ref32 = Σ ŝ_g and
  // abs32 = Σ |ŝ_g|: recursive sums of G terms, within θ_{G−1}(u32)·Σ|ŝ_g| + G·η32 of their exact sums (abs32:
  // nonnegative terms, so Σ|ŝ_g| ≤ abs32/(1 − θ_{G−1})). Then the combination α·ref32 + β·c0 in FP64 (3 roundings).
  const double th_s = Theta(kU32, static_cast<double>(ks)), th_acc = Theta(kU32, static_cast<double>(slices - 1)),
               th_g = Theta(kU64, 3), eta_g = static_cast<double>(slices) * kEta32;
  // The FP64 replay's own error θ_{k+3}(u64)·(|α|P + |β|Z) (error-models.md: E_ref), whatever its order.
  const double th_ref = Theta(kU64, kd + 3), th_sums = Theta(kU64, kd);
  constexpr double kMargin = 0x1p-40;  // the affine bound against Bound(), and the rounding of this test
  // P ≤ (P32 + η)/(1 − θ) and P ≥ (P32 − η)/(1 + θ), as products (the margin covers their rounding).
  const double to_hi = (1 + kMargin) / (1 - th_p), to_lo = (1 - kMargin) / (1 + th_p);
  // Without P32: P = Σ_g P_g ≥ Σ_g (|ŝ_g| − 2k_s·η32)/(1 + θ_{k_s}) (each slice's sum of |products| is at least
  // |its exact sum|), Σ_g|ŝ_g| ≥ (abs32 − G·η32)/(1 + θ_{G−1}); P ≤ min(‖a_i‖₂·‖b_j‖₂, R_i·max|b_j|, max|a_i|·S_j),
  // sums in FP64 within θ_k(u64) relative (and the root, the product: within the margin).
  const double acc_lo = 1 / (1 + th_acc), acc_hi = 1 / (1 - th_acc);
  const double sl_lo = (1 - kMargin) / (1 + th_s), up = (1 + 2 * th_sums) * (1 + kMargin);
  const uint64_t c_size = static_cast<uint64_t>(m * n);
  const uint64_t cap = c_size * static_cast<uint64_t>(p.batch) / 32 + 64;
  const int64_t w = std::clamp<int64_t>((int64_t{1} << 20) / m, 1, n);
  GemmVerdict verdict;
  verdict.method = GemmMethod::kFullFp32;
  double worst = 0;
  // Decided elements go into verdict.stats as they are decided, the recomputed ones into `recomputed_stats` after
  // their panel, each in index order; merged at the end (ElementStats::Merge: as if added together in index order).
  ElementStats recomputed_stats;
  const size_t panel = static_cast<size_t>(m * w);
  Buffer<double> got(panel), c0(p.beta != 0 ? panel : 0);
  Buffer<float> ref(panel), abs_sl(panel), pa, abs_b;
  Buffer<float> tmp[kSlicesPerPass];
  for (auto& t : tmp) t.resize(panel);
  std::vector<uint32_t> undecided;  // the panel's undecided elements, in index order
  // The slices by vdpbf16ps where the CPU has it and the values are BF16 numbers (SliceKernel), else by SGEMM.
  const bool try_dot = o.slice_kernel != SliceKernel::kSgemm && Bf16DotAvailable();
  Bf16Packed packed_a, packed_b;
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    const ProjectionView v(p, bt);
    SliceOperands s;
    for (auto* x : {&s.row_a, &s.row_norm_a, &s.row_max}) x->resize(static_cast<size_t>(m));
    for (auto* x : {&s.col_b, &s.col_norm_b, &s.col_max}) x->resize(static_cast<size_t>(n));
    // op(A) in FP32 (s.at), read when the SGEMM slices, P32 or a recomputed element need it: captured BF16 operands
    // are packed for the kernel from their bits (their sums and checks from the packed values: PackedSums, the same
    // numbers as VectorSums of the FP32 copy).
    bool have_at = false;
    auto need_at = [&] {  // false when a value does not fit
      if (have_at) return true;
      have_at = true;
      return ReadSliceOperands(v, &s);
    };
    bool dot_a = false;
    if (try_dot && !v.a.direct && v.a.op.dtype == DType::kBF16) {
      PackBf16Stored(v.a.op.data, v.a.base, m, k, v.ta ? k : 1, v.ta ? 1 : m, ks, kBf16RowBlock, &packed_a);
      if (!PackedSums(packed_a, kBf16RowBlock, s.row_a.data(), s.row_norm_a.data(), s.row_max.data(), &s.max_a))
        return {};
      dot_a = true;
    } else {
      if (!need_at()) return {};
      dot_a = try_dot && PackBf16(s.at.data(), m, k, k, ks, kBf16RowBlock, &packed_a);
    }
    if (precision.in_max > 0 && s.max_a > precision.in_max) return {};
    for (int64_t j0 = 0; j0 < n; j0 += w) {
      const int64_t cols = std::min(w, n - j0);
      const size_t count = static_cast<size_t>(m * cols);
      // op(B)'s panel in FP32 (s.bc), read where needed as op(A)'s.
      bool have_bc = false;
      auto need_bc = [&] {
        if (have_bc) return true;
        have_bc = true;
        return ReadSlicePanel(v, j0, cols, &s);
      };
      // A panel of B that does not fit sends the whole GEMM elsewhere (what was decided so far is dropped).
      bool dot = false;
      if (dot_a && !v.b.direct && v.b.op.dtype == DType::kBF16) {
        PackBf16Stored(v.b.op.data, v.b.base + static_cast<uint64_t>(v.tb ? j0 : j0 * k), cols, k, v.tb ? 1 : k,
                       v.tb ? n : 1, ks, kBf16ColBlock, &packed_b);
        if (!PackedSums(packed_b, kBf16ColBlock, s.col_b.data() + j0, s.col_norm_b.data() + j0,
                        s.col_max.data() + j0, &s.max_b))
          return {};
        dot = true;
      } else {
        if (!need_bc()) return {};
        dot = dot_a && PackBf16(s.bc.data(), cols, k, k, ks, kBf16ColBlock, &packed_b);
      }
      if (kd * s.max_a * s.max_b >= 0x1p126) return {};  // the panel's partial sums could overflow
      if (precision.in_max > 0 && s.max_b > precision.in_max) return {};
      if (dot) {
        Bf16Slices(packed_a, packed_b, ref.data(), abs_sl.data(), m);
        ++verdict.bf16_dot_panels;
      } else {
        if (!need_at()) return {};
        const float* b_panel = s.bc.data();
        // The slices kSlicesPerPass at a time, then one pass adding them to ref and abs_sl in slice order.
        for (int64_t g0 = 0; g0 < slices; g0 += kSlicesPerPass) {
          const float* t[kSlicesPerPass];
          int got_slices = 0;
          for (int64_t g = g0; g < std::min(slices, g0 + kSlicesPerPass); ++g) {
            const int64_t l0 = g * ks, len = std::min(ks, k - l0);
            if (len <= 0) break;
            MatMulF32(true, false, m, cols, len, s.at.data() + l0, k, b_panel + l0, k, tmp[got_slices].data(), m);
            t[got_slices] = tmp[got_slices].data();
            ++got_slices;
          }
          AddSlices(t, got_slices, g0 == 0, count, ref.data(), abs_sl.data());
        }
      }
      v.c_out.Decode(static_cast<uint64_t>(j0 * m), 1, count, got.data());
      if (p.beta != 0) v.c0.Decode(static_cast<uint64_t>(j0 * m), 1, count, c0.data());
      bool have_p32 = false;
      // P's bracket at element x (row i, panel column jj): [lo, hi], and the value the reported bound uses (P32
      // when computed, else the lower end: the reported err/bound is then at least full replay's).
      struct Bracket {
        double lo, hi, at;
      };
      auto bracket = [&](int64_t i, int64_t jj, size_t x) {
        const int64_t j = j0 + jj;
        double hi = std::min({s.row_norm_a[i] * s.col_norm_b[j], s.row_a[i] * s.col_max[j],
                              s.row_max[i] * s.col_b[j]}) * up;
        double lo = std::max(0.0, (abs_sl[x] - eta_g) * acc_lo - eta_p) * sl_lo;
        if (!have_p32) return Bracket{lo, hi, lo};
        const double p32 = pa[x];
        hi = std::min(hi, (p32 + eta_p) * to_hi);
        lo = std::max(lo, std::max(0.0, p32 - eta_p) * to_lo);
        return Bracket{lo, hi, p32};
      };
      // One pass decides every element of the panel and adds each decided one (judged: reported with this
      // reference and the bound at P32, or at P's lower end without it, within the intervals above of the FP64
      // replay's numbers; below 1 by the test that decided it) to verdict.stats; the undecided ones are listed.
      // When more than 1/32 stay undecided without P32, the panel's additions are undone and it is decided again
      // with P32.
      const ElementStats stats_before = verdict.stats;
      const double worst_before = worst;
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1 || o.fp32_p == Fp32P::kAlways) {
          if (!need_at() || !need_bc()) return {};
          const float* b_panel = s.bc.data();
          if (s.abs_at.empty()) {
            s.abs_at.resize(s.at.size());
            for (size_t x = 0; x < s.at.size(); ++x) s.abs_at[x] = std::fabs(s.at[x]);
            pa.resize(static_cast<size_t>(m * w));
            abs_b.resize(static_cast<size_t>(k * w));
          }
          for (size_t x = 0; x < static_cast<size_t>(k * cols); ++x) abs_b[x] = std::fabs(b_panel[x]);
          MatMulF32(true, false, m, cols, k, s.abs_at.data(), k, abs_b.data(), k, pa.data(), m);
          have_p32 = true;
          verdict.stats = stats_before;
          worst = worst_before;
        }
        undecided.clear();
        for (int64_t jj = 0; jj < cols; ++jj) {
          const int64_t j = j0 + jj;
          const double sb = s.col_b[j] * (1 - 2 * th_sums);
          const uint64_t index0 = static_cast<uint64_t>(bt) * c_size + static_cast<uint64_t>(j * m);
          for (int64_t i = 0; i < m; ++i) {
            const size_t x = static_cast<size_t>(i + jj * m);
            const Bracket pb = bracket(i, jj, x);
            const double z = p.beta != 0 ? std::fabs(c0[x]) : 0;
            const double e_ab = th_s * pb.hi + eta_p + th_acc * (abs_sl[x] * acc_hi) + eta_g;
            const double r = p.alpha * ref[x] + p.beta * (p.beta != 0 ? c0[x] : 0);
            const double e = (alpha * e_ab + th_g * (alpha * (pb.hi + e_ab) + beta * z) + th_ref * (alpha * pb.hi + beta * z)) *
                             (1 + kMargin);
            const double lo = aff.At(pb.lo * (1 - 2 * th_ref), (s.row_a[i] * (1 - 2 * th_sums) + sb), z,
                                     std::max(0.0, std::fabs(r) - e)) * (1 - kMargin);
            const double d = std::fabs(got[x] - r);
            const bool pass_x = std::isfinite(got[x]) && std::isfinite(r) && (d + e) * (1 + kMargin) <= lo;
            if (!pass_x) {
              undecided.push_back(static_cast<uint32_t>(x));
              continue;
            }
            const double b = aff.At(pb.at, s.row_a[i] + s.col_b[j], z, std::fabs(r));
            const double b_hi = aff.At(pb.hi, s.row_a[i] + s.col_b[j], z, std::fabs(r)) * (1 + kMargin);
            worst = std::max(worst, b_hi);
            verdict.stats.Add(index0 + static_cast<uint64_t>(i), got[x], r, b, false);
          }
        }
        if (have_p32 || undecided.size() * 32 <= count || o.fp32_p == Fp32P::kNever) break;
        ++verdict.p_gemm_panels;
      }
      if (o.fp32_p == Fp32P::kAlways) ++verdict.p_gemm_panels;
      verdict.recomputed += undecided.size();
      if (verdict.recomputed > cap) {
        *fits = true;
        return FullVerdict(p, precision, o);
      }
      for (size_t x = 0; x < count; ++x) verdict.max_abs_out = std::max(verdict.max_abs_out, std::fabs(got[x]));
      // The undecided elements recomputed as full replay computes them: FP64 sums of exact products.
      if (!undecided.empty() && (!need_at() || !need_bc())) return {};
      for (const uint32_t x : undecided) {
        const int64_t i = static_cast<int64_t>(x) % m, j = j0 + static_cast<int64_t>(x) / m;
        const uint64_t index = static_cast<uint64_t>(bt) * c_size + static_cast<uint64_t>(i + j * m);
        const float* ai = s.at.data() + i * k;
        const float* bj = s.bc.data() + (j - j0) * k;
        double dot = 0, mag = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double prod = static_cast<double>(ai[l]) * static_cast<double>(bj[l]);
          dot += prod;
          mag += std::fabs(prod);
        }
        GemmElementTerms t;
        t.ref = p.alpha * dot;
        t.abs_ab = mag;
        t.abs_row_a = s.row_a[i];
        t.abs_col_b = s.col_b[j];
        if (p.beta != 0) {
          t.ref += p.beta * c0[x];
          t.abs_c0 = std::fabs(c0[x]);
        }
        const double b = bound.Bound(t);
        worst = std::max(worst, b);
        recomputed_stats.Add(index, got[x], t.ref, b, bound.OverflowPossible(t));
      }
    }
  }
  verdict.stats.Merge(recomputed_stats);
  // An error d on top of a clean error e exceeds the bound b when |d| > b + |e|: certain beyond 2·b.
  verdict.guaranteed = verdict.screened = 2 * worst;
  *fits = true;
  return verdict;
}

}  // namespace

namespace {

// Whether the FP32 slices may apply: captured A and B of types that fit, or decoded ones (their values are checked).
bool SlicesPossible(const GemmProblem& p) {
  if (p.raw_a.data != nullptr || p.raw_b.data != nullptr)
    return p.raw_a.data != nullptr && p.raw_b.data != nullptr && Fp32SlicesFit(p.raw_a.dtype, p.raw_b.dtype);
  return true;
}

}  // namespace

bool Fp32SlicesFit(DType a, DType b) {
  auto fits = [](DType t) {
    return t == DType::kBF16 || t == DType::kF16 || t == DType::kE4M3 || t == DType::kE5M2;
  };
  return fits(a) && fits(b);
}

GemmVerdict VerifyGemm(const GemmProblem& p, const GemmPrecision& precision, const GemmCheckOptions& o) {
  const bool use_ab = p.alpha != 0;
  const uint64_t per_batch = static_cast<uint64_t>(p.m) * static_cast<uint64_t>(p.n) * static_cast<uint64_t>(use_ab ? p.k : 1);
  GemmMethod method = o.method;
  // 16-bit outputs (unit roundoff 2^-8 or 2^-11): full replay up to the larger budget (GemmCheckOptions).
  // Above projection_above, full replay in FP32 slices when the inputs fit it (decided on the data by
  // Fp32SlicesVerdict, which replays in FP64 otherwise) and the output is 16-bit; else FP64 up to full_16bit_up_to.
  const bool bits16 = precision.u_out >= 0x1p-11;
  const uint64_t full_up_to = bits16 ? std::max(o.projection_above, o.full_16bit_up_to) : o.projection_above;
  const GemmMethod fallback = per_batch > full_up_to ? GemmMethod::kProjection : GemmMethod::kFull;
  if (method == GemmMethod::kAuto) {
    method = bits16 && per_batch > o.projection_above && use_ab && SlicesPossible(p) ? GemmMethod::kFullFp32 : fallback;
    if (method == GemmMethod::kFullFp32) {
      bool fits = false;
      GemmVerdict v = Fp32SlicesVerdict(p, precision, o, &fits);
      if (fits) return v;
      method = fallback;  // the data does not fit the slices: the rule for other inputs
    }
  }
  if (method == GemmMethod::kFullFp32) {
    bool fits = false;
    GemmVerdict v = Fp32SlicesVerdict(p, precision, o, &fits);
    if (fits) return v;
    method = GemmMethod::kFull;
  }
  // Inputs with Inf or NaN, or beyond the range of a conversion the compute type makes, are replayed in full: the
  // elementwise rules decide (projections of them are NaN everywhere, and the model does not bound an overflowing
  // conversion). The projection's passes find them (RunBatchPasses) before anything is judged.
  if (method == GemmMethod::kFull || p.m == 0 || p.n == 0) return FullVerdict(p, precision, o);
  const GemmBound bound(precision, p.k, p.alpha, p.beta, o.bound);
  GemmVerdict verdict;
  verdict.method = GemmMethod::kProjection;
  verdict.replayed_fraction = 0;
  const int64_t m = p.m, n = p.n;
  const uint64_t c_size = static_cast<uint64_t>(m * n);
  const size_t row_cap = static_cast<size_t>(std::max<int64_t>(8, m / 32)), col_cap = static_cast<size_t>(std::max<int64_t>(8, n / 32));
  const int r = std::max(1, o.projections);
  const double one_minus = 1 - precision.u_out;
  std::vector<std::pair<uint64_t, GemmElementTerms>> replayed;
  SubsetScratch scratch;
  uint64_t tile_total = 0;
  for (int64_t bt = 0; bt < p.batch; ++bt) {
    std::mt19937_64 rng(o.seed ^ (static_cast<uint64_t>(bt) * 0x9E3779B97F4A7C15ull));
    const ProjectionView v(p, bt);
    const std::vector<double> x = RandomSigns(static_cast<size_t>(n * r), &rng);
    const std::vector<double> y = RandomSigns(static_cast<size_t>(m * r), &rng);
    const BatchPasses passes = RunBatchPasses(v, x, y, precision.in_max);
    if (passes.input_problem) return FullVerdict(p, precision, o);
    const ProjectionSums& sums = passes.sums;
    verdict.max_abs_out = std::max(verdict.max_abs_out, sums.max_out);
    const SideResult rows = JudgeSide(p, sums, bound, false, passes.t_rows);
    const SideResult cols = JudgeSide(p, sums, bound, true, passes.t_cols);
    std::vector<int64_t> flag_rows, flag_cols;
    const double row_thr = Flag(rows, o.screen, row_cap, &flag_rows, &verdict.proven_rows, &verdict.projection_ratio);
    const double col_thr = Flag(cols, o.screen, col_cap, &flag_cols, &verdict.proven_cols, &verdict.projection_ratio);
    // Sensitivity. A single-element error d at (i, j) adds ±d to row i's deviation for every x (and to column j's
    // for every y); the rest of the row deviates by at most its bound B_i, and d raises B_i by at most u_out·|d|.
    // So |d|(1 - u_out) > 2·B_i proves the row wrong (guaranteed). The screened level is the threshold plus the
    // largest clean deviation this op showed. An element is caught by its row or its column: the worst element's
    // level is min(worst row level, worst column level).
    auto levels = [&](const SideResult& side, double thr, double* guaranteed, double* screened) {
      for (size_t o = 0; o < side.bound.size(); ++o) {
        const double b = side.bound[o];
        const double dev = std::isfinite(side.ratio[o]) ? std::min(side.ratio[o], 1.0) * b : b;
        *guaranteed = std::max(*guaranteed, 2 * b / one_minus);
        *screened = std::max(*screened, (thr * b + dev) / one_minus);
      }
    };
    double g_row = 0, s_row = 0, g_col = 0, s_col = 0;
    levels(rows, row_thr, &g_row, &s_row);
    levels(cols, col_thr, &g_col, &s_col);
    verdict.guaranteed = std::max(verdict.guaranteed, std::min(g_row, g_col));
    // A flagged element is judged by its elementwise bound: an error on top of a clean one is certain to exceed it
    // beyond twice the bound.
    verdict.screened = std::max({verdict.screened, std::min(s_row, s_col), 2 * MaxElementBound(p, sums, bound)});
    verdict.replayed_rows += flag_rows.size();
    verdict.replayed_cols += flag_cols.size();
    auto keep = [&](int64_t i, int64_t j, const GemmElementTerms& t) {
      replayed.emplace_back(static_cast<uint64_t>(bt) * c_size + static_cast<uint64_t>(i + j * m), t);
    };
    if (!flag_rows.empty()) ReplaySubset(v, sums, flag_rows, AllIndices(n), &scratch, keep);
    if (!flag_cols.empty()) ReplaySubset(v, sums, AllIndices(m), flag_cols, &scratch, keep);
    // Random samples: a random set of rows crossed with a random set of columns, about tile_fraction of the batch's
    // elements (at least one unless it is 0): each element is in it with probability (rows/m)·(cols/n). One block
    // of BLAS work instead of many 32 x 32 tiles (the same multiply-adds at large-matrix speed).
    if (o.tile_fraction > 0) {
      const double f = std::min(1.0, o.tile_fraction);
      const int64_t sr = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(static_cast<double>(m) * std::sqrt(f))), 1, m);
      const int64_t sc = std::clamp<int64_t>(
          static_cast<int64_t>(std::ceil(f * static_cast<double>(c_size) / static_cast<double>(sr))), 1, n);
      const std::vector<int64_t> sample_rows = RandomSubset(m, sr, &rng);
      const std::vector<int64_t> sample_cols = RandomSubset(n, sc, &rng);
      ReplaySubset(v, sums, sample_rows, sample_cols, &scratch, keep);
      tile_total += static_cast<uint64_t>(sr * sc);
    }
  }
  std::sort(replayed.begin(), replayed.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  replayed.erase(std::unique(replayed.begin(), replayed.end(),
                             [](const auto& x, const auto& y) { return x.first == y.first; }),
                 replayed.end());
  const Operand out = OperandOf(p.c_out, p.raw_c_out, UINT64_MAX, 0);
  for (const auto& [index, t] : replayed)
    verdict.stats.Add(index, out.At(index), t.ref, bound.Bound(t), bound.OverflowPossible(t));
  verdict.guaranteed = std::max(verdict.guaranteed, verdict.screened);
  verdict.tile_elements = tile_total;
  verdict.replayed_fraction = std::min(1.0, static_cast<double>(replayed.size()) / static_cast<double>(c_size * p.batch));
  return verdict;
}

void CheckGemmOp(int rank, const Op& op, CheckReport* report, const GemmCheckOptions& options) {
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
  GemmCheckOptions o = options;
  // FP32 slices (auto above projection_above for 16-bit outputs of inputs that fit, or forced): FP32 multiply-adds
  // count a quarter of the budget (at most two SGEMMs, P computed in every panel, at about 2.5 times DGEMM's speed
  // against full replay's two DGEMMs).
  const bool slices_fit = need_ab && Fp32SlicesFit(a_dt, b_dt);
  const bool slices = slices_fit && (o.method == GemmMethod::kFullFp32 ||
                                     (o.method == GemmMethod::kAuto && precision->u_out >= 0x1p-11 &&
                                      m * n * k > 0 && static_cast<uint64_t>(m * n) * static_cast<uint64_t>(k) > o.projection_above));
  const uint64_t budget_work = slices ? work / 4 : work;
  if (o.method == GemmMethod::kFullFp32 && !slices_fit) o.method = GemmMethod::kFull;
  if (o.method == GemmMethod::kAuto && budget_work > o.max_work) o.method = GemmMethod::kProjection;
  if ((o.method == GemmMethod::kFull || o.method == GemmMethod::kFullFp32) && budget_work > o.max_work) {
    report->Warn(absl::StrCat(where, "replaying m=", m, " n=", n, " k=", k, " batch=", batch,
                              shared ? " (operands shared by every batch)" : "", " costs ", FormatCount(work),
                              " multiply-adds, over the budget of ", FormatCount(o.max_work), ": not checked"));
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
  // The captured bytes, decoded only by full replay (the projection converts a panel at a time).
  auto raw = [](DType dt, const Tensor* t) {
    return GemmOperand{dt, t->data.data(), t->data.size() / format::DTypeSize(static_cast<uint8_t>(dt))};
  };
  if (need_ab) {
    p.raw_a = raw(a_dt, a);
    p.raw_b = raw(b_dt, b);
  }
  if (need_c) p.raw_c_in = raw(c_dt, c_in);
  p.raw_c_out = raw(c_dt, c_out);
  const GemmVerdict v = VerifyGemm(p, *precision, o);
  const ElementStats& s = v.stats;
  const bool clean = s.violations == 0 && v.proven_rows == 0 && v.proven_cols == 0;
  const double scale = v.max_abs_out > 0 ? v.max_abs_out : 1;
  report->AddChecked("gemm", name, s, clean);
  report->AddGemmMethod(GemmMethodName(v.method), GetErrorModel(GemmModel(o.bound)).name, v.guaranteed / scale,
                        v.screened / scale, v.replayed_fraction, v.bf16_dot_panels > 0);
  if (clean) return;
  Finding f;
  f.check = s.violations > 0 ? "gemm.replay" : "gemm.projection";
  f.method = GemmMethodName(v.method);
  f.rank = rank;
  f.seq = op.seq;
  f.api = name.api;
  f.model = GetErrorModel(GemmModel(o.bound)).name;
  f.max_abs_err = s.max_abs_err;
  f.max_rel_err = s.max_rel_err;
  f.threshold = s.worst_bound;
  f.ratio = s.worst_ratio;
  f.elements = s.elements;
  f.violations = s.violations;
  const std::string how =
      v.method == GemmMethod::kFull ? std::string("method full replay")
      : v.method == GemmMethod::kFullFp32
          ? absl::StrCat("method full replay in FP32 slices (", v.recomputed, " of ", m * n * batch,
                         " elements recomputed in FP64)")
          : absl::StrCat("method projection: ", v.proven_rows, " rows and ", v.proven_cols,
                         " columns beyond their bound (worst projection err/bound ", FormatNumber(v.projection_ratio),
                         "); ", v.replayed_rows, " rows, ", v.replayed_cols, " columns and ", v.tile_elements,
                         " tile elements replayed");
  f.detail = absl::StrCat(precision->description, "; m=", m, " n=", n, " k=", k, " batch=", batch, " op(A)=",
                          std::string(1, "NTC"[g.transa]), " op(B)=", std::string(1, "NTC"[g.transb]),
                          " alpha=", FormatNumber(alpha), " beta=", FormatNumber(beta), "; ", how);
  if (s.violations == 0) {  // proven wrong by a projection, yet no replayed element beyond its own bound
    f.ratio = v.projection_ratio;
    f.message = absl::StrCat("the projection check proves the output wrong (", v.proven_rows, " rows, ",
                             v.proven_cols, " columns beyond their bound, worst err/bound ",
                             FormatNumber(v.projection_ratio), "), but no replayed element exceeds its own bound");
    report->AddFinding(std::move(f));
    return;
  }
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
    f.message = absl::StrCat(s.violations, " of ", s.elements,
                             v.method == GemmMethod::kProjection ? " replayed" : "", " output elements exceed the bound; first at ", at,
                             ": got ", FormatNumber(s.first_got), ", FP64 replay ", FormatNumber(s.first_ref),
                             ", |err| ", FormatNumber(std::fabs(s.first_got - s.first_ref)), " > bound ",
                             FormatNumber(s.first_bound));
  }
  report->AddFinding(std::move(f));
}

}  // namespace ttrace::analyzer

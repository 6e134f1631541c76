// GEMM verification: compares every captured GEMM output C = α·op(A)·op(B) + β·C0 with its FP64 recomputation from
// the captured operands under gemm.deterministic (or gemm.probabilistic) (error_model.h). Two methods:
// - full replay: every element recomputed (two FP64 GEMMs through BLAS: O(m·n·k)) and judged by its bound;
// - projection (Freivalds): for several seeded random ±1 vectors x (and y), Ĉ·x against α·op(A)·(op(B)·x) +
//   β·C0·x per row (and yᵀĈ against α·(yᵀop(A))·op(B) + β·yᵀC0 per column) in FP64, O(m·n + m·k + k·n) each, with
//   a rigorous bound Σ_j β_ij·|x_j| per row from the same model; then the rows and columns whose projection
//   exceeds its bound, or stands out from the others (screening), and a random sample (random rows × random columns) are
//   replayed element by element.
//   Every finding comes from an element replay (or, should a replay find nothing, from the projection's proof).
// docs/error-models.md derives the projection bound and the sensitivity of each method.
//
// Two layers: ReplayGemm / VerifyGemm work on decoded operands (tests drive them directly with thousands of
// synthetic GEMMs); CheckGemmOp takes an op of the trace model, decides whether and how it can be checked, and
// reports into a CheckReport. No I/O; BLAS may use several threads inside one call (blas.h).
#ifndef TTRACE_ANALYZER_GEMM_CHECK_H_
#define TTRACE_ANALYZER_GEMM_CHECK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/element_stats.h"
#include "analyzer/error_model.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"
#include "ttrace/format.h"

namespace ttrace::analyzer {

// A captured operand, not decoded: `size` dense elements of `dtype` at `data` (the tensor's payload, which outlives
// the check).
struct GemmOperand {
  format::DType dtype = format::DType::kF64;
  const char* data = nullptr;
  uint64_t size = 0;
};

// One GEMM's operands in the layout they were captured: dense column-major, A as stored (m x k, or k x m when
// transposed), B likewise, C m x n; batches back to back. An operand holding one batch is shared by all. Each operand
// is given decoded (the vector: tests, the diff) or as captured (raw_*, used when its data is set: CheckGemmOp).
// The projection reads captured operands a panel at a time (no FP64 copy of the whole); full replay decodes them.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  uint8_t transa = 0, transb = 0;  // cublasOperation_t: 0 N, 1 T, 2 C (real types: C = T)
  double alpha = 1, beta = 0;
  std::vector<double> a, b;
  std::vector<double> c_in;        // needed when beta != 0
  std::vector<double> c_out;       // the captured result
  GemmOperand raw_a, raw_b, raw_c_in, raw_c_out;
};

// The FP64 reference and bound terms of every output element (index = b·m·n + col·m + row). When α = 0, A and
// B are not read; when β = 0, C0 is not read (BLAS semantics: NaN there does not propagate).
std::vector<GemmElementTerms> GemmReference(const GemmProblem& p);

// Compares p.c_out with the reference under `precision`. When an input exceeds the range of a conversion the
// compute type makes (precision.in_max), Inf/NaN outputs are not findings.
ElementStats ReplayGemm(const GemmProblem& p, const GemmPrecision& precision,
                        BoundKind bound = BoundKind::kDeterministic);

// Multiply-adds a replay of `p` performs: the distinct batches (an operand of one batch is shared by all, so
// when A, B and C0 all are, every batch has the same reference and it is computed once) times m·n·k, plus m·n
// per batch to compare.
// `shared`: A and B (when α != 0) and C0 (when β != 0) each hold one batch. Saturates at UINT64_MAX.
uint64_t GemmReplayWork(int64_t m, int64_t n, int64_t k, int64_t batch, bool use_ab, bool use_c, bool shared);
// Multiply-adds one GEMM op may cost before it is counted as not checked ("replay over the work budget").
inline constexpr uint64_t kDefaultMaxGemmWork = uint64_t{1} << 36;

enum class GemmMethod : uint8_t { kFull, kProjection, kAuto, kFullFp32 };
const char* GemmMethodName(GemmMethod method);  // "full", "projection", "auto", "full-fp32"

// Whether full replay in FP32 slices may apply to a GEMM of these operand types: A and B of at most 12 significant bits
// (BF16, FP16, FP8: the product of two is exact in FP32). Whether it does is decided on the data (VerifyGemm: finite,
// no FP32 subnormal, no possible FP32 overflow), else the GEMM is replayed in FP64.
bool Fp32SlicesFit(format::DType a, format::DType b);

// Full replay in FP32 slices brackets P = |op(A)|·|op(B)| per element without computing it (the slices' |partial
// sums| below, Cauchy–Schwarz and max·sum products above) and computes it as an SGEMM over a panel of the output only
// where those bounds leave more than 1/32 of the panel's elements undecided (kWhereNeeded); kAlways computes it in
// every panel, kNever in none (tests pin each path: the verdicts are the same, the cost and the reported err/bound
// of decided elements are not).
enum class Fp32P : uint8_t { kWhereNeeded, kAlways, kNever };

// What computes the FP32 slices: kAuto the AVX512-BF16 kernel (analyzer/bf16_slices.h: vdpbf16ps, twice the
// multiply-adds of an FMA per instruction, no packing per slice) where the CPU has it and every value of op(A) and of
// the panel of op(B) is a BF16 number (BF16, FP8 operands), else OpenBLAS's SGEMM; kSgemm always SGEMM; kBf16Dot the
// kernel wherever the values allow it (tests force each: the same verdicts, sums within the same model).
enum class SliceKernel : uint8_t { kAuto, kSgemm, kBf16Dot };

struct GemmCheckOptions {
  GemmMethod method = GemmMethod::kAuto;
  BoundKind bound = BoundKind::kDeterministic;
  // kAuto: projection when one batch's m·n·k exceeds this (full replay of 1024^3 takes about 0.1 s of BLAS), or
  // when the full replay would exceed max_work; full replay otherwise.
  uint64_t projection_above = uint64_t{1} << 30;
  // kAuto with a 16-bit output (BF16, FP16): above projection_above, full replay in FP32 slices (kFullFp32) when the
  // inputs fit it, whatever the size (within 4·max_work, CheckGemmOp); otherwise FP64 full replay up to this m·n·k
  // per batch, projection above. Each projected row sums n output roundings of a few units of the last place, so an
  // error below about √n of them is seen only in the random sample, while full replay judges each element by its
  // own bound: a flip of an exponent bit of a small element is found by full replay, by the projection only when
  // sampled (docs/error-models.md, "Choice"). 2^33 = 2048^3: about 1.2 s of CPU per GEMM (--gemm-full-16bit).
  uint64_t full_16bit_up_to = uint64_t{1} << 33;
  uint64_t max_work = kDefaultMaxGemmWork;  // full replay only; a projection's cost is O(m·n + m·k + k·n)
  int projections = 3;                      // random ±1 vectors per side (rows and columns)
  double tile_fraction = 1.0 / 64;          // of the output elements, replayed as random rows x random columns
  double screen = 16;                       // screening: replay rows/columns whose err/bound exceeds this many
                                            // times the typical (median / 0.6745) one
  uint64_t seed = 0x74747261636521;         // fixed: the same trace gives the same report
  Fp32P fp32_p = Fp32P::kWhereNeeded;      // kFullFp32: when P = |op(A)|·|op(B)| is computed (Fp32P)
  SliceKernel slice_kernel = SliceKernel::kAuto;  // kFullFp32: what computes the slices (SliceKernel)
};

// What VerifyGemm did and found for one GEMM.
struct GemmVerdict {
  GemmMethod method = GemmMethod::kFull;  // kFull or kProjection
  ElementStats stats;                     // over the elements replayed (all of them for kFull)
  uint64_t proven_rows = 0, proven_cols = 0;  // projections beyond their rigorous bound (the op is wrong)
  uint64_t replayed_rows = 0, replayed_cols = 0, tile_elements = 0;  // distinct elements replayed: stats.elements
  double projection_ratio = 0;            // the largest |projection error| / rigorous bound over rows and columns
  // Sensitivity, absolute, worst over the op's elements: any single-element error larger than `guaranteed` is
  // caught whatever the data; larger than `screened` it is caught unless the other elements' rounding errors
  // conspire against it (the screening threshold, measured on this op); every element is also replayed with
  // probability `replayed_fraction` (1 for full replay).
  double guaranteed = 0, screened = 0, replayed_fraction = 1;
  double max_abs_out = 0;                 // max |Ĉ|, to state the sensitivity relative to the output
  uint64_t recomputed = 0;                // kFullFp32: elements not decided from the FP32 slices, recomputed in FP64
  uint64_t p_gemm_panels = 0;             // kFullFp32: panels where P = |op(A)|·|op(B)| was computed (an SGEMM)
  uint64_t bf16_dot_panels = 0;           // kFullFp32: panels whose slices the vdpbf16ps kernel computed
};

// Verifies `p` by `options.method` (kAuto chooses by size); a problem whose inputs hold Inf or NaN is always
// replayed in full (the rules for non-finite values are elementwise).
GemmVerdict VerifyGemm(const GemmProblem& p, const GemmPrecision& precision, const GemmCheckOptions& options);

// One side of a projection of batch `batch`: per row i, |(Ĉx)_i - (α·op(A)(op(B)x) + β·C0x)_i| for x (length n,
// entries ±1), and its rigorous bound (Σ_j β_ij plus the FP64 evaluation error: docs/error-models.md); ProjectColumns
// the same per column j with yᵀ (length m). The verification's own building block, exposed for tests.
struct GemmProjection {
  std::vector<double> deviation, bound;
};
GemmProjection ProjectRows(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind,
                           const std::vector<double>& x, int64_t batch = 0);
GemmProjection ProjectColumns(const GemmProblem& p, const GemmPrecision& precision, BoundKind kind,
                              const std::vector<double>& y, int64_t batch = 0);

// Checks one GEMM op of `rank` and records the outcome (checked, not checked with a reason, finding) in `report`.
// The work is computed from the shapes and checked against the budget before anything is decoded.
void CheckGemmOp(int rank, const Op& op, CheckReport* report, const GemmCheckOptions& options = {});

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_GEMM_CHECK_H_

// GEMM replay: recomputes C = α·op(A)·op(B) + β·C0 in FP64 from the captured operands and compares every element
// of the captured C against the gemm.deterministic bound (error_model.h).
//
// Two layers: ReplayGemm works on decoded operands (tests drive it directly with thousands of synthetic GEMMs);
// CheckGemmOp takes an op of the trace model, decides whether it can be checked, and reports into a CheckReport.
// Single-threaded, no I/O.
#ifndef TTRACE_ANALYZER_GEMM_CHECK_H_
#define TTRACE_ANALYZER_GEMM_CHECK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/element_stats.h"
#include "analyzer/error_model.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// One GEMM's operands, decoded, in the layout they were captured: dense column-major, A as stored (m x k, or k x m
// when transposed), B likewise, C m x n; batches back to back. An operand holding one batch is shared by all.
struct GemmProblem {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  uint8_t transa = 0, transb = 0;  // cublasOperation_t: 0 N, 1 T, 2 C (real types: C = T)
  double alpha = 1, beta = 0;
  std::vector<double> a, b;
  std::vector<double> c_in;        // needed when beta != 0
  std::vector<double> c_out;       // the captured result
};

// The FP64 reference and bound terms of every output element (index = b·m·n + col·m + row). When α = 0, A and
// B are not read; when β = 0, C0 is not read (BLAS semantics: NaN there does not propagate).
std::vector<GemmElementTerms> GemmReference(const GemmProblem& p);

// Compares p.c_out with the reference under `precision`. When an input exceeds the range of a conversion the
// compute type makes (precision.in_max), Inf/NaN outputs are not findings.
ElementStats ReplayGemm(const GemmProblem& p, const GemmPrecision& precision);

// Multiply-adds a replay of `p` performs: the distinct batches (an operand of one batch is shared by all, so
// when A, B and C0 all are, every batch has the same reference and it is computed once) times m·n·k, plus m·n
// per batch to compare.
// `shared`: A and B (when α != 0) and C0 (when β != 0) each hold one batch. Saturates at UINT64_MAX.
uint64_t GemmReplayWork(int64_t m, int64_t n, int64_t k, int64_t batch, bool use_ab, bool use_c, bool shared);
// Multiply-adds one GEMM op may cost before it is counted as not checked ("replay over the work budget").
inline constexpr uint64_t kDefaultMaxGemmWork = uint64_t{1} << 36;

// Checks one GEMM op of `rank` and records the outcome (checked, not checked with a reason, finding) in `report`.
// The work is computed from the shapes and checked against `max_work` before anything is decoded.
void CheckGemmOp(int rank, const Op& op, CheckReport* report, uint64_t max_work = kDefaultMaxGemmWork);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_GEMM_CHECK_H_

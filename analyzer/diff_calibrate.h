// Calibration of `ttrace diff` (--calibrate CLEAN_DIR, docs/diff.md "Calibration"): a second trusted run of the
// reference program (one rank, the same program, seed and batch, its inputs perturbed by one rounding and, where
// the platform allows, run under another accumulation order) measures, at every reference GEMM operand, how far
// two correct runs drift apart.
// That spread s sets the threshold of the candidate's drift at the same operand:
//
//     diff.calibrated   rel_F(candidate operand, reference operand) ≤ K·s + u
//
// rel_F is the relative Frobenius error, u the unit roundoff of the operand's type (one rounding into storage:
// the part of a clean candidate's drift that a calibration run may not exercise, e.g. a partial output stored
// before its reduction, or a weight whose master copies differ below one storage ulp), and K the multiple
// (kCalibrationMultiple; its derivation is in docs/diff.md). It judges input operands, i.e. divergence that
// arises between captured ops: the host code between two GEMMs (an optimizer step, an activation) is not
// captured, and calibration replaces the worst-case guess of diff.between with a measured scale there.
// Pure functions over loaded traces; single-threaded.
#ifndef TTRACE_ANALYZER_DIFF_CALIBRATE_H_
#define TTRACE_ANALYZER_DIFF_CALIBRATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// The default multiple K (docs/diff.md "Calibration" derives it).
inline constexpr double kCalibrationMultiple = 12;

// A GEMM operand's relative Frobenius difference between the calibration run and the reference; < 0 when not
// measured (not a GEMM, not aligned, tensors missing).
struct OperandSpread {
  double a = -1, b = -1, c = -1;
};

struct Calibration {
  std::vector<OperandSpread> spread;  // per reference op index (ref.ranks[0].ops)
  uint64_t measured = 0;              // reference GEMMs with a measured spread
  uint64_t unaligned = 0;             // reference ops with no counterpart in the calibration run
};

// Aligns `clean`'s ops with `ref`'s (align.h, `max_gap`) and measures each GEMM operand's spread.
// InvalidArgument when either trace does not have exactly one rank.
absl::StatusOr<Calibration> MeasureCalibration(const TraceSet& ref, const TraceSet& clean, int64_t max_gap);

// K·s + u for a spread s ≥ 0 and the unit roundoff u of the operand's type.
double CalibratedThreshold(double multiple, double spread, double unit_roundoff);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DIFF_CALIBRATE_H_

// `ttrace diff REF_DIR CAND_DIR`: a candidate run compared op by op with a trusted reference run of the same
// program (docs/diff.md).
//
// Two modes, chosen from the traces:
// - bitwise (same layout): both runs have the same world size and, rank by rank, the same op signatures
//   (align.h SameSignature). Every operand is compared byte for byte; the first op, in (seq, rank) order, whose
//   inputs agree and whose output does not diverged inside it; one whose inputs already differ diverged between
//   ops, after the last op of that rank whose outputs matched.
// - sharded: the reference has one rank. Each candidate rank's ops are aligned with the reference's (align.h;
//   the ranks of a pipeline together, so that each stage owns its own layers: pipeline.h), each aligned GEMM's
//   split is inferred (shard.h) or taken from the mapping, shards are merged into full tensors and compared with
//   the reference op's under named thresholds (collectives the reference lacks are judged at the reference
//   tensor their output stands for: the GEMM output a reduction sums, the GEMM operand a gather produces):
//     diff.propagation  a GEMM's output (or the all-reduce that sums its partial outputs) against the reference:
//                       |Ĉ_c − C_r| ≤ |α|Σ_s(|A_s−A_r|·|B_s| + |A_r|·|B_s−B_r|) + |Σ_s β_s C0_s − β_r C0_r| + the
//                       gemm.deterministic bounds of the reference and of every candidate shard (+ the
//                       reduce.deterministic bound of the all-reduce), elementwise: "inside" when exceeded;
//     diff.between      an input operand against the reference's: relative Frobenius error ≤ 2·(largest relative
//                       error of the outputs compared before it) + ε of its type: "between" when exceeded;
//     diff.calibrated   with a calibration run (diff_calibrate.h), an input operand's relative Frobenius error
//                       ≤ K·(the calibration run's spread at that operand) + u; the smaller of this and
//                       diff.between judges the operand.
//   Errors are also given in units of the dtype's ε (relative Frobenius error / ε, as TTrace reports them).
//   Data-parallel runs that average gradients (ncclAvg, PyTorch DDP's convention) compute per-rank gradients
//   scaled by the data-parallel size: an input operand may match the reference scaled by the size of a
//   communicator that averages; the scale is named in the finding's detail and carried to the output.
// Whatever cannot be aligned or compared is counted not checked with its reason and makes the verdict
// incomplete (report.h); findings make it "findings". Single-threaded, no I/O.
#ifndef TTRACE_ANALYZER_DIFF_H_
#define TTRACE_ANALYZER_DIFF_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "analyzer/diff_calibrate.h"
#include "analyzer/report.h"
#include "analyzer/shard.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

struct DiffOptions {
  int64_t max_gap = 64;   // alignment band and reorder window, in ops
  SplitMapping mapping;   // splits by reference seq, overriding inference
  // diff_calibrate.h: spreads of a calibration run against the reference (not owned; may be null), and K.
  const Calibration* calibration = nullptr;
  double calibration_multiple = kCalibrationMultiple;
};

// How the calibrated threshold fared on the operands it judged (sharded mode with a calibration).
struct CalibrationUse {
  bool used = false;
  double multiple = 0;
  uint64_t operands = 0;      // input operands judged by diff.calibrated
  double max_ratio = 0;       // largest rel_F / (K·s + u) over them
  double max_ratio_err_eps = 0;
  OpName max_ratio_op;
};

struct DiffResult {
  std::string mode;           // "bitwise" | "sharded"
  CheckReport report;         // findings (checks "diff.inside", "diff.between"), counts, gaps
  Divergence first;
  CalibrationUse calibration;
};

DiffResult RunDiff(const TraceSet& ref, const TraceSet& cand, const DiffOptions& options = {});

// ReportToJson (json.h) with "mode" and "first_divergence" filled.
std::string DiffToJson(const DiffResult& result);
// PrintReport plus the mode and the first divergence.
void PrintDiff(const DiffResult& result, std::ostream& out);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DIFF_H_

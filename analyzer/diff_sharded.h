// The sharded mode of `ttrace diff` (diff.h): a one-rank reference against a sharded candidate. Internal to
// diff.cc; single-threaded.
#ifndef TTRACE_ANALYZER_DIFF_SHARDED_H_
#define TTRACE_ANALYZER_DIFF_SHARDED_H_

#include "analyzer/diff.h"

namespace ttrace::analyzer {

void RunShardedDiff(const TraceSet& ref, const TraceSet& cand, const DiffOptions& options, DiffResult* out);

// Relative Frobenius error ||got − ref|| / ||ref|| (0 when both are zero, +Inf when only ref is).
double RelFrobenius(const std::vector<double>& got, const std::vector<double>& ref);
// max |got − ref| over the common elements (std::max: a NaN difference is skipped; RelFrobenius shows it).
double MaxAbsDiff(const std::vector<double>& got, const std::vector<double>& ref);
// ε of a storage type: twice its unit roundoff (FP32 2^-23, BF16 2^-7).
double Epsilon(format::DType dtype);

// The averaging scale that explains `x` as `ref` times it (an operand of a data-parallel run whose loss is a mean
// over each rank's own batch is the reference's times the size of the communicator it averages on), or 1. A scale
// s of `scales` explains x when x / s lies within `within` of ref (relative Frobenius) and nearer than x itself.
// `within` is kScaleExplains, or the error the operand's threshold allows when that is larger (after a divergence,
// diff.between's 2 x the largest output error before): data unrelated to ref stays at least sin θ away from it under
// any scale (θ the angle between them), so with kScaleExplains only data within about 14 degrees of ref's direction
// and of its size times s is taken, and an unrelated difference that a scale merely shrinks (√2 to 1.118 for s = 2)
// keeps its own error and names no scale. `rel` is set to the relative Frobenius error under the scale returned.
inline constexpr double kScaleExplains = 0.25;
double ExplainingScale(const std::vector<double>& x, const std::vector<double>& ref, const std::vector<double>& scales,
                       double within, double* rel);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DIFF_SHARDED_H_

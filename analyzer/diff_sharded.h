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

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DIFF_SHARDED_H_

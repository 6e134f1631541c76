// Sharded comparison of a batched GEMM whose A differs per batch entry (attention's score and context GEMMs:
// one entry per head and sample), for `ttrace diff` (diff_sharded.cc). Tensor and data parallelism split such a
// GEMM's batch (heads over TP ranks, samples over DP ranks) and leave m, n and k whole, in an entry order the
// program chooses (head-major or sample-major, interleaved over ranks). The layout is therefore matched by
// content rather than inferred: each reference entry is paired with the candidate entry (any rank) whose
// direction-normalized A and B are nearest to it, then the pairs are compared under the same model as a plain
// GEMM (diff.propagation per entry; diff.between on the merged inputs). A bug that only permutes whole entries
// is not visible here (it shows at the plain GEMMs around them). Pure function; single-threaded.
#ifndef TTRACE_ANALYZER_DIFF_BATCHED_H_
#define TTRACE_ANALYZER_DIFF_BATCHED_H_

#include <string>
#include <utility>
#include <vector>

#include "analyzer/element_stats.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// Whether `op` is a batched GEMM with per-entry A (not a stride-0 shared A).
bool IsPerEntryBatched(const Op& op);

struct BatchedComparison {
  std::string not_checked;          // non-empty: why it could not be compared
  double rel_a = 0, rel_b = 0;      // merged inputs against the reference's (relative Frobenius)
  double abs_a = 0, abs_b = 0;
  double scale = 1;                 // averaging data-parallel scale divided out of the inputs' product
  ElementStats stats;               // output entries against the reference under diff.propagation
  double rel_c = 0;
  OpName worst;                     // the candidate op holding the worst output element
  double eps_in = 0, eps_out = 0;
  std::string detail;
};

// `shards`: (rank, op) of every candidate rank aligned with `ref`. `scales`: sizes of data-parallel communicators
// (diff_sharded_state.h). The reference entry count must be a multiple of the candidate's.
BatchedComparison CompareBatchedGemm(const Op& ref, const std::vector<std::pair<int, const Op*>>& shards,
                                     const std::vector<double>& scales);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DIFF_BATCHED_H_

// Alignment of one candidate rank's op sequence with the reference's, for `ttrace diff`.
//
// Two ops may align when their signatures are compatible: same kind; GEMMs with the same operand and output types
// and transposes, each logical dimension of the reference a multiple of the candidate's (sharding; the batch of
// a GEMM with per-entry A too: heads and samples split over ranks); collectives with the same API and element type and a reference count that is a multiple of
// the candidate's (the reduction op may differ: a wrong reduction op is a finding, not a missing op).
// The alignment maximizes the number of aligned ops in order (a banded longest common subsequence: extra and
// missing ops on either side are skipped), then pairs what is left over with the nearest compatible op within
// `max_gap` positions (reordered ops). What stays unpaired is reported as not aligned.
// Pure function; single-threaded.
#ifndef TTRACE_ANALYZER_ALIGN_H_
#define TTRACE_ANALYZER_ALIGN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// Whether `cand` may be a shard (or a copy) of `ref`.
bool Compatible(const Op& ref, const Op& cand);
// Whether the two ops have identical signatures (same shapes, counts, communicator sizes): same-layout mode.
bool SameSignature(const Op& ref, const Op& cand);
// "cublasGemmEx m=64 n=16 k=128" / "ncclAllReduce count=1024 comm_size=2".
std::string SignatureText(const Op& op);

struct RankAlignment {
  std::vector<int64_t> ref_of_cand;  // per candidate op index: the aligned reference op index, or -1
  std::vector<int64_t> cand_of_ref;  // per reference op index: the aligned candidate op index, or -1
  uint64_t reordered = 0;            // pairs made by the second pass
};

RankAlignment AlignOps(const std::vector<Op>& ref, const std::vector<Op>& cand, int64_t max_gap = 64);
// The same over op pointers (a candidate sequence merged from several ranks: pipeline.h).
RankAlignment AlignOps(const std::vector<const Op*>& ref, const std::vector<const Op*>& cand, int64_t max_gap = 64);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_ALIGN_H_

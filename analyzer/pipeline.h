// Pipeline stages of a candidate run, for the sharded `ttrace diff`: which reference ops each rank owns.
//
// Every stage of a pipeline-parallel run runs layers with the same signatures, so a stage aligned on its own may
// pair its ops with the wrong layers of the one-rank reference. Ownership is read from the trace, with no
// annotation: ranks joined by ncclSend / ncclRecv form a chain (a pipeline replica: one rank per stage); the
// stage order follows the edges (a rank whose first point-to-point op receives from X comes after X). A chain's
// ops are merged into the order a single process running every stage would issue them: the first stage runs until
// it sends; a send hands over to its receiver, which runs until it waits for a message not yet sent, and then the
// last rank that handed over resumes (depth first, as the data flows). Under GPipe this is the reference's own
// order (micro-batch m's forward through every stage, then the backward passes from the last stage back), so
// a later stage's first op falls after the reference op that ended the previous stage's last layer. Other schedules
// (1F1B) order the micro-batches' backward passes differently, so the merged sequence is aligned with the
// reference by data-flow units (dataflow.h: each backward op placed with its micro-batch's forward op, not by
// position) and split back per rank: each rank's aligned reference ops are the ones it owns. Ranks with no
// point-to-point op are aligned on their own (align.h). Sends and receives on a communicator where some rank sends
// to or receives from itself, or talks to three or more other ranks, are exchanges (an all-to-all as grouped sends
// and receives: an expert-parallel token dispatch), not pipeline hand-overs: they join no chain.
// Pure functions; single-threaded.
#ifndef TTRACE_ANALYZER_PIPELINE_H_
#define TTRACE_ANALYZER_PIPELINE_H_

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "analyzer/align.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

struct PipelineLayout {
  std::vector<std::vector<size_t>> chains;  // indices into TraceSet::ranks, in stage order; one entry: no pipeline
  std::vector<int> stage;                   // per index into TraceSet::ranks: its stage in its chain
  int stages = 1;                           // the longest chain
};

PipelineLayout InferPipeline(const TraceSet& cand);

// The order in which a single process would issue the ops of `chain` (pairs of rank index and op index).
std::vector<std::pair<size_t, size_t>> MergeChain(const TraceSet& cand, const std::vector<size_t>& chain);

// Reference ops owned by candidate ranks, set by hand (a mapping file's `owns` lines): rank -> inclusive ranges
// of reference seqs.
using OwnedRanges = std::map<int, std::vector<std::pair<uint64_t, uint64_t>>>;

// One alignment per candidate rank (in TraceSet::ranks order) with the one-rank reference's `ref`. A rank named
// in `owned` is aligned on its own with the reference ops it owns there (and taken out of its chain: the others
// are merged without it), whatever the sends and receives say.
std::vector<RankAlignment> AlignPipelined(const std::vector<Op>& ref, const TraceSet& cand,
                                          const PipelineLayout& layout, int64_t max_gap,
                                          const OwnedRanges* owned = nullptr);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_PIPELINE_H_

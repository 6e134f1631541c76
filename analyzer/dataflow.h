// Micro-batch identity of ops from data flow, for aligning pipeline schedules that order micro-batches
// differently (GPipe, 1F1B, interleaved) with a reference that has its own order.
//
// A schedule moves a micro-batch's backward pass relative to the other micro-batches' passes, never the data a
// pass reads: the weight-gradient GEMM of a linear reads the very activation its forward GEMM read (saved, same
// bytes), and the input-gradient GEMM the same output gradient as the weight-gradient GEMM; a collective that
// gathered an operand or reduces a partial output holds the same bytes as that GEMM. Ops of one rank that hold a
// captured operand with identical bytes (GEMM A, B and output C; collective send and recv buffers; not the
// accumulator C0, which carries one micro-batch's sum into the next) are joined into one **unit**: one linear's
// (or one attention product's) forward and backward for one micro-batch, plus the collectives around it. A
// weight is read by the same GEMM in every micro-batch, so bytes held by two ops with the same signature
// (align.h SameSignature) join nothing; nor do constant tensors (zeros match everywhere). No op order, schedule,
// micro-batch count or workload pattern is assumed.
//
// AlignByUnits aligns a candidate sequence with the reference through its units: the **spine** (each unit's key
// op, its first GEMM, else its first op; and every op in no unit) is aligned as align.h aligns a rank, so every
// unit is placed by its forward op, whose order all schedules share; each pair of aligned keys then aligns the
// two units' members (align.h again, within the unit). Ops left over are paired with the nearest compatible
// unpaired op within max_gap positions (reordered). Under GPipe this pairs what a plain alignment pairs; under
// 1F1B it pairs each backward op with the reference's backward op of the same micro-batch wherever the schedule
// put it.
// Pure functions; single-threaded.
#ifndef TTRACE_ANALYZER_DATAFLOW_H_
#define TTRACE_ANALYZER_DATAFLOW_H_

#include <cstdint>
#include <vector>

#include "analyzer/align.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// Per op of `ops` (one rank's ops, in issue order): the index of the first op of its unit (itself when it is the
// first or joins no other op).
std::vector<size_t> DataFlowUnits(const std::vector<const Op*>& ops);

// Aligns `cand` with `ref` unit by unit. `ref_unit` and `cand_unit`: per op, the index (into the same sequence)
// of its unit's first op, as DataFlowUnits gives it (a candidate merged from several ranks: each rank's units,
// translated to merged positions).
RankAlignment AlignByUnits(const std::vector<const Op*>& ref, const std::vector<size_t>& ref_unit,
                           const std::vector<const Op*>& cand, const std::vector<size_t>& cand_unit,
                           int64_t max_gap);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_DATAFLOW_H_

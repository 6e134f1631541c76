// All-reduce checks across ranks. Records with equal (comm_hash, comm_op_index) on different ranks are one
// collective call; for each such group:
// - arguments: every member has the same api, count, dtype, op and communicator size; a member that disagrees
//   with the majority is a finding ("allreduce.args");
// - values: every member's output against the FP64 reduction of all members' inputs, within reduce.deterministic
//   (sum, avg, prod) or exactly (max, min, integer types) ("allreduce.bound");
// - identity: all members' outputs bitwise identical ("allreduce.identical").
// Attribution names only the member whose output is wrong: with 3+ members, those outside a strict majority of
// identical outputs (and any member violating the bound); otherwise those violating the bound, or, when none
// does, the member farthest from the FP64 reference (sum of |err|).
// Groups missing a member, or a member's tensors, are counted as not checked.
// Single-threaded.
#ifndef TTRACE_ANALYZER_COLLECTIVE_CHECK_H_
#define TTRACE_ANALYZER_COLLECTIVE_CHECK_H_

#include <vector>

#include "analyzer/error_model.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// FP64 reference and bound terms of one element from the members' input values (in comm rank order).
ReduceElementTerms ReduceReference(ReduceOp op, const std::vector<double>& inputs);

// Checks every collective of `set`, recording each member op in `report`. `progress(done)` is called with the
// number of member ops handled so far (may be empty).
void CheckCollectives(const TraceSet& set, CheckReport* report,
                      const std::function<void(uint64_t done)>& progress = {});

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_COLLECTIVE_CHECK_H_

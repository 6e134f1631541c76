// Checks of every NCCL collective and point-to-point call across ranks, one generic check driven by the semantics
// table (ttrace/collectives.h). Records with equal (comm_hash, comm_op_index) on different ranks are one
// collective call; for each such group:
// - arguments: every member has the same api, count, dtype, op, root and communicator size; a member that
//   disagrees with the majority is a finding ("<check>.args", e.g. "allgather.args");
// - values, for every member with an output: reductions (all-reduce, reduce-scatter, reduce) against the FP64
//   reduction of all members' inputs, within reduce.deterministic (sum, avg, prod) or exactly (max, min, integer
//   types, one rank) ("allreduce.bound", "reducescatter.bound", "reduce.bound"); copies (all-gather, gather,
//   broadcast, scatter, all-to-all) bitwise equal to the input elements they copy ("allgather.exact", ...);
// - identity, where NCCL makes outputs bitwise identical on all ranks (all-reduce; for all-gather and broadcast it
//   follows from exactness): "allreduce.identical".
// Sends and receives pair in order per (communicator, sender, receiver): the k-th receive at b from a must hold
// exactly the count, dtype and bytes of the k-th send from a to b ("sendrecv.match", the receiver's finding).
// Attribution names only the member whose output is wrong: with 3+ members, those outside a strict majority of
// identical outputs (and any member violating the check); otherwise those violating it, or, when none does, the
// member farthest from the FP64 reference (sum of |err|).
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

// The collectives of `set` as the units they are checked in, in order: each group (every member of one
// collective, by (comm_hash, comm_op_index)), then each point-to-point pair. A unit needs only its own ops'
// tensors, so a caller may load them unit by unit (check.h streams them within its memory limit). `set` must
// outlive the plan.
class CollectivePlan {
 public:
  explicit CollectivePlan(const TraceSet& set);
  ~CollectivePlan();
  CollectivePlan(const CollectivePlan&) = delete;
  CollectivePlan& operator=(const CollectivePlan&) = delete;

  size_t size() const;
  const std::vector<const Op*>& ops(size_t unit) const;  // its member ops
  void Check(size_t unit, CheckReport* report) const;    // records each member op in `report`

 private:
  struct Unit;
  std::vector<Unit> units_;
};

// Checks every collective of `set`, recording each member op in `report`. `progress(done)` is called with the
// number of member ops handled so far (may be empty).
void CheckCollectives(const TraceSet& set, CheckReport* report,
                      const std::function<void(uint64_t done)>& progress = {});

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_COLLECTIVE_CHECK_H_

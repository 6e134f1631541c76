// ElementStats: folds the elementwise comparison of a computed tensor against its FP64 reference and per-element
// bound into the numbers a finding reports (max errors, worst ratio, violation count, first violation).
//
// Rules for one element (got = the captured value, ref = FP64 reference, bound = allowed |got - ref|):
// - both finite: a violation when |got - ref| > bound;
// - got not finite, ref finite: a violation unless overflow was possible for a correct computation;
// - ref not finite (the inputs hold Inf/NaN): got must be NaN when ref is NaN, the same infinity when ref is ±Inf.
// Relative error is taken over elements with ref != 0. Thread-compatible.
#ifndef TTRACE_ANALYZER_ELEMENT_STATS_H_
#define TTRACE_ANALYZER_ELEMENT_STATS_H_

#include <cstdint>

namespace ttrace::analyzer {

struct ElementStats {
 public:
  uint64_t elements = 0;
  uint64_t violations = 0;
  uint64_t nonfinite_violations = 0;  // the subset of violations that involve Inf/NaN
  double max_abs_err = 0;             // over finite pairs
  double max_rel_err = 0;             // over finite pairs with ref != 0
  double worst_ratio = 0;             // max |got-ref|/bound; +Inf for a violation against a zero bound or Inf/NaN
  double worst_bound = 0;             // the bound at the worst element
  uint64_t worst_index = 0;
  bool has_violation = false;         // the first (lowest index added first) violating element:
  uint64_t first_index = 0;
  double first_got = 0, first_ref = 0, first_bound = 0;

  // Adds one element; returns true when it violates.
  bool Add(uint64_t index, double got, double ref, double bound, bool overflow_possible);
  // Adds one element judged elsewhere (exact comparisons: integers, NaN-ordering rules); bound 0.
  bool AddExact(uint64_t index, double got, double ref, bool correct);
  // Folds in `other`'s elements as if they had been added to this one together with its own in index order: both
  // filled in increasing index order over disjoint indices (the worst element is the lowest index of the largest
  // ratio, the first violation the lowest index; ratios are never NaN).
  void Merge(const ElementStats& other);

 private:
  void Record(uint64_t index, double got, double ref, double bound, double ratio, bool violation);
};

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_ELEMENT_STATS_H_

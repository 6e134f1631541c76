// Ratios are kept as doubles with +Inf for "violates a zero bound" so that one max() ranks every element; the
// JSON writer turns non-finite numbers into null.
#include "analyzer/element_stats.h"

#include <cmath>
#include <limits>

namespace ttrace::analyzer {

bool ElementStats::Add(uint64_t index, double got, double ref, double bound, bool overflow_possible) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  ++elements;
  bool violation = false;
  double ratio = 0;
  if (std::isfinite(ref)) {
    if (std::isfinite(got)) {
      const double err = std::fabs(got - ref);
      if (err > max_abs_err) max_abs_err = err;
      if (ref != 0 && err / std::fabs(ref) > max_rel_err) max_rel_err = err / std::fabs(ref);
      ratio = bound > 0 ? err / bound : (err > 0 ? kInf : 0);
      violation = !(err <= bound);  // a NaN bound is a violation, never a pass
    } else if (!overflow_possible) {
      violation = true;
      ratio = kInf;
      ++nonfinite_violations;
    }
  } else {
    const bool same = std::isnan(ref) ? std::isnan(got) : got == ref;
    if (!same) {
      violation = true;
      ratio = kInf;
      ++nonfinite_violations;
    }
  }
  Record(index, got, ref, bound, ratio, violation);
  return violation;
}

bool ElementStats::AddExact(uint64_t index, double got, double ref, bool correct) {
  ++elements;
  if (std::isfinite(got) && std::isfinite(ref)) {
    const double err = std::fabs(got - ref);
    if (err > max_abs_err) max_abs_err = err;
    if (ref != 0 && err / std::fabs(ref) > max_rel_err) max_rel_err = err / std::fabs(ref);
  } else if (!correct) {
    ++nonfinite_violations;
  }
  Record(index, got, ref, 0, correct ? 0 : std::numeric_limits<double>::infinity(), !correct);
  return !correct;
}

void ElementStats::Merge(const ElementStats& o) {
  if (o.elements == 0) return;
  if (elements == 0) {
    *this = o;
    return;
  }
  elements += o.elements;
  violations += o.violations;
  nonfinite_violations += o.nonfinite_violations;
  if (o.max_abs_err > max_abs_err) max_abs_err = o.max_abs_err;
  if (o.max_rel_err > max_rel_err) max_rel_err = o.max_rel_err;
  if (o.worst_ratio > worst_ratio || (o.worst_ratio == worst_ratio && o.worst_index < worst_index)) {
    worst_ratio = o.worst_ratio;
    worst_bound = o.worst_bound;
    worst_index = o.worst_index;
  }
  if (o.has_violation && (!has_violation || o.first_index < first_index)) {
    has_violation = true;
    first_index = o.first_index;
    first_got = o.first_got;
    first_ref = o.first_ref;
    first_bound = o.first_bound;
  }
}

void ElementStats::Record(uint64_t index, double got, double ref, double bound, double ratio, bool violation) {
  if (elements == 1 || ratio > worst_ratio) {
    worst_ratio = ratio;
    worst_bound = bound;
    worst_index = index;
  }
  if (violation) {
    ++violations;
    if (!has_violation) {
      has_violation = true;
      first_index = index;
      first_got = got;
      first_ref = ref;
      first_bound = bound;
    }
  }
}

}  // namespace ttrace::analyzer

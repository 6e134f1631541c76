// TTRACE_RETURN_IF_ERROR / TTRACE_ASSIGN_OR_RETURN: Abseil 20220623 (Debian 12) has no status macros.
#ifndef TTRACE_ANALYZER_STATUS_MACROS_H_
#define TTRACE_ANALYZER_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TTRACE_RETURN_IF_ERROR(expr)        \
  do {                                      \
    ::absl::Status ttrace_status_ = (expr); \
    if (!ttrace_status_.ok()) return ttrace_status_; \
  } while (0)

#define TTRACE_STATUS_CONCAT_INNER(a, b) a##b
#define TTRACE_STATUS_CONCAT(a, b) TTRACE_STATUS_CONCAT_INNER(a, b)
#define TTRACE_ASSIGN_OR_RETURN(lhs, expr) \
  TTRACE_ASSIGN_OR_RETURN_IMPL(TTRACE_STATUS_CONCAT(ttrace_statusor_, __LINE__), lhs, expr)
#define TTRACE_ASSIGN_OR_RETURN_IMPL(var, lhs, expr) \
  auto var = (expr);                                 \
  if (!var.ok()) return var.status();                \
  lhs = std::move(var).value()

#endif  // TTRACE_ANALYZER_STATUS_MACROS_H_

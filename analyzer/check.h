// RunChecks: every check of `ttrace check` over a loaded trace set (GEMM replay on each rank, collectives across
// ranks), into one CheckReport with its summary filled in and findings ordered.
// Single-threaded; `progress` (may be empty) is called with (ops handled, ops total) as the checks advance.
#ifndef TTRACE_ANALYZER_CHECK_H_
#define TTRACE_ANALYZER_CHECK_H_

#include <cstdint>
#include <functional>

#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

using CheckProgress = std::function<void(uint64_t done, uint64_t total)>;

CheckReport RunChecks(const TraceSet& set, const CheckProgress& progress = {});

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_CHECK_H_

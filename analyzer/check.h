// RunChecks: every check of `ttrace check` over a loaded trace set (GEMM replay on each rank, collectives across
// ranks), into one CheckReport with its summary filled in, findings ordered and the evidence that is missing
// named (report.h: the verdict): streams without their EndRecord or cut inside a frame ("rank 0's stream ends at
// seq 41 without an end record"), missing ranks, op and tensor records the EndRecord counts but the stream lacks,
// and ops not checked.
// Single-threaded; `progress` (may be empty) is called with (ops handled, ops total) as the checks advance.
#ifndef TTRACE_ANALYZER_CHECK_H_
#define TTRACE_ANALYZER_CHECK_H_

#include <cstdint>
#include <functional>

#include "analyzer/gemm_check.h"
#include "analyzer/lt_check.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

using CheckProgress = std::function<void(uint64_t done, uint64_t total)>;

struct CheckOptions {
  uint64_t max_gemm_work = kDefaultMaxGemmWork;  // multiply-adds one GEMM replay may cost (gemm_check.h)
  GemmCheckOptions gemm;                          // method and bound of the GEMM check (its max_work is the above)
  LtModelParams lt;                               // parameters of ltmatmul.deterministic (lt_check.h)
};

CheckReport RunChecks(const TraceSet& set, const CheckProgress& progress = {}, const CheckOptions& options = {});

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_CHECK_H_

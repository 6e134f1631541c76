// RunChecks: every check of `ttrace check` over a loaded trace set (GEMM replay on each rank, collectives across
// ranks), into one CheckReport with its summary filled in, findings ordered and the evidence that is missing
// named (report.h: the verdict): streams without their EndRecord or cut inside a frame ("rank 0's stream ends at
// seq 41 without an end record"), missing ranks, op and tensor records the EndRecord counts but the stream lacks,
// and ops not checked.
// Threads: the per-op checks (GEMMs, cuBLASLt, convolutions, graphs) run on `options.threads` worker threads, each
// op into a report of its own, merged into the result in trace order (rank by rank, ascending seq) by the calling
// thread, so the report is the same at any thread count. Collectives are checked after them, on the calling thread.
// `progress` (may be empty) is called on the calling thread as ops are merged.
// Each finding carries its op's context (Finding::context: what ran before it on its thread) when recorded.
#ifndef TTRACE_ANALYZER_CHECK_H_
#define TTRACE_ANALYZER_CHECK_H_

#include <cstdint>
#include <functional>

#include "analyzer/gemm_check.h"
#include "analyzer/lt_check.h"
#include "analyzer/report.h"
#include "analyzer/trace_model.h"

namespace ttrace::analyzer {

// Ops handled so far and in all, and the bytes of their captured tensors.
struct CheckCounts {
  uint64_t ops_done = 0, ops_total = 0;
  uint64_t bytes_done = 0, bytes_total = 0;
};
using CheckProgress = std::function<void(const CheckCounts& counts)>;

struct CheckOptions {
  int threads = 0;                                // worker threads for per-op checks; 0: hardware concurrency
  uint64_t memory_limit = 0;                      // bytes the checks may hold at once (estimated); 0: no limit
  uint64_t max_gemm_work = kDefaultMaxGemmWork;  // multiply-adds one GEMM replay may cost (gemm_check.h)
  GemmCheckOptions gemm;                          // method and bound of the GEMM check (its max_work is the above)
  LtModelParams lt;                               // parameters of ltmatmul.deterministic (lt_check.h)
};

CheckReport RunChecks(const TraceSet& set, const CheckProgress& progress = {}, const CheckOptions& options = {});

// The op (rank, seq) of `set`; nullptr when it has none.
const Op* FindOp(const TraceSet& set, int rank, uint64_t seq);
// Gives each finding of `report` its op's context (Finding::context) from `set`, where recorded.
void AttachContexts(const TraceSet& set, CheckReport* report);

}  // namespace ttrace::analyzer

#endif  // TTRACE_ANALYZER_CHECK_H_

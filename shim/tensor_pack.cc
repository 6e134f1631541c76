// Overflow-checked sizes: shapes come from the application's arguments, which may be garbage (the vendor call
// then fails), and a wrapped size must never become a short copy into the ring.
#include "shim/tensor_pack.h"

#include <cudnn_graph.h>
#include <library_types.h>
#include <nccl.h>

#include <cstring>

namespace ttrace::shim {
namespace {

// ttrace/dtypes.inc names each vendor enum with its value; a vendor header that disagrees stops the build here.
constexpr int none = -1;
#define TTRACE_DTYPE(name, id, bytes, text, cuda_enum, cuda, nccl_enum, nccl, cudnn_enum, cudnn)           \
  static_assert(static_cast<int>(cuda_enum) == (cuda), "dtypes.inc: " #cuda_enum " changed value");    \
  static_assert(static_cast<int>(nccl_enum) == (nccl), "dtypes.inc: " #nccl_enum " changed value");    \
  static_assert(static_cast<int>(cudnn_enum) == (cudnn), "dtypes.inc: " #cudnn_enum " changed value");
#include "ttrace/dtypes.inc"
#undef TTRACE_DTYPE

bool Mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool Add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

}  // namespace

bool PlanStaging(const TensorSpec& spec, StagingPlan* plan, bool pitched_copies) {
  *plan = StagingPlan{};
  const uint32_t elem = format::DTypeSize(static_cast<uint8_t>(spec.dtype));
  const bool arrays = spec.ptr_array != nullptr;
  if (elem == 0 || (spec.ptr == nullptr && !arrays) || spec.rows < 1 || spec.cols < 1 || spec.batch < 1 ||
      spec.ld < spec.rows || spec.batch_stride < 0)
    return false;
  const uint64_t rows = spec.rows, cols = spec.cols, ld = spec.ld, batch = spec.batch;
  const uint64_t stride = arrays ? 0 : spec.batch_stride;  // stride 0 < region: one copy per batch
  uint64_t region, packed;
  if (!Mul(ld, cols - 1, &region) || !Add(region, rows, &region)) return false;
  if (!Mul(rows, cols, &packed) || !Mul(packed, batch, &packed) || !Mul(packed, elem, &packed)) return false;
  uint64_t per_batch_total;
  if (!Mul(region, batch, &per_batch_total)) return false;
  uint64_t span = region;
  bool one_span = batch == 1;
  if (!one_span && stride >= region) {
    uint64_t gaps;
    one_span = Mul(stride, batch - 1, &gaps) && Add(gaps, region, &span) && span / 2 <= per_batch_total;
  }
  plan->elem_bytes = elem;
  plan->region_elems = region;
  plan->packed_bytes = packed;
  if (pitched_copies && region / 2 > rows * cols) {  // rows * cols <= region: no overflow
    plan->pitched = true;
    plan->staged_dense = true;
    plan->copies = batch;
    plan->copy_src_stride = spec.batch_stride;
    plan->staged_batch_stride = rows * cols;
    plan->copy_bytes = rows * cols * elem;  // <= packed
    plan->staging_bytes = packed;
    return true;
  }
  if (one_span) {
    plan->copies = 1;
    plan->staged_batch_stride = batch == 1 ? region : stride;
    if (!Mul(span, elem, &plan->copy_bytes)) return false;
  } else {
    plan->copies = batch;
    plan->copy_src_stride = spec.batch_stride;
    plan->staged_batch_stride = region;
    if (!Mul(region, elem, &plan->copy_bytes)) return false;
  }
  plan->staged_dense = ld == rows && (batch == 1 || plan->staged_batch_stride == rows * cols);
  return Mul(plan->copies, plan->copy_bytes, &plan->staging_bytes);
}

void PackDense(const TensorSpec& spec, const StagingPlan& plan, const char* staging, char* out) {
  const size_t elem = plan.elem_bytes;
  const size_t col_bytes = static_cast<size_t>(spec.rows) * elem;
  for (int64_t b = 0; b < spec.batch; ++b) {
    const char* src = staging + static_cast<size_t>(b) * plan.staged_batch_stride * elem;
    if (spec.ld == spec.rows) {
      memcpy(out, src, col_bytes * static_cast<size_t>(spec.cols));
      out += col_bytes * static_cast<size_t>(spec.cols);
      continue;
    }
    for (int64_t j = 0; j < spec.cols; ++j) {
      memcpy(out, src + static_cast<size_t>(j) * static_cast<size_t>(spec.ld) * elem, col_bytes);
      out += col_bytes;
    }
  }
}

}  // namespace ttrace::shim

// Operand geometry: what to copy off the device for a tensor and how to pack it into TensorRecord's dense layout.
//
// A tensor is `batch` column-major matrices of rows x cols elements with leading dimension ld, batch b starting
// batch_stride elements after batch b-1 (cuBLAS strided batched). The device copy takes, per batch, the region
// ld*(cols-1)+rows elements long that holds the matrix (padding between columns included); the drain thread packs
// the staged regions into rows x cols column-major (ld = rows), batch after batch (format.h: PayloadKind::kFull).
// When padding would be more than half of that region (a thin slice of a wide matrix) and pitched copies are
// available, each batch is one cudaMemcpy2DAsync of just its rows x cols elements instead, staged already dense.
// A pointer-array tensor (cublas?gemmBatched: batch b starts wherever ptr_array[b] says) is staged with one copy per
// batch, from addresses the capture engine reads at the call (capture_engine.h).
// Pure functions, no CUDA: tested on host buffers.
#ifndef TTRACE_SHIM_TENSOR_PACK_H_
#define TTRACE_SHIM_TENSOR_PACK_H_

#include <cstddef>
#include <cstdint>

#include "ttrace/format.h"

namespace ttrace::shim {

struct TensorSpec {
  format::TensorSlot slot = format::TensorSlot::kA;
  format::DType dtype = format::DType::kInvalid;
  const void* ptr = nullptr;  // device address of element (0, 0) of batch 0
  int64_t rows = 0, cols = 0, ld = 0;
  int64_t batch = 1;
  int64_t batch_stride = 0;  // elements
  uint32_t index = 0;        // TensorRecord.index (graph tensors)
  // When set, batch b starts at the device address ptr_array[b] (an array of `batch` addresses in the program's
  // memory, as the vendor reads it) and ptr / batch_stride are unused.
  const void* const* ptr_array = nullptr;
};

// How a tensor is staged in host memory.
struct StagingPlan {
  uint32_t elem_bytes = 0;
  uint64_t region_elems = 0;          // ld*(cols-1)+rows: one batch's region on the device
  bool pitched = false;               // 2D copies of cols columns of rows elements (src pitch ld), staged dense
  uint64_t copies = 0;                // device-to-host copies: 1 (one span covers every batch) or `batch`
  uint64_t copy_bytes = 0;            // bytes per copy
  int64_t copy_src_stride = 0;        // elements between the device sources of consecutive copies
  uint64_t staged_batch_stride = 0;   // elements between batch starts in the staging buffer
  uint64_t staging_bytes = 0;         // copies * copy_bytes
  uint64_t packed_bytes = 0;          // rows * cols * batch * elem_bytes
  bool staged_dense = false;          // the staging buffer already holds the packed layout
};

// Plans the copy. Returns false (and captures nothing) for an empty or malformed tensor: rows, cols or batch < 1,
// ld < rows, a negative batch stride, an unknown dtype, a null pointer (and no ptr_array), or sizes that overflow
// 64 bits. Batches are staged with one copy when their regions do not overlap and the span between them is at most
// as large as the regions themselves (so at most half the staged bytes are gaps); otherwise, and always for a
// pointer array, with one copy per batch (plan.copy_src_stride is then unused for a pointer array).
// `pitched_copies`: the copier has cudaMemcpy2DAsync.
bool PlanStaging(const TensorSpec& spec, StagingPlan* plan, bool pitched_copies = false);

// Packs `staging` (laid out as `plan` says) into `out` (plan.packed_bytes). Drain thread.
void PackDense(const TensorSpec& spec, const StagingPlan& plan, const char* staging, char* out);

// format::DType of a cudaDataType_t / ncclDataType_t / cudnnDataType_t value (the table is ttrace/dtypes.inc;
// tensor_pack.cc asserts it against the vendor headers); kInvalid when there is none (complex types).
using format::DTypeFromCuda;
using format::DTypeFromCudnn;
using format::DTypeFromNccl;

}  // namespace ttrace::shim

#endif  // TTRACE_SHIM_TENSOR_PACK_H_

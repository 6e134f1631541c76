// Element-wise reduction kernels of simgpu's NCCL, as NCCL 2.28's device code defines them
// (src/device/reduce_kernel.h for sm_90, src/enqueue.cc hostToDevRedOp):
//
//   sum / prod   in the data type itself: FP32 and FP64 natively; FP16 and BF16 computed in FP32 and rounded to
//                the type after every operation (__hadd/__hmul; FP32 holds 2p+2 bits, so this equals one
//                correctly rounded half/bf16 operation); integers wrap modulo 2^bits.
//   max / min    fmaxf/fminf and __hmax/__hmin semantics for floating types: a NaN operand yields the other
//                operand, and -0 < +0 (documented for __hmax/__hmin in cuda_fp16.h; assumed for fmaxf/fminf).
//   FP8          E4M3 and E5M2 (sm_90): every operation widens both operands to half (exact), computes in half
//                (rounded to half) and narrows the result back with __NV_SATFINITE (round to nearest even,
//                overflow to the largest finite value, NaN stays NaN), as reduce_kernel.h's FP8 specializations
//                do; PreMulSum's scalar is an FP8 value, its product is rounded to half and then to FP8.
//   PreMulSum    each rank's own input is multiplied by a scalar (rounded to the type; integers wrap) before it
//                is added; ncclRedOpCreatePreMulSum makes one, and ncclAvg over floating types is PreMulSum with
//                1/nranks (computed in double, rounded to float, then to the type, as hostToDevRedOp does).
//   SumPostDiv   ncclAvg over integer types: sum, then divide by nranks, truncating toward zero.
//
// A reduction over ranks in some order r1, r2, ..., rn (order.h) is  acc = First(x_r1); acc = Next(acc, x_rk)
// for k = 2..n; Finish(acc). Next computes pre(x) (op) acc, NCCL's operand order (own input, then the partial
// result received from the previous rank). simgpu models an sm_90 device, so every data type is reducible.
//
// Pure functions on host memory; thread-safe.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_REDUCE_KERNELS_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_REDUCE_KERNELS_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>

namespace simgpu::nccl {

// Bytes per element; 0 for a value outside ncclDataType_t.
size_t DataTypeSize(ncclDataType_t dtype);
const char* DataTypeName(ncclDataType_t dtype);
const char* RedOpName(ncclRedOp_t op);  // built-in ops; "user-defined op" for others

// True when `dtype` can be reduced (every valid ncclDataType_t).
bool ReducibleType(ncclDataType_t dtype);
// True when the built-in `op` over `dtype` is implemented.
bool ReductionSupported(ncclDataType_t dtype, ncclRedOp_t op);

enum class DevOp { kSum, kProd, kMax, kMin, kPreMulSum, kSumPostDiv };

struct Reduction {
  ncclDataType_t dtype;
  DevOp op;
  uint64_t scalar;  // kPreMulSum: the scalar's bytes (DataTypeSize(dtype) of them, little-endian), upper bytes 0
  int nranks;       // kSumPostDiv: the divisor
};

// The device reduction NCCL runs for built-in `op` (ncclAvg: PreMulSum or SumPostDiv) on `nranks` ranks.
Reduction BuiltinReduction(ncclDataType_t dtype, ncclRedOp_t op, int nranks);

// dst[i] = pre(src[i]); dst may equal src.
void ReduceFirst(const Reduction& r, void* dst, const void* src, size_t n);
// acc[i] = pre(src[i]) (op) acc[i].
void ReduceNext(const Reduction& r, void* acc, const void* src, size_t n);
// Post-operation (integer avg: division by nranks); a no-op for every other reduction.
void ReduceFinish(const Reduction& r, void* acc, size_t n);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_REDUCE_KERNELS_H_

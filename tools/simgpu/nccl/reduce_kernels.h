// Element-wise reduction kernels of simgpu's NCCL, one per (data type, reduction op), as NCCL's device code
// defines them (src/device/reduce_kernel.h, src/enqueue.cc hostToDevRedOp):
//
//   sum / prod   in the data type itself: FP32 and FP64 natively; FP16 and BF16 computed in FP32 and rounded to
//                the type after every operation (__hadd/__hmul; FP32 holds 2p+2 bits, so this equals one
//                correctly rounded half/bf16 operation); integers wrap modulo 2^bits.
//   max / min    fmaxf/fminf semantics for floating types (a NaN operand yields the other operand).
//   avg          floating types: PreMulSum, i.e. every rank's input is first multiplied by the scalar 1/nranks
//                rounded to the data type, then summed; integer types: SumPostDiv, i.e. sum then divide by
//                nranks, truncating toward zero.
//
// A reduction over ranks is  acc = First(x_0); acc = Next(acc, x_1); ... ; Finish(acc), always in that fixed
// rank order, so every rank that evaluates it gets bitwise-identical results. FP8 types are not reducible here
// (NCCL reduces FP8 only on sm_90 and newer); they can still be moved by AllGather, Broadcast, Send and Recv.
//
// Pure functions on host memory; thread-safe.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_REDUCE_KERNELS_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_REDUCE_KERNELS_H_

#include <nccl.h>

#include <cstddef>

namespace simgpu::nccl {

// Bytes per element; 0 for a value outside ncclDataType_t.
size_t DataTypeSize(ncclDataType_t dtype);
const char* DataTypeName(ncclDataType_t dtype);
const char* RedOpName(ncclRedOp_t op);

// True when `op` over `dtype` is implemented (built-in ops over every non-FP8 type).
bool ReductionSupported(ncclDataType_t dtype, ncclRedOp_t op);

struct Reduction {
  ncclDataType_t dtype;
  ncclRedOp_t op;
  int nranks;  // used by avg only
};

// dst[i] = pre(src[i]); dst may equal src.
void ReduceFirst(const Reduction& r, void* dst, const void* src, size_t n);
// acc[i] = acc[i] (op) pre(src[i]).
void ReduceNext(const Reduction& r, void* acc, const void* src, size_t n);
// Post-operation (integer avg: division by nranks); a no-op for every other reduction.
void ReduceFinish(const Reduction& r, void* acc, size_t n);

}  // namespace simgpu::nccl

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_REDUCE_KERNELS_H_

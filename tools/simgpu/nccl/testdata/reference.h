// The multi-process tests' model of NCCL's results, written independently of reduce_kernels: one element at a
// time in FP64, rounded to the data type after each operation (double rounding through FP64 and FP32 is exact
// for these formats), integers in 64-bit arithmetic truncated to their width.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_REFERENCE_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_REFERENCE_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace simgpu::nccl::testing {

size_t ElementSize(ncclDataType_t dtype);
const char* TypeName(ncclDataType_t dtype);
const char* OpName(ncclRedOp_t op);

// Deterministic input of `rank` for a test case: floating values that make the reduction order matter, integer
// values whose sums and products overflow, products near 1 for floating types.
std::vector<uint8_t> MakeInput(ncclDataType_t dtype, ncclRedOp_t op, uint64_t seed, int rank, size_t count);

// out[i] = inputs[0][i] (op) inputs[1][i] (op) ... in rank order, as NCCL defines each op (avg: PreMulSum for
// floating types, sum then truncating division for integers). Every input holds at least offset + count
// elements; reads elements [offset, offset + count).
std::vector<uint8_t> ReferenceReduce(ncclDataType_t dtype, ncclRedOp_t op,
                                     const std::vector<std::vector<uint8_t>>& inputs, size_t offset, size_t count);

// FNV-1a over bytes, for comparing results across ranks.
uint64_t Digest(const void* data, size_t bytes);

}  // namespace simgpu::nccl::testing

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_REFERENCE_H_

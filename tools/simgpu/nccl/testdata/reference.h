// The multi-process tests' model of NCCL's results, written independently of reduce_kernels and order.cc: one
// element at a time in FP64, rounded to the data type after each operation (double rounding through FP64 and
// FP32 is exact for these formats; FP8 goes through half, as NCCL computes it), integers in 64-bit arithmetic
// truncated to their width. The order of the ranks' contributions comes from a transcription of NCCL's ring
// schedule (src/device/all_reduce.h runRing), not from simgpu's closed form.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_REFERENCE_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_REFERENCE_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace simgpu::nccl::testing {

size_t ElementSize(ncclDataType_t dtype);
const char* TypeName(ncclDataType_t dtype);
const char* OpName(ncclRedOp_t op);

// Deterministic input of `rank` for a test case: floating values that make the reduction order matter, integer
// values whose sums and products overflow, products near 1 for floating types, any byte for FP8.
std::vector<uint8_t> MakeInput(ncclDataType_t dtype, ncclRedOp_t op, uint64_t seed, int rank, size_t count);

// The ranks whose contributions make up one element, in the order they are combined.
using Chain = std::vector<int>;
// Element index (within the collective's count) -> its chain, valid as long as the ChainOf.
using ChainOf = std::function<const Chain&(size_t)>;

enum class RefColl { kAllReduce, kReduce, kReduceScatter };
// The chains simgpu's NCCL uses under SIMGPU_NCCL_ORDER and SIMGPU_NCCL_RING_CHUNK_BYTES from this process's
// environment: rank order 0..n-1, or NCCL's ring on one channel (all-reduce: per ring chunk; reduce: starting
// after the root; reduce-scatter: starting after the block's owner `rank`).
ChainOf ReferenceChains(RefColl coll, int nranks, size_t count, size_t elem_bytes, int rank, int root);

// out[i] = the chain's inputs[r][offset + i] combined by `op` (avg: PreMulSum for floating types, sum then
// truncating division for integers). `premul`, when not empty, makes the op a PreMulSum whose rank r scalar is
// premul[r] (as stored in the type). Every input holds at least offset + count elements.
std::vector<uint8_t> ReferenceReduce(ncclDataType_t dtype, ncclRedOp_t op,
                                     const std::vector<std::vector<uint8_t>>& inputs, size_t offset, size_t count,
                                     const ChainOf& chain, const std::vector<double>& premul = {});

// One value stored in the type (FP8 with __NV_SATFINITE), and read back.
std::vector<uint8_t> StoreValue(ncclDataType_t dtype, double v);
double LoadValue(ncclDataType_t dtype, const uint8_t* p);

// FNV-1a over bytes, for comparing results across ranks.
uint64_t Digest(const void* data, size_t bytes);

}  // namespace simgpu::nccl::testing

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_TESTDATA_REFERENCE_H_

// Internal to libcudnn.so.9 (simgpu): the RNG operation's generator. NVIDIA documents that cuDNN's RNG operation
// draws from Philox4x32-10 keyed by the seed and advanced by the offset, without documenting how elements map to
// counters; simgpu uses cuRAND's documented mapping (curand_init(seed, subsequence = element, offset)): element e of
// Y (its row-major index over Y's dimensions) takes the 32-bit word `offset mod 4` of Philox4x32-10 with key
// (seed low, seed high) and counter (offset / 4 low, high, e low, high), turned into a uniform u in (0, 1] as
// curand_uniform does (word * 2^-32 + 2^-33). BERNOULLI writes 1 when u < probability, else 0 (cuDNN: the
// probability is that of a 1); UNIFORM writes min + u * (max - min). Bit equality with a GPU cannot be checked here.
// Called on the executing stream's worker; no shared state.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_RNG_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_RNG_H_

#include <array>
#include <cstdint>

#include "tools/simgpu/cudnn/graph_kernels.h"
#include "tools/simgpu/cudnn/graph_model.h"

namespace simgpu::cudnn {

// Philox4x32 with 10 rounds (Salmon et al., SC'11; Random123's philox4x32_10).
std::array<uint32_t, 4> Philox4x32x10(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

// The uniform draw of element `element` (see above).
float PhiloxUniform(uint64_t seed, uint64_t offset, uint64_t element);

// True when simgpu executes `params` (BERNOULLI and UNIFORM; NORMAL is not implemented).
bool RngSupported(const RngParams& params);

// Fills y. The seed is `seed_value` when seed.spec is null, else seed's INT32 or INT64 element; the offset is 0
// when offset.spec is null, else its INT32 or INT64 element.
void RunRng(const RngParams& params, int64_t seed_value, const Bound& seed, const Bound& offset, const Bound& y);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_RNG_H_

// Internal to libcudnn.so.9 (simgpu): shared by the legacy convolution entry points (conv_api.cc) and the
// backend's convolution operations: the conv fault site and the check of a convolution's configuration.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_CONV_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_CONV_H_

#include <cudnn.h>

#include <vector>

#include "tools/simgpu/core/simgpu.h"
#include "tools/simgpu/cudnn/conv_compute.h"

namespace simgpu::cudnn {

// The accumulation precision of a data/compute type configuration that cuDNN's convolutions support with FP32,
// FP16, BF16 or FP64 data (x, w and y of one type): FLOAT_CONFIG, PSEUDO_HALF_CONFIG and PSEUDO_BFLOAT16_CONFIG
// accumulate in FP32, TRUE_HALF_CONFIG in FP16, DOUBLE_CONFIG in FP64. False for every other combination.
bool ConvPrecision(cudnnDataType_t data, cudnnDataType_t compute, AccumPrecision* precision);

// Applies the conv faults of one call to its output, on the stream worker after the output is written: each
// fault's elem names an element of the output tensor in memory order (ElementInMemoryOrder); an elem outside the
// output stops the process (simgpu::CheckFaultElement).
void ApplyConvFaults(const std::vector<Fault>& faults, const ConvProblem& p);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_CONV_H_

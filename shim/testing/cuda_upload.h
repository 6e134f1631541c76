// What the CUDA-runtime test programs under shim/testing share beyond workload_util.h: a host vector copied into
// fresh device memory. Apart from workload_util.h because it names the CUDA runtime, which not every test program
// links. Header-only; a failed allocation or copy ends the program through Die.
#ifndef TTRACE_SHIM_TESTING_CUDA_UPLOAD_H_
#define TTRACE_SHIM_TESTING_CUDA_UPLOAD_H_

#include <cuda_runtime_api.h>

#include <vector>

#include "shim/testing/workload_util.h"

namespace ttrace::shim::testing {

// `v` in newly cudaMalloc'ed device memory (never freed: the programs are short-lived).
inline float* Upload(const std::vector<float>& v) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, v.size() * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(p, v.data(), v.size() * sizeof(float), cudaMemcpyHostToDevice));
  return static_cast<float*>(p);
}

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_CUDA_UPLOAD_H_

// Names and strings of cublasStatus_t values (status_table.inc, taken from NVIDIA's library), shared by
// libcublas (cublasGetStatusName/String) and libcublasLt (cublasLtGetStatusName/String), which answer alike.
#ifndef TTRACE_TOOLS_SIMGPU_CUBLAS_STATUS_NAMES_H_
#define TTRACE_TOOLS_SIMGPU_CUBLAS_STATUS_NAMES_H_

#include <cublas_api.h>

namespace simgpu::cublas {

inline const char* StatusName(cublasStatus_t status) {
  switch (status) {
#define SIMGPU_CUBLAS_STATUS(name, text) \
  case name:                             \
    return #name;
#include "tools/simgpu/cublas/status_table.inc"
#undef SIMGPU_CUBLAS_STATUS
    default:
      return "unrecognized status";
  }
}

inline const char* StatusString(cublasStatus_t status) {
  switch (status) {
#define SIMGPU_CUBLAS_STATUS(name, text) \
  case name:                             \
    return text;
#include "tools/simgpu/cublas/status_table.inc"
#undef SIMGPU_CUBLAS_STATUS
    default:
      return "unrecognized status";
  }
}

}  // namespace simgpu::cublas

#endif  // TTRACE_TOOLS_SIMGPU_CUBLAS_STATUS_NAMES_H_

// Test stand-ins for the vendor libraries the shim intercepts: shared objects under the vendors' sonames and
// version nodes (libcublas.so.13, libcublasLt.so.13, libcudnn.so.9, libnccl.so.2), built by the tests, that answer every
// intercepted entry point with the status the test asks for, so that the shim's pass-through can be tested for
// each documented status and not only the one blanket error NVIDIA's libraries give without a GPU.
//
//   STANDIN_CUBLAS_STATUS   cublasStatus_t returned by every intercepted cuBLAS and cuBLASLt entry point
//   STANDIN_CUDNN_STATUS    cudnnStatus_t returned by cudnnConvolutionForward, BackwardData, BackwardFilter,
//                           cudnnBackendExecute and the backend calls on a knob-info descriptor (standin_cudnn.cc)
//   STANDIN_NCCL_STATUS     ncclResult_t returned by every intercepted NCCL collective and point-to-point call
//                           outside a group, by ncclGroupEnd, and by ncclCommInitRank for a communicator of 2
//                           ranks (1 rank: always created)
//   STANDIN_NCCL_SETUP_STATUS  ncclResult_t returned by the other intercepted communicator calls: the creating ones
//                           (InitRankConfig, InitRankScalable, Split, InitAll), the ending ones (Destroy, Abort,
//                           Finalize) and ncclCommGetAsyncError (but not on ncclCommInitRank's communicator)
//
// Unset means 0 (success). An answering entry point does no work and reads no argument: with success the
// outputs keep what the program put there. Everything else the program and the shim call (handles, streams,
// modes, cuBLASLt and cuDNN descriptors, communicator queries) is answered here or forwarded to simgpu's library, opened by
// its full path (STANDIN_SIMGPU_LIBDIR) with RTLD_LOCAL so that it never shadows the stand-in.
#ifndef TTRACE_SHIM_TESTING_STATUS_STANDIN_H_
#define TTRACE_SHIM_TESTING_STATUS_STANDIN_H_

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace standin {

inline int StatusFromEnv(const char* name) {
  const char* v = getenv(name);
  return v == nullptr ? 0 : atoi(v);
}

// `name` of simgpu's `lib` (version node `node`, or none when null), or abort.
inline void* Simgpu(const char* lib, const char* node, const char* name) {
  const std::string path = std::string(STANDIN_SIMGPU_LIBDIR) + "/" + lib;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  void* fn = handle == nullptr ? nullptr : node != nullptr ? dlvsym(handle, name, node) : dlsym(handle, name);
  if (fn == nullptr) {
    fprintf(stderr, "status stand-in: no %s in %s: %s\n", name, path.c_str(), dlerror());
    abort();
  }
  return fn;
}

}  // namespace standin

// An entry point that answers the status of `env` without reading its arguments (callers pass them in registers
// and on their own stack: a function of no parameters may ignore them).
#define STANDIN_ANSWER(name, env) \
  extern "C" int name() { return standin::StatusFromEnv(env); }

#endif  // TTRACE_SHIM_TESTING_STATUS_STANDIN_H_

// How simgpu's libnccl.so.2 exports its API, as NVIDIA's does (src/include/core.h): every function is defined
// once under its weak name ncclX, with a strong alias pncclX (the name profilers and interposers forward to).
// Only these names are exported (libnccl.map); calls between API functions go to the pncclX names so that an
// interposer of ncclX sees the application's calls only.
#ifndef TTRACE_TOOLS_SIMGPU_NCCL_NCCL_API_H_
#define TTRACE_TOOLS_SIMGPU_NCCL_NCCL_API_H_

#include <nccl.h>

#define NCCL_API(ret, func, ...)                                                           \
  extern "C" __attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak)) ret func(__VA_ARGS__)

#endif  // TTRACE_TOOLS_SIMGPU_NCCL_NCCL_API_H_

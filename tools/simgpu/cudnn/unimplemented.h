// Internal to libcudnn.so.9 (simgpu): what the stubs of unimplemented.inc return. Free of cuDNN's headers on
// purpose: unimplemented.cc defines the stubs without their prototypes (one argument-less definition per name,
// which cuDNN's declarations would contradict).
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_H_

namespace simgpu::cudnn {

// Records "simgpu: <name> is not implemented" as the calling thread's last error (cudnnGetLastErrorString) and
// returns CUDNN_STATUS_NOT_SUPPORTED as an int (cudnnStatus_t's representation). Called by any thread; `name` is
// the exported function's name, not retained.
int NotImplemented(const char* name);

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_H_

// The exports of NVIDIA's libcudnn.so.9 that simgpu does not implement (unimplemented.inc), so that a program
// linked against NVIDIA's library loads and fails only when it calls one of them, with
// CUDNN_STATUS_NOT_SUPPORTED and a last-error message naming the function. Every cuDNN API function returns
// cudnnStatus_t (an int in the x86-64 SysV ABI, in %eax), and there the caller owns the argument registers and
// stack, so one definition that ignores its arguments serves any argument list. The four undocumented exports
// (cudnnGetBackdoor, cudnnSetBackdoor, cudnnSetBackdoorEx, cudnnGetRNNDropoutLocationsInternal) are internal
// forwarders to NVIDIA's sub-libraries and get the same stub.
#include "tools/simgpu/cudnn/unimplemented.h"

extern "C" {

#define SIMGPU_CUDNN_UNIMPLEMENTED(name) \
  int name() { return simgpu::cudnn::NotImplemented(#name); }
#include "tools/simgpu/cudnn/unimplemented.inc"
#undef SIMGPU_CUDNN_UNIMPLEMENTED

}  // extern "C"

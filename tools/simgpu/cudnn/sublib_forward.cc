// One of simgpu's cuDNN sub-libraries (libcudnn_graph.so.9, libcudnn_ops.so.9 or libcudnn_cnn.so.9, chosen by
// SIMGPU_CUDNN_SUBLIB_GRAPH/_OPS/_CNN), for programs linked against NVIDIA's sub-libraries directly: each C API
// name of sublib_exports.inc is defined under the sub-library's version node as a tail jump to the same name at
// version libcudnn.so.9 (simgpu's implementation or its NOT_SUPPORTED stub). A jump leaves the arguments, the
// return value and the stack untouched, so one definition serves every prototype, whatever it returns. The
// versioned reference (.symver) keeps the jump from binding to the forwarder itself.

#define SIMGPU_CUDNN_FORWARD(name)                                  \
  __asm__(".text\n"                                                 \
          ".globl " #name "\n"                                      \
          ".type " #name ", @function\n"                            \
          ".p2align 4\n" #name ":\n"                                \
          "  jmp simgpu_cudnn_forward_" #name "@PLT\n"              \
          ".size " #name ", .-" #name "\n"                          \
          ".symver simgpu_cudnn_forward_" #name ", " #name "@libcudnn.so.9\n");

#if defined(SIMGPU_CUDNN_SUBLIB_GRAPH)
#define SIMGPU_CUDNN_GRAPH(name) SIMGPU_CUDNN_FORWARD(name)
#else
#define SIMGPU_CUDNN_GRAPH(name)
#endif
#if defined(SIMGPU_CUDNN_SUBLIB_OPS)
#define SIMGPU_CUDNN_OPS(name) SIMGPU_CUDNN_FORWARD(name)
#else
#define SIMGPU_CUDNN_OPS(name)
#endif
#if defined(SIMGPU_CUDNN_SUBLIB_CNN)
#define SIMGPU_CUDNN_CNN(name) SIMGPU_CUDNN_FORWARD(name)
#else
#define SIMGPU_CUDNN_CNN(name)
#endif

#include "tools/simgpu/cudnn/sublib_exports.inc"

// Addresses of every name sublib_exports.inc lists, taken without cuDNN's prototypes, so that
// simgpu_cudnn_sublib_load records an undefined reference to each at its sub-library's version node.
#include "tools/simgpu/cudnn/unimplemented_load_test.h"

#define SIMGPU_CUDNN_GRAPH(name) int name();
#define SIMGPU_CUDNN_OPS(name) int name();
#define SIMGPU_CUDNN_CNN(name) int name();
extern "C" {
#include "tools/simgpu/cudnn/sublib_exports.inc"
}  // extern "C"
#undef SIMGPU_CUDNN_GRAPH
#undef SIMGPU_CUDNN_OPS
#undef SIMGPU_CUDNN_CNN

namespace simgpu::cudnn::testing {

#define SIMGPU_CUDNN_GRAPH(name) {#name, &name},
#define SIMGPU_CUDNN_OPS(name) {#name, &name},
#define SIMGPU_CUDNN_CNN(name) {#name, &name},
const StubRef kStubRefs[] = {
#include "tools/simgpu/cudnn/sublib_exports.inc"
};
const int kStubRefCount = sizeof kStubRefs / sizeof kStubRefs[0];

}  // namespace simgpu::cudnn::testing

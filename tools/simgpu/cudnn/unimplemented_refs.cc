// Addresses of the functions unimplemented.inc names, taken without cuDNN's prototypes (which differ per name).
#include "tools/simgpu/cudnn/unimplemented_load_test.h"

extern "C" {
#define SIMGPU_CUDNN_UNIMPLEMENTED(name) int name();
#include "tools/simgpu/cudnn/unimplemented.inc"
#undef SIMGPU_CUDNN_UNIMPLEMENTED
}  // extern "C"

namespace simgpu::cudnn::testing {

const StubRef kStubRefs[] = {
#define SIMGPU_CUDNN_UNIMPLEMENTED(name) {#name, &name},
#include "tools/simgpu/cudnn/unimplemented.inc"
#undef SIMGPU_CUDNN_UNIMPLEMENTED
};
const int kStubRefCount = sizeof kStubRefs / sizeof kStubRefs[0];

}  // namespace simgpu::cudnn::testing

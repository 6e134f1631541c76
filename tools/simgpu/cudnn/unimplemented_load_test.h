// Test-only (simgpu_cudnn_unimplemented_load): every stub of unimplemented.inc by name and address, referenced
// from a translation unit without cuDNN's headers (unimplemented_refs.cc), so the program records an undefined
// reference to each under NVIDIA's version node and a load with LD_BIND_NOW=1 must resolve them all.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_LOAD_TEST_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_LOAD_TEST_H_

namespace simgpu::cudnn::testing {

struct StubRef {
  const char* name;
  int (*fn)();  // called without arguments: the stub ignores them (unimplemented.cc)
};

extern const StubRef kStubRefs[];
extern const int kStubRefCount;

}  // namespace simgpu::cudnn::testing

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_LOAD_TEST_H_

// Test-only (simgpu_cudnn_unimplemented_load, simgpu_cudnn_sublib_load): the functions a list names (the stubs of
// unimplemented.inc; the forwarders of sublib_exports.inc) by name and address, referenced from a translation
// unit without cuDNN's headers (unimplemented_refs.cc; sublib_refs.cc), so the program records an undefined
// reference to each under NVIDIA's version node and a load with LD_BIND_NOW=1 must resolve them all.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_LOAD_TEST_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_LOAD_TEST_H_

namespace simgpu::cudnn::testing {

struct StubRef {
  const char* name;
  int (*fn)();  // a stub may be called without arguments: it ignores them (unimplemented.cc)
};

extern const StubRef kStubRefs[];
extern const int kStubRefCount;

}  // namespace simgpu::cudnn::testing

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_UNIMPLEMENTED_LOAD_TEST_H_

// Conformance transcript: a program, linked against NVIDIA's libcudnn.so, that drives the host-only parts of the
// cuDNN API (descriptors, attribute setters and getters, finalization) through normal and invalid uses and prints
// every status and every value read back. Run once on NVIDIA's library and once on simgpu's (LD_LIBRARY_PATH),
// the two transcripts must be identical: simgpu's descriptor semantics are NVIDIA's, call for call. Parts of the
// API that need a GPU on NVIDIA's side (handles, execution) are not in the transcript.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_CONFORMANCE_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_CONFORMANCE_H_

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace simgpu::cudnn::conformance {

void Section(const char* name);
void Line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Ints(const int* values, int n);
std::string Int64s(const int64_t* values, int64_t n);
// Prints the call's text and its status.
void Status(const char* call, int status);
#define T(call) ::simgpu::cudnn::conformance::Status(#call, static_cast<int>(call))

void RunLegacy();
void RunBackend();
void RunBackendGraphs();
void RunBackendRagged();

// Backend helpers shared by the backend parts.
using Desc = cudnnBackendDescriptor_t;
int Set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* v);
int SetDesc(Desc d, cudnnBackendAttributeName_t name, Desc value);
int SetI64(Desc d, cudnnBackendAttributeName_t name, int64_t value);
struct TensorSpec {
  int64_t uid;
  cudnnDataType_t dtype;
  std::vector<int64_t> dims, strides;
  bool is_virtual = false;
  bool by_value = false;
  int64_t alignment = 16;
};
// Creates and finalizes a tensor descriptor, printing each step's status on one line; with `ragged` (not null),
// sets it as the ragged offset descriptor first and prints that status too.
Desc Tensor(const char* name, const TensorSpec& spec, Desc ragged = nullptr);
// Prints the status, count and values of an INT64 attribute read with `requested` elements.
void GetI64s(Desc d, cudnnBackendAttributeName_t name, const char* label, int64_t requested = 10);

}  // namespace simgpu::cudnn::conformance

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_CONFORMANCE_H_

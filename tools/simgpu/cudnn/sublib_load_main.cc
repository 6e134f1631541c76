// simgpu_cudnn_sublib_load: linked against NVIDIA's libcudnn_graph.so, libcudnn_ops.so and libcudnn_cnn.so (not
// libcudnn.so), run on simgpu's with LD_BIND_NOW=1 (simgpu.Cudnn.SublibForwardersBindNow). Loading at all shows
// every forwarder of sublib_exports.inc resolves at its sub-library's version node; then one call through each
// sub-library must reach simgpu's libcudnn.so.9 (implemented results, and a stub's simgpu message). Prints the
// failures and exits 1, or prints a summary and exits 0.
#include <cudnn.h>

#include <cstdio>
#include <cstring>

#include "tools/simgpu/cudnn/unimplemented_load_test.h"

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  for (int i = 0; i < simgpu::cudnn::testing::kStubRefCount; ++i) {
    Check(simgpu::cudnn::testing::kStubRefs[i].fn != nullptr, simgpu::cudnn::testing::kStubRefs[i].name);
  }
  Check(cudnnGetVersion() == CUDNN_VERSION, "graph: cudnnGetVersion");
  Check(std::strcmp(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM") == 0,
        "graph: cudnnGetErrorString");

  cudnnTensorDescriptor_t tensor = nullptr;
  Check(cudnnCreateTensorDescriptor(&tensor) == CUDNN_STATUS_SUCCESS, "ops: cudnnCreateTensorDescriptor");
  Check(cudnnSetTensor4dDescriptor(tensor, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 5, 7) == CUDNN_STATUS_SUCCESS,
        "ops: cudnnSetTensor4dDescriptor");
  size_t bytes = 0;
  Check(cudnnGetTensorSizeInBytes(tensor, &bytes) == CUDNN_STATUS_SUCCESS && bytes == 2 * 3 * 5 * 7 * 4,
        "ops: cudnnGetTensorSizeInBytes is 840");
  cudnnPoolingDescriptor_t pooling = nullptr;
  Check(cudnnCreatePoolingDescriptor(&pooling) == CUDNN_STATUS_NOT_SUPPORTED, "ops: cudnnCreatePoolingDescriptor");
  char message[256];
  cudnnGetLastErrorString(message, sizeof message);
  Check(std::strcmp(message, "simgpu: cudnnCreatePoolingDescriptor is not implemented") == 0,
        "graph: cudnnGetLastErrorString names the unimplemented function");

  cudnnFilterDescriptor_t filter = nullptr;
  Check(cudnnCreateFilterDescriptor(&filter) == CUDNN_STATUS_SUCCESS, "ops: cudnnCreateFilterDescriptor");
  Check(cudnnSetFilter4dDescriptor(filter, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 3, 3, 3) == CUDNN_STATUS_SUCCESS,
        "ops: cudnnSetFilter4dDescriptor");
  cudnnConvolutionDescriptor_t conv = nullptr;
  Check(cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS, "cnn: cudnnCreateConvolutionDescriptor");
  Check(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
            CUDNN_STATUS_SUCCESS,
        "cnn: cudnnSetConvolution2dDescriptor");
  int n = 0, c = 0, h = 0, w = 0;
  Check(cudnnGetConvolution2dForwardOutputDim(conv, tensor, filter, &n, &c, &h, &w) == CUDNN_STATUS_SUCCESS &&
            n == 2 && c == 4 && h == 5 && w == 7,
        "cnn: cudnnGetConvolution2dForwardOutputDim is 2x4x5x7");
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyFilterDescriptor(filter);
  cudnnDestroyTensorDescriptor(tensor);
  if (failures != 0) return 1;
  std::printf("OK: %d forwarders resolved with LD_BIND_NOW=1; graph, ops and cnn calls reach simgpu\n",
              simgpu::cudnn::testing::kStubRefCount);
  return 0;
}

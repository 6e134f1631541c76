// cudnn_workload: cuDNN legacy convolutions, built against the real headers and linked to libcudnn.so like any
// application, on a stream of its own, and a dump of every operand as the program uploaded or downloaded it:
//   seq 0  forward          FP32 NCHW, 2 groups, pad 1, stride 2, cross-correlation, FMA math, beta 0
//   seq 1  backward data    FP32 NCHW, same geometry, convolution mode (flipped filter), beta 0.5
//   seq 2  backward filter  FP32 NCHW, same geometry and mode, beta 0
//   seq 3  forward          BF16 NHWC (filter NHWC), dilation 2, default math, beta 1
//   seq 4  backward filter  BF16 NHWC, same geometry, beta 0
//   cudnn_workload --dump FILE
// Dump: per operand, u64 seq, u8 slot (format::TensorSlot), u64 bytes, the bytes (every tensor here is packed, so
// its memory span is its data).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shim/testing/workload_util.h"
#include "tools/simgpu/common/nv_dtype.h"
#include "ttrace/format.h"

namespace {

using ttrace::shim::testing::Die;
using ttrace::shim::testing::WriteOperand;
using ttrace::format::TensorSlot;

FILE* g_dump = nullptr;
std::mt19937 g_rng(42);
cudaStream_t g_stream = nullptr;

// A device tensor with its host image.
struct Buf {
  std::vector<uint8_t> host;
  void* dev = nullptr;
  Buf(size_t n, bool bf16) : host(n * (bf16 ? 2 : 4)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (size_t i = 0; i < n; ++i) {
      if (bf16) {
        const uint16_t v = simgpu::nv::FloatToBf16(u(g_rng));
        memcpy(&host[i * 2], &v, 2);
      } else {
        const float v = u(g_rng);
        memcpy(&host[i * 4], &v, 4);
      }
    }
    CHECK_CUDA(cudaMalloc(&dev, host.size()));
    CHECK_CUDA(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice));
  }
  void Dump(uint64_t seq, TensorSlot slot) {
    CHECK_CUDA(cudaStreamSynchronize(g_stream));
    CHECK_CUDA(cudaMemcpy(host.data(), dev, host.size(), cudaMemcpyDeviceToHost));
    WriteOperand(g_dump, seq, static_cast<uint8_t>(slot), host.data(), host.size());
  }
};

struct Geometry {
  int n, c, k, groups, h, w, r, s, pad, stride, dilation;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t dtype;
  cudnnTensorFormat_t format;
  cudnnMathType_t math;
};

// Descriptors and buffers of one geometry.
struct Conv {
  cudnnTensorDescriptor_t x, y;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t conv;
  size_t xn, yn, wn;
  explicit Conv(const Geometry& g) {
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&x));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&y));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&w));
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&conv));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(x, g.format, g.dtype, g.n, g.c, g.h, g.w));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(w, g.dtype, g.format, g.k, g.c / g.groups, g.r, g.s));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(conv, g.pad, g.pad, g.stride, g.stride, g.dilation, g.dilation,
                                                g.mode, CUDNN_DATA_FLOAT));
    CHECK_CUDNN(cudnnSetConvolutionGroupCount(conv, g.groups));
    CHECK_CUDNN(cudnnSetConvolutionMathType(conv, g.math));
    int n, c, h, wd;
    CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wd));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(y, g.format, g.dtype, n, c, h, wd));
    xn = size_t(g.n) * g.c * g.h * g.w;
    wn = size_t(g.k) * (g.c / g.groups) * g.r * g.s;
    yn = size_t(n) * c * h * wd;
  }
};

// A forward call (seq first_seq) and, with filter_grad, the filter gradient of its output (first_seq + 1).
void Run(cudnnHandle_t handle, const Geometry& g, uint64_t first_seq, bool filter_grad, float beta) {
  Conv c(g);
  const bool bf16 = g.dtype == CUDNN_DATA_BFLOAT16;
  Buf x(c.xn, bf16), w(c.wn, bf16), y(c.yn, bf16);
  const float alpha = 1.0f;
  uint64_t seq = first_seq;
  // forward (or its gradients): the inputs before, the written tensor before when beta != 0, after the call.
  x.Dump(seq, TensorSlot::kConvX);
  w.Dump(seq, TensorSlot::kConvW);
  if (beta != 0) y.Dump(seq, TensorSlot::kCIn);
  CHECK_CUDNN(cudnnConvolutionForward(handle, &alpha, c.x, x.dev, c.w, w.dev, c.conv,
                                      CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta, c.y, y.dev));
  y.Dump(seq++, TensorSlot::kCOut);
  const float beta_filter = 0.0f;
  if (filter_grad) {
    x.Dump(seq, TensorSlot::kConvX);
    y.Dump(seq, TensorSlot::kConvY);
    CHECK_CUDNN(cudnnConvolutionBackwardFilter(handle, &alpha, c.x, x.dev, c.y, y.dev, c.conv,
                                               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0, &beta_filter, c.w,
                                               w.dev));
    w.Dump(seq++, TensorSlot::kCOut);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || strcmp(argv[1], "--dump") != 0) {
    fprintf(stderr, "usage: cudnn_workload --dump FILE\n");
    return 2;
  }
  g_dump = fopen(argv[2], "wb");
  if (g_dump == nullptr) Die("fopen", 0);
  cudnnHandle_t handle;
  CHECK_CUDNN(cudnnCreate(&handle));
  CHECK_CUDA(cudaStreamCreate(&g_stream));
  CHECK_CUDNN(cudnnSetStream(handle, g_stream));
  Geometry fp32{2, 4, 6, 2, 9, 9, 3, 3, 1, 2, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                CUDNN_FMA_MATH};
  Run(handle, fp32, 0, /*filter_grad=*/false, 0.0f);
  Geometry fp32_grad = fp32;
  fp32_grad.mode = CUDNN_CONVOLUTION;
  {
    // seq 1 backward data, seq 2 backward filter, in convolution mode (the filter flipped).
    Conv c(fp32_grad);
    Buf x(c.xn, false), w(c.wn, false), y(c.yn, false);
    const float alpha = 1.0f, beta_data = 0.5f, beta_filter = 0.0f;
    w.Dump(1, TensorSlot::kConvW);
    y.Dump(1, TensorSlot::kConvY);
    x.Dump(1, TensorSlot::kCIn);
    CHECK_CUDNN(cudnnConvolutionBackwardData(handle, &alpha, c.w, w.dev, c.y, y.dev, c.conv,
                                             CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, &beta_data, c.x, x.dev));
    x.Dump(1, TensorSlot::kCOut);
    x.Dump(2, TensorSlot::kConvX);
    y.Dump(2, TensorSlot::kConvY);
    CHECK_CUDNN(cudnnConvolutionBackwardFilter(handle, &alpha, c.x, x.dev, c.y, y.dev, c.conv,
                                               CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0, &beta_filter, c.w,
                                               w.dev));
    w.Dump(2, TensorSlot::kCOut);
  }
  const Geometry bf16{2, 8, 4, 1, 7, 6, 3, 2, 2, 1, 2, CUDNN_CROSS_CORRELATION, CUDNN_DATA_BFLOAT16,
                      CUDNN_TENSOR_NHWC, CUDNN_DEFAULT_MATH};
  Run(handle, bf16, 3, /*filter_grad=*/true, 1.0f);
  CHECK_CUDA(cudaStreamSynchronize(g_stream));
  CHECK_CUDNN(cudnnDestroy(handle));
  fclose(g_dump);
  return 0;
}

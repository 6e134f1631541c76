// Legacy entry points around the arithmetic: handles and streams, status codes of the convolution calls,
// algorithm queries and workspace sizes (conv_api.cc states the rules; the descriptors' own statuses are checked
// against NVIDIA's library by the conformance transcript).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/gate.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {
namespace {

class CudnnConvApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS);
    cudnnCreateTensorDescriptor(&x_);
    cudnnCreateTensorDescriptor(&y_);
    cudnnCreateFilterDescriptor(&w_);
    cudnnCreateConvolutionDescriptor(&conv_);
    // x 1x2x4x4, w 3x2x3x3, pad 1: y 1x3x4x4.
    ASSERT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 4, 4), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 4, 4), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 2, 3, 3), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolution2dDescriptor(conv_, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
              CUDNN_STATUS_SUCCESS);
    cudaMalloc(&x_data_, 32 * 4);
    cudaMalloc(&w_data_, 54 * 4);
    cudaMalloc(&y_data_, 48 * 4);
    std::vector<float> ones(54, 1.0f);
    cudaMemcpy(x_data_, ones.data(), 32 * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(w_data_, ones.data(), 54 * 4, cudaMemcpyHostToDevice);
  }
  void TearDown() override {
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyConvolutionDescriptor(conv_);
    cudaFree(x_data_);
    cudaFree(w_data_);
    cudaFree(y_data_);
    EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS);
  }
  cudnnStatus_t Forward(cudnnHandle_t h = nullptr) {
    return cudnnConvolutionForward(h ? h : handle_, &alpha_, x_, x_data_, w_, w_data_, conv_,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta_, y_, y_data_);
  }

  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_, y_;
  cudnnFilterDescriptor_t w_;
  cudnnConvolutionDescriptor_t conv_;
  void *x_data_ = nullptr, *w_data_ = nullptr, *y_data_ = nullptr;
  float alpha_ = 1.0f, beta_ = 0.0f;
};

TEST_F(CudnnConvApi, HandleStreamRoundTrip) {
  cudaStream_t s = reinterpret_cast<cudaStream_t>(0x1);
  EXPECT_EQ(cudnnGetStream(handle_, &s), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(s, nullptr);
  cudaStream_t mine;
  ASSERT_EQ(cudaStreamCreate(&mine), cudaSuccess);
  EXPECT_EQ(cudnnSetStream(handle_, mine), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetStream(handle_, &s), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(s, mine);
  EXPECT_EQ(cudnnSetStream(handle_, nullptr), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudaStreamDestroy(mine), cudaSuccess);
  EXPECT_EQ(cudnnGetStream(nullptr, &s), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnSetStream(nullptr, nullptr), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnCreate(nullptr), CUDNN_STATUS_BAD_PARAM);
}

// The convolution runs on the handle's stream: a stream held at a gate has not written y when the call returns.
TEST_F(CudnnConvApi, RunsOnTheHandlesStream) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  ASSERT_EQ(cudnnSetStream(handle_, stream), CUDNN_STATUS_SUCCESS);
  std::vector<float> before(48, -5.0f), after(48);
  cudaMemcpy(y_data_, before.data(), 48 * 4, cudaMemcpyHostToDevice);
  simgpu::testing::Gate gate;
  ASSERT_EQ(cudaLaunchHostFunc(stream, simgpu::testing::Gate::WaitFn, &gate), cudaSuccess);
  ASSERT_EQ(Forward(), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  std::memcpy(after.data(), y_data_, 48 * 4);  // simgpu's device memory is host memory
  EXPECT_EQ(after, before);
  gate.Open();
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaMemcpy(after.data(), y_data_, 48 * 4, cudaMemcpyDeviceToHost);
  EXPECT_EQ(after[0], 8.0f);   // corner: 2 channels x 2 x 2 taps inside
  EXPECT_EQ(after[5], 18.0f);  // interior: 2 channels x 9 taps
  cudnnSetStream(handle_, nullptr);
  cudaStreamDestroy(stream);
}

TEST_F(CudnnConvApi, BadParameters) {
  EXPECT_EQ(Forward(), CUDNN_STATUS_SUCCESS);
  cudnnHandle_t dead;
  ASSERT_EQ(cudnnCreate(&dead), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnDestroy(dead), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(dead), CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionForward(handle_, nullptr, x_, x_data_, w_, w_data_, conv_,
                                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &beta_, y_, y_data_),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionForward(handle_, &alpha_, x_, nullptr, w_, w_data_, conv_,
                                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &beta_, y_, y_data_),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionForward(handle_, &alpha_, nullptr, x_data_, w_, w_data_, conv_,
                                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &beta_, y_, y_data_),
            CUDNN_STATUS_BAD_PARAM);
  // Output shape other than the convolution's.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 3, 4), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(), CUDNN_STATUS_BAD_PARAM);
  // Channels: x has 2, the filter 3 with one group.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 4, 4), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 3, 3, 3), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(), CUDNN_STATUS_BAD_PARAM);
  // Data types differ.
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, 3, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(), CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  // Group count that does not divide the filters: x 1x2, w 3x1 (K = 3), groups 2.
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 1, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolutionGroupCount(conv_, 2), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(), CUDNN_STATUS_BAD_PARAM);
  ASSERT_EQ(cudnnSetConvolutionGroupCount(conv_, 1), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(), CUDNN_STATUS_SUCCESS);
  cudaDeviceSynchronize();
}

TEST_F(CudnnConvApi, NotSupported) {
  // Unknown algorithm values and the backward-filter Winograd NVIDIA marks unimplemented.
  EXPECT_EQ(cudnnConvolutionForward(handle_, &alpha_, x_, x_data_, w_, w_data_, conv_,
                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, nullptr, 0, &beta_, y_, y_data_),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnConvolutionBackwardFilter(handle_, &alpha_, x_, x_data_, y_, y_data_, conv_,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, nullptr, 0, &beta_, w_,
                                           w_data_),
            CUDNN_STATUS_NOT_SUPPORTED);
  // BF16 data with an FP16 compute type is no supported configuration.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, 1, 2, 4, 4), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_BFLOAT16, 1, 3, 4, 4), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NCHW, 3, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(conv_, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_HALF),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(Forward(), CUDNN_STATUS_NOT_SUPPORTED);
  // 1-d convolutions (3-d tensors) are outside cuDNN's documented 4-d and 5-d support.
  const int xd[3] = {1, 2, 4}, xs[3] = {8, 4, 1}, yd[3] = {1, 3, 4}, ys[3] = {12, 4, 1}, wd[3] = {3, 2, 3};
  const int pad = 1, stride = 1, dil = 1;
  cudnnSetTensorNdDescriptor(x_, CUDNN_DATA_FLOAT, 3, xd, xs);
  cudnnSetTensorNdDescriptor(y_, CUDNN_DATA_FLOAT, 3, yd, ys);
  cudnnSetFilterNdDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, wd);
  cudnnSetConvolutionNdDescriptor(conv_, 1, &pad, &stride, &dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  EXPECT_EQ(Forward(), CUDNN_STATUS_NOT_SUPPORTED);
}

TEST_F(CudnnConvApi, AlgorithmQueriesAndWorkspace) {
  int count = 0;
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &count), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  EXPECT_EQ(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle_, &count), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle_, &count), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);

  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = -1;
  ASSERT_EQ(cudnnSetConvolutionMathType(conv_, CUDNN_TENSOR_OP_MATH), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                   &returned, fwd),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(returned, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  for (int i = 0; i < returned; ++i) {
    EXPECT_EQ(fwd[i].algo, i);
    EXPECT_EQ(fwd[i].status, CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(fwd[i].memory, 0u);
    EXPECT_EQ(fwd[i].determinism, CUDNN_DETERMINISTIC);
    EXPECT_EQ(fwd[i].mathType, CUDNN_TENSOR_OP_MATH);
  }
  EXPECT_EQ(cudnnFindConvolutionForwardAlgorithm(handle_, x_, w_, conv_, y_, 2, &returned, fwd),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(returned, 2);
  EXPECT_EQ(cudnnFindConvolutionForwardAlgorithmEx(handle_, x_, x_data_, w_, w_data_, conv_, y_, y_data_, 1,
                                                   &returned, fwd, nullptr, 0),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(returned, 1);
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, 0, &returned, fwd),
            CUDNN_STATUS_BAD_PARAM);

  cudnnConvolutionBwdFilterAlgoPerf_t bwf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, x_, y_, conv_, w_,
                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, bwf),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(returned, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT - 1);  // without the unimplemented Winograd
  for (int i = 0; i < returned; ++i) EXPECT_NE(bwf[i].algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD);
  cudnnConvolutionBwdDataAlgoPerf_t bwd[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  EXPECT_EQ(cudnnFindConvolutionBackwardDataAlgorithm(handle_, w_, y_, conv_, x_,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, bwd),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(returned, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);

  size_t bytes = 99;
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_, CUDNN_CONVOLUTION_FWD_ALGO_FFT,
                                                    &bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bytes, 0u);
  bytes = 99;
  EXPECT_EQ(cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, w_, y_, conv_, x_, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
                                                         &bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, x_, y_, conv_, w_,
                                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, &bytes),
            CUDNN_STATUS_NOT_SUPPORTED);
  // Queries check the descriptors as the convolution would.
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 3, 5, 4), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_, CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                                                    &bytes),
            CUDNN_STATUS_BAD_PARAM);
}

TEST_F(CudnnConvApi, VersionsAndLastError) {
  EXPECT_EQ(cudnnGetVersion(), static_cast<size_t>(CUDNN_VERSION));
  int major = 0;
  EXPECT_EQ(cudnnGetProperty(MAJOR_VERSION, &major), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(major, CUDNN_MAJOR);
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
  EXPECT_STREQ(cudnnGetErrorString(static_cast<cudnnStatus_t>(12345)), "CUDNN_UNKNOWN_STATUS");
  char message[256];
  EXPECT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 2, 4, 4), CUDNN_STATUS_BAD_PARAM);
  cudnnGetLastErrorString(message, sizeof message);
  EXPECT_STRNE(message, "");
  cudnnGetLastErrorString(message, sizeof message);  // reading clears it
  EXPECT_STREQ(message, "");
}

TEST_F(CudnnConvApi, UnimplementedFunctionReturnsNotSupportedWithItsName) {
  cudnnPoolingDescriptor_t pooling = nullptr;
  EXPECT_EQ(cudnnCreatePoolingDescriptor(&pooling), CUDNN_STATUS_NOT_SUPPORTED);
  char message[256];
  cudnnGetLastErrorString(message, sizeof message);
  EXPECT_STREQ(message, "simgpu: cudnnCreatePoolingDescriptor is not implemented");
  EXPECT_EQ(cudnnBatchNormalizationForwardInference(handle_, CUDNN_BATCHNORM_SPATIAL, nullptr, nullptr, x_, nullptr,
                                                    y_, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1e-5),
            CUDNN_STATUS_NOT_SUPPORTED);
  cudnnGetLastErrorString(message, sizeof message);
  EXPECT_STREQ(message, "simgpu: cudnnBatchNormalizationForwardInference is not implemented");
}

}  // namespace
}  // namespace simgpu::cudnn::testing

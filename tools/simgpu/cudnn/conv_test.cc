// Legacy convolutions (conv_compute.h) against the independent FP64 reference of test_util.h, over layouts
// (NCHW, NHWC), data types (FP32, FP16, BF16 with FP32 accumulation; FP16 with FP16 accumulation; FP64),
// padding, stride, dilation, groups, convolution mode, 2-d and 3-d, and alpha/beta. Two checks per case:
//   exact   small-integer data: every product and partial sum is an integer below 2^8, exact in every type used,
//           so the result must equal the reference exactly (this catches any indexing error);
//   bound   random data: |result - reference| <= gamma_{k+3}(u_acc) * (|alpha| sum|products| + |beta| |y0|)
//           + u_out * (|reference| + that), the deterministic bound (k products, FP32/FP16/FP64 accumulation u_acc,
//           three more roundings for alpha, beta and their sum, u_out the output's storage roundoff).
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/simgpu/common/accumulate.h"
#include "tools/simgpu/cudnn/test_util.h"

namespace simgpu::cudnn::testing {
namespace {

struct Config {
  cudnnDataType_t data;
  cudnnDataType_t compute;
};

struct Case {
  const char* name;
  ConvCase conv;
};

std::vector<Case> Cases() {
  return {
      {"plain", {2, 4, 3, 1, {5, 6}, {3, 3}, {0, 0}, {1, 1}, {1, 1}}},
      {"pad", {2, 4, 3, 1, {5, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}},
      {"stride", {2, 4, 3, 1, {7, 6}, {3, 2}, {1, 0}, {2, 3}, {1, 1}}},
      {"dilation", {1, 3, 2, 1, {7, 7}, {3, 3}, {1, 2}, {1, 1}, {2, 3}}},
      {"groups", {2, 6, 4, 2, {5, 5}, {3, 3}, {1, 1}, {2, 1}, {1, 1}}},
      {"depthwise", {1, 4, 4, 4, {6, 5}, {3, 3}, {1, 1}, {1, 2}, {1, 1}}},
      {"convolution_mode", {2, 3, 2, 1, {5, 6}, {3, 2}, {1, 1}, {1, 2}, {1, 1}, true}},
      {"conv3d", {1, 2, 3, 1, {4, 5, 4}, {2, 3, 2}, {1, 0, 1}, {1, 2, 1}, {1, 1, 2}}},
  };
}

class CudnnConv : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cudnnDestroy(handle_), CUDNN_STATUS_SUCCESS); }

  static void Describe(cudnnTensorDescriptor_t d, const Tensor& t) {
    std::vector<int> dims(t.dims().begin(), t.dims().end()), strides(t.strides().begin(), t.strides().end());
    ASSERT_EQ(cudnnSetTensorNdDescriptor(d, t.type(), static_cast<int>(dims.size()), dims.data(), strides.data()),
              CUDNN_STATUS_SUCCESS);
  }

  // Runs one convolution of `kind` and checks it against the reference (exact with integer data, else the bound).
  void Run(const ConvCase& cc, Kind kind, Config cfg, bool nhwc, bool integers, double alpha, double beta,
           uint32_t seed) {
    SCOPED_TRACE(::testing::Message() << "kind " << static_cast<int>(kind) << " data " << cfg.data << " compute "
                                      << cfg.compute << (nhwc ? " NHWC" : " NCHW") << (integers ? " exact" : " bound")
                                      << " alpha " << alpha << " beta " << beta);
    const size_t D = cc.in.size();
    Tensor x(cfg.data, cc.XDims(), Tensor::Packed(cc.XDims(), nhwc));
    Tensor w(cfg.data, cc.WDims(), Tensor::Packed(cc.WDims(), nhwc));
    Tensor y(cfg.data, cc.YDims(), Tensor::Packed(cc.YDims(), nhwc));
    std::mt19937 rng(seed);
    x.Fill(&rng, integers);
    w.Fill(&rng, integers);
    y.Fill(&rng, integers);
    Tensor& out = kind == Kind::kForward ? y : kind == Kind::kBackwardData ? x : w;
    const std::vector<double> old = out.values();
    x.Upload();
    w.Upload();
    y.Upload();

    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t convd;
    ASSERT_EQ(cudnnCreateTensorDescriptor(&xd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&yd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateFilterDescriptor(&wd), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateConvolutionDescriptor(&convd), CUDNN_STATUS_SUCCESS);
    Describe(xd, x);
    Describe(yd, y);
    std::vector<int> wdims(w.dims().begin(), w.dims().end());
    ASSERT_EQ(cudnnSetFilterNdDescriptor(wd, cfg.data, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                         static_cast<int>(wdims.size()), wdims.data()),
              CUDNN_STATUS_SUCCESS);
    std::vector<int> pad(cc.pad.begin(), cc.pad.end()), stride(cc.stride.begin(), cc.stride.end()),
        dil(cc.dilation.begin(), cc.dilation.end());
    ASSERT_EQ(cudnnSetConvolutionNdDescriptor(convd, static_cast<int>(D), pad.data(), stride.data(), dil.data(),
                                              cc.flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, cfg.compute),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolutionGroupCount(convd, static_cast<int>(cc.groups)), CUDNN_STATUS_SUCCESS);

    const bool fp64 = cfg.data == CUDNN_DATA_DOUBLE;
    const float af = static_cast<float>(alpha), bf = static_cast<float>(beta);
    const void* a = fp64 ? static_cast<const void*>(&alpha) : &af;
    const void* b = fp64 ? static_cast<const void*>(&beta) : &bf;
    cudnnStatus_t st;
    if (kind == Kind::kForward) {
      st = cudnnConvolutionForward(handle_, a, xd, x.device(), wd, w.device(), convd,
                                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, b, yd, y.device());
    } else if (kind == Kind::kBackwardData) {
      st = cudnnConvolutionBackwardData(handle_, a, wd, w.device(), yd, y.device(), convd,
                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, nullptr, 0, b, xd, x.device());
    } else {
      st = cudnnConvolutionBackwardFilter(handle_, a, xd, x.device(), yd, y.device(), convd,
                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, nullptr, 0, b, wd, w.device());
    }
    ASSERT_EQ(st, CUDNN_STATUS_SUCCESS);
    out.Download();
    cudnnDestroyTensorDescriptor(xd);
    cudnnDestroyTensorDescriptor(yd);
    cudnnDestroyFilterDescriptor(wd);
    cudnnDestroyConvolutionDescriptor(convd);

    std::vector<double> ref, abs;
    ReferenceConv(cc, kind, x.values(), w.values(), y.values(), &ref, &abs);
    int64_t k = 1;
    for (int64_t f : cc.filter) k *= f;
    if (kind == Kind::kForward) k *= cc.c / cc.groups;
    if (kind == Kind::kBackwardData) k *= cc.k / cc.groups;
    if (kind == Kind::kBackwardFilter) {
      k = cc.n;
      for (int64_t o : cc.Out()) k *= o;
    }
    const double u_acc = fp64 ? UnitRoundoff(CUDNN_DATA_DOUBLE)
                              : cfg.compute == CUDNN_DATA_HALF ? UnitRoundoff(CUDNN_DATA_HALF)
                                                               : UnitRoundoff(CUDNN_DATA_FLOAT);
    const double u_out = UnitRoundoff(cfg.data);
    int failures = 0;
    for (size_t i = 0; i < ref.size() && failures < 5; ++i) {
      const double expect = alpha * ref[i] + beta * old[i];
      const double got = out.at(i);
      if (integers) {
        if (got != expect) {
          ADD_FAILURE() << "element " << i << ": got " << got << ", exact result " << expect;
          ++failures;
        }
        continue;
      }
      const double acc_err = Gamma(k + 3, u_acc) * (std::fabs(alpha) * abs[i] + std::fabs(beta) * std::fabs(old[i]));
      const double bound = acc_err + u_out * (std::fabs(expect) + acc_err);
      if (!(std::fabs(got - expect) <= bound)) {
        ADD_FAILURE() << "element " << i << ": got " << got << ", reference " << expect << ", bound " << bound;
        ++failures;
      }
    }
  }

  // Every case x {FP32, FP16, BF16 with FP32 compute} x {NCHW, NHWC}, exact and bound checks.
  void Sweep(Kind kind) {
    const Config configs[] = {{CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT},
                              {CUDNN_DATA_HALF, CUDNN_DATA_FLOAT},
                              {CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT}};
    uint32_t seed = 1;
    for (const Case& c : Cases()) {
      SCOPED_TRACE(c.name);
      for (const Config& cfg : configs) {
        for (bool nhwc : {false, true}) {
          Run(c.conv, kind, cfg, nhwc, true, 1.0, 0.0, seed++);
          Run(c.conv, kind, cfg, nhwc, false, 1.5, 0.5, seed++);
        }
      }
    }
  }

  cudnnHandle_t handle_ = nullptr;
};

TEST_F(CudnnConv, ForwardMatchesReference) { Sweep(Kind::kForward); }
TEST_F(CudnnConv, BackwardDataMatchesReference) { Sweep(Kind::kBackwardData); }
TEST_F(CudnnConv, BackwardFilterMatchesReference) { Sweep(Kind::kBackwardFilter); }

// TRUE_HALF_CONFIG (FP16 accumulation) and DOUBLE_CONFIG, each kind, with beta.
// The order decides the bits: a 1x1 forward convolution over C = 7 channels sums x[c]·w[c] in channel order
// (conv_compute.h). With x = (2^24, 0, 0, 0, 1, 0, 1) and w = 1, the sums are written out here from
// accumulate.h's text: sequential (and one run of blocked) adds 1 twice to 2^24, each tying to even: 2^24;
// pairwise: ((x0+x1)+(x2+x3)) + ((x4+x5) + x6) = 2^24 + 2; splitk:3, slices [0,2) [2,4) [4,7) summing to 2^24, 0,
// 2: 2^24 + 2. A wrong order gives the other value.
TEST_F(CudnnConv, AccumulationOrderDecidesTheBits) {
  const AccumConfig config = AccumFromEnv();
  float want = 0;
  if (config.order == AccumOrder::kSequential) want = 0x1p24f;
  if (config.order == AccumOrder::kPairwise) want = 0x1p24f + 2;
  if (config.order == AccumOrder::kSplitK && config.param == 3) want = 0x1p24f + 2;
  if (want == 0) GTEST_SKIP() << "no hand-written expectation for this order";
  const ConvCase cc{1, 7, 1, 1, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {1, 1}};
  Tensor x(CUDNN_DATA_FLOAT, cc.XDims(), Tensor::Packed(cc.XDims(), false));
  Tensor w(CUDNN_DATA_FLOAT, cc.WDims(), Tensor::Packed(cc.WDims(), false));
  Tensor y(CUDNN_DATA_FLOAT, cc.YDims(), Tensor::Packed(cc.YDims(), false));
  const double xs[7] = {0x1p24, 0, 0, 0, 1, 0, 1};
  for (size_t c = 0; c < 7; ++c) {
    x.Set(c, xs[c]);
    w.Set(c, 1);
  }
  x.Upload();
  w.Upload();
  y.Upload();
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t convd;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&xd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateTensorDescriptor(&yd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateFilterDescriptor(&wd), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnCreateConvolutionDescriptor(&convd), CUDNN_STATUS_SUCCESS);
  Describe(xd, x);
  Describe(yd, y);
  const int wdims[4] = {1, 7, 1, 1}, zero[2] = {0, 0}, one[2] = {1, 1};
  ASSERT_EQ(cudnnSetFilterNdDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wdims), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolutionNdDescriptor(convd, 2, zero, one, one, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  const float alpha = 1, beta = 0;
  ASSERT_EQ(cudnnConvolutionForward(handle_, &alpha, xd, x.device(), wd, w.device(), convd,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, nullptr, 0, &beta, yd, y.device()),
            CUDNN_STATUS_SUCCESS);
  y.Download();
  EXPECT_EQ(y.at(0), want);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(convd);
}

TEST_F(CudnnConv, TrueHalfAndDoubleConfigurations) {
  const ConvCase cc = Cases()[2].conv;
  uint32_t seed = 100;
  for (Kind kind : {Kind::kForward, Kind::kBackwardData, Kind::kBackwardFilter}) {
    for (Config cfg : {Config{CUDNN_DATA_HALF, CUDNN_DATA_HALF}, Config{CUDNN_DATA_DOUBLE, CUDNN_DATA_DOUBLE}}) {
      Run(cc, kind, cfg, false, true, 1.0, 1.0, seed++);
      Run(cc, kind, cfg, true, false, -0.75, 0.25, seed++);
    }
  }
}

// With beta = 0 the output is not read: NaN there does not reach the result.
TEST_F(CudnnConv, BetaZeroDoesNotReadTheOutput) {
  const ConvCase cc = Cases()[1].conv;
  Tensor x(CUDNN_DATA_FLOAT, cc.XDims(), Tensor::Packed(cc.XDims(), false));
  Tensor w(CUDNN_DATA_FLOAT, cc.WDims(), Tensor::Packed(cc.WDims(), false));
  Tensor y(CUDNN_DATA_FLOAT, cc.YDims(), Tensor::Packed(cc.YDims(), false));
  std::mt19937 rng(7);
  x.Fill(&rng, true);
  w.Fill(&rng, true);
  for (size_t i = 0; i < y.size(); ++i) y.Set(i, std::nan(""));
  x.Upload();
  w.Upload();
  y.Upload();
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t convd;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateTensorDescriptor(&yd);
  cudnnCreateFilterDescriptor(&wd);
  cudnnCreateConvolutionDescriptor(&convd);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, 5, 6), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 5, 6), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, 4, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(convd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  const float alpha = 1.0f, beta = 0.0f;
  ASSERT_EQ(cudnnConvolutionForward(handle_, &alpha, xd, x.device(), wd, w.device(), convd,
                                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, nullptr, 0, &beta, yd, y.device()),
            CUDNN_STATUS_SUCCESS);
  y.Download();
  std::vector<double> ref, abs;
  ReferenceConv(cc, Kind::kForward, x.values(), w.values(), y.values(), &ref, &abs);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y.at(i), ref[i]) << i;
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(convd);
}

}  // namespace
}  // namespace simgpu::cudnn::testing

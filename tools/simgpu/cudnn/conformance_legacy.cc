// Conformance transcript, part 1: the host-only legacy descriptor API (tensor, filter and convolution
// descriptors, output dimensions, versions, error strings). See conformance_main.cc.
#include <cudnn.h>

#include <cstdio>
#include <initializer_list>

#include "tools/simgpu/cudnn/conformance.h"

namespace simgpu::cudnn::conformance {
namespace {

void PrintTensor(cudnnTensorDescriptor_t t) {
  cudnnDataType_t dt = static_cast<cudnnDataType_t>(-1);
  int n = -7, c = -7, h = -7, w = -7, ns = -7, cs = -7, hs = -7, ws = -7;
  int st = cudnnGetTensor4dDescriptor(t, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws);
  Line("  get4d -> %d dt=%d dims=%d,%d,%d,%d strides=%d,%d,%d,%d", st, dt, n, c, h, w, ns, cs, hs, ws);
  for (int req : {0, 2, 4, 8}) {
    int nb = -7, dims[8], strides[8];
    for (int i = 0; i < 8; ++i) dims[i] = strides[i] = -7;
    dt = static_cast<cudnnDataType_t>(-1);
    st = cudnnGetTensorNdDescriptor(t, req, &dt, &nb, dims, strides);
    Line("  getNd(%d) -> %d dt=%d nb=%d dims=%s strides=%s", req, st, dt, nb, Ints(dims, 8).c_str(),
         Ints(strides, 8).c_str());
  }
  size_t bytes = 12345;
  st = cudnnGetTensorSizeInBytes(t, &bytes);
  Line("  size -> %d %zu", st, bytes);
}

void PrintFilter(cudnnFilterDescriptor_t f) {
  cudnnDataType_t dt = static_cast<cudnnDataType_t>(-1);
  cudnnTensorFormat_t fmt = static_cast<cudnnTensorFormat_t>(-1);
  int k = -7, c = -7, h = -7, w = -7;
  int st = cudnnGetFilter4dDescriptor(f, &dt, &fmt, &k, &c, &h, &w);
  Line("  get4d -> %d dt=%d fmt=%d dims=%d,%d,%d,%d", st, dt, fmt, k, c, h, w);
  for (int req : {0, 3, 5, 8}) {
    int nb = -7, dims[8];
    for (int& d : dims) d = -7;
    st = cudnnGetFilterNdDescriptor(f, req, &dt, &fmt, &nb, dims);
    Line("  getNd(%d) -> %d dt=%d fmt=%d nb=%d dims=%s", req, st, dt, fmt, nb, Ints(dims, 8).c_str());
  }
  size_t bytes = 12345;
  st = cudnnGetFilterSizeInBytes(f, &bytes);
  Line("  size -> %d %zu", st, bytes);
}

void PrintConv(cudnnConvolutionDescriptor_t c) {
  int ph = -7, pw = -7, u = -7, v = -7, dh = -7, dw = -7;
  cudnnConvolutionMode_t mode = static_cast<cudnnConvolutionMode_t>(-1);
  cudnnDataType_t ct = static_cast<cudnnDataType_t>(-1);
  int st = cudnnGetConvolution2dDescriptor(c, &ph, &pw, &u, &v, &dh, &dw, &mode, &ct);
  Line("  get2d -> %d pad=%d,%d stride=%d,%d dil=%d,%d mode=%d ct=%d", st, ph, pw, u, v, dh, dw, mode, ct);
  for (int req : {0, 1, 2, 3, 6}) {
    int len = -7, pad[6], str[6], dil[6];
    for (int i = 0; i < 6; ++i) pad[i] = str[i] = dil[i] = -7;
    st = cudnnGetConvolutionNdDescriptor(c, req, &len, pad, str, dil, &mode, &ct);
    Line("  getNd(%d) -> %d len=%d pad=%s str=%s dil=%s mode=%d ct=%d", req, st, len, Ints(pad, 6).c_str(),
         Ints(str, 6).c_str(), Ints(dil, 6).c_str(), mode, ct);
  }
  cudnnMathType_t math = static_cast<cudnnMathType_t>(-1);
  int groups = -7;
  int s1 = cudnnGetConvolutionMathType(c, &math);
  int s2 = cudnnGetConvolutionGroupCount(c, &groups);
  Line("  math -> %d %d groups -> %d %d", s1, math, s2, groups);
}

void DataTypes() {
  Section("data types");
  for (int dt = 0; dt <= 22; ++dt) {
    // The vectorized INT8x4, UINT8x4 and INT8x32 types are deprecated and not supported by simgpu.
    if (dt == CUDNN_DATA_INT8x4 || dt == CUDNN_DATA_UINT8x4 || dt == CUDNN_DATA_INT8x32) continue;
    cudnnTensorDescriptor_t t;
    cudnnFilterDescriptor_t f;
    cudnnConvolutionDescriptor_t c;
    cudnnCreateTensorDescriptor(&t);
    cudnnCreateFilterDescriptor(&f);
    cudnnCreateConvolutionDescriptor(&c);
    const cudnnDataType_t type = static_cast<cudnnDataType_t>(dt);
    size_t tbytes = 0, fbytes = 0;
    int st = cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, type, 1, 4, 2, 3);
    int st_nhwc = cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, type, 1, 4, 2, 3);
    int st_vect = cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW_VECT_C, type, 1, 32, 2, 3);
    int ss = st == 0 ? cudnnGetTensorSizeInBytes(t, &tbytes) : -1;
    int sf = cudnnSetFilter4dDescriptor(f, type, CUDNN_TENSOR_NCHW, 4, 4, 2, 3);
    int sfs = sf == 0 ? cudnnGetFilterSizeInBytes(f, &fbytes) : -1;
    int sc = cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, type);
    Line("dtype %d: tensor %d/%d/%d size %d %zu filter %d size %d %zu conv compute %d", dt, st, st_nhwc, st_vect,
         ss, tbytes, sf, sfs, fbytes, sc);
    cudnnDestroyTensorDescriptor(t);
    cudnnDestroyFilterDescriptor(f);
    cudnnDestroyConvolutionDescriptor(c);
  }
}

void Tensors() {
  Section("tensor descriptors");
  cudnnTensorDescriptor_t t;
  T(cudnnCreateTensorDescriptor(&t));
  T(cudnnCreateTensorDescriptor(nullptr));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 5));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 2, 3, 4, 5));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_BFLOAT16, 1, 1, 1, 1));
  PrintTensor(t);
  // Rejected settings leave the descriptor as it was (or not; the transcript records which).
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 3, 4, 5));
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, -3, 4, 5));
  T(cudnnSetTensor4dDescriptor(t, static_cast<cudnnTensorFormat_t>(7), CUDNN_DATA_FLOAT, 2, 3, 4, 5));
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, static_cast<cudnnDataType_t>(99), 2, 3, 4, 5));
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW_VECT_C, CUDNN_DATA_FLOAT, 2, 4, 4, 5));
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_DOUBLE, 2, 3, 4, 5));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_INT8, 2, 3, 4, 5));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptor(nullptr, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 4, 5));
  T(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 200, 50, 10, 2));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 0, 0, 0, 0));
  T(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 60, 20, 5, -1));
  T(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 1, 2, 6, 24));
  PrintTensor(t);
  T(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 10, 10, 10, 10));
  PrintTensor(t);
  {
    const int dims3[3] = {2, 3, 4}, str3[3] = {12, 4, 1};
    const int dims5[5] = {2, 3, 4, 5, 6}, str5[5] = {360, 120, 30, 6, 1};
    const int dims8[8] = {1, 2, 1, 2, 1, 2, 1, 2}, str8[8] = {16, 8, 8, 4, 4, 2, 2, 1};
    const int dims9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, str9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int dims2[2] = {3, 4}, str2[2] = {4, 1};
    const int bad_dims[4] = {2, 0, 4, 5}, str4[4] = {60, 20, 5, 1};
    const int neg_str[4] = {60, 20, 5, -1};
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 3, dims3, str3));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_HALF, 5, dims5, str5));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 8, dims8, str8));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 9, dims9, str9));
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 2, dims2, str2));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 1, dims2, str2));
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 0, dims2, str2));
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, bad_dims, str4));
    T(cudnnSetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims5, neg_str));
    T(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 5, dims5));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 5, dims5));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 3, dims3));
    PrintTensor(t);
    T(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, dims2));
    T(cudnnSetTensorNdDescriptorEx(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, dims8));
    PrintTensor(t);
  }
  T(cudnnDestroyTensorDescriptor(t));
  T(cudnnDestroyTensorDescriptor(nullptr));
}

void Filters() {
  Section("filter descriptors");
  cudnnFilterDescriptor_t f;
  T(cudnnCreateFilterDescriptor(&f));
  T(cudnnCreateFilterDescriptor(nullptr));
  PrintFilter(f);
  T(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, 5, 7));
  PrintFilter(f);
  T(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 8, 3, 5, 7));
  PrintFilter(f);
  T(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 0, 3, 5, 7));
  T(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, -5, 7));
  T(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, static_cast<cudnnTensorFormat_t>(5), 8, 3, 5, 7));
  T(cudnnSetFilter4dDescriptor(f, static_cast<cudnnDataType_t>(77), CUDNN_TENSOR_NCHW, 8, 3, 5, 7));
  T(cudnnSetFilter4dDescriptor(nullptr, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 3, 5, 7));
  {
    const int d3[3] = {4, 2, 3}, d5[5] = {4, 2, 3, 3, 3}, d8[8] = {2, 2, 1, 1, 1, 1, 1, 2};
    const int d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, bad[4] = {4, 2, 0, 3};
    T(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 3, d3));
    PrintFilter(f);
    T(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NHWC, 5, d5));
    PrintFilter(f);
    T(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, d8));
    PrintFilter(f);
    T(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 9, d9));
    T(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 2, d3));
    T(cudnnSetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, bad));
  }
  T(cudnnDestroyFilterDescriptor(f));
  T(cudnnDestroyFilterDescriptor(nullptr));
}

void Convolutions() {
  Section("convolution descriptors");
  cudnnConvolutionDescriptor_t c;
  T(cudnnCreateConvolutionDescriptor(&c));
  T(cudnnCreateConvolutionDescriptor(nullptr));
  PrintConv(c);
  T(cudnnSetConvolution2dDescriptor(c, 1, 2, 3, 4, 5, 6, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  PrintConv(c);
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_HALF));
  PrintConv(c);
  T(cudnnSetConvolution2dDescriptor(c, -1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 0, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 0, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, static_cast<cudnnConvolutionMode_t>(2),
                                    CUDNN_DATA_FLOAT));
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                    static_cast<cudnnDataType_t>(42)));
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_BFLOAT16));
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_INT32));
  PrintConv(c);
  T(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_DOUBLE));
  PrintConv(c);
  T(cudnnSetConvolution2dDescriptor(nullptr, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  {
    const int p1[1] = {2}, s1[1] = {3}, d1[1] = {1};
    const int p3[3] = {1, 2, 3}, s3[3] = {1, 2, 1}, d3[3] = {2, 1, 1};
    const int p4[4] = {0, 0, 0, 0}, s4[4] = {1, 1, 1, 1};
    const int neg[3] = {1, -2, 3}, zero[3] = {1, 0, 1};
    T(cudnnSetConvolutionNdDescriptor(c, 1, p1, s1, d1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    PrintConv(c);
    T(cudnnSetConvolutionNdDescriptor(c, 3, p3, s3, d3, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
    PrintConv(c);
    T(cudnnSetConvolutionNdDescriptor(c, 4, p4, s4, s4, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
    T(cudnnSetConvolutionNdDescriptor(c, 0, p4, s4, s4, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
    T(cudnnSetConvolutionNdDescriptor(c, 3, neg, s3, d3, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
    T(cudnnSetConvolutionNdDescriptor(c, 3, p3, zero, d3, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
    T(cudnnSetConvolutionNdDescriptor(c, 3, p3, s3, zero, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  }
  T(cudnnSetConvolution2dDescriptor(c, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  for (int m : {0, 1, 2, 3, 4}) {
    Line("math type %d -> %d", m, cudnnSetConvolutionMathType(c, static_cast<cudnnMathType_t>(m)));
    PrintConv(c);
  }
  for (int g : {2, 0, -1, 1}) {
    Line("group count %d -> %d", g, cudnnSetConvolutionGroupCount(c, g));
    PrintConv(c);
  }
  cudnnReorderType_t reorder = static_cast<cudnnReorderType_t>(-1);
  T(cudnnGetConvolutionReorderType(c, &reorder));
  Line("  reorder=%d", reorder);
  T(cudnnSetConvolutionReorderType(c, CUDNN_NO_REORDER));
  T(cudnnGetConvolutionReorderType(c, &reorder));
  Line("  reorder=%d", reorder);
  T(cudnnSetConvolutionReorderType(c, static_cast<cudnnReorderType_t>(5)));
  T(cudnnSetConvolutionMathType(nullptr, CUDNN_DEFAULT_MATH));
  T(cudnnSetConvolutionGroupCount(nullptr, 1));
  T(cudnnDestroyConvolutionDescriptor(c));
  T(cudnnDestroyConvolutionDescriptor(nullptr));
}

struct OutDimCase {
  int n, c, h, w;          // input (NCHW dims)
  cudnnTensorFormat_t xfmt;
  int k, fc, r, s;         // filter
  cudnnTensorFormat_t wfmt;
  int ph, pw, u, v, dh, dw, groups;
};

void OutputDims() {
  Section("forward output dimensions");
  const OutDimCase cases[] = {
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 3, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 1, 1, 1},
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 3, 3, CUDNN_TENSOR_NCHW, 1, 1, 1, 1, 1, 1, 1},
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 3, 2, CUDNN_TENSOR_NCHW, 1, 2, 2, 3, 1, 1, 1},
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 3, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 2, 3, 1},
      {2, 6, 7, 9, CUDNN_TENSOR_NHWC, 4, 3, 3, 3, CUDNN_TENSOR_NHWC, 0, 0, 1, 1, 1, 1, 2},
      {2, 6, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 3, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 1, 1, 1},
      {2, 6, 7, 9, CUDNN_TENSOR_NCHW, 6, 3, 3, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 1, 1, 3},
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 9, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 1, 1, 1},
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 9, 3, CUDNN_TENSOR_NCHW, 1, 0, 1, 1, 1, 1, 1},
      {2, 3, 7, 9, CUDNN_TENSOR_NCHW, 4, 3, 3, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 4, 1, 1},
      {2, 3, 7, 9, CUDNN_TENSOR_NHWC, 4, 3, 3, 3, CUDNN_TENSOR_NCHW, 0, 0, 1, 1, 1, 1, 1},
      {1, 1, 1, 1, CUDNN_TENSOR_NCHW, 1, 1, 1, 1, CUDNN_TENSOR_NCHW, 0, 0, 5, 5, 1, 1, 1},
      {2, 4, 8, 8, CUDNN_TENSOR_NCHW, 4, 1, 3, 3, CUDNN_TENSOR_NCHW, 1, 1, 2, 2, 1, 1, 4},
  };
  for (const OutDimCase& k : cases) {
    cudnnTensorDescriptor_t x;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
    cudnnCreateTensorDescriptor(&x);
    cudnnCreateFilterDescriptor(&w);
    cudnnCreateConvolutionDescriptor(&c);
    int s1 = cudnnSetTensor4dDescriptor(x, k.xfmt, CUDNN_DATA_FLOAT, k.n, k.c, k.h, k.w);
    int s2 = cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, k.wfmt, k.k, k.fc, k.r, k.s);
    int s3 = cudnnSetConvolution2dDescriptor(c, k.ph, k.pw, k.u, k.v, k.dh, k.dw, CUDNN_CROSS_CORRELATION,
                                             CUDNN_DATA_FLOAT);
    int s4 = cudnnSetConvolutionGroupCount(c, k.groups);
    int n = -7, oc = -7, h = -7, ow = -7;
    int st = cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &oc, &h, &ow);
    Line("case x=%d,%d,%d,%d/%d w=%d,%d,%d,%d/%d pad=%d,%d str=%d,%d dil=%d,%d g=%d: sets %d %d %d %d", k.n, k.c,
         k.h, k.w, k.xfmt, k.k, k.fc, k.r, k.s, k.wfmt, k.ph, k.pw, k.u, k.v, k.dh, k.dw, k.groups, s1, s2, s3, s4);
    Line("  2d -> %d %d,%d,%d,%d", st, n, oc, h, ow);
    int dims[8];
    for (int nb : {4, 3, 5}) {
      for (int& d : dims) d = -7;
      st = cudnnGetConvolutionNdForwardOutputDim(c, x, w, nb, dims);
      Line("  Nd(%d) -> %d %s", nb, st, Ints(dims, 8).c_str());
    }
    cudnnDestroyTensorDescriptor(x);
    cudnnDestroyFilterDescriptor(w);
    cudnnDestroyConvolutionDescriptor(c);
  }
  // 3-d convolution through the Nd setters.
  cudnnTensorDescriptor_t x;
  cudnnFilterDescriptor_t w;
  cudnnConvolutionDescriptor_t c;
  cudnnCreateTensorDescriptor(&x);
  cudnnCreateFilterDescriptor(&w);
  cudnnCreateConvolutionDescriptor(&c);
  const int xd[5] = {1, 2, 5, 6, 7}, xs[5] = {420, 210, 42, 7, 1}, wd[5] = {3, 2, 2, 3, 3};
  const int pad[3] = {1, 0, 1}, str[3] = {2, 1, 3}, dil[3] = {1, 2, 1};
  T(cudnnSetTensorNdDescriptor(x, CUDNN_DATA_FLOAT, 5, xd, xs));
  T(cudnnSetFilterNdDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 5, wd));
  T(cudnnSetConvolutionNdDescriptor(c, 3, pad, str, dil, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  int dims[8];
  for (int nb : {5, 4, 6}) {
    for (int& d : dims) d = -7;
    int st = cudnnGetConvolutionNdForwardOutputDim(c, x, w, nb, dims);
    Line("  3d Nd(%d) -> %d %s", nb, st, Ints(dims, 8).c_str());
  }
  int n, oc, h, ow;
  T(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &oc, &h, &ow));
  T(cudnnGetConvolution2dForwardOutputDim(nullptr, x, w, &n, &oc, &h, &ow));
  cudnnDestroyTensorDescriptor(x);
  cudnnDestroyFilterDescriptor(w);
  cudnnDestroyConvolutionDescriptor(c);
}

void Versions() {
  Section("versions and strings");
  Line("version=%zu", cudnnGetVersion());
  int v = -1;
  for (int p : {0, 1, 2, 3}) {
    int st = cudnnGetProperty(static_cast<libraryPropertyType>(p), &v);
    Line("property %d -> %d %d", p, st, v);
  }
  T(cudnnGraphVersionCheck());
  T(cudnnOpsVersionCheck());
  T(cudnnCnnVersionCheck());
  for (int s : {0, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 2000, 2001, 2002, 2003, 2004, 2005, 2006,
                2007, 2008, 2009, 2010, 2011, 2012, 3000, 3001, 3002, 3003, 3004, 3005, 3006, 3007, 3008, 3009,
                3010, 3011, 3012, 3013, 3014, 4000, 4001, 4002, 4003, 4004, 4005, 4006, 5000, 5001, 5002, 5003,
                5004, 1, 1000, 2013, 6000, -1}) {
    Line("status %d = %s", s, cudnnGetErrorString(static_cast<cudnnStatus_t>(s)));
  }
}

}  // namespace

void RunLegacy() {
  Versions();
  DataTypes();
  Tensors();
  Filters();
  Convolutions();
  OutputDims();
}

}  // namespace simgpu::cudnn::conformance

// Conformance transcript, part 2: the backend API's descriptors, attributes and finalization, as far as NVIDIA's
// library runs them without a GPU (everything up to engine heuristics; execution plans need a handle).
#include <cudnn.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tools/simgpu/cudnn/conformance.h"

namespace simgpu::cudnn::conformance {

int Set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count, const void* v) {
  return cudnnBackendSetAttribute(d, name, type, count, v);
}
int SetDesc(Desc d, cudnnBackendAttributeName_t name, Desc value) {
  return Set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}
int SetI64(Desc d, cudnnBackendAttributeName_t name, int64_t value) {
  return Set(d, name, CUDNN_TYPE_INT64, 1, &value);
}

// Creates and finalizes a tensor descriptor, printing each step's status on one line.
Desc Tensor(const char* name, const TensorSpec& s, Desc ragged) {
  Desc d = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &d);
  int s1 = Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &s.dtype);
  int s2 = Set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(s.dims.size()), s.dims.data());
  int s3 = Set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(s.strides.size()),
               s.strides.data());
  int s4 = SetI64(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, s.uid);
  int s5 = SetI64(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, s.alignment);
  int s6 = Set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &s.is_virtual);
  int s7 = Set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &s.by_value);
  if (ragged != nullptr) {
    int s8 = SetDesc(d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, ragged);
    int f = cudnnBackendFinalize(d);
    Line("ragged tensor %s: %d %d %d %d %d %d %d %d %d finalize %d", name, c, s1, s2, s3, s4, s5, s6, s7, s8, f);
    return d;
  }
  int f = cudnnBackendFinalize(d);
  Line("tensor %s: %d %d %d %d %d %d %d %d finalize %d", name, c, s1, s2, s3, s4, s5, s6, s7, f);
  return d;
}

void GetI64s(Desc d, cudnnBackendAttributeName_t name, const char* label, int64_t requested) {
  int64_t out[10];
  for (int64_t& v : out) v = -7;
  int64_t count = -7;
  int st = cudnnBackendGetAttribute(d, name, CUDNN_TYPE_INT64, requested, &count, out);
  Line("  get %s -> %d count=%ld values=%s", label, st, static_cast<long>(count),
       Int64s(out, count >= 0 && count <= 10 ? count : 0).c_str());
}

namespace {

void TensorAttributes() {
  Section("backend tensor descriptor");
  Desc d = nullptr;
  T(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &d));
  T(cudnnBackendCreateDescriptor(static_cast<cudnnBackendDescriptorType_t>(999), &d));
  GetI64s(d, CUDNN_ATTR_TENSOR_DIMENSIONS, "dims before set");
  const int64_t dims[4] = {2, 3, 4, 5}, strides[4] = {60, 20, 5, 1}, uid = 7, align = 4;
  const cudnnDataType_t half = CUDNN_DATA_HALF;
  const float f = 1.0f;
  T(cudnnBackendFinalize(d));
  T(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_INT64, 1, &half));
  T(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 2, &half));
  T(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 0, &half));
  T(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, nullptr));
  T(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &half));
  T(Set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims));
  T(Set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_FLOAT, 1, &f));
  T(Set(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &half));
  T(Set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
  T(Set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  GetI64s(d, CUDNN_ATTR_TENSOR_DIMENSIONS, "dims before finalize");
  T(Set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  T(cudnnBackendFinalize(d));
  T(cudnnBackendFinalize(d));
  T(Set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  GetI64s(d, CUDNN_ATTR_TENSOR_DIMENSIONS, "dims");
  GetI64s(d, CUDNN_ATTR_TENSOR_STRIDES, "strides");
  GetI64s(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, "uid");
  GetI64s(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, "uid(1)", 1);
  GetI64s(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, "uid(0)", 0);
  GetI64s(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, "alignment(1)", 1);
  GetI64s(d, CUDNN_ATTR_TENSOR_VECTOR_COUNT, "vector count(1)", 1);
  GetI64s(d, CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION, "vectorized dim(1)", 1);
  GetI64s(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, "foreign attribute");
  {
    int64_t out[4] = {-7, -7, -7, -7}, count = -7;
    Line("  get dims(2) -> %d", cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 2,
                                                          &count, out));
    Line("    count=%ld values=%s", static_cast<long>(count), Int64s(out, 4).c_str());
    Line("  get dims(0, null) -> %d", cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 0,
                                                                &count, nullptr));
    Line("    count=%ld", static_cast<long>(count));
    count = -7;
    Line("  get dims(8, null values) -> %d", cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS,
                                                                       CUDNN_TYPE_INT64, 8, &count, nullptr));
    Line("    count=%ld", static_cast<long>(count));
    count = -7;
    Line("  get uid(1, null values) -> %d", cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64,
                                                                      1, &count, nullptr));
    Line("    count=%ld", static_cast<long>(count));
    Line("  get dims null count -> %d", cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                                                                  4, nullptr, out));
    Line("  get dims wrong type -> %d", cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT32,
                                                                  4, &count, out));
    cudnnDataType_t dt = static_cast<cudnnDataType_t>(-1);
    bool flag = true;
    int st = cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &count, &dt);
    Line("  get dtype -> %d %d", st, dt);
    st = cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &count, &flag);
    Line("  get virtual -> %d %d", st, flag);
    flag = true;
    st = cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &count, &flag);
    Line("  get by value -> %d %d", st, flag);
  }
  T(cudnnBackendDestroyDescriptor(d));
  T(cudnnBackendDestroyDescriptor(nullptr));

  // Finalization checks, one descriptor each.
  const TensorSpec cases[] = {
      {1, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}},
      {2, CUDNN_DATA_HALF, {2, 3, 4, 5}, {60, 1, 15, 3}},
      {3, CUDNN_DATA_BFLOAT16, {1, 1, 1}, {1, 1, 1}},
      {4, CUDNN_DATA_FLOAT, {2, 3}, {3, 1}},
      {5, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5}},
      {6, CUDNN_DATA_FLOAT, {2, 0, 4, 5}, {60, 20, 5, 1}},
      {7, CUDNN_DATA_FLOAT, {2, -3, 4, 5}, {60, 20, 5, 1}},
      {8, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 0}},
      {9, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, -1}},
      {10, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {1, 1, 1, 1}},
      {11, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}, true},
      {12, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true},
      {13, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}, false, true},
      {14, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}, true, true},
      {15, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}, false, false, 3},
      {16, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}, false, false, 0},
      {17, CUDNN_DATA_INT32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true},
      {18, CUDNN_DATA_INT64, {4, 1}, {1, 1}},
      {19, CUDNN_DATA_BOOLEAN, {2, 3, 4, 5}, {60, 20, 5, 1}, true},
      {20, CUDNN_DATA_FP8_E4M3, {2, 3, 4, 5}, {60, 20, 5, 1}},
      {21, CUDNN_DATA_DOUBLE, {2, 3, 4, 5}, {60, 20, 5, 1}},
      {22, CUDNN_DATA_FLOAT, {1, 2, 3, 4, 5, 6, 7, 8}, {20160, 10080, 3360, 840, 168, 28, 4, 1}},
      {23, CUDNN_DATA_FLOAT, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {24, CUDNN_DATA_FLOAT, {1}, {1}},
      {-1, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}},
      {0, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}},
  };
  for (const TensorSpec& s : cases) {
    cudnnBackendDestroyDescriptor(Tensor(std::to_string(s.uid).c_str(), s));
  }
  // A descriptor missing one required attribute each.
  for (int skip = 0; skip < 4; ++skip) {
    Desc t = nullptr;
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t);
    const cudnnDataType_t dt = CUDNN_DATA_FLOAT;
    if (skip != 0) Set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    if (skip != 1) Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    if (skip != 2) Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    if (skip != 3) SetI64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 5);
    Line("tensor without attribute %d: finalize %d", skip, cudnnBackendFinalize(t));
    cudnnBackendDestroyDescriptor(t);
  }
}

Desc Conv(int64_t spatial, std::vector<int64_t> pre, std::vector<int64_t> post, std::vector<int64_t> stride,
          std::vector<int64_t> dil, cudnnConvolutionMode_t mode, cudnnDataType_t ct) {
  Desc c = nullptr;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &c);
  int s1 = SetI64(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, spatial);
  int s2 = Set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &ct);
  int s3 = Set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  int s4 = Set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, static_cast<int64_t>(pre.size()), pre.data());
  int s5 = Set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, static_cast<int64_t>(post.size()),
               post.data());
  int s6 = Set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(stride.size()),
               stride.data());
  int s7 = Set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dil.size()), dil.data());
  int f = cudnnBackendFinalize(c);
  Line("conv: %d %d %d %d %d %d %d finalize %d", s1, s2, s3, s4, s5, s6, s7, f);
  return c;
}

// A forward, backward-data or backward-filter operation over (x, w, y) with the given convolution; prints the
// statuses of the sets and of finalization.
void ConvOp(cudnnBackendDescriptorType_t type, Desc x, Desc w, Desc y, Desc conv, bool with_scalars) {
  Desc op = nullptr;
  int c = cudnnBackendCreateDescriptor(type, &op);
  cudnnBackendAttributeName_t ax, aw, ay, ac, aa, ab;
  if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
    ax = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X;
    aw = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W;
    ay = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y;
    ac = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC;
    aa = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA;
    ab = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA;
  } else if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    ax = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX;
    aw = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
    ay = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY;
    ac = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
    aa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA;
    ab = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA;
  } else {
    ax = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X;
    aw = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
    ay = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY;
    ac = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
    aa = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA;
    ab = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
  }
  int s1 = x ? SetDesc(op, ax, x) : -1;
  int s2 = w ? SetDesc(op, aw, w) : -1;
  int s3 = y ? SetDesc(op, ay, y) : -1;
  int s4 = conv ? SetDesc(op, ac, conv) : -1;
  const float alpha = 1.0f, beta = 0.0f;
  int s5 = with_scalars ? Set(op, aa, CUDNN_TYPE_FLOAT, 1, &alpha) : -1;
  int s6 = with_scalars ? Set(op, ab, CUDNN_TYPE_FLOAT, 1, &beta) : -1;
  int f = cudnnBackendFinalize(op);
  Line("conv op %d: %d %d %d %d %d %d %d finalize %d", type, c, s1, s2, s3, s4, s5, s6, f);
  cudnnBackendDestroyDescriptor(op);
}

void Convolutions() {
  Section("backend convolution");
  const cudnnConvolutionMode_t cc = CUDNN_CROSS_CORRELATION;
  Desc c1 = Conv(2, {1, 1}, {1, 1}, {1, 1}, {1, 1}, cc, CUDNN_DATA_FLOAT);
  GetI64s(c1, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, "pre");
  GetI64s(c1, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, "strides");
  GetI64s(c1, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, "spatial");
  cudnnBackendDestroyDescriptor(Conv(2, {1, 1}, {0, 0}, {2, 1}, {1, 2}, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(3, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, cc, CUDNN_DATA_HALF));
  cudnnBackendDestroyDescriptor(Conv(2, {1, 1, 1}, {1, 1}, {1, 1}, {1, 1}, cc, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(2, {-1, 1}, {1, 1}, {1, 1}, {1, 1}, cc, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(2, {1, 1}, {1, 1}, {0, 1}, {1, 1}, cc, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(2, {1, 1}, {1, 1}, {1, 1}, {0, 1}, cc, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(0, {}, {}, {}, {}, cc, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(9, {1, 1}, {1, 1}, {1, 1}, {1, 1}, cc, CUDNN_DATA_FLOAT));
  cudnnBackendDestroyDescriptor(Conv(2, {1, 1}, {1, 1}, {1, 1}, {1, 1}, cc, CUDNN_DATA_BFLOAT16));

  // x 2x4x6x6 (NCHW), w 3x4x3x3, y 2x3x6x6 (pad 1); grouped w 6x2x3x3 with y 2x6x6x6.
  Desc x = Tensor("x", {1, CUDNN_DATA_FLOAT, {2, 4, 6, 6}, {144, 36, 6, 1}});
  Desc w = Tensor("w", {2, CUDNN_DATA_FLOAT, {3, 4, 3, 3}, {36, 9, 3, 1}});
  Desc y = Tensor("y", {3, CUDNN_DATA_FLOAT, {2, 3, 6, 6}, {108, 36, 6, 1}});
  Desc y_bad = Tensor("y_bad", {4, CUDNN_DATA_FLOAT, {2, 3, 5, 5}, {75, 25, 5, 1}});
  Desc wg = Tensor("wg", {5, CUDNN_DATA_FLOAT, {6, 2, 3, 3}, {18, 9, 3, 1}});
  Desc yg = Tensor("yg", {6, CUDNN_DATA_FLOAT, {2, 6, 6, 6}, {216, 36, 6, 1}});
  Desc w_bad = Tensor("w_bad", {7, CUDNN_DATA_FLOAT, {3, 3, 3, 3}, {27, 9, 3, 1}});
  Desc xh = Tensor("xh", {8, CUDNN_DATA_HALF, {2, 4, 6, 6}, {144, 1, 24, 4}});
  Desc wh = Tensor("wh", {9, CUDNN_DATA_HALF, {3, 4, 3, 3}, {36, 1, 12, 4}});
  Desc yh = Tensor("yh", {10, CUDNN_DATA_HALF, {2, 3, 6, 6}, {108, 1, 18, 3}});
  Desc x5 = Tensor("x5", {11, CUDNN_DATA_FLOAT, {2, 4, 6, 6, 6}, {864, 216, 36, 6, 1}});
  const auto fwd = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
  const auto bwd_data = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
  const auto bwd_filter = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
  for (auto type : {fwd, bwd_data, bwd_filter}) {
    ConvOp(type, x, w, y, c1, true);
    ConvOp(type, x, w, y, c1, false);
    ConvOp(type, x, w, y_bad, c1, true);
    ConvOp(type, x, wg, yg, c1, true);
    ConvOp(type, x, w_bad, y, c1, true);
    ConvOp(type, xh, wh, yh, c1, true);
    ConvOp(type, x, wh, y, c1, true);
    ConvOp(type, x5, w, y, c1, true);
    ConvOp(type, nullptr, w, y, c1, true);
    ConvOp(type, x, w, y, nullptr, true);
    ConvOp(type, x, w, y, x, true);
  }
  {
    Desc op = nullptr;
    cudnnBackendCreateDescriptor(fwd, &op);
    const double one = 1.0;
    Line("fwd alpha double -> %d", Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_DOUBLE, 1, &one));
    Line("fwd alpha int64 -> %d", SetI64(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1));
    Line("fwd x unfinalized -> %d", [&] {
      Desc t = nullptr;
      cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t);
      int st = SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, t);
      cudnnBackendDestroyDescriptor(t);
      return st;
    }());
    cudnnBackendDestroyDescriptor(op);
  }
  for (Desc d : {c1, x, w, y, y_bad, wg, yg, w_bad, xh, wh, yh, x5}) cudnnBackendDestroyDescriptor(d);
}

}  // namespace

void RunBackend() {
  TensorAttributes();
  Convolutions();
  RunBackendGraphs();
  RunBackendRagged();
}

}  // namespace simgpu::cudnn::conformance

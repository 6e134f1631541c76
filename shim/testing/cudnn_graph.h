// A cuDNN backend graph built the way cudnn-frontend builds one (tensor and operation descriptors, operation
// graph, heuristics, the first engine configuration, plan, variant pack), for the test programs that drive
// cudnnBackend* through the shim (cudnn_graph_workload, status_standin_probe). Every call is checked with the
// program's `die`. Header-only.
#ifndef TTRACE_SHIM_TESTING_CUDNN_GRAPH_H_
#define TTRACE_SHIM_TESTING_CUDNN_GRAPH_H_

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace ttrace::shim::testing {

using Desc = cudnnBackendDescriptor_t;

// Descriptors of one graph, destroyed with it.
class Graph {
 public:
  // `die(what, status)` does not return.
  explicit Graph(void (*die)(const char*, long)) : die_(die) {}
  ~Graph() {
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
  }
  Desc Make(cudnnBackendDescriptorType_t type) {
    Desc d = nullptr;
    Check(cudnnBackendCreateDescriptor(type, &d));
    owned_.push_back(d);
    return d;
  }
  void Set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
                  const void* v) {
    Check(cudnnBackendSetAttribute(d, name, type, n, v));
  }
  void Ref(Desc d, cudnnBackendAttributeName_t name, Desc v) { Set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v); }
  Desc Tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims, bool is_virtual = false,
              bool by_value = false) {
    std::vector<int64_t> strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
    return Strided(uid, type, dims, strides, is_virtual, by_value);
  }
  Desc Strided(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
               bool is_virtual = false, bool by_value = false) {
    Desc t = Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t alignment = 16;
    Set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data());
    Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data());
    Set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    Set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    Set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    Set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    Check(cudnnBackendFinalize(t));
    return t;
  }
  // An operation of `type` with descriptor-valued attributes `refs` and a sub-descriptor set up by `configure`.
  Desc Op(cudnnBackendDescriptorType_t type, const std::vector<std::pair<cudnnBackendAttributeName_t, Desc>>& refs) {
    Desc op = Make(type);
    for (const auto& [name, d] : refs)
      if (d != nullptr) Ref(op, name, d);
    ops_.push_back(op);
    return op;
  }
  // `params`: DOUBLE-valued pointwise attributes (ReLU clips, ...), as cudnn-frontend sets them.
  // `prec`: the math precision (cudnn-frontend's ALiBi index arithmetic is INT32).
  Desc Pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y, Desc t = nullptr, int64_t axis = -1,
                 const std::vector<std::pair<cudnnBackendAttributeName_t, double>>& params = {},
                 cudnnDataType_t prec = CUDNN_DATA_FLOAT) {
    Desc pw = Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (axis >= 0) Set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    for (const auto& [name, value] : params) Set(pw, name, CUDNN_TYPE_DOUBLE, 1, &value);
    Check(cudnnBackendFinalize(pw));
    return Finish(Op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                     {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw}, {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x},
                      {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b}, {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y},
                      {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t}}));
  }
  // A backward activation (RELU_BWD, ...): dx from the incoming gradient dy and the forward input x.
  Desc PointwiseBackward(cudnnPointwiseMode_t mode, Desc dy, Desc x, Desc dx) {
    Desc pw = Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    Check(cudnnBackendFinalize(pw));
    return Finish(Op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                     {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw}, {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x},
                      {CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, dy}, {CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, dx}}));
  }
  Desc Reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y) {
    Desc r = Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    Set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    Set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    Check(cudnnBackendFinalize(r));
    return Finish(Op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, {{CUDNN_ATTR_OPERATION_REDUCTION_DESC, r},
                                                                    {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x},
                                                                    {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y}}));
  }
  // c = a·b; m, n, k: GEMM override tensors (null: none); padding: the value written outside the M and N
  // overrides (null: none set, those elements are left alone).
  Desc Matmul(Desc a, Desc b, Desc c, Desc m = nullptr, Desc n = nullptr, Desc k = nullptr,
              const double* padding = nullptr) {
    Desc mm = Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    Set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (padding != nullptr) Set(mm, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, padding);
    Check(cudnnBackendFinalize(mm));
    return Finish(Op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, {{CUDNN_ATTR_OPERATION_MATMUL_DESC, mm},
                                                                 {CUDNN_ATTR_OPERATION_MATMUL_ADESC, a},
                                                                 {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b},
                                                                 {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c},
                                                                 {CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m},
                                                                 {CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n},
                                                                 {CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k}}));
  }
  const std::vector<Desc>& ops() const { return ops_; }  // the operations added so far, in order
  Desc Finish(Desc op) {
    Check(cudnnBackendFinalize(op));
    return op;
  }
  // Operation graph, heuristics, the first configuration, plan; then one execution with `data` (uid -> pointer),
  // whose status is returned.
  [[nodiscard]] cudnnStatus_t Execute(cudnnHandle_t handle, const std::map<int64_t, void*>& data) {
    return Run(handle, data, cudnnBackendExecute);
  }
  // As Execute, but the plan and variant pack go to `run` (cudnnBackendExecute or a wrapper of another call that
  // takes them, such as cudnnBackendPopulateCudaGraph), whose status is returned.
  template <typename Fn>
  [[nodiscard]] cudnnStatus_t Run(cudnnHandle_t handle, const std::map<int64_t, void*>& data, Fn run) {
    Desc graph = Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    Set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops_.size()),
        ops_.data());
    Check(cudnnBackendFinalize(graph));
    Desc heur = Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
    Ref(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    Check(cudnnBackendFinalize(heur));
    Desc config = Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t configs = 0;
    Check(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs,
                                   &config));
    if (configs < 1) die_("heuristics", 0);
    Desc plan = Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    Set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    Ref(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    Check(cudnnBackendFinalize(plan));
    std::vector<int64_t> uids;
    std::vector<void*> ptrs;
    for (const auto& [uid, p] : data) uids.push_back(uid), ptrs.push_back(p);
    Desc pack = Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    void* workspace = nullptr;
    Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
    Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(ptrs.size()),
        ptrs.data());
    Set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    Check(cudnnBackendFinalize(pack));
    return run(handle, plan, pack);
  }

 private:
  void Check(long status) {
    if (status != 0) die_("a cuDNN backend call", status);
  }
  void (*die_)(const char*, long);
  std::vector<Desc> owned_, ops_;
};

// A 2-D convolution (cross-correlation, FP32 compute, stride `stride`, alpha 1, beta 0) of `type` (forward,
// backward data, backward filter) added to `g`, its operands in forward terms: x, w, y (dx, w, dy for backward
// data; x, dw, dy for backward filter).
inline void Convolution(Graph& g, cudnnBackendDescriptorType_t type, Desc x, Desc w, Desc y, int64_t pad,
                        int64_t stride) {
  Desc c = g.Make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t spatial = 2, pads[2] = {pad, pad}, strides[2] = {stride, stride}, dilation[2] = {1, 1};
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  g.Set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  g.Set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  g.Set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  g.Set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  g.Set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  g.Set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, strides);
  g.Set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
  g.Finish(c);
  const float alpha = 1.0f, beta = 0.0f;
  Desc op;
  if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
    op = g.Op(type, {{CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x}, {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, c}});
    g.Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    g.Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  } else if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    op = g.Op(type, {{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x}, {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, c}});
    g.Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    g.Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  } else {
    op = g.Op(type, {{CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, w},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, y},
                     {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, c}});
    g.Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    g.Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  }
  g.Finish(op);
}

inline void ConvolutionForward(Graph& g, Desc x, Desc w, Desc y, int64_t pad, int64_t stride) {
  Convolution(g, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, x, w, y, pad, stride);
}

}  // namespace ttrace::shim::testing

#endif  // TTRACE_SHIM_TESTING_CUDNN_GRAPH_H_

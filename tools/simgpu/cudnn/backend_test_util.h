// Test helper: builds, finalizes and executes a cuDNN backend graph the way cudnn-frontend does (tensor and
// operation descriptors, operation graph, heuristics in instant mode, the first engine configuration, execution
// plan, variant pack). Every step's status is checked with gtest; Build and Execute return the status of the
// step that failed (CUDNN_STATUS_SUCCESS when none did).
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_BACKEND_TEST_UTIL_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_BACKEND_TEST_UTIL_H_

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace simgpu::cudnn::testing {

class BackendGraph {
 public:
  using Desc = cudnnBackendDescriptor_t;
  BackendGraph() = default;
  BackendGraph(const BackendGraph&) = delete;
  BackendGraph& operator=(const BackendGraph&) = delete;
  ~BackendGraph() {
    for (auto it = owned_.rbegin(); it != owned_.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
  }

  Desc Make(cudnnBackendDescriptorType_t type) {
    Desc d = nullptr;
    EXPECT_EQ(cudnnBackendCreateDescriptor(type, &d), CUDNN_STATUS_SUCCESS);
    owned_.push_back(d);
    return d;
  }
  static void Set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
                  const void* values) {
    EXPECT_EQ(cudnnBackendSetAttribute(d, name, type, count, values), CUDNN_STATUS_SUCCESS) << "attribute " << name;
  }
  static void SetDesc(Desc d, cudnnBackendAttributeName_t name, Desc v) {
    Set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
  }
  static void Finalize(Desc d) { EXPECT_EQ(cudnnBackendFinalize(d), CUDNN_STATUS_SUCCESS); }

  // A tensor; `ragged`, when not null, is its ragged offset descriptor (CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC).
  Desc Tensor(int64_t uid, cudnnDataType_t type, const std::vector<int64_t>& dims,
              const std::vector<int64_t>& strides, bool is_virtual = false, bool by_value = false,
              Desc ragged = nullptr) {
    Desc t = Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t alignment = 16;
    Set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    Set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, static_cast<int64_t>(dims.size()), dims.data());
    Set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, static_cast<int64_t>(strides.size()), strides.data());
    Set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    Set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    Set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    Set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    if (ragged != nullptr) SetDesc(t, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, ragged);
    Finalize(t);
    return t;
  }

  // y = mode(x[, b[, t]]).
  Desc Pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y, Desc t = nullptr, int64_t axis = -1,
                 cudnnDataType_t precision = CUDNN_DATA_FLOAT) {
    Desc pw = Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    if (axis >= 0) Set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    Finalize(pw);
    Desc op = Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
    if (t != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t);
    SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    Finalize(op);
    ops_.push_back(op);
    return op;
  }

  Desc Reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y) {
    Desc r = Make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    Set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    Set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    Finalize(r);
    Desc op = Make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, r);
    SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
    SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
    Finalize(op);
    ops_.push_back(op);
    return op;
  }

  // c = a b; m, n and k are GEMM override tensors (null: none) and, when padding is not null, the matmul
  // descriptor's padding value is set.
  Desc Matmul(Desc a, Desc b, Desc c, Desc m = nullptr, Desc n = nullptr, Desc k = nullptr,
              const double* padding = nullptr) {
    Desc mm = Make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    Set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    if (padding != nullptr) Set(mm, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, padding);
    Finalize(mm);
    Desc op = Make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
    SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
    if (m != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m);
    if (n != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n);
    if (k != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k);
    Finalize(op);
    ops_.push_back(op);
    return op;
  }

  // A convolution operation of `type` over (x, w, y) in forward terms; symmetric padding.
  Desc Convolution(cudnnBackendDescriptorType_t type, Desc x, Desc w, Desc y, const std::vector<int64_t>& pad,
                   const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation,
                   cudnnConvolutionMode_t mode, cudnnDataType_t compute, float alpha, float beta) {
    Desc c = Make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const int64_t spatial = static_cast<int64_t>(pad.size());
    Set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
    Set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    Set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    Set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, spatial, pad.data());
    Set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, spatial, pad.data());
    Set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, spatial, stride.data());
    Set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, spatial, dilation.data());
    Finalize(c);
    Desc op = Make(type);
    if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR) {
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, c);
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    } else if (type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, c);
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    } else {
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, x);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, w);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, y);
      SetDesc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, c);
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
      Set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    }
    Finalize(op);
    ops_.push_back(op);
    return op;
  }

  // The fused SDPA forward operation; stats, scale and the sequence lengths may be null.
  Desc Sdpa(Desc q, Desc k, Desc v, Desc o, Desc stats, Desc scale, Desc seq_len_q = nullptr,
            Desc seq_len_kv = nullptr) {
    Desc op = Make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q);
    SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k);
    SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v);
    SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o);
    if (stats != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, stats);
    if (scale != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale);
    if (seq_len_q != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, seq_len_q);
    if (seq_len_kv != nullptr) SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, seq_len_kv);
    Finalize(op);
    ops_.push_back(op);
    return op;
  }

  // y = reshape(x): y views x's memory with its own dimensions and strides.
  Desc Reshape(Desc x, Desc y) {
    Desc op = Make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    SetDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x);
    SetDesc(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    Finalize(op);
    ops_.push_back(op);
    return op;
  }

  // Adds an operation built by hand (finalized) to the graph.
  void AddOperation(Desc op) { ops_.push_back(op); }

  // Operation graph, heuristics (instant), first configuration, plan. Returns the first failing status; the number
  // of configurations heuristics returned is in configs().
  cudnnStatus_t Build(cudnnHandle_t handle) {
    Desc graph = Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    Set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    Set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops_.size()),
        ops_.data());
    cudnnStatus_t st = cudnnBackendFinalize(graph);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    Desc heur = Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
    SetDesc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    Set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    Finalize(heur);
    Desc config = Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    configs_ = -1;
    st = cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs_,
                                  &config);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (configs_ < 1) return CUDNN_STATUS_NOT_SUPPORTED;
    plan_ = Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    Set(plan_, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    SetDesc(plan_, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    return cudnnBackendFinalize(plan_);
  }

  int64_t WorkspaceSize() const {
    int64_t bytes = -1, count = 0;
    EXPECT_EQ(cudnnBackendGetAttribute(plan_, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                       &bytes),
              CUDNN_STATUS_SUCCESS);
    return bytes;
  }

  cudnnStatus_t Execute(cudnnHandle_t handle, const std::map<int64_t, void*>& data) {
    return cudnnBackendExecute(handle, plan_, Pack(data));
  }

  // A finalized variant pack of `data` (uid -> pointer), no workspace; destroyed with the graph.
  Desc Pack(const std::map<int64_t, void*>& data) {
    std::vector<int64_t> uids;
    std::vector<void*> pointers;
    for (const auto& [uid, ptr] : data) {
      uids.push_back(uid);
      pointers.push_back(ptr);
    }
    Desc pack = Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    if (!uids.empty()) {
      Set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data());
      Set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
          pointers.data());
    }
    void* workspace = nullptr;
    Set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    Finalize(pack);
    return pack;
  }

  int64_t configs() const { return configs_; }
  Desc plan() const { return plan_; }

 private:
  std::vector<Desc> owned_;
  std::vector<Desc> ops_;
  Desc plan_ = nullptr;
  int64_t configs_ = -1;
};

}  // namespace simgpu::cudnn::testing

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_BACKEND_TEST_UTIL_H_

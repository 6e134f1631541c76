// Internal to libcudnn.so.9 (simgpu): the immutable model of a finalized backend operation graph, which execution
// plans share with the work they enqueue (a program may destroy its descriptors while that work is pending).
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_MODEL_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_MODEL_H_

#include <cudnn.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace simgpu::cudnn {

// A ragged tensor (CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC: an INT32 or INT64 tensor R of [n + 1, 1, ...] for a tensor
// whose first dimension is n) packs its batches: element (j, i1, i2, ...) of batch j lies at element offset
// R[j] + i1 * stride1 + i2 * stride2 + ... from the data pointer; the first dimension's stride is ignored (PyTorch
// sets it to INT_MAX). Offsets count elements, as NVIDIA's attention samples and tests compute them (the cumulative
// sequence length times h * d for Q, K, V and O, times h for Stats). Batch j holds only the elements whose offset
// from R[j] is below R[j + 1] - R[j]: simgpu never reads (they read as +0) or writes the others, the rows past a
// sequence's length, which on a GPU the padding mask keeps out of every result. R is read at execution and trusted
// as a GPU kernel trusts it. Unverified on a GPU: when the offsets leave unused elements between sequences (PyTorch
// packs them with none), the rows past seq_len_q inside a sequence's extent are written by the composite attention
// graph's pointwise Stats operations (the padding mask's values) and, when cudnn-frontend sets a padding value on
// the second matmul (v1.16 sets 0), by that matmul in O; the fused operation leaves them alone.
struct TensorSpec {
  int64_t uid = 0;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  bool is_virtual = false;
  bool by_value = false;
  int64_t alignment = 0;
  std::shared_ptr<const TensorSpec> ragged;  // the ragged offset tensor, null for a dense tensor
  int64_t Elements() const;
  int64_t Extent() const;  // elements spanned: 1 + sum (dim - 1) * stride (0 for an empty tensor)
};

struct ConvParams {
  int64_t spatial = 0;
  std::vector<int64_t> pre, post, stride, dilation;
  cudnnConvolutionMode_t mode = CUDNN_CONVOLUTION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};

struct PointwiseParams {
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
  cudnnDataType_t math = CUDNN_DATA_FLOAT;
  int64_t axis = -1;
  double relu_lower = 0.0;
  double relu_upper = std::numeric_limits<double>::infinity();
  double relu_slope = 0.0;
  double elu_alpha = 1.0;
  double softplus_beta = 1.0;
  double swish_beta = 1.0;
};

// An RNG operation's distribution (CUDNN_BACKEND_RNG_DESCRIPTOR).
struct RngParams {
  cudnnRngDistribution_t distribution = CUDNN_RNG_DISTRIBUTION_BERNOULLI;
  double bernoulli_probability = 0.5;  // probability of a 1
  double uniform_min = 0.0, uniform_max = 1.0;
  double normal_mean = 0.0, normal_stddev = 1.0;
};

enum class OpKind { kConvForward, kConvBackwardData, kConvBackwardFilter, kPointwise, kReduction, kMatmul, kSdpa,
                    kRng, kReshape, kPagedCacheLoad };

// Operand roles by kind (absent optional operands have tensor index -1 in GraphOp):
//   kConvForward        inputs {x, w}            outputs {y}
//   kConvBackwardData   inputs {dy, w}           outputs {dx}
//   kConvBackwardFilter inputs {x, dy}           outputs {dw}
//   kPointwise          inputs {x, b?, t?}       outputs {y}
//   kReduction          inputs {x}               outputs {y}
//   kMatmul             inputs {a, b, m?, n?, k?} outputs {c}   (m, n, k: GEMM override tensors)
//   kSdpa               inputs {q, k, v, scale?, seq_len_q?, seq_len_kv?, page_table_k?, page_table_v?}
//                       outputs {o, stats?}   (a page table makes its K or V a [blocks, h, block size, d] container)
//   kRng                inputs {seed?, offset?}  outputs {y}   (no seed tensor: OpSpec::rng_seed)
//   kReshape            inputs {x}               outputs {y}
//   kPagedCacheLoad     inputs {container, page_table, seq_len} outputs {y}
struct OpSpec {
  OpKind kind = OpKind::kPointwise;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<bool> input_set, output_set;
  ConvParams conv;
  PointwiseParams pointwise;
  RngParams rng;
  int64_t rng_seed = 0;  // the host seed value, when no seed tensor is set
  bool rng_seed_set = false;
  cudnnReduceTensorOp_t reduce = CUDNN_REDUCE_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;  // reduction and matmul compute type
  bool matmul_padded = false;  // a matmul writes matmul_padding outside its M and N overrides
  double matmul_padding = 0.0;
  double alpha = 1.0, beta = 0.0, alpha2 = 1.0;
  std::string unsupported;  // an attribute simgpu accepts but cannot execute (empty: none)
};

struct GraphOp {
  OpSpec spec;
  std::vector<int> inputs, outputs;  // indices into GraphModel::tensors, -1 for an absent optional operand
};

struct GraphModel {
  std::vector<TensorSpec> tensors;  // one per uid, ragged offset tensors included
  std::vector<int> ragged;          // per tensor: the index of its ragged offset tensor, -1 for a dense tensor
  std::vector<GraphOp> ops;         // in an order where every virtual tensor is written before it is read
  // Why simgpu cannot execute this graph (empty: it can). Heuristics return no engine for such a graph.
  std::string unsupported;
  // An attention graph (a fused SDPA operation, or matmul, max reduction, exp and matmul as cudnn-frontend
  // composes attention): each execution takes an attn fault-site number; its faults apply to this tensor
  // (the attention output) after the operation writing it.
  bool attention = false;
  int attention_output = -1;
  int attention_op = -1;
};

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_MODEL_H_

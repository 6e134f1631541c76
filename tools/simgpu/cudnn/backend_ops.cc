// Operation descriptors: convolution forward, backward data and backward filter; pointwise; reduction; matmul;
// fused SDPA forward; RNG. Finalization checks follow NVIDIA's library as the conformance transcript records them:
// convolutions check ranks, channels against the filter (the group count is x's C / w's C) and the output shape
// the convolution implies (BAD_PARAM); pointwise operations check only that their operands are present (x, y,
// b for binary modes, t for BINARY_SELECT); each dimension of a reduction's output divides the input's (1: reduced
// whole; equal: kept; between: groups, as cudnn-frontend reduces grouped-query attention's per-head gradients);
// a matmul's operands share a rank (NOT_SUPPORTED otherwise) and agree in M, N and K, each batch dimension of A
// and B dividing C's (BAD_PARAM); SDPA checks Q, K, V and O agree as [b, h, s, d] tensors and its sequence lengths
// (SEQ_LEN_QDESC, SEQ_LEN_KVDESC, either or both) are INT32 or INT64 tensors of [b, 1, 1, 1]; with a page table
// (PAGE_TABLE_KDESC, PAGE_TABLE_VDESC: INT32 or INT64 [b, 1, n, 1]) its K or V is a page container and both sequence
// lengths are required (CheckSdpa). A descriptor set as an
// operand is copied when set; one of the wrong kind or not finalized fails at finalization. Backward activation
// modes (RELU_BWD ...) take x and dy in the x and b slots and write dx in the y slot. An RNG operation takes its
// seed as a host INT64 value or as a tensor; its seed and offset tensors have every dimension 1 (as NVIDIA
// documents; not in the conformance transcript). A reshape (x, y) keeps x's element count (BAD_PARAM otherwise;
// simgpu's reading of NVIDIA's "different logical shape and stride", not in the conformance transcript). A paged
// cache load takes a container, a page table, sequence lengths and y, which agree as CheckPagedCacheLoad says
// (BAD_PARAM otherwise; cudnn-frontend's PagedCacheLoadNode's own checks, not in the conformance transcript).
#include <cstdint>
#include <vector>

#include "tools/simgpu/cudnn/backend_desc.h"

namespace simgpu::cudnn {
namespace {

enum class Role { kInput, kOutput, kConv, kPointwise, kReduction, kMatmul, kRng, kSeed, kAlpha, kBeta, kAlpha2,
                  kUnsupported };

struct AttrRole {
  cudnnBackendAttributeName_t name;
  Role role;
  int slot;
};

OpKind KindOf(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: return OpKind::kConvForward;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: return OpKind::kConvBackwardData;
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: return OpKind::kConvBackwardFilter;
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR: return OpKind::kReduction;
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: return OpKind::kMatmul;
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR: return OpKind::kSdpa;
    case CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR: return OpKind::kRng;
    case CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR: return OpKind::kReshape;
    case CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR: return OpKind::kPagedCacheLoad;
    default: return OpKind::kPointwise;
  }
}

const std::vector<AttrRole>& Roles(OpKind kind) {
  static const std::vector<AttrRole> kConvFwd = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, Role::kOutput, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, Role::kConv, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, Role::kAlpha, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, Role::kBeta, 0}};
  static const std::vector<AttrRole> kConvBwdData = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, Role::kOutput, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, Role::kConv, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, Role::kAlpha, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, Role::kBeta, 0}};
  static const std::vector<AttrRole> kConvBwdFilter = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, Role::kOutput, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, Role::kConv, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, Role::kAlpha, 0},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, Role::kBeta, 0}};
  static const std::vector<AttrRole> kPointwise = {
      {CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, Role::kPointwise, 0},
      {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, Role::kInput, 2},
      {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, Role::kOutput, 0},
      {CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, Role::kAlpha, 0},
      {CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, Role::kAlpha2, 0},
      {CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, Role::kOutput, 0}};
  static const std::vector<AttrRole> kReduction = {{CUDNN_ATTR_OPERATION_REDUCTION_XDESC, Role::kInput, 0},
                                                   {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, Role::kOutput, 0},
                                                   {CUDNN_ATTR_OPERATION_REDUCTION_DESC, Role::kReduction, 0}};
  static const std::vector<AttrRole> kMatmul = {
      {CUDNN_ATTR_OPERATION_MATMUL_ADESC, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_MATMUL_BDESC, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_MATMUL_CDESC, Role::kOutput, 0},
      {CUDNN_ATTR_OPERATION_MATMUL_DESC, Role::kMatmul, 0},
      {CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, Role::kInput, 2},
      {CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, Role::kInput, 3},
      {CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, Role::kInput, 4}};
  static const std::vector<AttrRole> kSdpa = {
      {CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, Role::kInput, 2},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, Role::kInput, 3},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, Role::kOutput, 0},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, Role::kOutput, 1},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_BLOCK_MASK_DESC, Role::kUnsupported, 0},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC, Role::kInput, 6},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_VDESC, Role::kInput, 7},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, Role::kInput, 4},
      {CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, Role::kInput, 5}};
  static const std::vector<AttrRole> kRng = {{CUDNN_ATTR_OPERATION_RNG_SEED, Role::kSeed, 0},
                                             {CUDNN_ATTR_OPERATION_RNG_OFFSET_DESC, Role::kInput, 1},
                                             {CUDNN_ATTR_OPERATION_RNG_YDESC, Role::kOutput, 0},
                                             {CUDNN_ATTR_OPERATION_RNG_DESC, Role::kRng, 0}};
  static const std::vector<AttrRole> kReshape = {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, Role::kInput, 0},
                                                 {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, Role::kOutput, 0}};
  static const std::vector<AttrRole> kPaged = {
      {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_CONTAINER_DESC, Role::kInput, 0},
      {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_PAGE_TABLE_DESC, Role::kInput, 1},
      {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_SEQUENCE_DESC, Role::kInput, 2},
      {CUDNN_ATTR_OPERATION_PAGED_CACHE_LOAD_YDESC, Role::kOutput, 0}};
  switch (kind) {
    case OpKind::kPagedCacheLoad: return kPaged;
    case OpKind::kRng: return kRng;
    case OpKind::kReshape: return kReshape;
    case OpKind::kConvForward: return kConvFwd;
    case OpKind::kConvBackwardData: return kConvBwdData;
    case OpKind::kConvBackwardFilter: return kConvBwdFilter;
    case OpKind::kReduction: return kReduction;
    case OpKind::kMatmul: return kMatmul;
    case OpKind::kSdpa: return kSdpa;
    case OpKind::kPointwise: break;
  }
  return kPointwise;
}

bool IsBinary(cudnnPointwiseMode_t mode) {
  if (mode >= CUDNN_POINTWISE_RELU_BWD && mode <= CUDNN_POINTWISE_GELU_APPROX_TANH_BWD) return true;
  switch (mode) {
    case CUDNN_POINTWISE_ADD:
    case CUDNN_POINTWISE_ADD_SQUARE:
    case CUDNN_POINTWISE_DIV:
    case CUDNN_POINTWISE_MAX:
    case CUDNN_POINTWISE_MIN:
    case CUDNN_POINTWISE_MOD:
    case CUDNN_POINTWISE_MUL:
    case CUDNN_POINTWISE_POW:
    case CUDNN_POINTWISE_SUB:
    case CUDNN_POINTWISE_ATAN2:
    case CUDNN_POINTWISE_CMP_EQ:
    case CUDNN_POINTWISE_CMP_NEQ:
    case CUDNN_POINTWISE_CMP_GT:
    case CUDNN_POINTWISE_CMP_GE:
    case CUDNN_POINTWISE_CMP_LT:
    case CUDNN_POINTWISE_CMP_LE:
    case CUDNN_POINTWISE_LOGICAL_AND:
    case CUDNN_POINTWISE_LOGICAL_OR:
    case CUDNN_POINTWISE_BINARY_SELECT:
      return true;
    default:
      return false;
  }
}

// Forward output size of one spatial dimension, or -1 when the filter does not fit.
int64_t ConvOutSize(int64_t in, int64_t filter, int64_t pre, int64_t post, int64_t stride, int64_t dilation) {
  const int64_t room = in + pre + post - ((filter - 1) * dilation + 1);
  return room < 0 ? -1 : room / stride + 1;
}

cudnnStatus_t CheckConvolution(const OpSpec& s) {
  // In forward terms: x [N, C, I...], w [K, C/G, F...], y [N, K, O...].
  const bool bwd_data = s.kind == OpKind::kConvBackwardData, bwd_filter = s.kind == OpKind::kConvBackwardFilter;
  const TensorSpec& x = bwd_data ? s.outputs[0] : s.inputs[0];
  const TensorSpec& w = bwd_data ? s.inputs[1] : bwd_filter ? s.outputs[0] : s.inputs[1];
  const TensorSpec& y = bwd_data ? s.inputs[0] : bwd_filter ? s.inputs[1] : s.outputs[0];
  const size_t rank = x.dims.size();
  if (rank < 3 || w.dims.size() != rank || y.dims.size() != rank ||
      static_cast<size_t>(s.conv.spatial) + 2 != rank) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "x, w and y ranks must equal the convolution's spatial dimensions + 2");
  }
  if (w.dims[1] <= 0 || x.dims[1] % w.dims[1] != 0) return Fail(CUDNN_STATUS_BAD_PARAM, "channel mismatch");
  const int64_t groups = x.dims[1] / w.dims[1];
  if (w.dims[0] % groups != 0) return Fail(CUDNN_STATUS_BAD_PARAM, "filters not a multiple of the groups");
  if (y.dims[0] != x.dims[0] || y.dims[1] != w.dims[0]) return Fail(CUDNN_STATUS_BAD_PARAM, "output n or k");
  for (size_t d = 2; d < rank; ++d) {
    const size_t i = d - 2;
    const int64_t out = ConvOutSize(x.dims[d], w.dims[d], s.conv.pre[i], s.conv.post[i], s.conv.stride[i],
                                    s.conv.dilation[i]);
    if (out != y.dims[d]) return Fail(CUDNN_STATUS_BAD_PARAM, "output size differs from the convolution's");
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CheckMatmul(const OpSpec& s) {
  const TensorSpec &a = s.inputs[0], &b = s.inputs[1], &c = s.outputs[0];
  const size_t rank = a.dims.size();
  if (b.dims.size() != rank || c.dims.size() != rank) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "matmul ranks differ");
  if (rank < 2) return Fail(CUDNN_STATUS_BAD_PARAM, "matmul operands need two dimensions");
  const int64_t m = a.dims[rank - 2], k = a.dims[rank - 1], n = b.dims[rank - 1];
  if (b.dims[rank - 2] != k || c.dims[rank - 2] != m || c.dims[rank - 1] != n) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "matmul M, N or K mismatch");
  }
  for (size_t i = 0; i + 2 < rank; ++i) {
    if (a.dims[i] <= 0 || b.dims[i] <= 0 || c.dims[i] % a.dims[i] != 0 || c.dims[i] % b.dims[i] != 0) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "matmul batch dimensions must divide the output's");
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t CheckSdpa(const OpSpec& s) {
  const TensorSpec &q = s.inputs[0], &k = s.inputs[1], &v = s.inputs[2], &o = s.outputs[0];
  if (q.dims.size() != 4 || k.dims.size() != 4 || v.dims.size() != 4 || o.dims.size() != 4) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "SDPA tensors are [b, h, s, d]");
  }
  const int64_t b = q.dims[0], h = q.dims[1], sq = q.dims[2];
  // A paged K or V is a [blocks, h, block size, d] cache with its page table, INT32 or INT64 [b, 1, n, 1]: its first
  // and third dimensions are not Q's, and NVIDIA's unified engine then needs both sequence lengths (cudnn-frontend's
  // support surface: "Paged caches can only be used in combination with padding mask and variable sequence lengths
  // for both Q and KV"; simgpu fails finalization without them).
  const bool paged_k = s.input_set[6], paged_v = s.input_set[7];
  for (size_t i : {size_t{6}, size_t{7}}) {
    const TensorSpec& t = s.inputs[i];
    if (s.input_set[i] && ((t.dtype != CUDNN_DATA_INT32 && t.dtype != CUDNN_DATA_INT64) || t.dims.size() != 4 ||
                           t.dims[0] != b || t.dims[1] != 1 || t.dims[2] <= 0 || t.dims[3] != 1)) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "SDPA page tables are INT32 or INT64 tensors of [b, 1, n, 1]");
    }
  }
  if ((paged_k || paged_v) && (!s.input_set[4] || !s.input_set[5])) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "paged SDPA needs SEQ_LEN_QDESC and SEQ_LEN_KVDESC");
  }
  if ((!paged_k && k.dims[0] != b) || (!paged_v && v.dims[0] != b) ||
      (!paged_k && !paged_v && v.dims[2] != k.dims[2]) || k.dims[2] <= 0 || v.dims[2] <= 0 ||
      k.dims[3] != q.dims[3] || k.dims[1] <= 0 || v.dims[1] <= 0 || h % k.dims[1] != 0 || h % v.dims[1] != 0) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "SDPA Q, K and V disagree");
  }
  if (o.dims != std::vector<int64_t>{b, h, sq, v.dims[3]}) return Fail(CUDNN_STATUS_BAD_PARAM, "SDPA O shape");
  if (s.output_set[1] && s.outputs[1].dims != std::vector<int64_t>{b, h, sq, 1}) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "SDPA stats shape");
  }
  for (size_t i : {size_t{4}, size_t{5}}) {
    const TensorSpec& len = s.inputs[i];
    if (s.input_set[i] && ((len.dtype != CUDNN_DATA_INT32 && len.dtype != CUDNN_DATA_INT64) ||
                           len.dims != std::vector<int64_t>{b, 1, 1, 1})) {
      return Fail(CUDNN_STATUS_BAD_PARAM, "SDPA sequence lengths are INT32 or INT64 tensors of [b, 1, 1, 1]");
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

// A paged cache load (graph_kernels.h): container [blocks, h, block size, d], page table INT32/INT64
// [b, 1, table size, 1], sequence lengths INT32/INT64 [b, 1, 1, 1], y [b, h, s, d] or, transposed (its third
// dimension's stride 1, as cudnn-frontend passes K^T), [b, h, d, s], with the table covering s.
cudnnStatus_t CheckPagedCacheLoad(const OpSpec& s) {
  const TensorSpec &c = s.inputs[0], &t = s.inputs[1], &len = s.inputs[2], &y = s.outputs[0];
  auto index = [](const TensorSpec& x) { return x.dtype == CUDNN_DATA_INT32 || x.dtype == CUDNN_DATA_INT64; };
  if (c.dims.size() != 4 || t.dims.size() != 4 || len.dims.size() != 4 || y.dims.size() != 4) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "paged cache load tensors have 4 dimensions");
  }
  const int64_t b = y.dims[0];
  const bool transposed = y.strides[2] == 1 && y.strides[3] != 1;
  const int64_t seq = transposed ? y.dims[3] : y.dims[2], d = transposed ? y.dims[2] : y.dims[3];
  if (!index(t) || !index(len) || t.dims[0] != b || t.dims[1] != 1 || t.dims[3] != 1 ||
      len.dims != std::vector<int64_t>{b, 1, 1, 1} || y.dims[1] != c.dims[1] || d != c.dims[3] || c.dims[2] <= 0 ||
      (seq + c.dims[2] - 1) / c.dims[2] > t.dims[2]) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "paged cache load container, page table, sequence lengths and y disagree");
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

OperationDescriptor::OperationDescriptor(cudnnBackendDescriptorType_t type) : Descriptor(type) {
  spec_.kind = KindOf(type);
  int inputs = 0, outputs = 0;
  for (const AttrRole& r : Roles(spec_.kind)) {
    if (r.role == Role::kInput || r.role == Role::kSeed) inputs = std::max(inputs, r.slot + 1);
    if (r.role == Role::kOutput) outputs = std::max(outputs, r.slot + 1);
  }
  spec_.inputs.resize(static_cast<size_t>(inputs));
  spec_.input_set.assign(static_cast<size_t>(inputs), false);
  spec_.outputs.resize(static_cast<size_t>(outputs));
  spec_.output_set.assign(static_cast<size_t>(outputs), false);
}

cudnnStatus_t OperationDescriptor::DoSet(cudnnBackendAttributeName_t name, const AttrIn& in) {
  for (const AttrRole& r : Roles(spec_.kind)) {
    if (r.name != name) continue;
    if (r.role == Role::kAlpha) return ReadScale(in, &spec_.alpha);
    if (r.role == Role::kBeta) return ReadScale(in, &spec_.beta);
    if (r.role == Role::kAlpha2) return ReadScale(in, &spec_.alpha2);
    if (r.role == Role::kSeed && in.type == CUDNN_TYPE_INT64) {
      cudnnStatus_t st = ReadScalar(in, CUDNN_TYPE_INT64, &spec_.rng_seed);
      if (st == CUDNN_STATUS_SUCCESS) spec_.rng_seed_set = true;
      return st;
    }
    Descriptor* d = nullptr;
    cudnnStatus_t st = ReadAnyDescriptor(in, &d);
    if (st != CUDNN_STATUS_SUCCESS) return st;
    if (!d->finalized()) bad_reference_ = true;
    switch (r.role) {
      case Role::kInput:
      case Role::kSeed:
      case Role::kOutput: {
        if (d->type() != CUDNN_BACKEND_TENSOR_DESCRIPTOR) {
          bad_reference_ = true;
          return CUDNN_STATUS_SUCCESS;
        }
        const TensorSpec& t = static_cast<TensorDescriptor*>(d)->spec();
        const size_t slot = static_cast<size_t>(r.slot);
        if (r.role != Role::kOutput) {
          spec_.inputs[slot] = t;
          spec_.input_set[slot] = true;
        } else {
          spec_.outputs[slot] = t;
          spec_.output_set[slot] = true;
        }
        return CUDNN_STATUS_SUCCESS;
      }
      case Role::kConv:
        if (d->type() != CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) {
          bad_reference_ = true;
          return CUDNN_STATUS_SUCCESS;
        }
        spec_.conv = static_cast<ConvolutionDescriptor*>(d)->params();
        has_desc_ = true;
        return CUDNN_STATUS_SUCCESS;
      case Role::kPointwise:
        if (d->type() != CUDNN_BACKEND_POINTWISE_DESCRIPTOR) {
          bad_reference_ = true;
          return CUDNN_STATUS_SUCCESS;
        }
        spec_.pointwise = static_cast<PointwiseDescriptor*>(d)->params();
        has_desc_ = true;
        return CUDNN_STATUS_SUCCESS;
      case Role::kReduction:
      case Role::kMatmul: {
        const auto want = r.role == Role::kReduction ? CUDNN_BACKEND_REDUCTION_DESCRIPTOR
                                                     : CUDNN_BACKEND_MATMUL_DESCRIPTOR;
        if (d->type() != want) {
          bad_reference_ = true;
          return CUDNN_STATUS_SUCCESS;
        }
        const auto* c = static_cast<ComputeDescriptor*>(d);
        spec_.reduce = c->reduce();
        spec_.compute = c->compute();
        spec_.matmul_padded = c->has_padding();
        spec_.matmul_padding = c->padding();
        has_desc_ = true;
        return CUDNN_STATUS_SUCCESS;
      }
      case Role::kRng:
        if (d->type() != CUDNN_BACKEND_RNG_DESCRIPTOR) {
          bad_reference_ = true;
          return CUDNN_STATUS_SUCCESS;
        }
        spec_.rng = static_cast<RngDescriptor*>(d)->params();
        has_desc_ = true;
        return CUDNN_STATUS_SUCCESS;
      case Role::kUnsupported:
        spec_.unsupported = "an attribute simgpu does not execute (block mask or backward operand)";
        return CUDNN_STATUS_SUCCESS;
      default:
        return CUDNN_STATUS_SUCCESS;
    }
  }
  return Fail(CUDNN_STATUS_BAD_PARAM, "not an attribute of this operation");
}

cudnnStatus_t OperationDescriptor::DoGet(cudnnBackendAttributeName_t name, const AttrOut& out) const {
  for (const AttrRole& r : Roles(spec_.kind)) {
    if (r.name != name) continue;
    const double* v = r.role == Role::kAlpha ? &spec_.alpha : r.role == Role::kBeta ? &spec_.beta
                                             : r.role == Role::kAlpha2 ? &spec_.alpha2 : nullptr;
    if (v == nullptr) return Fail(CUDNN_STATUS_NOT_SUPPORTED, "simgpu reads back scaling factors only");
    if (out.type == CUDNN_TYPE_FLOAT) return WriteScalar(out, CUDNN_TYPE_FLOAT, static_cast<float>(*v));
    return WriteScalar(out, CUDNN_TYPE_DOUBLE, *v);
  }
  return Fail(CUDNN_STATUS_BAD_PARAM, "not an attribute of this operation");
}

cudnnStatus_t OperationDescriptor::DoFinalize() {
  const OpSpec& s = spec_;
  if (bad_reference_) return Fail(CUDNN_STATUS_BAD_PARAM, "an operand is not a finalized descriptor of its kind");
  const bool needs_desc = s.kind != OpKind::kSdpa && s.kind != OpKind::kReshape && s.kind != OpKind::kPagedCacheLoad;
  const bool has_first_input = s.input_set[0] || (s.kind == OpKind::kRng && s.rng_seed_set);
  if ((needs_desc && !has_desc_) || !s.output_set[0] || !has_first_input) {
    return Fail(CUDNN_STATUS_BAD_PARAM, "missing operand or descriptor");
  }
  switch (s.kind) {
    case OpKind::kConvForward:
    case OpKind::kConvBackwardData:
    case OpKind::kConvBackwardFilter:
      if (!s.input_set[1]) return Fail(CUDNN_STATUS_BAD_PARAM, "missing operand");
      return CheckConvolution(s);
    case OpKind::kPointwise:
      if (IsBinary(s.pointwise.mode) && !s.input_set[1]) return Fail(CUDNN_STATUS_BAD_PARAM, "missing b operand");
      if (s.pointwise.mode == CUDNN_POINTWISE_BINARY_SELECT && !s.input_set[2]) {
        return Fail(CUDNN_STATUS_BAD_PARAM, "missing t operand");
      }
      return CUDNN_STATUS_SUCCESS;
    case OpKind::kReduction: {
      const TensorSpec &x = s.inputs[0], &y = s.outputs[0];
      if (x.dims.size() != y.dims.size()) return Fail(CUDNN_STATUS_BAD_PARAM, "reduction ranks differ");
      for (size_t i = 0; i < x.dims.size(); ++i) {
        if (y.dims[i] <= 0 || x.dims[i] % y.dims[i] != 0) return Fail(CUDNN_STATUS_BAD_PARAM, "reduction shape");
      }
      return CUDNN_STATUS_SUCCESS;
    }
    case OpKind::kMatmul:
      if (!s.input_set[1]) return Fail(CUDNN_STATUS_BAD_PARAM, "missing operand");
      return CheckMatmul(s);
    case OpKind::kSdpa:
      if (!s.input_set[1] || !s.input_set[2]) return Fail(CUDNN_STATUS_BAD_PARAM, "missing operand");
      return CheckSdpa(s);
    case OpKind::kRng:
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        if (!s.input_set[i]) continue;
        for (int64_t d : s.inputs[i].dims) {
          if (d != 1) return Fail(CUDNN_STATUS_BAD_PARAM, "RNG seed and offset tensors have every dimension 1");
        }
      }
      return CUDNN_STATUS_SUCCESS;
    case OpKind::kPagedCacheLoad:
      if (!s.input_set[1] || !s.input_set[2]) return Fail(CUDNN_STATUS_BAD_PARAM, "missing operand");
      return CheckPagedCacheLoad(s);
    case OpKind::kReshape:
      if (s.inputs[0].Elements() != s.outputs[0].Elements()) {
        return Fail(CUDNN_STATUS_BAD_PARAM, "a reshape keeps its input's element count");
      }
      return CUDNN_STATUS_SUCCESS;
  }
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace simgpu::cudnn

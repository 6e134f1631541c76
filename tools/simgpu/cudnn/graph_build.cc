// Operation graph models (graph_build.h). What simgpu executes: FP32, FP16, BF16 and FP64 data (integer and
// boolean intermediates for masks; FP8 in pointwise, reduction, reshape and matmul operations, as cudnn-frontend's
// FP8 attention uses it); convolutions in the configurations the legacy API supports; the pointwise
// modes of graph_kernels.h with operands that broadcast to the output (each dimension equal or 1; MAX and MIN also
// with an operand larger than the output where it has 1: ReducesInto below); ADD, MUL, MIN,
// MAX and AMAX reductions; FP32-compute matmuls (with M, N, K overrides); Bernoulli and uniform RNG (rng.h);
// fused SDPA forward with sequence lengths, without block masks or paging; reshapes of dense tensors whose output
// lies within the input's extent (graph_kernels.h); paged cache loads (graph_kernels.h) of floating-point containers;
// ragged tensors (graph_model.h) anywhere but in virtual tensors, reshapes and paged cache loads.
#include "tools/simgpu/cudnn/graph_build.h"

#include <algorithm>
#include <functional>
#include <map>

#include "tools/simgpu/cudnn/conv.h"
#include "tools/simgpu/cudnn/data_type.h"
#include "tools/simgpu/cudnn/graph_kernels.h"
#include "tools/simgpu/cudnn/handle.h"
#include "tools/simgpu/cudnn/rng.h"

namespace simgpu::cudnn {
namespace {

bool SameTensor(const TensorSpec& a, const TensorSpec& b) {
  const bool same_ragged = a.ragged == nullptr ? b.ragged == nullptr
                                               : b.ragged != nullptr && a.ragged->uid == b.ragged->uid;
  return a.dtype == b.dtype && a.dims == b.dims && a.strides == b.strides && a.is_virtual == b.is_virtual &&
         a.by_value == b.by_value && same_ragged;
}

bool Broadcasts(const TensorSpec& in, const TensorSpec& out) {
  if (in.dims.size() != out.dims.size()) return false;
  for (size_t i = 0; i < in.dims.size(); ++i) {
    if (in.dims[i] != out.dims[i] && in.dims[i] != 1) return false;
  }
  return true;
}

// An operand larger than the output along dimensions where the output has 1 (each other dimension equal or 1).
// cuDNN's documentation gives such an operand no meaning; cudnn-frontend (1.16, CompositeSoftmaxNode with a sink
// token) builds one: a MAX reduction whose output keeps its input's [b, h, s_q, s_kv] shape (left unset, so
// inferred as the input's), then a pointwise MAX of it and the per-head sink into the [b, h, s_q, 1] row maximum.
// simgpu's reading is the one cudnn-frontend's reference computation implies (test/python/sdpa/fp16_ref.py:
// max(amax over keys of the scores, sink)): each output element is the mode over the operand elements that map to
// it, for MAX and MIN only (graph_kernels.h).
bool ReducesInto(const TensorSpec& in, const TensorSpec& out) {
  if (in.dims.size() != out.dims.size()) return false;
  bool larger = false;
  for (size_t i = 0; i < in.dims.size(); ++i) {
    if (in.dims[i] == out.dims[i] || in.dims[i] == 1) continue;
    if (out.dims[i] != 1) return false;
    larger = true;
  }
  return larger;
}

bool FloatingData(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16 || t == CUDNN_DATA_DOUBLE;
}

// Why simgpu cannot execute `op` (empty: it can).
std::string Unsupported(const GraphModel& m, const GraphOp& op) {
  const OpSpec& s = op.spec;
  if (!s.unsupported.empty()) return s.unsupported;
  auto tensor = [&](int i) -> const TensorSpec& { return m.tensors[static_cast<size_t>(i)]; };
  auto ragged = [&](int i) { return i >= 0 && m.ragged[static_cast<size_t>(i)] >= 0; };
  bool any_ragged = false;
  for (const std::vector<int>* list : {&op.inputs, &op.outputs}) {
    for (int i : *list) any_ragged = any_ragged || ragged(i);
  }
  if (any_ragged && s.kind != OpKind::kPointwise && s.kind != OpKind::kReduction && s.kind != OpKind::kMatmul &&
      s.kind != OpKind::kSdpa && s.kind != OpKind::kReshape) {
    return "a ragged convolution, RNG or paged cache load operand";
  }
  switch (s.kind) {
    case OpKind::kConvForward:
    case OpKind::kConvBackwardData:
    case OpKind::kConvBackwardFilter: {
      // The two operands share a type and, with the compute type, form a configuration the legacy API supports;
      // the output may be any floating type (fused graphs write FP32 intermediates).
      const cudnnDataType_t t = tensor(op.inputs[0]).dtype;
      AccumPrecision precision;
      if (tensor(op.inputs[1]).dtype != t || !FloatingData(tensor(op.outputs[0]).dtype) ||
          !ConvPrecision(t, s.conv.compute, &precision)) {
        return "convolution data and compute types outside FLOAT, PSEUDO_HALF, PSEUDO_BFLOAT16, TRUE_HALF, DOUBLE";
      }
      return "";
    }
    case OpKind::kPointwise:
      if (!PointwiseModeSupported(s.pointwise.mode)) return "pointwise mode not implemented";
      for (int i : op.inputs) {
        if (i < 0 || Broadcasts(tensor(i), tensor(op.outputs[0]))) continue;
        const bool extremum = s.pointwise.mode == CUDNN_POINTWISE_MAX || s.pointwise.mode == CUDNN_POINTWISE_MIN;
        if (!extremum || !ReducesInto(tensor(i), tensor(op.outputs[0]))) return "pointwise operand does not broadcast";
      }
      if (s.pointwise.mode == CUDNN_POINTWISE_GEN_INDEX &&
          (s.pointwise.axis < 0 || s.pointwise.axis >= static_cast<int64_t>(tensor(op.outputs[0]).dims.size()))) {
        return "GEN_INDEX axis outside the output";
      }
      return "";
    case OpKind::kReduction:
      return "";
    case OpKind::kMatmul:
      if (s.compute != CUDNN_DATA_FLOAT) return "matmul compute type other than FLOAT";
      for (int i : {op.inputs[0], op.inputs[1], op.outputs[0]}) {
        const cudnnDataType_t t = tensor(i).dtype;
        if (!FloatingData(t) && t != CUDNN_DATA_FP8_E4M3 && t != CUDNN_DATA_FP8_E5M2) return "matmul operand type";
        if (ragged(i) && tensor(i).dims.size() < 3) return "a ragged matmul operand without batch dimensions";
      }
      for (size_t o = 2; o < op.inputs.size(); ++o) {
        const int i = op.inputs[o];
        if (i < 0) continue;
        const TensorSpec& c = tensor(op.outputs[0]);
        if ((tensor(i).dtype != CUDNN_DATA_INT32 && tensor(i).dtype != CUDNN_DATA_INT64) ||
            !Broadcasts(tensor(i), c) || tensor(i).dims[c.dims.size() - 1] != 1 ||
            tensor(i).dims[c.dims.size() - 2] != 1) {
          return "matmul override other than an INT32 or INT64 tensor over the batch dimensions";
        }
      }
      return "";
    case OpKind::kRng:
      if (!RngSupported(s.rng)) return "RNG distribution NORMAL";
      for (int i : {op.inputs[0], op.inputs[1]}) {
        if (i >= 0 && tensor(i).dtype != CUDNN_DATA_INT32 && tensor(i).dtype != CUDNN_DATA_INT64) {
          return "RNG seed or offset other than INT32 or INT64";
        }
      }
      return "";
    case OpKind::kSdpa:
      for (int i : {op.inputs[0], op.inputs[1], op.inputs[2], op.outputs[0]}) {
        if (!FloatingData(tensor(i).dtype)) return "SDPA operand type";
      }
      // Packed (ragged) page tables (cudnn-frontend: cuDNN 9.10.2 and later) are not implemented; a paged
      // container is never ragged.
      for (int table : {6, 7}) {
        const int container = table - 5;
        if (op.inputs[static_cast<size_t>(table)] >= 0 &&
            (ragged(op.inputs[static_cast<size_t>(table)]) || ragged(op.inputs[static_cast<size_t>(container)]))) {
          return "a packed SDPA page table or a ragged paged container";
        }
      }
      return "";
    case OpKind::kPagedCacheLoad:
      if (!FloatingData(tensor(op.inputs[0]).dtype) || tensor(op.outputs[0]).dtype != tensor(op.inputs[0]).dtype) {
        return "paged cache load container other than FLOAT, HALF, BFLOAT16 or DOUBLE, or y of another type";
      }
      return "";
    case OpKind::kReshape:
      if (ragged(op.inputs[0]) || ragged(op.outputs[0])) return "a ragged reshape operand";
      if (tensor(op.outputs[0]).Extent() > tensor(op.inputs[0]).Extent()) {
        return "a reshape output reaching past its input's extent";
      }
      return "";
  }
  return "";
}

// cudnn-frontend's composite attention: a matmul, a MAX reduction and an EXP feeding a second matmul.
void DetectAttention(GraphModel* m) {
  int matmuls = 0, last_matmul = -1;
  bool max = false, exp = false;
  for (size_t i = 0; i < m->ops.size(); ++i) {
    const OpSpec& s = m->ops[i].spec;
    if (s.kind == OpKind::kSdpa) {
      m->attention = true;
      m->attention_op = static_cast<int>(i);
      m->attention_output = m->ops[i].outputs[0];
      return;
    }
    if (s.kind == OpKind::kMatmul) {
      ++matmuls;
      last_matmul = static_cast<int>(i);
    }
    max = max || (s.kind == OpKind::kReduction && s.reduce == CUDNN_REDUCE_TENSOR_MAX);
    exp = exp || (s.kind == OpKind::kPointwise && s.pointwise.mode == CUDNN_POINTWISE_EXP);
  }
  if (matmuls >= 2 && max && exp) {
    m->attention = true;
    m->attention_op = last_matmul;
    m->attention_output = m->ops[static_cast<size_t>(last_matmul)].outputs[0];
  }
}

}  // namespace

cudnnStatus_t BuildGraphModel(const std::vector<OpSpec>& ops, std::shared_ptr<GraphModel>* out) {
  auto m = std::make_shared<GraphModel>();
  std::map<int64_t, int> by_uid;
  // Merges t by uid (false when the uid names a different tensor); a ragged tensor's offsets join the graph too.
  std::function<bool(const TensorSpec&, int*)> index_of = [&](const TensorSpec& t, int* index) {
    auto it = by_uid.find(t.uid);
    if (it != by_uid.end()) {
      *index = it->second;
      return SameTensor(m->tensors[static_cast<size_t>(it->second)], t);
    }
    *index = static_cast<int>(m->tensors.size());
    by_uid[t.uid] = *index;
    m->tensors.push_back(t);
    m->ragged.push_back(-1);
    if (t.ragged == nullptr) return true;
    int offsets = -1;
    if (!index_of(*t.ragged, &offsets)) return false;
    m->ragged[static_cast<size_t>(*index)] = offsets;
    return true;
  };
  std::vector<GraphOp> unordered;
  for (const OpSpec& s : ops) {
    GraphOp op;
    op.spec = s;
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      int index = -1;
      if (s.input_set[i] && !index_of(s.inputs[i], &index)) {
        return Fail(CUDNN_STATUS_BAD_PARAM, "one unique id names different tensors");
      }
      op.inputs.push_back(index);
    }
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      int index = -1;
      if (s.output_set[i] && !index_of(s.outputs[i], &index)) {
        return Fail(CUDNN_STATUS_BAD_PARAM, "one unique id names different tensors");
      }
      op.outputs.push_back(index);
    }
    unordered.push_back(std::move(op));
  }

  // Writers of each tensor; an operation runs once every tensor it reads that some operation writes is written.
  std::vector<int> writer(m->tensors.size(), -1);
  for (size_t i = 0; i < unordered.size(); ++i) {
    for (int t : unordered[i].outputs) {
      if (t < 0) continue;
      if (writer[static_cast<size_t>(t)] >= 0) m->unsupported = "a tensor written by two operations";
      writer[static_cast<size_t>(t)] = static_cast<int>(i);
    }
  }
  std::vector<bool> done(unordered.size(), false);
  for (size_t placed = 0; placed < unordered.size();) {
    bool progress = false;
    for (size_t i = 0; i < unordered.size(); ++i) {
      if (done[i]) continue;
      bool ready = true;
      for (int t : unordered[i].inputs) {
        if (t >= 0 && writer[static_cast<size_t>(t)] >= 0 && writer[static_cast<size_t>(t)] != static_cast<int>(i) &&
            !done[static_cast<size_t>(writer[static_cast<size_t>(t)])]) {
          ready = false;
        }
      }
      if (!ready) continue;
      done[i] = true;
      m->ops.push_back(unordered[i]);
      ++placed;
      progress = true;
    }
    if (!progress) {
      m->unsupported = "the operations form a cycle";
      for (size_t i = 0; i < unordered.size(); ++i) {
        if (!done[i]) m->ops.push_back(unordered[i]);
      }
      break;
    }
  }

  for (size_t t = 0; t < m->tensors.size() && m->unsupported.empty(); ++t) {
    const TensorSpec& spec = m->tensors[t];
    if (ElementBytes(spec.dtype) == 0) m->unsupported = "a tensor data type simgpu does not convert";
    if (spec.is_virtual && writer[t] < 0) m->unsupported = "a virtual tensor no operation writes";
    if (spec.by_value && writer[t] >= 0) m->unsupported = "an operation writes a by-value tensor";
    if (spec.ragged != nullptr && spec.is_virtual) m->unsupported = "a virtual ragged tensor";
    if (m->ragged[t] >= 0 && m->tensors[static_cast<size_t>(m->ragged[t])].is_virtual) {
      m->unsupported = "virtual ragged offsets";
    }
  }
  for (const GraphOp& op : m->ops) {
    if (!m->unsupported.empty()) break;
    m->unsupported = Unsupported(*m, op);
  }
  DetectAttention(m.get());
  *out = std::move(m);
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace simgpu::cudnn

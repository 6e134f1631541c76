// Graph execution (graph_exec.h).
#include "tools/simgpu/cudnn/graph_exec.h"

#include <vector>

#include "tools/simgpu/cudnn/conv.h"
#include "tools/simgpu/cudnn/conv_compute.h"
#include "tools/simgpu/cudnn/data_type.h"
#include "tools/simgpu/cudnn/graph_kernels.h"
#include "tools/simgpu/cudnn/rng.h"

namespace simgpu::cudnn {

int64_t TensorSpec::Elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t TensorSpec::Extent() const {
  if (Elements() == 0) return 0;
  int64_t extent = 1;
  for (size_t i = 0; i < dims.size(); ++i) extent += (dims[i] - 1) * strides[i];
  return extent;
}

namespace {

TensorView View(const TensorSpec& t, void* data) {
  TensorView v;
  v.data = data;
  v.dtype = t.dtype;
  for (size_t i = 0; i < t.dims.size(); ++i) v.strides[i] = t.strides[i];
  return v;
}

ConvProblem MakeConv(const GraphOp& op, const std::vector<const TensorSpec*>& specs,
                     const std::vector<void*>& data, int64_t call) {
  const OpSpec& s = op.spec;
  ConvProblem p;
  int xi, wi, yi;
  if (s.kind == OpKind::kConvForward) {
    p.kind = ConvKind::kForward;
    xi = op.inputs[0], wi = op.inputs[1], yi = op.outputs[0];
  } else if (s.kind == OpKind::kConvBackwardData) {
    p.kind = ConvKind::kBackwardData;
    xi = op.outputs[0], wi = op.inputs[1], yi = op.inputs[0];
  } else {
    p.kind = ConvKind::kBackwardFilter;
    xi = op.inputs[0], wi = op.outputs[0], yi = op.inputs[1];
  }
  const TensorSpec &x = *specs[static_cast<size_t>(xi)], &w = *specs[static_cast<size_t>(wi)],
                   &y = *specs[static_cast<size_t>(yi)];
  ConvGeometry& g = p.geometry;
  g.spatial = static_cast<int>(s.conv.spatial);
  g.n = x.dims[0];
  g.c = x.dims[1];
  g.k = w.dims[0];
  g.groups = x.dims[1] / w.dims[1];
  for (int d = 0; d < g.spatial; ++d) {
    g.in[d] = x.dims[2 + static_cast<size_t>(d)];
    g.filter[d] = w.dims[2 + static_cast<size_t>(d)];
    g.out[d] = y.dims[2 + static_cast<size_t>(d)];
    g.pad[d] = s.conv.pre[static_cast<size_t>(d)];
    g.stride[d] = s.conv.stride[static_cast<size_t>(d)];
    g.dilation[d] = s.conv.dilation[static_cast<size_t>(d)];
  }
  g.flip = s.conv.mode == CUDNN_CONVOLUTION;
  p.x = View(x, data[static_cast<size_t>(xi)]);
  p.w = View(w, data[static_cast<size_t>(wi)]);
  p.y = View(y, data[static_cast<size_t>(yi)]);
  ConvPrecision(specs[static_cast<size_t>(op.inputs[0])]->dtype, s.conv.compute, &p.precision);
  p.call = call;
  return p;
}

// Each fault's elem is an element of the attention output in memory order: for a ragged output, among the
// elements that exist, by increasing address.
void ApplyAttentionFaults(const std::vector<Fault>& faults, const Bound& out) {
  const TensorSpec& spec = *out.spec;
  cudaDataType type = CUDA_R_32F;
  ToCudaDataType(spec.dtype, &type);
  std::vector<int64_t> ragged;
  if (out.ragged != nullptr) ragged = RaggedElementOffsets(out);
  for (const Fault& f : faults) {
    if (out.ragged == nullptr) {
      CheckFaultElement(f, static_cast<uint64_t>(spec.Elements()));
      ApplyElementFault(f, ElementInMemoryOrder(View(spec, out.data), static_cast<int>(spec.dims.size()),
                                                spec.dims.data(), static_cast<uint64_t>(f.elem)),
                        type);
    } else {
      CheckFaultElement(f, ragged.size());
      ApplyElementFault(f, static_cast<char*>(out.data) + ragged[static_cast<size_t>(f.elem)] *
                                                          static_cast<int64_t>(ElementBytes(spec.dtype)),
                        type);
    }
  }
}

}  // namespace

void RunGraph(const GraphLaunch& launch) {
  const GraphModel& m = *launch.model;
  std::vector<void*> data = launch.data;
  std::vector<std::vector<unsigned char>> scratch(m.tensors.size());
  std::vector<const TensorSpec*> specs;
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const TensorSpec& spec = m.tensors[t];
    specs.push_back(&spec);
    if (spec.by_value) {
      data[t] = const_cast<unsigned char*>(launch.by_value[t].data());
    } else if (spec.is_virtual) {
      scratch[t].assign(static_cast<size_t>(spec.Extent()) * ElementBytes(spec.dtype), 0);
      data[t] = scratch[t].data();
    }
  }
  // Ragged offsets, read from device memory now (the graph runs in stream order after whatever wrote them).
  std::vector<std::vector<int64_t>> ragged(m.tensors.size());
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const int r = m.ragged[t];
    if (r < 0) continue;
    const TensorSpec& offsets = m.tensors[static_cast<size_t>(r)];
    const int64_t n = m.tensors[t].dims[0] + 1;
    for (int64_t i = 0; i < n; ++i) {
      ragged[t].push_back(static_cast<int64_t>(LoadDouble(data[static_cast<size_t>(r)], static_cast<size_t>(i),
                                                          offsets.dtype)));
    }
  }
  auto bound = [&](int t) {
    Bound b;
    if (t >= 0) {
      b.spec = specs[static_cast<size_t>(t)];
      b.data = data[static_cast<size_t>(t)];
      if (!ragged[static_cast<size_t>(t)].empty()) b.ragged = ragged[static_cast<size_t>(t)].data();
    }
    return b;
  };
  const int64_t matmul_call = launch.attn_call >= 0 ? launch.attn_call : launch.launch;
  for (size_t i = 0; i < m.ops.size(); ++i) {
    const GraphOp& op = m.ops[i];
    const OpSpec& s = op.spec;
    switch (s.kind) {
      case OpKind::kConvForward:
      case OpKind::kConvBackwardData:
      case OpKind::kConvBackwardFilter: {
        const ConvProblem p = MakeConv(op, specs, data, launch.conv_calls[i]);
        RunConvolution(p, s.alpha, s.beta);
        if (!launch.conv_faults[i].empty()) ApplyConvFaults(launch.conv_faults[i], p);
        break;
      }
      case OpKind::kPointwise:
        RunPointwise(s.pointwise, s.alpha, s.alpha2, bound(op.inputs[0]), bound(op.inputs[1]),
                     bound(op.inputs[2]), bound(op.outputs[0]));
        break;
      case OpKind::kReduction:
        RunReduction(s.reduce, s.compute, bound(op.inputs[0]), bound(op.outputs[0]));
        break;
      case OpKind::kMatmul:
        RunMatmul(bound(op.inputs[0]), bound(op.inputs[1]), bound(op.outputs[0]), matmul_call, bound(op.inputs[2]),
                  bound(op.inputs[3]), bound(op.inputs[4]), s.matmul_padded ? &s.matmul_padding : nullptr);
        break;
      case OpKind::kSdpa:
        RunSdpa(bound(op.inputs[0]), bound(op.inputs[1]), bound(op.inputs[2]), bound(op.inputs[3]),
                bound(op.inputs[4]), bound(op.inputs[5]), bound(op.outputs[0]), bound(op.outputs[1]), matmul_call,
                bound(op.inputs[6]), bound(op.inputs[7]));
        break;
      case OpKind::kRng:
        RunRng(s.rng, s.rng_seed, bound(op.inputs[0]), bound(op.inputs[1]), bound(op.outputs[0]));
        break;
      case OpKind::kReshape:
        RunReshape(bound(op.inputs[0]), bound(op.outputs[0]));
        break;
      case OpKind::kPagedCacheLoad:
        RunPagedCacheLoad(bound(op.inputs[0]), bound(op.inputs[1]), bound(op.inputs[2]), bound(op.outputs[0]));
        break;
    }
    if (m.attention && static_cast<int>(i) == m.attention_op && !launch.attn_faults.empty()) {
      ApplyAttentionFaults(launch.attn_faults, bound(m.attention_output));
    }
  }
}

}  // namespace simgpu::cudnn

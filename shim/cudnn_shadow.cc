// Attribute values are kept as the program passed them (bytes per cudnnBackendAttributeType_t element); descriptor-
// valued attributes also keep the referenced shadows alive. The registry is created on first use (no static
// constructor: every process inherits LD_PRELOAD) and never destroyed.
#include "shim/cudnn_shadow.h"

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <unordered_map>

namespace ttrace::shim::cudnn {
namespace {

std::atomic<size_t> g_bytes{0};  // attribute bytes of every shadow alive (live or referenced)

struct Shadow;
struct Attr {
  int32_t name = 0, type = 0;
  int64_t count = 0;
  std::vector<char> bytes;
  std::vector<std::shared_ptr<Shadow>> refs;  // BACKEND_DESCRIPTOR values; null where not shadowed
};
struct Shadow {
  ~Shadow() {
    for (const Attr& a : attrs) g_bytes -= a.bytes.size();
  }
  int32_t type = 0;
  std::vector<Attr> attrs;
  std::shared_ptr<Shadow> derived;          // a descriptor cuDNN filled from this one's graph (Got)
  std::shared_ptr<const PlanGraph> plan;    // execution plans, at finalization
  const Attr* Find(int32_t name) const {
    for (const Attr& a : attrs)
      if (a.name == name) return &a;
    return nullptr;
  }
  std::shared_ptr<Shadow> Ref(int32_t name) const {
    const Attr* a = Find(name);
    return a != nullptr && !a->refs.empty() ? a->refs[0] : nullptr;
  }
  template <typename T>
  bool Scalar(int32_t name, T* out) const {
    const Attr* a = Find(name);
    if (a == nullptr || a->count < 1 || a->bytes.size() < sizeof(T)) return false;
    memcpy(out, a->bytes.data(), sizeof(T));
    return true;
  }
  int64_t Int64s(int32_t name, int64_t* out, int max) const {
    const Attr* a = Find(name);
    if (a == nullptr || a->type != CUDNN_TYPE_INT64) return 0;
    const int64_t n = std::min<int64_t>(a->count, max);
    memcpy(out, a->bytes.data(), static_cast<size_t>(n) * sizeof(int64_t));
    return n;
  }
  // A one-element DOUBLE or FLOAT attribute; false when not set as one.
  bool Real(int32_t name, double* out) const {
    const Attr* a = Find(name);
    if (a == nullptr || a->count != 1) return false;
    if (a->type == CUDNN_TYPE_DOUBLE) return *out = *reinterpret_cast<const double*>(a->bytes.data()), true;
    if (a->type == CUDNN_TYPE_FLOAT) return *out = *reinterpret_cast<const float*>(a->bytes.data()), true;
    return false;
  }
  double Real(int32_t name, double fallback) const {
    double v = fallback;
    Real(name, &v);
    return v;
  }
};

struct Registry {
  std::shared_mutex mu;
  std::unordered_map<const void*, std::shared_ptr<Shadow>> live;
};
Registry& Reg() {
  static Registry* r = new Registry;  // never destroyed: interceptors may run during exit
  return *r;
}

size_t ElementBytes(int32_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE: case CUDNN_TYPE_INT64: case CUDNN_TYPE_DOUBLE: case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return 8;
    case CUDNN_TYPE_BOOLEAN: case CUDNN_TYPE_CHAR: return 1;
    case CUDNN_TYPE_FRACTION: return 16;
    default: return 4;  // enums, INT32, FLOAT
  }
}

std::shared_ptr<Shadow> Find(const void* desc) {
  auto it = Reg().live.find(desc);
  return it == Reg().live.end() ? nullptr : it->second;
}

// ---- graph resolution ----------------------------------------------------------------------------------------

std::shared_ptr<Shadow> GraphShadow(std::shared_ptr<Shadow> s, int depth) {
  if (s == nullptr || depth > 8) return nullptr;
  if (s->type == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) return s;
  for (int32_t name : {CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_ATTR_ENGINECFG_ENGINE,
                       CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH}) {
    if (auto g = GraphShadow(s->Ref(name), depth + 1)) return g;
  }
  return GraphShadow(s->derived, depth + 1);
}

struct Role {
  int32_t attr;
  int index;
  bool written;
};
struct OpRoles {
  int32_t type;
  int32_t desc_attr, alpha_attr, beta_attr;
  std::vector<Role> roles;
};
const std::vector<OpRoles>& RoleTable() {
  static const std::vector<OpRoles>* t = new std::vector<OpRoles>{
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, 702, 700, 701, {{704, 0, false}, {703, 1, false},
                                                                               {705, 2, true}}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, 708, 706, 707, {{710, 0, true}, {709, 1, false},
                                                                                     {711, 2, false}}},
      {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, 714, 712, 713, {{716, 0, false},
                                                                                       {715, 1, true},
                                                                                       {717, 2, false}}},
      {CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, 750, 754, 755, {{751, 0, false}, {752, 1, false}, {753, 2, true},
                                                                     {758, 3, false}, {756, 4, true}, {757, 5, false}}},
      {CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, 1523, 0, 0, {{1520, 0, false}, {1521, 1, false}, {1522, 2, true},
                                                               {1525, 3, false}, {1526, 4, false}, {1527, 5, false}}},
      {CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, 1612, 0, 0, {{1610, 0, false}, {1611, 1, true}}},
      {CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, 0, 0, 0, {{2800, 0, false}, {2801, 1, false}, {2802, 2, false},
                                                              {2803, 3, true}, {2804, 4, true}, {2805, 5, false},
                                                              {2809, 6, false}, {2810, 7, false},
                                                              {2807, 8, false}, {2808, 9, false}}},
      {CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, 0, 0, 0, {{2200, 0, false}, {2201, 1, true}}},
      // PAGED_CACHE_LOAD: container, page table, sequence lengths, y.
      {CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR, 0, 0, 0, {{1950, 0, false}, {1953, 1, false},
                                                                      {1952, 2, false}, {1951, 3, true}}},
  };
  return *t;
}

format::GraphTensor TensorEntry(const Shadow& t) {
  format::GraphTensor e;
  memset(&e, 0, sizeof e);
  t.Scalar(CUDNN_ATTR_TENSOR_UNIQUE_ID, &e.uid);
  t.Scalar(CUDNN_ATTR_TENSOR_DATA_TYPE, &e.data_type);
  e.nb_dims = static_cast<uint8_t>(t.Int64s(CUDNN_ATTR_TENSOR_DIMENSIONS, e.dims, format::kGraphMaxDims));
  t.Int64s(CUDNN_ATTR_TENSOR_STRIDES, e.strides, format::kGraphMaxDims);
  bool b = false;
  if (t.Scalar(CUDNN_ATTR_TENSOR_IS_VIRTUAL, &b)) e.is_virtual = b;
  b = false;
  if (t.Scalar(CUDNN_ATTR_TENSOR_IS_BY_VALUE, &b)) e.by_value = b;
  if (t.Find(CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC) != nullptr) e.flags |= format::kGraphTensorRagged;
  return e;
}

// The op's own attributes (its descriptor's, for convolution, pointwise, matmul and reduction).
void OpAttributes(const Shadow& op, const OpRoles* roles, format::GraphOp* e) {
  if (roles == nullptr) return;
  if (roles->alpha_attr != 0) e->alpha = op.Real(roles->alpha_attr, 1.0);
  if (roles->beta_attr != 0) e->beta = op.Real(roles->beta_attr, op.type == 13 ? 1.0 : 0.0);
  const std::shared_ptr<Shadow> d = roles->desc_attr != 0 ? op.Ref(roles->desc_attr) : nullptr;
  if (d == nullptr) return;
  switch (d->type) {
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR: {
      d->Scalar(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, &e->compute_type);
      d->Scalar(CUDNN_ATTR_CONVOLUTION_CONV_MODE, &e->mode);
      int64_t spatial = 0;
      d->Scalar(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, &spatial);
      e->spatial = static_cast<int32_t>(spatial);
      d->Int64s(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, e->pre_pad, 6);
      d->Int64s(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, e->post_pad, 6);
      d->Int64s(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, e->stride, 6);
      d->Int64s(CUDNN_ATTR_CONVOLUTION_DILATIONS, e->dilation, 6);
      break;
    }
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
      d->Scalar(CUDNN_ATTR_POINTWISE_MODE, &e->mode);
      d->Scalar(CUDNN_ATTR_POINTWISE_MATH_PREC, &e->compute_type);
      d->Scalar(CUDNN_ATTR_POINTWISE_AXIS, &e->axis);
      // The parameters that change a mode's value, each with its bit when the program set it (format.h).
      for (const auto& [name, bit, out] :
           {std::tuple{CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, format::kParamReluLowerClip, &e->relu_lower_clip},
            std::tuple{CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, format::kParamReluUpperClip, &e->relu_upper_clip},
            std::tuple{CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE, format::kParamReluLowerClipSlope,
                       &e->relu_lower_clip_slope},
            std::tuple{CUDNN_ATTR_POINTWISE_ELU_ALPHA, format::kParamEluAlpha, &e->elu_alpha},
            std::tuple{CUDNN_ATTR_POINTWISE_SOFTPLUS_BETA, format::kParamSoftplusBeta, &e->softplus_beta},
            std::tuple{CUDNN_ATTR_POINTWISE_SWISH_BETA, format::kParamSwishBeta, &e->swish_beta}}) {
        if (d->Real(name, out)) e->params_set |= bit;
      }
      break;
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR: d->Scalar(CUDNN_ATTR_MATMUL_COMP_TYPE, &e->compute_type); break;
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      d->Scalar(CUDNN_ATTR_REDUCTION_OPERATOR, &e->mode);
      d->Scalar(CUDNN_ATTR_REDUCTION_COMP_TYPE, &e->compute_type);
      break;
    default: break;
  }
}

std::shared_ptr<const PlanGraph> BuildGraph(const Shadow& graph, std::string* why) {
  const Attr* ops = graph.Find(CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (ops == nullptr || ops->refs.empty()) return *why = "operation graph without operations", nullptr;
  auto g = std::make_shared<PlanGraph>();
  std::vector<const Shadow*> tensor_shadows;
  auto tensor_index = [&](const std::shared_ptr<Shadow>& t) {
    for (size_t i = 0; i < tensor_shadows.size(); ++i)
      if (tensor_shadows[i] == t.get()) return static_cast<int32_t>(i);
    tensor_shadows.push_back(t.get());
    g->tensors.push_back(TensorEntry(*t));
    g->read.push_back(false);
    g->written.push_back(false);
    return static_cast<int32_t>(g->tensors.size() - 1);
  };
  for (const std::shared_ptr<Shadow>& op : ops->refs) {
    if (op == nullptr) return *why = "an operation was not shadowed", nullptr;
    format::GraphOp e;
    memset(&e, 0, sizeof e);
    e.type = op->type;
    e.mode = e.compute_type = -1;
    e.axis = -1;
    std::fill(std::begin(e.operands), std::end(e.operands), -1);
    std::fill(std::begin(e.more_operands), std::end(e.more_operands), -1);
    const OpRoles* roles = nullptr;
    for (const OpRoles& r : RoleTable())
      if (r.type == op->type) roles = &r;
    OpAttributes(*op, roles, &e);
    if (roles != nullptr) {
      for (const Role& role : roles->roles) {
        const std::shared_ptr<Shadow> t = op->Ref(role.attr);
        if (t == nullptr) continue;
        const int32_t i = tensor_index(t);
        format::GraphOperand(e, role.index) = i;
        (role.written ? g->written : g->read)[static_cast<size_t>(i)] = true;
        // A convolution with beta != 0 reads its output too.
        if (role.written && e.beta != 0 && op->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)
          g->read[static_cast<size_t>(i)] = true;
      }
    }
    g->ops.push_back(e);
  }
  return g;
}

}  // namespace

void Created(const void* desc, int32_t type) {
  Registry& r = Reg();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  if (r.live.size() >= kMaxDescriptors) return;
  auto s = std::make_shared<Shadow>();
  s->type = type;
  r.live[desc] = std::move(s);
}

void Set(const void* desc, int32_t name, int32_t type, int64_t count, const void* values) {
  Registry& r = Reg();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  std::shared_ptr<Shadow> s = Find(desc);
  if (s == nullptr || count < 0 || values == nullptr) return;
  const size_t bytes = static_cast<size_t>(count) * ElementBytes(type);
  if (count > (1 << 20) || g_bytes + bytes > kMaxShadowBytes) {
    r.live.erase(desc);  // over the bounds: no longer shadowed (graphs that need it are unknown)
    return;
  }
  Attr a;
  a.name = name;
  a.type = type;
  a.count = count;
  a.bytes.assign(static_cast<const char*>(values), static_cast<const char*>(values) + bytes);
  if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    for (int64_t i = 0; i < count; ++i) a.refs.push_back(Find(static_cast<const void* const*>(values)[i]));
  }
  g_bytes += bytes;
  for (Attr& old : s->attrs) {
    if (old.name == name) {
      g_bytes -= old.bytes.size();
      old = std::move(a);
      return;
    }
  }
  s->attrs.push_back(std::move(a));
}

void Finalized(const void* desc) {
  std::shared_ptr<Shadow> s;
  {
    std::shared_lock<std::shared_mutex> lock(Reg().mu);
    s = Find(desc);
  }
  if (s == nullptr || s->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) return;
  std::string why;
  std::shared_ptr<const PlanGraph> plan = ResolveGraph(desc, &why);
  std::unique_lock<std::shared_mutex> lock(Reg().mu);
  s->plan = std::move(plan);
}

void Got(const void* desc, int32_t type, int64_t count, const void* values) {
  if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR || values == nullptr) return;
  std::unique_lock<std::shared_mutex> lock(Reg().mu);
  std::shared_ptr<Shadow> from = Find(desc);
  if (from == nullptr) return;
  for (int64_t i = 0; i < count; ++i) {
    if (std::shared_ptr<Shadow> to = Find(static_cast<const void* const*>(values)[i])) to->derived = from;
  }
}

void Destroyed(const void* desc) {
  Registry& r = Reg();
  std::unique_lock<std::shared_mutex> lock(r.mu);
  r.live.erase(desc);  // the shadow lives on while a descriptor that references it does
}

std::shared_ptr<const PlanGraph> ResolveGraph(const void* desc, std::string* why) {
  std::shared_lock<std::shared_mutex> lock(Reg().mu);
  std::shared_ptr<Shadow> g = GraphShadow(Find(desc), 0);
  if (g == nullptr) return *why = "no operation graph reachable", nullptr;
  return BuildGraph(*g, why);
}

std::shared_ptr<const PlanGraph> PlanOf(const void* plan) {
  std::shared_lock<std::shared_mutex> lock(Reg().mu);
  std::shared_ptr<Shadow> s = Find(plan);
  return s == nullptr ? nullptr : s->plan;
}

void PackOf(const void* pack, PackView* out) {
  out->count = -1;
  std::shared_lock<std::shared_mutex> lock(Reg().mu);
  std::shared_ptr<Shadow> s = Find(pack);
  if (s == nullptr) return;
  const Attr* uids = s->Find(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
  const Attr* ptrs = s->Find(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
  s->Scalar(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, &out->workspace);
  if (uids == nullptr || ptrs == nullptr || uids->count != ptrs->count || uids->count > kMaxPackEntries) return;
  out->count = static_cast<int>(uids->count);
  memcpy(out->uids, uids->bytes.data(), uids->bytes.size());
  memcpy(out->ptrs, ptrs->bytes.data(), ptrs->bytes.size());
}

}  // namespace ttrace::shim::cudnn

// Conformance transcript, part 3: pointwise, reduction, matmul and SDPA operations, operation graphs, engine
// heuristics, engines, engine configurations and variant packs (conformance.h).
#include <cudnn.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "tools/simgpu/cudnn/conformance.h"

namespace simgpu::cudnn::conformance {
namespace {

Desc Pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, int64_t axis = -1) {
  Desc d = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &d);
  int s1 = Set(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  int s2 = Set(d, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  int s3 = axis >= 0 ? SetI64(d, CUDNN_ATTR_POINTWISE_AXIS, axis) : -1;
  int f = cudnnBackendFinalize(d);
  Line("pointwise mode %d prec %d axis %ld: %d %d %d %d finalize %d", mode, prec, static_cast<long>(axis), c, s1,
       s2, s3, f);
  return d;
}

// A pointwise operation y = op(x[, b[, t]]); null tensors are left unset.
Desc PointwiseOp(const char* name, Desc pw, Desc x, Desc b, Desc y, Desc t = nullptr) {
  Desc op = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op);
  int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  int s2 = x ? SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x) : -1;
  int s3 = b ? SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b) : -1;
  int s4 = y ? SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y) : -1;
  int s5 = t ? SetDesc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, t) : -1;
  int f = cudnnBackendFinalize(op);
  Line("pointwise op %s: %d %d %d %d %d %d finalize %d", name, c, s1, s2, s3, s4, s5, f);
  return op;
}

Desc Reduction(cudnnReduceTensorOp_t mode, cudnnDataType_t prec) {
  Desc d = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &d);
  int s1 = Set(d, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
  int s2 = Set(d, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  int f = cudnnBackendFinalize(d);
  Line("reduction mode %d prec %d: %d %d %d finalize %d", mode, prec, c, s1, s2, f);
  return d;
}

Desc ReductionOp(const char* name, Desc red, Desc x, Desc y) {
  Desc op = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &op);
  int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
  int s2 = SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  int s3 = SetDesc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  int f = cudnnBackendFinalize(op);
  Line("reduction op %s: %d %d %d %d finalize %d", name, c, s1, s2, s3, f);
  return op;
}

Desc Matmul(cudnnDataType_t prec) {
  Desc d = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR, &d);
  int s1 = Set(d, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  int f = cudnnBackendFinalize(d);
  Line("matmul prec %d: %d %d finalize %d", prec, c, s1, f);
  return d;
}

Desc MatmulOp(const char* name, Desc mm, Desc a, Desc b, Desc c_out) {
  Desc op = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op);
  int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  int s2 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  int s3 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  int s4 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c_out);
  int f = cudnnBackendFinalize(op);
  Line("matmul op %s: %d %d %d %d %d finalize %d", name, c, s1, s2, s3, s4, f);
  return op;
}

Desc Graph(const char* name, std::vector<Desc> ops) {
  Desc g = nullptr;
  int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g);
  int s1 = Set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops.size()),
               ops.data());
  int f = cudnnBackendFinalize(g);
  Line("graph %s (%zu ops): %d %d finalize %d", name, ops.size(), c, s1, f);
  if (f == 0) {
    std::vector<Desc> got(ops.size() + 2, nullptr);
    int64_t count = -7;
    int st = cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                      static_cast<int64_t>(got.size()), &count, got.data());
    Line("  get ops -> %d count=%ld", st, static_cast<long>(count));
    int64_t engines = -7;
    st = cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64, 1, &count,
                                  &engines);
    Line("  engine count query -> %d", st);
  }
  return g;
}

// Heuristics for a finalized graph: the statuses of finalization and of the results-count query (how many
// configurations come back depends on the GPU: none on a machine without one, so the count is not printed).
void Heuristics(Desc graph) {
  Desc h = nullptr;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &h);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_INSTANT;
  int s1 = SetDesc(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  int s2 = Set(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  int f = cudnnBackendFinalize(h);
  Line("heuristics: %d %d finalize %d", s1, s2, f);
  int64_t count = -7;
  int st = cudnnBackendGetAttribute(h, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                    nullptr);
  Line("  results count query -> %d", st);
  cudnnBackendDestroyDescriptor(h);
}

void Pointwise() {
  Section("backend pointwise");
  for (int mode : {0, 1, 2, 3, 6, 9, 13, 15, 100, 104, 303, 400, 501, 601}) {
    cudnnBackendDestroyDescriptor(Pointwise(static_cast<cudnnPointwiseMode_t>(mode), CUDNN_DATA_FLOAT));
  }
  cudnnBackendDestroyDescriptor(Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3));
  cudnnBackendDestroyDescriptor(Pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_HALF));
  {
    Desc d = nullptr;
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &d);
    const cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
    T(Set(d, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    T(cudnnBackendFinalize(d));
    cudnnBackendDestroyDescriptor(d);
  }
  Desc x = Tensor("x", {1, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}});
  Desc y = Tensor("y", {2, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}});
  Desc yh = Tensor("yh", {3, CUDNN_DATA_HALF, {2, 3, 4, 5}, {60, 20, 5, 1}});
  Desc row = Tensor("row", {4, CUDNN_DATA_FLOAT, {2, 3, 4, 1}, {12, 4, 1, 1}});
  Desc scalar = Tensor("scalar", {5, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
  Desc bad = Tensor("bad", {6, CUDNN_DATA_FLOAT, {2, 3, 4, 2}, {24, 8, 2, 1}});
  Desc mask = Tensor("mask", {7, CUDNN_DATA_BOOLEAN, {2, 3, 4, 5}, {60, 20, 5, 1}});
  Desc small_y = Tensor("small_y", {8, CUDNN_DATA_FLOAT, {2, 3, 4, 1}, {12, 4, 1, 1}});
  Desc add = Pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT);
  Desc exp = Pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT);
  Desc sel = Pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT);
  Desc cmp = Pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_FLOAT);
  std::vector<Desc> ops = {
      PointwiseOp("add", add, x, y, yh),
      PointwiseOp("add broadcast row", add, x, row, y),
      PointwiseOp("add broadcast scalar", add, x, scalar, y),
      PointwiseOp("add mismatch", add, x, bad, y),
      PointwiseOp("add without b", add, x, nullptr, y),
      PointwiseOp("exp", exp, x, nullptr, y),
      PointwiseOp("exp with b", exp, x, y, yh),
      PointwiseOp("exp into smaller y", exp, x, nullptr, small_y),
      PointwiseOp("select", sel, x, y, yh, mask),
      PointwiseOp("select without t", sel, x, y, yh),
      PointwiseOp("cmp", cmp, x, y, mask),
      PointwiseOp("no y", add, x, y, nullptr),
  };
  {
    Desc op = ops[0];
    const float alpha = 2.0f;
    T(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha));
    Desc fresh = nullptr;
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &fresh);
    T(Set(fresh, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &alpha));
    const double alpha2 = 2.0;  // a DOUBLE attribute reads 8 bytes
    T(Set(fresh, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_DOUBLE, 1, &alpha2));
    cudnnBackendDestroyDescriptor(fresh);
  }
  for (Desc d : ops) cudnnBackendDestroyDescriptor(d);
  for (Desc d : {x, y, yh, row, scalar, bad, mask, small_y, add, exp, sel, cmp}) cudnnBackendDestroyDescriptor(d);
}

void ReductionsAndMatmuls() {
  Section("backend reduction and matmul");
  for (int mode : {0, 2, 3, 4, 5, 7}) {
    cudnnBackendDestroyDescriptor(Reduction(static_cast<cudnnReduceTensorOp_t>(mode), CUDNN_DATA_FLOAT));
  }
  Desc x = Tensor("x", {1, CUDNN_DATA_FLOAT, {2, 3, 4, 5}, {60, 20, 5, 1}});
  Desc row = Tensor("row", {2, CUDNN_DATA_FLOAT, {2, 3, 4, 1}, {12, 4, 1, 1}});
  Desc col = Tensor("col", {3, CUDNN_DATA_FLOAT, {2, 3, 1, 5}, {15, 5, 5, 1}});
  Desc all = Tensor("all", {4, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc bad = Tensor("bad", {5, CUDNN_DATA_FLOAT, {2, 3, 4, 2}, {24, 8, 2, 1}});
  Desc max = Reduction(CUDNN_REDUCE_TENSOR_MAX, CUDNN_DATA_FLOAT);
  std::vector<Desc> ops = {ReductionOp("rows", max, x, row), ReductionOp("cols", max, x, col),
                           ReductionOp("all", max, x, all), ReductionOp("bad", max, x, bad),
                           ReductionOp("same", max, x, x)};
  for (Desc d : ops) cudnnBackendDestroyDescriptor(d);

  Desc a = Tensor("a", {10, CUDNN_DATA_HALF, {2, 4, 8, 16}, {512, 128, 16, 1}});
  Desc b = Tensor("b", {11, CUDNN_DATA_HALF, {2, 4, 16, 8}, {512, 128, 1, 16}});
  Desc c = Tensor("c", {12, CUDNN_DATA_FLOAT, {2, 4, 8, 8}, {256, 64, 8, 1}});
  Desc c_bad = Tensor("c_bad", {13, CUDNN_DATA_FLOAT, {2, 4, 8, 7}, {224, 56, 7, 1}});
  Desc b_gqa = Tensor("b_gqa", {14, CUDNN_DATA_HALF, {2, 2, 16, 8}, {256, 128, 1, 16}});
  Desc b_bad_k = Tensor("b_bad_k", {15, CUDNN_DATA_HALF, {2, 4, 15, 8}, {480, 120, 1, 15}});
  Desc a3 = Tensor("a3", {16, CUDNN_DATA_FLOAT, {3, 8, 16}, {128, 16, 1}});
  Desc b3 = Tensor("b3", {17, CUDNN_DATA_FLOAT, {3, 16, 8}, {128, 8, 1}});
  Desc c3 = Tensor("c3", {18, CUDNN_DATA_FLOAT, {3, 8, 8}, {64, 8, 1}});
  Desc b_bcast = Tensor("b_bcast", {19, CUDNN_DATA_HALF, {1, 1, 16, 8}, {128, 128, 8, 1}});
  Desc mm = Matmul(CUDNN_DATA_FLOAT);
  cudnnBackendDestroyDescriptor(Matmul(CUDNN_DATA_HALF));
  ops = {MatmulOp("4d", mm, a, b, c),           MatmulOp("bad n", mm, a, b, c_bad),
         MatmulOp("gqa", mm, a, b_gqa, c),      MatmulOp("bad k", mm, a, b_bad_k, c),
         MatmulOp("3d", mm, a3, b3, c3),        MatmulOp("broadcast b", mm, a, b_bcast, c),
         MatmulOp("rank mismatch", mm, a3, b, c)};
  for (Desc d : ops) cudnnBackendDestroyDescriptor(d);
  for (Desc d : {x, row, col, all, bad, max, a, b, c, c_bad, b_gqa, b_bad_k, a3, b3, c3, b_bcast, mm}) {
    cudnnBackendDestroyDescriptor(d);
  }
}

// The composite attention graph cudnn-frontend builds for SDPA forward (matmul, scale, causal mask from index
// comparisons, softmax from reductions and pointwise operations, matmul), then heuristics and a variant pack.
void AttentionGraph() {
  Section("backend attention graph");
  const int64_t b = 1, h = 2, s = 8, d = 16;
  Desc q = Tensor("q", {1, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc kt = Tensor("kt", {2, CUDNN_DATA_HALF, {b, h, d, s}, {h * s * d, s * d, 1, d}});
  Desc v = Tensor("v", {3, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc o = Tensor("o", {4, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc scale = Tensor("scale", {5, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
  Desc neg_inf = Tensor("neg_inf", {6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
  Desc stats = Tensor("stats", {7, CUDNN_DATA_FLOAT, {b, h, s, 1}, {h * s, s, 1, 1}});
  const std::vector<int64_t> sdims = {b, h, s, s}, sstr = {h * s * s, s * s, s, 1};
  const std::vector<int64_t> rdims = {b, h, s, 1}, rstr = {h * s, s, 1, 1};
  Desc s1 = Tensor("s1", {101, CUDNN_DATA_FLOAT, sdims, sstr, true});
  Desc s2 = Tensor("s2", {102, CUDNN_DATA_FLOAT, sdims, sstr, true});
  Desc row = Tensor("row", {103, CUDNN_DATA_INT32, sdims, sstr, true});
  Desc col = Tensor("col", {104, CUDNN_DATA_INT32, sdims, sstr, true});
  Desc keep = Tensor("keep", {105, CUDNN_DATA_BOOLEAN, sdims, sstr, true});
  Desc s3 = Tensor("s3", {106, CUDNN_DATA_FLOAT, sdims, sstr, true});
  Desc mx = Tensor("max", {107, CUDNN_DATA_FLOAT, rdims, rstr, true});
  Desc sub = Tensor("sub", {108, CUDNN_DATA_FLOAT, sdims, sstr, true});
  Desc ex = Tensor("exp", {109, CUDNN_DATA_FLOAT, sdims, sstr, true});
  Desc sum = Tensor("sum", {110, CUDNN_DATA_FLOAT, rdims, rstr, true});
  Desc lg = Tensor("log", {111, CUDNN_DATA_FLOAT, rdims, rstr, true});
  Desc p = Tensor("p", {112, CUDNN_DATA_HALF, sdims, sstr, true});
  Desc mm = Matmul(CUDNN_DATA_FLOAT);
  Desc mul = Pointwise(CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT);
  Desc gen_row = Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 2);
  Desc gen_col = Pointwise(CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3);
  Desc ge = Pointwise(CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN);
  Desc select = Pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT);
  Desc subtract = Pointwise(CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT);
  Desc exponent = Pointwise(CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT);
  Desc logarithm = Pointwise(CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT);
  Desc add = Pointwise(CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT);
  Desc div = Pointwise(CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT);
  Desc rmax = Reduction(CUDNN_REDUCE_TENSOR_MAX, CUDNN_DATA_FLOAT);
  Desc radd = Reduction(CUDNN_REDUCE_TENSOR_ADD, CUDNN_DATA_FLOAT);
  std::vector<Desc> ops = {
      MatmulOp("bmm1", mm, q, kt, s1),
      PointwiseOp("scale", mul, s1, scale, s2),
      PointwiseOp("row index", gen_row, s2, nullptr, row),
      PointwiseOp("col index", gen_col, s2, nullptr, col),
      PointwiseOp("row >= col", ge, row, col, keep),
      PointwiseOp("mask", select, s2, neg_inf, s3, keep),
      ReductionOp("max", rmax, s3, mx),
      PointwiseOp("sub", subtract, s3, mx, sub),
      PointwiseOp("exp", exponent, sub, nullptr, ex),
      ReductionOp("sum", radd, ex, sum),
      PointwiseOp("log", logarithm, sum, nullptr, lg),
      PointwiseOp("stats", add, mx, lg, stats),
      PointwiseOp("div", div, ex, sum, p),
      MatmulOp("bmm2", mm, p, v, o),
  };
  Desc graph = Graph("attention", ops);
  Heuristics(graph);
  std::vector<Desc> missing_producer(ops.begin() + 1, ops.end());
  Desc broken = Graph("attention without bmm1", missing_producer);
  cudnnBackendDestroyDescriptor(broken);
  Desc empty = Graph("empty", {});
  cudnnBackendDestroyDescriptor(empty);
  Desc twice = Graph("op twice", {ops[0], ops[0]});
  cudnnBackendDestroyDescriptor(twice);
  cudnnBackendDestroyDescriptor(graph);
  for (Desc op : ops) cudnnBackendDestroyDescriptor(op);
  for (Desc t : {q, kt, v, o, scale, neg_inf, stats, s1, s2, row, col, keep, s3, mx, sub, ex, sum, lg, p, mm, mul,
                 gen_row, gen_col, ge, select, subtract, exponent, logarithm, add, div, rmax, radd}) {
    cudnnBackendDestroyDescriptor(t);
  }
}

// The fused SDPA forward operation (cuDNN >= 9.13.1), as cudnn-frontend builds it for attention without masks.
void FusedAttention() {
  Section("backend fused SDPA");
  const int64_t b = 2, h = 4, hk = 2, s = 8, skv = 12, d = 16;
  Desc q = Tensor("q", {1, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc k = Tensor("k", {2, CUDNN_DATA_HALF, {b, hk, skv, d}, {hk * skv * d, skv * d, d, 1}});
  Desc v = Tensor("v", {3, CUDNN_DATA_HALF, {b, hk, skv, d}, {hk * skv * d, skv * d, d, 1}});
  Desc o = Tensor("o", {4, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc stats = Tensor("stats", {5, CUDNN_DATA_FLOAT, {b, h, s, 1}, {h * s, s, 1, 1}});
  Desc scale = Tensor("scale", {6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
  Desc o_bad = Tensor("o_bad", {7, CUDNN_DATA_HALF, {b, h, s + 1, d}, {h * (s + 1) * d, (s + 1) * d, d, 1}});
  auto make = [&](const char* name, Desc out, bool with_stats, bool with_scale) {
    Desc op = nullptr;
    int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &op);
    int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q);
    int s2 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k);
    int s3 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v);
    int s4 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, out);
    int s5 = with_stats ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, stats) : -1;
    int s6 = with_scale ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale) : -1;
    int f = cudnnBackendFinalize(op);
    Line("sdpa %s: %d %d %d %d %d %d %d finalize %d", name, c, s1, s2, s3, s4, s5, s6, f);
    return op;
  };
  Desc full = make("full", o, true, true);
  Desc inference = make("inference", o, false, true);
  Desc no_scale = make("no scale", o, true, false);
  Desc bad = make("bad o", o_bad, true, true);
  Desc graph = Graph("sdpa", {full});
  Heuristics(graph);
  cudnnBackendDestroyDescriptor(graph);
  graph = Graph("sdpa inference", {inference});
  cudnnBackendDestroyDescriptor(graph);
  for (Desc t : {full, inference, no_scale, bad, q, k, v, o, stats, scale, o_bad}) cudnnBackendDestroyDescriptor(t);
}

void VariantPacks() {
  Section("backend variant pack");
  Desc vp = nullptr;
  T(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
  T(cudnnBackendFinalize(vp));
  T(cudnnBackendDestroyDescriptor(vp));
  T(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
  int64_t uids[3] = {1, 2, 3}, count = -7;
  void* ptrs[3] = {reinterpret_cast<void*>(0x1000), reinterpret_cast<void*>(0x2000), reinterpret_cast<void*>(0x3000)};
  void* ws = reinterpret_cast<void*>(0x4000);
  T(Set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
  T(Set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
  T(Set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
  T(Set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_INT64, 3, uids));
  T(cudnnBackendFinalize(vp));
  int64_t got[3];
  void* got_ptrs[3];
  void* got_ws = nullptr;
  T(cudnnBackendGetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, &count, got));
  T(cudnnBackendGetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, &count, got_ptrs));
  int st = cudnnBackendGetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &count, &got_ws);
  Line("get workspace -> %d count=%ld same=%d", st, static_cast<long>(count), got_ws == ws);
  T(cudnnBackendDestroyDescriptor(vp));
  // Mismatched counts of uids and pointers.
  T(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
  T(Set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
  T(Set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 2, ptrs));
  T(cudnnBackendFinalize(vp));
  T(cudnnBackendDestroyDescriptor(vp));
}

}  // namespace

void RunBackendGraphs() {
  Pointwise();
  ReductionsAndMatmuls();
  AttentionGraph();
  FusedAttention();
  VariantPacks();
}

}  // namespace simgpu::cudnn::conformance

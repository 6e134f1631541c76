// Conformance transcript, part 4: ragged tensors (CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC) and the fused SDPA forward
// operation's sequence-length tensors, as PyTorch's nested-tensor attention sets them (conformance.h).
#include <cudnn.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "tools/simgpu/cudnn/conformance.h"

namespace simgpu::cudnn::conformance {
namespace {

// The count query of the ragged offset attribute (reading the descriptor itself back crashes NVIDIA's cuDNN 9.19
// library, with or without an offset set, so the transcript does not).
void GetRagged(Desc d, const char* label) {
  int64_t count = -7;
  int st = cudnnBackendGetAttribute(d, CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                    nullptr);
  Line("  count query of %s -> %d count=%ld", label, st, static_cast<long>(count));
}

void RaggedDescriptors() {
  Section("backend ragged tensors");
  const int64_t b = 3, h = 4, s = 8, d = 16;
  const std::vector<int64_t> thd = {INT_MAX, d, h * d, 1};
  Desc off32 = Tensor("offsets int32", {100, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc off64 = Tensor("offsets int64", {101, CUDNN_DATA_INT64, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc off_float = Tensor("offsets float", {102, CUDNN_DATA_FLOAT, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc off_short = Tensor("offsets b", {103, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1}});
  Desc off_flat = Tensor("offsets 1-d", {104, CUDNN_DATA_INT32, {b + 1}, {1}});
  Desc off_row = Tensor("offsets [1, b+1]", {106, CUDNN_DATA_INT32, {1, b + 1, 1, 1}, {b + 1, 1, 1, 1}});
  Desc off_wide = Tensor("offsets [b+1, 2]", {107, CUDNN_DATA_INT32, {b + 1, 2, 1, 1}, {2, 1, 1, 1}});
  Desc off_virtual = Tensor("offsets virtual", {105, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}, true});
  Desc unfinalized = nullptr;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &unfinalized);
  const TensorSpec q = {1, CUDNN_DATA_HALF, {b, h, s, d}, thd};
  std::vector<Desc> made;
  made.push_back(Tensor("int32", q, off32));
  GetRagged(made.back(), "int32");
  made.push_back(Tensor("int64", {2, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off64));
  made.push_back(Tensor("float offsets", {3, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off_float));
  made.push_back(Tensor("b offsets", {4, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off_short));
  made.push_back(Tensor("1-d offsets", {5, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off_flat));
  made.push_back(Tensor("[1, b+1] offsets", {11, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off_row));
  made.push_back(Tensor("[b+1, 2] offsets", {12, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off_wide));
  made.push_back(Tensor("virtual offsets", {6, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off_virtual));
  made.push_back(Tensor("unfinalized offsets", {7, CUDNN_DATA_HALF, {b, h, s, d}, thd}, unfinalized));
  // (A descriptor of another type as the offsets makes NVIDIA's library throw std::bad_alloc: not in the transcript.)
  made.push_back(Tensor("virtual ragged", {9, CUDNN_DATA_FLOAT, {b, h, s, d}, thd, true}, off32));
  made.push_back(Tensor("same uid", {100, CUDNN_DATA_HALF, {b, h, s, d}, thd}, off32));
  made.push_back(Tensor("plain", {10, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}}));
  GetRagged(made.back(), "plain");
  // Setting after finalization, and on a finalized ragged tensor.
  T(SetDesc(made.front(), CUDNN_ATTR_TENSOR_RAGGED_OFFSET_DESC, off64));
  for (Desc t : made) cudnnBackendDestroyDescriptor(t);
  for (Desc t : {off32, off64, off_float, off_short, off_flat, off_virtual, unfinalized, off_row, off_wide}) {
    cudnnBackendDestroyDescriptor(t);
  }
}

// The fused SDPA forward operation with sequence-length tensors and ragged Q, K, V, O and Stats, as PyTorch's
// run_cudnn_SDP_fprop_nestedtensor builds it through cudnn-frontend's unified SDPA node.
void FusedRaggedAttention() {
  Section("backend fused SDPA with sequence lengths");
  const int64_t b = 3, h = 4, hk = 2, s = 8, skv = 12, d = 16;
  Desc q_off = Tensor("q offsets", {20, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc kv_off = Tensor("kv offsets", {21, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc o_off = Tensor("o offsets", {22, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc stats_off = Tensor("stats offsets", {23, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_q = Tensor("seq_q", {30, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_kv = Tensor("seq_kv", {31, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_bad = Tensor("seq_q wrong batch", {32, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_float = Tensor("seq_q float", {33, CUDNN_DATA_FLOAT, {b, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_i64 = Tensor("seq_q int64", {34, CUDNN_DATA_INT64, {b, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_flat = Tensor("seq_q 1-d", {35, CUDNN_DATA_INT32, {b}, {1}});
  Desc seq_one = Tensor("seq_q [1,1,1,1]", {36, CUDNN_DATA_INT32, {1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc q = Tensor("q", {1, CUDNN_DATA_HALF, {b, h, s, d}, {INT_MAX, d, h * d, 1}}, q_off);
  Desc k = Tensor("k", {2, CUDNN_DATA_HALF, {b, hk, skv, d}, {INT_MAX, d, hk * d, 1}}, kv_off);
  Desc v = Tensor("v", {3, CUDNN_DATA_HALF, {b, hk, skv, d}, {INT_MAX, d, hk * d, 1}}, kv_off);
  Desc o = Tensor("o", {4, CUDNN_DATA_HALF, {b, h, s, d}, {INT_MAX, d, h * d, 1}}, o_off);
  Desc stats = Tensor("stats", {5, CUDNN_DATA_FLOAT, {b, h, s, 1}, {h * s, 1, h, 1}}, stats_off);
  Desc scale = Tensor("scale", {6, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
  auto make = [&](const char* name, Desc sq, Desc skv_desc, bool with_stats) {
    Desc op = nullptr;
    int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &op);
    int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q);
    int s2 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k);
    int s3 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v);
    int s4 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o);
    int s5 = with_stats ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, stats) : -1;
    int s6 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale);
    int s7 = sq ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, sq) : -1;
    int s8 = skv_desc ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, skv_desc) : -1;
    int f = cudnnBackendFinalize(op);
    Line("sdpa %s: %d %d %d %d %d %d %d %d %d finalize %d", name, c, s1, s2, s3, s4, s5, s6, s7, s8, f);
    return op;
  };
  Desc full = make("ragged with seq lens", seq_q, seq_kv, true);
  Desc inference = make("ragged inference", seq_q, seq_kv, false);
  Desc no_lens = make("ragged without seq lens", nullptr, nullptr, true);
  Desc only_q = make("seq_len_q only", seq_q, nullptr, true);
  Desc bad_batch = make("seq_len_q of b+1", seq_bad, seq_kv, true);
  Desc floats = make("float seq_len_q", seq_float, seq_kv, true);
  Desc i64 = make("int64 seq_len_q", seq_i64, seq_kv, true);
  Desc flat = make("1-d seq_len_q", seq_flat, seq_kv, true);
  Desc one = make("[1,1,1,1] seq_len_q", seq_one, seq_kv, true);
  for (Desc op : {full, inference, no_lens, only_q}) {
    Desc graph = nullptr;
    cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph);
    int s1 = Set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op);
    int f = cudnnBackendFinalize(graph);
    Line("graph: %d finalize %d", s1, f);
    cudnnBackendDestroyDescriptor(graph);
  }
  for (Desc t : {full, inference, no_lens, only_q, bad_batch, floats, i64, flat, one, seq_i64, seq_flat, seq_one, q,
                 k, v, o, stats, scale, q_off, kv_off, o_off,
                 stats_off, seq_q, seq_kv, seq_bad, seq_float}) {
    cudnnBackendDestroyDescriptor(t);
  }
}

// The fused SDPA forward operation over paged K and V caches ([blocks, h_k, block size, d]) with page tables
// ([b, 1, blocks per sequence, 1]) and sequence lengths, as cudnn-frontend's paged-cache sample builds it.
void FusedPagedAttention() {
  Section("backend fused SDPA with page tables");
  const int64_t b = 2, h = 4, hk = 2, s = 8, d = 16, blocks = 6, block = 4, per_seq = 3;
  Desc q = Tensor("q", {50, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc k = Tensor("k cache", {51, CUDNN_DATA_HALF, {blocks, hk, block, d}, {hk * block * d, block * d, d, 1}});
  Desc v = Tensor("v cache", {52, CUDNN_DATA_HALF, {blocks, hk, block, d}, {hk * block * d, block * d, d, 1}});
  Desc o = Tensor("o", {53, CUDNN_DATA_HALF, {b, h, s, d}, {h * s * d, s * d, d, 1}});
  Desc scale = Tensor("scale", {54, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true});
  Desc pt_k = Tensor("page table k", {55, CUDNN_DATA_INT32, {b, 1, per_seq, 1}, {per_seq, per_seq, 1, 1}});
  Desc pt_v = Tensor("page table v", {56, CUDNN_DATA_INT32, {b, 1, per_seq, 1}, {per_seq, per_seq, 1, 1}});
  Desc seq_q = Tensor("seq_q", {57, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1}});
  Desc seq_kv = Tensor("seq_kv", {58, CUDNN_DATA_INT32, {b, 1, 1, 1}, {1, 1, 1, 1}});
  for (bool tables : {true, false}) {
    Desc op = nullptr;
    int c = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &op);
    int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q);
    int s2 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k);
    int s3 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v);
    int s4 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o);
    int s5 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale);
    int s6 = tables ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_KDESC, pt_k) : -1;
    int s7 = tables ? SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_PAGE_TABLE_VDESC, pt_v) : -1;
    int s8 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_QDESC, seq_q);
    int s9 = SetDesc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SEQ_LEN_KVDESC, seq_kv);
    int f = cudnnBackendFinalize(op);
    Line("sdpa paged %s: %d %d %d %d %d %d %d %d %d %d finalize %d", tables ? "with page tables" : "without",
         c, s1, s2, s3, s4, s5, s6, s7, s8, s9, f);
    cudnnBackendDestroyDescriptor(op);
  }
  for (Desc t : {q, k, v, o, scale, pt_k, pt_v, seq_q, seq_kv}) cudnnBackendDestroyDescriptor(t);
}

// A matmul whose A operand is ragged (cudnn-frontend's composite attention reads ragged Q this way).
void RaggedMatmul() {
  Section("backend matmul with a ragged operand");
  const int64_t b = 3, h = 2, s = 8, skv = 6, d = 16;
  Desc off = Tensor("offsets", {40, CUDNN_DATA_INT32, {b + 1, 1, 1, 1}, {1, 1, 1, 1}});
  Desc a = Tensor("a", {41, CUDNN_DATA_HALF, {b, h, s, d}, {INT_MAX, d, h * d, 1}}, off);
  Desc bt = Tensor("b", {42, CUDNN_DATA_HALF, {b, h, d, skv}, {h * d * skv, d * skv, 1, d}});
  Desc c = Tensor("c", {43, CUDNN_DATA_FLOAT, {b, h, s, skv}, {h * s * skv, s * skv, skv, 1}, true});
  Desc mm = nullptr;
  cudnnBackendCreateDescriptor(CUDNN_BACKEND_MATMUL_DESCRIPTOR, &mm);
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  Set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  cudnnBackendFinalize(mm);
  Desc op = nullptr;
  int cr = cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op);
  int s1 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  int s2 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  int s3 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, bt);
  int s4 = SetDesc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  int f = cudnnBackendFinalize(op);
  Line("matmul op ragged a: %d %d %d %d %d finalize %d", cr, s1, s2, s3, s4, f);
  for (Desc t : {op, mm, a, bt, c, off}) cudnnBackendDestroyDescriptor(t);
}

}  // namespace

void RunBackendRagged() {
  RaggedDescriptors();
  FusedRaggedAttention();
  FusedPagedAttention();
  RaggedMatmul();
}

}  // namespace simgpu::cudnn::conformance

// Internal to libcudnn.so.9 (simgpu): the arithmetic of the backend's pointwise, reduction, matmul and fused SDPA
// operations on strided tensors, run on the stream worker by graph_exec.cc.
//
// Pointwise: for each output element (row-major over y's dimensions), each operand is read at the same index,
// or index 0 along a dimension of size 1 (broadcast); values are widened to the math precision (FP64 when the
// pointwise descriptor's math precision is DOUBLE, else FP32), x is multiplied by alpha1 and b by alpha2 when
// those differ from 1, the mode is applied in that precision (C's <cmath> functions), and the result is stored
// in y's type rounded to nearest even. Comparisons and logical modes give 1 or 0; GEN_INDEX gives the element's
// index along the descriptor's axis; BINARY_SELECT gives t != 0 ? x : b; the backward activations (RELU_BWD ...)
// read the forward input as x and the gradient dy as b and give dx = dy * f'(x) (RELU_BWD: dy above the lower
// clip and below the upper one, slope * dy at or below the lower clip, 0 at or above the upper one). MAX and MIN
// with an operand larger than y along dimensions where y has 1 (graph_build.cc: cudnn-frontend's softmax with a sink
// token): the mode is applied over the operands' combined shape and each y element is the maximum (minimum) of the
// results that map to it, NaN propagating, computed in the math precision and stored once.
// Reduction: each output element combines the input elements that map to it (along a dimension where x has g times
// y's size, output index j reads input indices j * g ... j * g + g - 1: size 1 reduces the dimension whole, einops'
// "(h g) -> h" for grouped-query heads) in row-major order, in FP32 (FP64 for a DOUBLE compute type), starting from
// 0 (ADD, AMAX), 1 (MUL), -inf (MAX) or +inf (MIN); NaN propagates through MIN, MAX and AMAX.
// Matmul: C[..., m, n] = sum over k of A[..., m, k] * B[..., k, n] with operands widened to FP32, each product
// rounded to FP32 and summed in simgpu's accumulation order (common/accumulate.h) in FP32, stored in C's type. A
// batch dimension of A or B smaller than C's maps C's index c to c / (C_i / A_i) (size 1 broadcasts; grouped-query
// attention shares each K/V head among consecutive query heads).
// Fused SDPA forward (Q [b, h, s_q, d], K [b, h_k, s_kv, d], V [b, h_v, s_kv, d_v]): for each query row, S_j =
// fl32(Q.K_j) * scale (the dot product as a matmul above; scale 1 when absent), m = max_j S_j, E_j = exp(S_j - m),
// l = sum_j E_j in order from 0, P_j = E_j / l rounded to Q's type, O = sum_j P_j * V_j as a matmul above,
// Stats = m + log(l) in FP32. With sequence lengths (SEQ_LEN_QDESC, SEQ_LEN_KVDESC: NVIDIA's unified engine then
// applies a padding mask), batch n's rows i >= seq_len_q[n] of O and Stats are not written and its keys
// j >= seq_len_kv[n] are masked: E_j = 0 and P_j * V_j counts as +0 in the same sums. These are the operations, in
// the order and precision, of the composite graph cudnn-frontend builds for the same attention (with its padding
// mask: GEMM overrides and FLOAT's lowest score outside the sequences), whose results are therefore bitwise equal
// in every element both write.
// Paged (PAGE_TABLE_KDESC, PAGE_TABLE_VDESC, either or both; cudnn-frontend's set_paged_attention_k_table and
// _v_table): a paged K or V is a container [blocks, h, block size, d] and its table [b, 1, n, 1] says where each
// sequence's rows lie, as for the paged cache load below: key j of sequence i is container row
// (table[i, 0, j / block size, 0], head, j % block size). The keys are those below seq_len_kv[i], clamped to s_kv,
// where s_kv is n * block size of a paged operand and the third dimension of an unpaged one (the smaller of K's and
// V's; NVIDIA documents no key extent for the unified engine: cudnn-frontend passes no max_seq_len_kv to it,
// "unified engine doesn't need it"). The arithmetic is the unpaged one over the gathered rows, so the result is
// bitwise that of cudnn-frontend's composite graph with paged cache loads. Undocumented, simgpu's choices as for the
// load: the table is read only for keys below the length, and a page outside [0, blocks) reads NaN.
// Paged cache load (CUDNN_BACKEND_OPERATION_PAGED_CACHE_LOAD_DESCRIPTOR: container [blocks, h, block size, d], page
// table [b, 1, n, 1], sequence lengths [b, 1, 1, 1], y [b, h, s, d], or [b, h, d, s] when y's third dimension has
// stride 1, as cudnn-frontend passes K^T): the cache of sequence i, row j (j < seq_len[i]) is container row
// (page_table[i, 0, j / block size, 0], head, j % block size), copied in y's type. NVIDIA's backend reference names
// the operands only; this is the reconstruction cudnn-frontend's tests invert (test/python/sdpa/fp8.py,
// create_paged_container_and_block_table: the container is K's [b, h, s, d] cut into blocks of block size rows,
// batch-major after block index, and the table lists each sequence's blocks in order). Undocumented, simgpu's
// choices: rows at or past seq_len[i] are written +0 and never read the table there (a table may be filled only
// up to each sequence's length, as the decode and prefill sample fills it); a page index outside [0, blocks) reads
// NaN (a GPU reads whatever lies there) rather than memory outside the container.
// Reshape (a view, cudnn-frontend's default VIEW_ONLY mode: y names x's memory with its own dimensions and strides):
// y's element at element offset o (sum of index times y's stride) is x's element at offset o, converted to y's type
// (rounded to nearest even). cudnn-frontend's attention backward transposes K and the FP32 probabilities and score
// gradients this way (swapping the last two dimensions and strides), the latter into FP16 or BF16 tensors.
#ifndef TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_KERNELS_H_
#define TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_KERNELS_H_

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "tools/simgpu/cudnn/graph_model.h"

namespace simgpu::cudnn {

// A tensor bound to memory (data: its element 0). A ragged tensor (graph_model.h) also carries its offsets, read
// from device memory at execution: spec->dims[0] + 1 of them.
struct Bound {
  const TensorSpec* spec = nullptr;
  void* data = nullptr;
  const int64_t* ragged = nullptr;
};

bool PointwiseModeSupported(cudnnPointwiseMode_t mode);

// The element offsets of a ragged tensor's elements that exist (graph_model.h), in increasing order.
std::vector<int64_t> RaggedElementOffsets(const Bound& t);

// b and t may be absent (spec nullptr).
void RunPointwise(const PointwiseParams& params, double alpha1, double alpha2, const Bound& x, const Bound& b,
                  const Bound& t, const Bound& y);
void RunReduction(cudnnReduceTensorOp_t op, cudnnDataType_t compute, const Bound& x, const Bound& y);
// `call` numbers the call for random accumulation orders. m, n and k, when present, are the GEMM M, N and K
// override tensors (INT32 or INT64, broadcast over C's batch dimensions, as cudnn-frontend passes seq_len_q and
// seq_len_kv): in a batch whose override is smaller than the shape, C's rows >= M and columns >= N are not
// written (written with *padding when padding is not null, CUDNN_ATTR_MATMUL_PADDING_VALUE) and products at depth
// >= K count as +0.
void RunMatmul(const Bound& a, const Bound& b, const Bound& c, int64_t call, const Bound& m = {},
               const Bound& n = {}, const Bound& k = {}, const double* padding = nullptr);
// x and y dense, y's extent within x's.
void RunReshape(const Bound& x, const Bound& y);
// container [blocks, h, block size, d], page_table [b, 1, n, 1], seq_len [b, 1, 1, 1], y [b, h, s, d] or transposed
// [b, h, d, s] (backend_ops.cc checked the shapes).
void RunPagedCacheLoad(const Bound& container, const Bound& page_table, const Bound& seq_len, const Bound& y);
// scale, stats, the sequence lengths and the page tables may be absent.
void RunSdpa(const Bound& q, const Bound& k, const Bound& v, const Bound& scale, const Bound& seq_len_q,
             const Bound& seq_len_kv, const Bound& o, const Bound& stats, int64_t call,
             const Bound& page_table_k = {}, const Bound& page_table_v = {});

}  // namespace simgpu::cudnn

#endif  // TTRACE_TOOLS_SIMGPU_CUDNN_GRAPH_KERNELS_H_

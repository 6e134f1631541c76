// Host-side element-wise and row-wise operations of the gpt workload (the program has no kernels of its own, so
// everything but GEMMs and collectives runs on the host in FP32, on values read back from the device). Matrices
// are row-major; `rows` x `cols` unless stated.
#ifndef TTRACE_TOOLS_WORKLOADS_GPT_OPS_H_
#define TTRACE_TOOLS_WORKLOADS_GPT_OPS_H_

namespace ttrace::workloads::gpt {

// y = (x - mean) * rstd * g + b per row (eps 1e-5); keeps the normalized input `hat` and `rstd` for the backward.
void LayerNorm(const float* x, int rows, int cols, const float* g, const float* b, float* y, float* hat,
               float* rstd);
// dx = LayerNorm input gradient; dg, db accumulate (+=) the parameter gradients of these rows.
void LayerNormBackward(const float* dy, const float* hat, const float* rstd, int rows, int cols, const float* g,
                       float* dx, float* dg, float* db);

// GeLU, tanh approximation (GPT-2's), and its derivative.
float Gelu(float x);
float GeluGrad(float x);

// In place, for `mats` S x S score matrices: row s becomes the softmax over columns c <= s + shift (shift 0: the
// causal mask; columns past the end are never included).
void CausalSoftmax(float* s, int mats, int seq, int shift);
// ds = p ⊙ (dp - rowsum(dp ⊙ p)): the softmax's input gradient (masked entries have p = 0 and get 0).
void SoftmaxBackward(const float* p, const float* dp, float* ds, int mats, int seq);

// acc[j] += sum_i x[i][j].
void AddColumnSums(const float* x, int rows, int cols, float* acc);

}  // namespace ttrace::workloads::gpt

#endif  // TTRACE_TOOLS_WORKLOADS_GPT_OPS_H_

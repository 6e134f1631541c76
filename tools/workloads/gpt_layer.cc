// One pre-LayerNorm transformer layer (GPT-2): x1 = x + Attn(LN1(x)), out = x1 + MLP(LN2(x1)), forward and
// backward, on this rank's heads and FFN columns. Attention is laid out as PyTorch's unfused path issues it: Q, K
// and V copied into [b·heads, S, D] batches, the scores Q·Kᵀ/√D and the context P·V as strided-batched GEMMs, the
// causal softmax in between (on the host). Biases, GeLU and LayerNorm run on the host.
#include <algorithm>
#include <cmath>

#include "tools/workloads/gpt_model.h"
#include "tools/workloads/gpt_ops.h"

namespace ttrace::workloads::gpt {
namespace {

struct Dims {
  int T, Tx, H, hl, fl, S, b, D, nhl, bh;
  explicit Dims(const Run& r)
      : T(r.T()), Tx(r.Tx()), H(r.cfg.hidden), hl(r.cfg.hidden / r.cfg.tp), fl(r.cfg.ffn() / r.cfg.tp),
        S(r.cfg.seq), b(r.cfg.micro_seqs()), D(r.cfg.head_dim()), nhl(r.cfg.heads / r.cfg.tp), bh(b * nhl) {}
  // Element (token row t = s·b + i, local column j·D + d of one of Q/K/V/context) in the [b·heads, S, D] batches.
  size_t Batched(int s, int i, int j, int d) const { return ((static_cast<size_t>(i) * nhl + j) * S + s) * D + d; }
};

void AddTo(std::vector<float>& acc, const std::vector<float>& v) {
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
}

}  // namespace

std::vector<float> LayerForward(const Run& r, const LayerParams& p, const std::vector<float>& x, LayerCache& c) {
  const Dims n(r);
  const Device& dev = r.dev;
  const bool bf16 = r.cfg.bf16;
  const ncclRedOp_t row_op = r.cfg.bug(Bug::kRowparallelReduceMax) ? ncclMax : ncclSum;

  std::vector<float> y(x.size());
  c.hat1.resize(x.size());
  c.rstd1.resize(n.Tx);
  LayerNorm(x.data(), n.Tx, n.H, p.ln1_g->w.data(), p.ln1_b->w.data(), y.data(), c.hat1.data(), c.rstd1.data());
  DevBuf a1 = EnterTp(r, y, &c.a1);
  DevBuf qkv_d = dev.Alloc(static_cast<size_t>(n.T) * 3 * n.hl);
  dev.MatMul(false, false, n.T, 3 * n.hl, n.H, a1, p.qkv_w->dev, qkv_d);
  const std::vector<float> qkv = dev.Download(qkv_d);
  const size_t batched = static_cast<size_t>(n.bh) * n.S * n.D;
  c.q.resize(batched);
  c.k.resize(batched);
  c.v.resize(batched);
  std::vector<float>* parts[3] = {&c.q, &c.k, &c.v};
  for (int s = 0; s < n.S; ++s)
    for (int i = 0; i < n.b; ++i)
      for (int part = 0; part < 3; ++part)
        for (int col = 0; col < n.hl; ++col) {
          const int lc = part * n.hl + col;
          (*parts[part])[n.Batched(s, i, col / n.D, col % n.D)] =
              Round(qkv[(static_cast<size_t>(s) * n.b + i) * 3 * n.hl + lc] + p.qkv_b->w[lc], bf16);
        }
  DevBuf q = dev.Upload(c.q), k = dev.Upload(c.k), v = dev.Upload(c.v);
  DevBuf scores = dev.Alloc(static_cast<size_t>(n.bh) * n.S * n.S);
  const long long sqk = static_cast<long long>(n.S) * n.D, ss = static_cast<long long>(n.S) * n.S;
  dev.Gemm(false, true, n.S, n.S, n.D, 1.0f / std::sqrt(static_cast<float>(n.D)), q, n.D, sqk, k, n.D, sqk, scores,
           n.S, ss, n.bh);
  c.p = dev.Download(scores);
  // causal-mask-shifted: ranks other than 0 build the mask one position too far, so each token sees the next.
  const int shift = r.cfg.bug(Bug::kCausalMaskShifted) && r.at.rank != 0 ? 1 : 0;
  CausalSoftmax(c.p.data(), n.bh, n.S, shift);
  RoundAll(c.p, bf16);
  DevBuf probs = dev.Upload(c.p), ctx_b = dev.Alloc(batched);
  dev.Gemm(false, false, n.S, n.D, n.S, 1.0f, probs, n.S, ss, v, n.D, sqk, ctx_b, n.D, sqk, n.bh);
  const std::vector<float> ctx = dev.Download(ctx_b);
  c.ctx.resize(static_cast<size_t>(n.T) * n.hl);
  for (int s = 0; s < n.S; ++s)
    for (int i = 0; i < n.b; ++i)
      for (int col = 0; col < n.hl; ++col)
        c.ctx[(static_cast<size_t>(s) * n.b + i) * n.hl + col] = ctx[n.Batched(s, i, col / n.D, col % n.D)];
  DevBuf ctx_d = dev.Upload(c.ctx), o = dev.Alloc(static_cast<size_t>(n.T) * n.H);
  dev.MatMul(false, false, n.T, n.H, n.hl, ctx_d, p.out_w->dev, o);
  const std::vector<float> attn = ExitTp(r, o, row_op);
  std::vector<float> x1(x.size());
  for (size_t e = 0; e < x1.size(); ++e) x1[e] = Round(x[e] + attn[e] + p.out_b->w[e % n.H], bf16);

  c.hat2.resize(x.size());
  c.rstd2.resize(n.Tx);
  LayerNorm(x1.data(), n.Tx, n.H, p.ln2_g->w.data(), p.ln2_b->w.data(), y.data(), c.hat2.data(), c.rstd2.data());
  DevBuf a2 = EnterTp(r, y, &c.a2);
  DevBuf h = dev.Alloc(static_cast<size_t>(n.T) * n.fl);
  dev.MatMul(false, false, n.T, n.fl, n.H, a2, p.fc1_w->dev, h);
  c.h = dev.Download(h);
  c.act.resize(c.h.size());
  for (size_t e = 0; e < c.h.size(); ++e) {
    c.h[e] = Round(c.h[e] + p.fc1_b->w[e % n.fl], bf16);
    c.act[e] = Round(Gelu(c.h[e]), bf16);
  }
  DevBuf act = dev.Upload(c.act), mlp = dev.Alloc(static_cast<size_t>(n.T) * n.H);
  dev.MatMul(false, false, n.T, n.H, n.fl, act, p.fc2_w->dev, mlp);
  const std::vector<float> m = ExitTp(r, mlp, row_op);
  std::vector<float> out(x.size());
  for (size_t e = 0; e < out.size(); ++e) out[e] = Round(x1[e] + m[e] + p.fc2_b->w[e % n.H], bf16);
  return out;
}

std::vector<float> LayerBackward(const Run& r, const LayerParams& p, const std::vector<float>& dy,
                                 const LayerCache& c) {
  const Dims n(r);
  const Device& dev = r.dev;
  const bool bf16 = r.cfg.bf16;
  const size_t rows = static_cast<size_t>(n.T);

  // MLP: row-parallel down projection, GeLU, column-parallel up projection.
  AddColumnSums(dy.data(), n.Tx, n.H, p.fc2_b->g.data());
  DevBuf dmlp = EnterTp(r, dy, nullptr), act = dev.Upload(c.act);
  DevBuf dact = dev.Alloc(rows * n.fl), dw2 = dev.Alloc(static_cast<size_t>(n.fl) * n.H);
  dev.MatMul(false, true, n.T, n.fl, n.H, dmlp, p.fc2_w->dev, dact);
  dev.MatMul(true, false, n.fl, n.H, n.T, act, dmlp, dw2);
  AddTo(p.fc2_w->g, dev.Download(dw2));
  std::vector<float> dh = dev.Download(dact);
  for (size_t e = 0; e < dh.size(); ++e) dh[e] = Round(dh[e] * GeluGrad(c.h[e]), bf16);
  AddColumnSums(dh.data(), n.T, n.fl, p.fc1_b->g.data());
  DevBuf dh_d = dev.Upload(dh), a2 = dev.Upload(c.a2);
  DevBuf da2 = dev.Alloc(rows * n.H), dw1 = dev.Alloc(static_cast<size_t>(n.H) * n.fl);
  dev.MatMul(false, true, n.T, n.H, n.fl, dh_d, p.fc1_w->dev, da2);
  dev.MatMul(true, false, n.H, n.fl, n.T, a2, dh_d, dw1);
  AddTo(p.fc1_w->g, dev.Download(dw1));
  const std::vector<float> dln2 = ExitTp(r, da2, ncclSum);
  std::vector<float> dx1(dy.size());
  LayerNormBackward(dln2.data(), c.hat2.data(), c.rstd2.data(), n.Tx, n.H, p.ln2_g->w.data(), dx1.data(),
                    p.ln2_g->g.data(), p.ln2_b->g.data());
  for (size_t e = 0; e < dx1.size(); ++e) dx1[e] = Round(dx1[e] + dy[e], bf16);

  // Attention: row-parallel output projection, P·V and the scores, column-parallel QKV.
  AddColumnSums(dx1.data(), n.Tx, n.H, p.out_b->g.data());
  DevBuf dout = EnterTp(r, dx1, nullptr), ctx = dev.Upload(c.ctx);
  DevBuf dctx_d = dev.Alloc(rows * n.hl), dwo = dev.Alloc(static_cast<size_t>(n.hl) * n.H);
  dev.MatMul(false, true, n.T, n.hl, n.H, dout, p.out_w->dev, dctx_d);
  dev.MatMul(true, false, n.hl, n.H, n.T, ctx, dout, dwo);
  AddTo(p.out_w->g, dev.Download(dwo));
  const std::vector<float> dctx = dev.Download(dctx_d);
  const size_t batched = static_cast<size_t>(n.bh) * n.S * n.D;
  std::vector<float> dc(batched);
  for (int s = 0; s < n.S; ++s)
    for (int i = 0; i < n.b; ++i)
      for (int col = 0; col < n.hl; ++col)
        dc[n.Batched(s, i, col / n.D, col % n.D)] = dctx[(static_cast<size_t>(s) * n.b + i) * n.hl + col];
  const long long sqk = static_cast<long long>(n.S) * n.D, ss = static_cast<long long>(n.S) * n.S;
  DevBuf dc_d = dev.Upload(dc), v = dev.Upload(c.v), probs = dev.Upload(c.p);
  DevBuf dp_d = dev.Alloc(static_cast<size_t>(n.bh) * n.S * n.S), dv_d = dev.Alloc(batched);
  dev.Gemm(false, true, n.S, n.S, n.D, 1.0f, dc_d, n.D, sqk, v, n.D, sqk, dp_d, n.S, ss, n.bh);
  dev.Gemm(true, false, n.S, n.D, n.S, 1.0f, probs, n.S, ss, dc_d, n.D, sqk, dv_d, n.D, sqk, n.bh);
  const std::vector<float> dprobs = dev.Download(dp_d);
  std::vector<float> ds(dprobs.size());
  SoftmaxBackward(c.p.data(), dprobs.data(), ds.data(), n.bh, n.S);
  DevBuf ds_d = dev.Upload(ds), q = dev.Upload(c.q), k = dev.Upload(c.k);
  DevBuf dq_d = dev.Alloc(batched), dk_d = dev.Alloc(batched);
  const float alpha = 1.0f / std::sqrt(static_cast<float>(n.D));
  dev.Gemm(false, false, n.S, n.D, n.S, alpha, ds_d, n.S, ss, k, n.D, sqk, dq_d, n.D, sqk, n.bh);
  dev.Gemm(true, false, n.S, n.D, n.S, alpha, ds_d, n.S, ss, q, n.D, sqk, dk_d, n.D, sqk, n.bh);
  const std::vector<float> dqkv_parts[3] = {dev.Download(dq_d), dev.Download(dk_d), dev.Download(dv_d)};
  std::vector<float> dqkv(rows * 3 * n.hl);
  for (int s = 0; s < n.S; ++s)
    for (int i = 0; i < n.b; ++i)
      for (int part = 0; part < 3; ++part)
        for (int col = 0; col < n.hl; ++col)
          dqkv[(static_cast<size_t>(s) * n.b + i) * 3 * n.hl + part * n.hl + col] =
              dqkv_parts[part][n.Batched(s, i, col / n.D, col % n.D)];
  AddColumnSums(dqkv.data(), n.T, 3 * n.hl, p.qkv_b->g.data());
  // The key bias stays 0: its exact gradient is 0 (the softmax ignores a shift shared by a row's scores), and Adam
  // would turn the round-off standing in for it into steps of size lr that differ from layout to layout.
  std::fill_n(p.qkv_b->g.begin() + n.hl, n.hl, 0.0f);
  DevBuf dqkv_d = dev.Upload(dqkv), a1 = dev.Upload(c.a1);
  DevBuf da1 = dev.Alloc(rows * n.H), dwqkv = dev.Alloc(static_cast<size_t>(n.H) * 3 * n.hl);
  dev.MatMul(false, true, n.T, n.H, 3 * n.hl, dqkv_d, p.qkv_w->dev, da1);
  dev.MatMul(true, false, n.H, 3 * n.hl, n.T, a1, dqkv_d, dwqkv);
  AddTo(p.qkv_w->g, dev.Download(dwqkv));
  const std::vector<float> dln1 = ExitTp(r, da1, ncclSum);
  std::vector<float> dx(dy.size());
  LayerNormBackward(dln1.data(), c.hat1.data(), c.rstd1.data(), n.Tx, n.H, p.ln1_g->w.data(), dx.data(),
                    p.ln1_g->g.data(), p.ln1_b->g.data());
  for (size_t e = 0; e < dx.size(); ++e) dx[e] = Round(dx[e] + dx1[e], bf16);
  return dx;
}

}  // namespace ttrace::workloads::gpt

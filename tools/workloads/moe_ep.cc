// moe_ep: an expert-parallel mixture-of-experts layer trained the way PyTorch with Megatron-style expert parallelism
// issues it, written against the real CUDA / cuBLAS / NCCL headers and linked to the shared libraries (like
// tp_mlp). It is the workload of tests/moe_diff_e2e_test.cc: a program whose ranks run different layers (experts)
// of identical signatures and exchange tokens with grouped sends and receives, which is not a pipeline.
//
// World W ranks = expert parallel = data parallel: rank r holds experts [r*E/W, (r+1)*E/W) and tokens
// [r*T/W, (r+1)*T/W) of the global batch (drawn by global index, weights initialised in full and then sharded, so
// the one-rank run is the reference of every W). Per step, in row-major math:
//   gate     logits = X·Wg (GEMM); top-1 softmax routing on the host: expert e(t), gate value g(t)
//   counts   ncclAllGather of every rank's per-expert token counts (int32)
//   dispatch an all-to-all as PyTorch's all_to_all_single issues it on NCCL: ncclGroupStart, then ncclSend and
//            ncclRecv for every peer (itself included), ncclGroupEnd; tokens ordered by expert, then by index.
//            --self-chunk copy: the rank's own chunk is copied on the stream (cudaMemcpyAsync) and only the other
//            ranks get sends and receives, as hand-written all-to-alls do (Megatron-LM's and DeepSpeed's
//            expert-parallel dispatchers skip the self transfer); the one-rank run then issues no send at all
//   experts  Z = Xe·W1e, A = relu(Z), Ye = A·W2e for each local expert (GEMMs; an expert with no token is skipped)
//   combine  the reverse all-to-all; y_t = g(t)·out_t; loss = |y - target|² / 2 / tokens
//   backward dOut all-to-all to the experts; dW2e = Aᵀ·dY, dA = dY·W2eᵀ, dW1e = Xeᵀ·dZ; dWg = Xᵀ·dlogits
//   reduce   --loss-mean global: each rank's loss is divided by the global token count, dWg all-reduced with sum.
//            --loss-mean local (default, PyTorch DDP's convention): divided by the rank's own token count, so every
//            gradient is W times the global mean's; the expert gradients are divided by W on the host and dWg is
//            averaged: --grad-reduce avg (default) all-reduces it with ncclAvg, --grad-reduce sum divides it by W
//            first and sums (what DDP's reducer does)
//   update   SGD on the host master weights.
// Element-wise work runs on the host. --perturb SEED: the calibration run of `ttrace diff --calibrate`.
// Bugs (--bug), each inactive on one rank:
//   combine-remote-reversed  the combine puts the rows returned by other ranks back in reverse order
//   gate-grad-max            the gate gradient all-reduced with ncclMax
//   stale-expert             the last rank updates its experts' master weights but never uploads them
//   expert-grad-unscaled     --loss-mean local: the expert gradients are not divided by W
// Output: one line per step from rank 0 (its loss) and one per rank with an FNV-1a hash of its final weights.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"
#include "tools/workloads/workload_util.h"

namespace {

struct Opt {
  int experts = 4, tokens = 64, hidden = 32, ffn = 64, steps = 2;
  bool bf16 = false, global_scale = false, avg = true, self_copy = false;
  float lr = 0.1f;
  uint32_t perturb = 0;
  std::string rdzv, bug;
};

}  // namespace

int main(int argc, char** argv) {
  Opt o;
  ParseFlags(argc, argv,
             "usage: moe_ep [--experts N] [--tokens N] [--hidden N] [--ffn N] [--steps N] [--dtype fp32|bf16] "
             "[--lr X] [--perturb SEED] [--loss-mean local|global] [--grad-reduce avg|sum] "
             "[--self-chunk nccl|copy] [--rdzv DIR] [--bug NAME]\n",
             [&](const std::string& a, const std::string& v) {
               if (a == "--experts") o.experts = std::stoi(v);
               else if (a == "--tokens") o.tokens = std::stoi(v);
               else if (a == "--hidden") o.hidden = std::stoi(v);
               else if (a == "--ffn") o.ffn = std::stoi(v);
               else if (a == "--steps") o.steps = std::stoi(v);
               else if (a == "--dtype") o.bf16 = v == "bf16";
               else if (a == "--lr") o.lr = std::stof(v);
               else if (a == "--perturb") o.perturb = std::stoul(v);
               else if (a == "--loss-mean") o.global_scale = v == "global";
               else if (a == "--grad-reduce") o.avg = v == "avg";
               else if (a == "--self-chunk") o.self_copy = v == "copy";
               else if (a == "--rdzv") o.rdzv = v;
               else if (a == "--bug") o.bug = v;
               else return false;
               return true;
             });
  if (!o.bug.empty() && o.bug != "combine-remote-reversed" && o.bug != "gate-grad-max" && o.bug != "stale-expert" &&
      o.bug != "expert-grad-unscaled")
    Die("--bug", "must be combine-remote-reversed, gate-grad-max, stale-expert or expert-grad-unscaled");
  if (o.rdzv.empty()) Die("--rdzv", "is required");
  const int rank = EnvInt("RANK", 0), W = EnvInt("WORLD_SIZE", 1);
  const int E = o.experts, T = o.tokens, h = o.hidden, f = o.ffn, El = E / W, Tl = T / W, e0 = rank * El;
  if (E % W || T % W) Die("sizes", "W must divide experts and tokens");
  const World world = OpenWorld(o.rdzv, rank, W);
  cudaStream_t s = world.s;
  cublasHandle_t cb = world.cb;
  ncclComm_t comm = world.comm;
  const bool b = o.bf16;
  // Full weights drawn by global index; this rank keeps the gate and its experts.
  Tensor wg = Make(h, E, b);
  for (int i = 0; i < h * E; ++i) wg.host[i] = Hash01(1, i) / std::sqrt((float)h);
  std::vector<Tensor> w1, w2;
  for (int le = 0; le < El; ++le) {
    int e = e0 + le;
    w1.push_back(Make(h, f, b));
    w2.push_back(Make(f, h, b));
    for (int i = 0; i < h * f; ++i) w1[le].host[i] = Hash01(2, (uint64_t)e * h * f + i) / std::sqrt((float)h);
    for (int i = 0; i < f * h; ++i) w2[le].host[i] = Hash01(3, (uint64_t)e * h * f + i) / std::sqrt((float)f);
  }
  Upload(wg, s);
  for (auto& t : w1) Upload(t, s);
  for (auto& t : w2) Upload(t, s);
  Tensor x = Make(Tl, h, b), logits = Make(Tl, E, b), dlogits = Make(Tl, E, b), dwg = Make(h, E, b);
  int *cnt_dev;
  CHECK_CUDA(cudaMalloc(&cnt_dev, sizeof(int) * W * E));
  const size_t es = b ? 2 : 4;
  auto all_to_all = [&](const Tensor& send, const std::vector<int>& scnt, Tensor& recv, const std::vector<int>& rcnt) {
    CHECK_NCCL(ncclGroupStart());
    size_t so = 0, ro = 0;
    for (int p = 0; p < W; ++p) {
      // Empty chunks are skipped, as PyTorch's all_to_all_single skips them.
      if (p == rank && o.self_copy) {
        if (scnt[p] > 0)
          CHECK_CUDA(cudaMemcpyAsync((char*)recv.dev + ro * h * es, (char*)send.dev + so * h * es,
                                     (size_t)scnt[p] * h * es, cudaMemcpyDeviceToDevice, s));
      } else {
        if (scnt[p] > 0)
          CHECK_NCCL(ncclSend((char*)send.dev + so * h * es, (size_t)scnt[p] * h, Nt(send), p, comm, s));
        if (rcnt[p] > 0)
          CHECK_NCCL(ncclRecv((char*)recv.dev + ro * h * es, (size_t)rcnt[p] * h, Nt(recv), p, comm, s));
      }
      so += scnt[p];
      ro += rcnt[p];
    }
    CHECK_NCCL(ncclGroupEnd());
  };
  for (int step = 0; step < o.steps; ++step) {
    std::vector<float> tgt((size_t)Tl * h);
    for (int t = 0; t < Tl; ++t)
      for (int j = 0; j < h; ++j) {
        uint64_t gi = (uint64_t)(rank * Tl + t) * h + j;
        float v = Hash01(100 + step, gi);
        if (o.perturb) v *= 1.0f + (b ? 0x1p-8f : 0x1p-24f) * Hash01(o.perturb * 7919ull + step, gi);
        x.host[(size_t)t * h + j] = v;
        tgt[(size_t)t * h + j] = 0.5f * Hash01(200 + step, gi);
      }
    Upload(x, s);
    MatMul(cb, false, false, x, wg, logits);
    Download(logits, s);
    std::vector<int> ex(Tl);
    std::vector<float> gate(Tl), prob((size_t)Tl * E);
    std::vector<int> cnt(W * E, 0);
    for (int t = 0; t < Tl; ++t) {
      float mx = -1e30f; int am = 0; double z = 0;
      for (int e = 0; e < E; ++e) if (logits.host[t * E + e] > mx) { mx = logits.host[t * E + e]; am = e; }
      for (int e = 0; e < E; ++e) z += std::exp((double)logits.host[t * E + e] - mx);
      for (int e = 0; e < E; ++e) prob[t * E + e] = (float)(std::exp((double)logits.host[t * E + e] - mx) / z);
      ex[t] = am; gate[t] = prob[t * E + am];
      cnt[rank * E + am]++;
    }
    CHECK_CUDA(cudaMemcpy(cnt_dev + rank * E, cnt.data() + rank * E, sizeof(int) * E, cudaMemcpyHostToDevice));
    CHECK_NCCL(ncclAllGather(cnt_dev + rank * E, cnt_dev, E, ncclInt32, comm, s));
    CHECK_CUDA(cudaStreamSynchronize(s));
    CHECK_CUDA(cudaMemcpy(cnt.data(), cnt_dev, sizeof(int) * W * E, cudaMemcpyDeviceToHost));
    // Send order: by expert (hence by destination), then token index.
    std::vector<int> order;
    for (int e = 0; e < E; ++e) for (int t = 0; t < Tl; ++t) if (ex[t] == e) order.push_back(t);
    std::vector<int> scnt(W, 0), rcnt(W, 0);
    for (int e = 0; e < E; ++e) scnt[e / El] += cnt[rank * E + e];
    for (int p = 0; p < W; ++p) for (int le = 0; le < El; ++le) rcnt[p] += cnt[p * E + e0 + le];
    int R = 0; for (int p = 0; p < W; ++p) R += rcnt[p];
    Tensor sendx = Make(Tl, h, b), recvx = Make(R, h, b);
    for (int i = 0; i < Tl; ++i) std::copy_n(&x.host[(size_t)order[i] * h], h, &sendx.host[(size_t)i * h]);
    Upload(sendx, s);
    all_to_all(sendx, scnt, recvx, rcnt);
    Download(recvx, s);
    // Expert inputs: for local expert le, rows from each source p in source order. rowmap[le][k] = row of recvx.
    std::vector<std::vector<int>> rowmap(El);
    {
      int off = 0;
      for (int p = 0; p < W; ++p)
        for (int le = 0; le < El; ++le)
          for (int k = 0; k < cnt[p * E + e0 + le]; ++k) rowmap[le].push_back(off++);
    }
    // rowmap is source-major inside each expert because the loop over p is outermost.
    Tensor outrows = Make(R, h, b);
    std::vector<Tensor> xe(El), z(El), a(El), ye(El);
    for (int le = 0; le < El; ++le) {
      int n = rowmap[le].size();
      xe[le] = Make(n, h, b); z[le] = Make(n, f, b); a[le] = Make(n, f, b); ye[le] = Make(n, h, b);
      for (int k = 0; k < n; ++k) std::copy_n(&recvx.host[(size_t)rowmap[le][k] * h], h, &xe[le].host[(size_t)k * h]);
      if (!n) continue;
      Upload(xe[le], s);
      MatMul(cb, false, false, xe[le], w1[le], z[le]);
      Download(z[le], s);
      for (size_t i = 0; i < z[le].N(); ++i) a[le].host[i] = std::max(z[le].host[i], 0.0f);
      Upload(a[le], s);
      MatMul(cb, false, false, a[le], w2[le], ye[le]);
      Download(ye[le], s);
      for (int k = 0; k < n; ++k) std::copy_n(&ye[le].host[(size_t)k * h], h, &outrows.host[(size_t)rowmap[le][k] * h]);
    }
    Upload(outrows, s);
    Tensor back = Make(Tl, h, b);
    all_to_all(outrows, rcnt, back, scnt);
    Download(back, s);
    // Unpermute: row i of `back` is token order[i]. Bug: rows from remote peers reversed within the peer's block.
    std::vector<float> out((size_t)Tl * h);
    {
      int off = 0;
      for (int p = 0; p < W; ++p) {
        for (int k = 0; k < scnt[p]; ++k) {
          int src = (o.bug == "combine-remote-reversed" && p != rank) ? off + scnt[p] - 1 - k : off + k;
          std::copy_n(&back.host[(size_t)src * h], h, &out[(size_t)order[off + k] * h]);
        }
        off += scnt[p];
      }
    }
    const float inv = 1.0f / (o.global_scale ? T : Tl);
    double loss = 0;
    Tensor dsend = Make(Tl, h, b);
    std::vector<float> dg(Tl, 0.0f);
    for (int t = 0; t < Tl; ++t)
      for (int j = 0; j < h; ++j) {
        float y = gate[t] * out[(size_t)t * h + j], d = y - tgt[(size_t)t * h + j];
        loss += 0.5 * d * d * inv;
        float dy = d * inv;
        dg[t] += dy * out[(size_t)t * h + j];
        out[(size_t)t * h + j] = gate[t] * dy;  // dOut, in token order
      }
    for (int i = 0; i < Tl; ++i) std::copy_n(&out[(size_t)order[i] * h], h, &dsend.host[(size_t)i * h]);
    Upload(dsend, s);
    Tensor drecv = Make(R, h, b);
    all_to_all(dsend, scnt, drecv, rcnt);
    Download(drecv, s);
    std::vector<Tensor> dye(El), dw1(El), dw2(El), da(El);
    for (int le = 0; le < El; ++le) {
      int n = rowmap[le].size();
      dye[le] = Make(n, h, b); da[le] = Make(n, f, b); dw1[le] = Make(h, f, b); dw2[le] = Make(f, h, b);
      if (!n) continue;
      for (int k = 0; k < n; ++k) std::copy_n(&drecv.host[(size_t)rowmap[le][k] * h], h, &dye[le].host[(size_t)k * h]);
      Upload(dye[le], s);
      MatMul(cb, true, false, a[le], dye[le], dw2[le]);
      MatMul(cb, false, true, dye[le], w2[le], da[le]);
      Download(da[le], s);
      for (size_t i = 0; i < da[le].N(); ++i) a[le].host[i] = z[le].host[i] > 0 ? da[le].host[i] : 0.0f;  // dZ
      Upload(a[le], s);
      MatMul(cb, true, false, xe[le], a[le], dw1[le]);
      Download(dw1[le], s);
      Download(dw2[le], s);
    }
    // Gate gradient.
    for (int t = 0; t < Tl; ++t)
      for (int e = 0; e < E; ++e)
        dlogits.host[t * E + e] = dg[t] * gate[t] * ((e == ex[t] ? 1.0f : 0.0f) - prob[t * E + e]);
    Upload(dlogits, s);
    MatMul(cb, true, false, x, dlogits, dwg);
    const float dp_scale = o.global_scale ? 1.0f : 1.0f / W;
    if (dp_scale != 1.0f && !o.avg) {  // --grad-reduce sum: divided before the sum, as DDP's reducer does
      Download(dwg, s);
      for (float& v : dwg.host) v *= dp_scale;
      Upload(dwg, s);
    }
    const ncclRedOp_t op = o.bug == "gate-grad-max" ? ncclMax : (o.avg && !o.global_scale) ? ncclAvg : ncclSum;
    CHECK_NCCL(ncclAllReduce(dwg.dev, dwg.dev, dwg.N(), Nt(dwg), op, comm, s));
    Download(dwg, s);
    const float escale = (o.bug == "expert-grad-unscaled") ? 1.0f : dp_scale;
    for (size_t i = 0; i < wg.N(); ++i) wg.host[i] -= o.lr * dwg.host[i];
    Upload(wg, s);
    for (int le = 0; le < El; ++le) {
      for (size_t i = 0; i < w1[le].N(); ++i) w1[le].host[i] -= o.lr * escale * dw1[le].host[i];
      for (size_t i = 0; i < w2[le].N(); ++i) w2[le].host[i] -= o.lr * escale * dw2[le].host[i];
      if (o.bug == "stale-expert" && rank == W - 1 && rank > 0) continue;  // forgot to copy the update to the GPU
      Upload(w1[le], s);
      Upload(w2[le], s);
    }
    for (auto* v : {&sendx, &recvx, &outrows, &back, &dsend, &drecv}) CHECK_CUDA(cudaFree(v->dev));
    for (auto* vec : {&xe, &z, &a, &ye, &dye, &dw1, &dw2, &da}) for (auto& t : *vec) CHECK_CUDA(cudaFree(t.dev));
    if (rank == 0) printf("step %d loss(rank0) %.6f\n", step, loss);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  uint64_t hsh = Fnv(wg.host);
  for (int le = 0; le < El; ++le) hsh = Fnv(w2[le].host, Fnv(w1[le].host, hsh));
  printf("rank %d weights %016llx\n", rank, (unsigned long long)hsh);
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUBLAS(cublasDestroy(cb));
  return 0;
}

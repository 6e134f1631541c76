// fsdp_mlp: a multi-layer perceptron trained the way PyTorch's FSDP (ZeRO-3) shards it: every rank holds 1/W of
// each layer's flat weight, all-gathers the full weight before the layer's GEMMs, and reduce-scatters the weight
// gradient to its shard. Written against the real CUDA / cuBLAS / NCCL headers and linked to the shared libraries
// (like tp_mlp and moe_ep); the workload of the FsdpDiffE2e cases of tests/moe_diff_e2e_test.cc.
//
// World W ranks = data parallel = the shard group: rank r holds elements [r*h*h/W, (r+1)*h*h/W) of each layer's
// row-major h x h weight and tokens [r*T/W, (r+1)*T/W) of the global batch (drawn by global index, weights
// initialised in full and then sharded, so the one-rank run is the reference of every W). Per step, row-major math:
//   forward  for each layer l: ncclAllGather of the weight shards into the full W_l, then Y_l = X_l·W_l (GEMM),
//            X_{l+1} = relu(Y_l) on the host (none after the last layer); loss = |Y - target|² / 2 / tokens
//   backward for each layer, last first: dW_l = X_lᵀ·dY_l, dX_l = dY_l·W_lᵀ (GEMMs; the gathered weight is kept from
//            the forward pass, or, with --reshard-after-forward, freed after the layer's forward GEMM and
//            all-gathered again before its backward GEMMs, as PyTorch FSDP does by default:
//            reshard_after_forward=True), then ncclReduceScatter of dW_l into the rank's shard of the gradient.
//            --loss-mean local (default, PyTorch's convention): the loss is a mean over the rank's own tokens, so each
//            rank's gradients are W times the global mean's and the reduce-scatter averages (ncclAvg);
//            --loss-mean global: a mean over all tokens, summed (ncclSum)
//   update   SGD on the host master copy of the rank's shards.
// Bugs (--bug), each inactive on rank 0:
//   shard-offset   the last rank's shards are cut from the full weights one row (h elements) past their place
//   shard-of-prev  the last rank's shards are cut at the previous rank's place (both hold the same chunk)
//   grad-summed    --loss-mean local, but the gradients are reduce-scattered with ncclSum: W times too large
//   stale-regather with --reshard-after-forward true: the last rank's backward re-gather of the last layer reads
//                  its shard as it was before the previous step's update (a stale copy): step 0 is clean, step 1's
//                  dX of that layer is wrong
// Output: one line per step from rank 0 (its loss) and one per rank with an FNV-1a hash of its final shards.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "tools/workloads/workload_util.h"

namespace {

struct Opt {
  int layers = 2, tokens = 32, hidden = 32, steps = 2;
  bool bf16 = false, global_mean = false, reshard = false;
  float lr = 0.1f;
  std::string rdzv, bug;
};

}  // namespace

int main(int argc, char** argv) {
  Opt o;
  const std::map<std::string, int*> ints = {
      {"--layers", &o.layers}, {"--tokens", &o.tokens}, {"--hidden", &o.hidden}, {"--steps", &o.steps}};
  const std::map<std::string, std::string*> texts = {{"--rdzv", &o.rdzv}, {"--bug", &o.bug}};
  ParseFlags(argc, argv,
             "usage: fsdp_mlp [--layers N] [--tokens N] [--hidden N] [--steps N] [--dtype fp32|bf16] [--lr X] "
             "[--loss-mean local|global] [--reshard-after-forward true|false] [--rdzv DIR] [--bug NAME]\n",
             [&](const std::string& a, const std::string& v) {
               if (ints.count(a)) *ints.at(a) = std::stoi(v);
               else if (texts.count(a)) *texts.at(a) = v;
               else if (a == "--dtype") o.bf16 = v == "bf16";
               else if (a == "--lr") o.lr = std::stof(v);
               else if (a == "--loss-mean") o.global_mean = v == "global";
               else if (a == "--reshard-after-forward") o.reshard = v == "true";
               else return false;
               return true;
             });
  if (!o.bug.empty() && o.bug != "shard-offset" && o.bug != "shard-of-prev" && o.bug != "grad-summed" &&
      o.bug != "stale-regather")
    Die("--bug", "must be shard-offset, shard-of-prev, grad-summed or stale-regather");
  if (o.bug == "stale-regather" && !o.reshard) Die("--bug stale-regather", "needs --reshard-after-forward true");
  if (o.rdzv.empty()) Die("--rdzv", "is required");
  const int rank = EnvInt("RANK", 0), W = EnvInt("WORLD_SIZE", 1);
  const int L = o.layers, T = o.tokens, h = o.hidden, Tl = T / W, chunk = h * h / W;
  if (T % W || (h * h) % W) Die("sizes", "W must divide tokens and hidden^2");
  const World world = OpenWorld(o.rdzv, rank, W);
  cudaStream_t s = world.s;
  cublasHandle_t cb = world.cb;
  ncclComm_t comm = world.comm;
  const bool b = o.bf16;
  // Full weights drawn by global index; this rank keeps its flat shard of each (one row-major 1 x chunk tensor).
  const bool last = rank == W - 1 && rank > 0;
  const int shift = !last ? 0 : o.bug == "shard-offset" ? h : o.bug == "shard-of-prev" ? -chunk : 0;
  const int offset = rank * chunk + shift;
  std::vector<Tensor> shard, full, grad;
  for (int l = 0; l < L; ++l) {
    shard.push_back(Make(1, chunk, b));
    full.push_back(Make(h, h, b));
    grad.push_back(Make(1, chunk, b));
    for (int i = 0; i < chunk; ++i)
      shard[l].host[i] = Hash01(10 + l, static_cast<uint64_t>((offset + i) % (h * h))) / std::sqrt((float)h);
    Upload(shard[l], s);
  }
  // --bug stale-regather: the last rank's copy of the last layer's shard from before the previous step's update.
  Tensor stale = Make(1, chunk, b);
  stale.host = shard[L - 1].host;
  Upload(stale, s);
  const bool stale_bug = last && o.bug == "stale-regather";
  const bool local = !o.global_mean;
  const ncclRedOp_t reduce = local && o.bug != "grad-summed" ? ncclAvg : ncclSum;
  for (int step = 0; step < o.steps; ++step) {
    std::vector<Tensor> x(L + 1), y(L);
    x[0] = Make(Tl, h, b);
    std::vector<float> tgt((size_t)Tl * h);
    for (int t = 0; t < Tl; ++t)
      for (int j = 0; j < h; ++j) {
        const uint64_t gi = (uint64_t)(rank * Tl + t) * h + j;
        x[0].host[(size_t)t * h + j] = Hash01(100 + step, gi);
        tgt[(size_t)t * h + j] = 0.5f * Hash01(200 + step, gi);
      }
    Upload(x[0], s);
    for (int l = 0; l < L; ++l) {
      CHECK_NCCL(ncclAllGather(shard[l].dev, full[l].dev, chunk, Nt(shard[l]), comm, s));
      y[l] = Make(Tl, h, b);
      MatMul(cb, false, false, x[l], full[l], y[l]);
      Download(y[l], s);
      if (l + 1 == L) break;
      x[l + 1] = Make(Tl, h, b);
      for (size_t i = 0; i < y[l].N(); ++i) x[l + 1].host[i] = std::max(y[l].host[i], 0.0f);
      Upload(x[l + 1], s);
    }
    const float inv = 1.0f / (local ? Tl : T);
    double loss = 0;
    Tensor dy = Make(Tl, h, b);
    for (size_t i = 0; i < dy.N(); ++i) {
      const float d = y[L - 1].host[i] - tgt[i];
      loss += 0.5 * d * d * inv;
      dy.host[i] = d * inv;
    }
    Upload(dy, s);
    for (int l = L - 1; l >= 0; --l) {
      if (o.reshard) {  // the forward's gathered weight was freed: gather it again (FSDP's pre-backward hook)
        CHECK_CUDA(cudaFree(full[l].dev));
        full[l] = Make(h, h, b);
        const Tensor& from = stale_bug && l == L - 1 ? stale : shard[l];
        CHECK_NCCL(ncclAllGather(from.dev, full[l].dev, chunk, Nt(from), comm, s));
      }
      Tensor dw = Make(h, h, b);
      MatMul(cb, true, false, x[l], dy, dw);
      CHECK_NCCL(ncclReduceScatter(dw.dev, grad[l].dev, chunk, Nt(dw), reduce, comm, s));
      if (l > 0) {
        Tensor dx = Make(Tl, h, b);
        MatMul(cb, false, true, dy, full[l], dx);
        Download(dx, s);
        for (size_t i = 0; i < dx.N(); ++i) dx.host[i] = y[l - 1].host[i] > 0 ? dx.host[i] : 0.0f;
        Upload(dx, s);
        CHECK_CUDA(cudaFree(dy.dev));
        dy = dx;
      }
      Download(grad[l], s);
      CHECK_CUDA(cudaFree(dw.dev));
    }
    stale.host = shard[L - 1].host;
    Upload(stale, s);
    for (int l = 0; l < L; ++l) {
      for (int i = 0; i < chunk; ++i) shard[l].host[i] -= o.lr * grad[l].host[i];
      Upload(shard[l], s);
    }
    CHECK_CUDA(cudaFree(dy.dev));
    for (auto* v : {&x, &y})
      for (Tensor& t : *v)
        if (t.dev != nullptr) CHECK_CUDA(cudaFree(t.dev));
    if (rank == 0) printf("step %d loss(rank0) %.6f\n", step, loss);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  uint64_t hsh = 1469598103934665603ull;
  for (int l = 0; l < L; ++l) hsh = Fnv(shard[l].host, hsh);
  printf("rank %d weights %016llx\n", rank, (unsigned long long)hsh);
  CHECK_NCCL(ncclCommDestroy(comm));
  CHECK_CUBLAS(cublasDestroy(cb));
  return 0;
}

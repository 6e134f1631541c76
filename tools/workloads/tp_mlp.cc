// tp_mlp: a small tensor- and data-parallel MLP training loop, written against the real CUDA / cuBLAS / NCCL
// headers and linked to the shared libraries, the way a training framework calls them. It is the workload of
// tools/demo.sh and of the end-to-end tests: it runs on simgpu or on a GPU, under libttrace.so or not.
//
// World = tp * dp ranks (RANK / WORLD_SIZE from the launcher). Rank r is TP rank r % tp of DP group r / tp.
// Per step, with row-major math (X: batch x hidden, W1: hidden x ffn, W2: ffn x hidden):
//   forward   Z1 = X·W1_t (column-parallel, strided-batched over micro-batches), A1 = relu(Z1),
//             P = A1·W2_t (row-parallel), Y = all-reduce_sum_TP(P), loss = |Y - T|² / (2·batch)
//   backward  dW2_t = A1ᵀ·dY, dA1 = dY·W2_tᵀ, dZ1 = dA1 ⊙ [Z1 > 0], dW1_t = Xᵀ·dZ1,
//             dX = all-reduce_sum_TP(dZ1·W1_tᵀ)
//   update    dW = all-reduce_avg_DP(dW) for both shards, then SGD on the host master weights.
// --bias adds biases on the host: b1 to Z1 before the relu (column-parallel: this rank's ffn / tp) and b2 to Y after
// the all-reduce (replicated over TP); db1 and db2 are the column sums of dZ1 and dY, gradients no GEMM computes.
// --grad-reduce bucket reduces the gradients as PyTorch DDP's reducer does instead of one ncclAvg all-reduce each:
// in reverse order of the parameters (W1, b1, W2, b2: db2, dW2, db1, dW1) packed side by side into flat
// buckets (a bucket is closed once it holds --bucket-cap elements or more; 0: one bucket), each bucket divided by
// the DP size and sum-all-reduced, then copied back out.
// Element-wise work runs on the host (this program has no kernels of its own); GEMMs run in --dtype
// (fp32: cublasSgemm_v2, bf16: cublasGemmEx with FP32 compute); the first layer uses cublasGemmStridedBatchedEx.
// Communicators are created with ncclCommInitRank; unique ids travel through files in --rdzv DIR.
// --perturb SEED makes the calibration run of `ttrace diff --calibrate` (docs/diff.md): the reference program with
// its inputs moved by one rounding.
//
// Output: one line per step from rank 0 (loss), and at the end one line per rank with an FNV-1a hash of its
// final weights ("rank R weights HASH"), so runs can be compared bit for bit.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

#include "tools/simgpu/common/nv_dtype.h"
#include "tools/workloads/workload_util.h"

namespace {

struct Options {
  int tp = 2;
  int steps = 3;
  int batch = 16;   // per DP rank, split into `micro` micro-batches
  int micro = 2;
  int hidden = 64;
  int ffn = 128;    // total; each TP rank holds ffn / tp
  bool bf16 = false;
  float lr = 0.05f;
  std::string rdzv;
  std::string bug;         // "": none; grad-scale-twice, wrong-reduce-op, wrong-split, missing-allreduce,
                           // grad-doubled-after-reduce (the DP-averaged weight gradient doubled on every rank),
                           // tp-allreduce-avg (the row-parallel forward all-reduce with ncclAvg, where a sum belongs);
                           // with --grad-reduce bucket: bucket-segment-undivided (dW1 packed without the division),
                           // bucket-offset-off (W1's gradient copied out from where db1, the gradient before it,
                           // starts), bucket-summed-twice (each bucket all-reduced twice), bucket-undivided (no
                           // division: a sum), bucket-divided-wrong (divided by the DP size + 1)
  bool bias = false;
  bool bucket = false;     // --grad-reduce bucket
  int bucket_cap = 0;      // elements; 0: one bucket
  uint32_t perturb = 0;    // nonzero: each input element times (1 + u·r), r uniform in [-1, 1) from this seed
  std::string on_sigterm;  // "": default; "ignore": SIG_IGN; "stop": finish the step and exit 0; "exit7": _exit(7)
};

volatile sig_atomic_t g_stop = 0;
void StopHandler(int) { g_stop = 1; }
void Exit7Handler(int) { _exit(7); }

// What a training script may do with SIGTERM (tests of the shim's close on signals); installed before any CUDA
// call, as a script's own handlers are.
void SetSigterm(const std::string& how) {
  if (how.empty()) return;
  struct sigaction a;
  memset(&a, 0, sizeof a);
  sigemptyset(&a.sa_mask);
  if (how == "ignore") a.sa_handler = SIG_IGN;
  else if (how == "stop") a.sa_handler = StopHandler;
  else if (how == "exit7") a.sa_handler = Exit7Handler;
  else Die("--on-sigterm", "must be ignore, stop or exit7");
  sigaction(SIGTERM, &a, nullptr);
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) Die(a.c_str(), "needs a value");
      return argv[++i];
    };
    if (a == "--tp") o.tp = atoi(next());
    else if (a == "--steps") o.steps = atoi(next());
    else if (a == "--batch") o.batch = atoi(next());
    else if (a == "--micro") o.micro = atoi(next());
    else if (a == "--hidden") o.hidden = atoi(next());
    else if (a == "--ffn") o.ffn = atoi(next());
    else if (a == "--lr") o.lr = static_cast<float>(atof(next()));
    else if (a == "--perturb") o.perturb = static_cast<uint32_t>(strtoul(next(), nullptr, 10));
    else if (a == "--dtype") {
      std::string d = next();
      if (d != "fp32" && d != "bf16") Die("--dtype", "must be fp32 or bf16");
      o.bf16 = d == "bf16";
    } else if (a == "--rdzv") o.rdzv = next();
    else if (a == "--on-sigterm") o.on_sigterm = next();
    else if (a == "--bug") o.bug = next();
    else if (a == "--bias") o.bias = true;
    else if (a == "--bucket-cap") o.bucket_cap = atoi(next());
    else if (a == "--grad-reduce") {
      std::string g = next();
      if (g != "avg" && g != "bucket") Die("--grad-reduce", "must be avg or bucket");
      o.bucket = g == "bucket";
    }
    else {
      fprintf(stderr,
              "usage: tp_mlp [--tp N] [--steps N] [--batch N] [--micro N] [--hidden N] [--ffn N] "
              "[--lr X] [--perturb SEED] [--dtype fp32|bf16] [--rdzv DIR] [--on-sigterm ignore|stop|exit7] [--bias] "
              "[--grad-reduce avg|bucket] [--bucket-cap N] [--bug NAME]\n");
      exit(2);
    }
  }
  const bool bucket_bug = o.bug.rfind("bucket-", 0) == 0;
  constexpr const char* kBugs[] = {"grad-scale-twice", "wrong-reduce-op", "wrong-split", "missing-allreduce",
                                   "grad-doubled-after-reduce", "tp-allreduce-avg", "bucket-segment-undivided",
                                   "bucket-offset-off", "bucket-summed-twice", "bucket-undivided",
                                   "bucket-divided-wrong"};
  if (!o.bug.empty() && std::find(std::begin(kBugs), std::end(kBugs), o.bug) == std::end(kBugs)) {
    std::string why = "must be ";
    for (size_t i = 0; i < std::size(kBugs); ++i)
      why += std::string(i == 0 ? "" : i + 1 == std::size(kBugs) ? " or " : ", ") + kBugs[i];
    Die("--bug", why.c_str());
  }
  if (bucket_bug && !o.bucket) Die("--bug", "the bucket bugs need --grad-reduce bucket");
  if (o.tp < 1 || o.ffn % o.tp != 0 || o.micro < 1 || o.batch % o.micro != 0) Die("options", "inconsistent sizes");
  return o;
}

uint32_t g_lcg = 1;
float Rand() {  // deterministic uniform in [-1, 1)
  g_lcg = g_lcg * 1664525u + 1013904223u;
  return static_cast<float>(g_lcg >> 8) / 8388608.0f - 1.0f;
}

class Blas {
 public:
  Blas(cublasHandle_t h, bool bf16) : h_(h), bf16_(bf16) {}

  // Row-major Y = op(A)·op(B), as cuBLAS's column-major Yᵀ = op(B)ᵀ·op(A)ᵀ on the same buffers.
  void MatMul(bool ta, bool tb, Tensor& a, Tensor& b, Tensor& y) {
    const int k = ta ? a.rows : a.cols;
    const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const float one = 1.0f, zero = 0.0f;
    if (!bf16_) {
      CHECK_CUBLAS(cublasSgemm(h_, opa, opb, y.cols, y.rows, k, &one, static_cast<const float*>(b.dev), b.cols,
                               static_cast<const float*>(a.dev), a.cols, &zero, static_cast<float*>(y.dev),
                               y.cols));
      return;
    }
    CHECK_CUBLAS(cublasGemmEx(h_, opa, opb, y.cols, y.rows, k, &one, b.dev, CUDA_R_16BF, b.cols, a.dev,
                              CUDA_R_16BF, a.cols, &zero, y.dev, CUDA_R_16BF, y.cols, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
  }

  // Row-major Y_i = X_i·W for `micro` equal row blocks X_i of X (W shared: stride 0).
  void MatMulMicro(Tensor& x, Tensor& w, Tensor& y, int micro) {
    const int rows = x.rows / micro;
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType t = bf16_ ? CUDA_R_16BF : CUDA_R_32F;
    CHECK_CUBLAS(cublasGemmStridedBatchedEx(h_, CUBLAS_OP_N, CUBLAS_OP_N, w.cols, rows, w.rows, &one, w.dev, t,
                                            w.cols, 0, x.dev, t, x.cols, static_cast<long long>(rows) * x.cols,
                                            &zero, y.dev, t, y.cols, static_cast<long long>(rows) * y.cols, micro,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

 private:
  cublasHandle_t h_;
  bool bf16_;
};

void AllReduce(Tensor& t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
  CHECK_NCCL(ncclAllReduce(t.dev, t.dev, t.host.size(), t.bf16 ? ncclBfloat16 : ncclFloat32, op, comm, s));
}

// PyTorch DDP's reducer: `grads` (host copies current; empty ones skipped) packed in order into flat buckets, each
// closed once it holds --bucket-cap elements or more, divided by the DP size on the host, uploaded, sum-all-reduced
// on `comm` and copied back into the gradients' host copies. Every rank packs the same gradients in the same order.
void ReduceInBuckets(const Options& o, int dp, ncclComm_t comm, cudaStream_t s, const std::vector<Tensor*>& grads) {
  std::vector<std::vector<Tensor*>> buckets(1);
  size_t filled = 0;
  for (Tensor* g : grads) {
    if (g->N() == 0) continue;
    if (o.bucket_cap > 0 && filled >= static_cast<size_t>(o.bucket_cap)) buckets.emplace_back(), filled = 0;
    buckets.back().push_back(g);
    filled += g->N();
  }
  const float divisor = static_cast<float>(o.bug == "bucket-undivided" ? 1 : dp + (o.bug == "bucket-divided-wrong"));
  for (const std::vector<Tensor*>& members : buckets) {
    size_t n = 0;
    for (const Tensor* g : members) n += g->N();
    Tensor flat = Make(1, static_cast<int>(n), members[0]->bf16);
    size_t at = 0;
    for (const Tensor* g : members) {
      // --bug bucket-segment-undivided: the last gradient packed (dW1) is not divided.
      const float d = o.bug == "bucket-segment-undivided" && g == grads.back() ? 1.0f : divisor;
      for (float v : g->host) flat.host[at++] = v / d;
    }
    Upload(flat, s);
    for (int r = 0; r < (o.bug == "bucket-summed-twice" ? 2 : 1); ++r) AllReduce(flat, ncclSum, comm, s);
    Download(flat, s);
    at = 0;
    for (size_t m = 0; m < members.size(); ++m) {
      Tensor* g = members[m];
      // --bug bucket-offset-off: W1's gradient (the last) read from where the gradient before it starts.
      const size_t from = o.bug == "bucket-offset-off" && g == grads.back() && m > 0 ? at - members[m - 1]->N() : at;
      std::copy_n(flat.host.begin() + static_cast<std::ptrdiff_t>(from), g->N(), g->host.begin());
      at += g->N();
    }
    CHECK_CUDA(cudaFree(flat.dev));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = Parse(argc, argv);
  SetSigterm(o.on_sigterm);
  const int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1);
  if (world % o.tp != 0) Die("--tp", "must divide WORLD_SIZE");
  const int dp = world / o.tp, tp_rank = rank % o.tp, dp_rank = rank / o.tp;
  if (o.rdzv.empty()) {
    const char* run = getenv("TORCHELASTIC_RUN_ID");
    o.rdzv = std::string("/tmp/tp_mlp-") + (run ? run : "local");
  }
  CHECK_CUDA(cudaSetDevice(EnvInt("LOCAL_RANK", 0)));

  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreate(&s));
  cublasHandle_t handle;
  CHECK_CUBLAS(cublasCreate(&handle));
  CHECK_CUBLAS(cublasSetStream(handle, s));
  // ncclCommInitRank returns once every rank of the communicator joined, so its id file can go then.
  ncclComm_t tp_comm, dp_comm;
  const std::string tp_name = "tp" + std::to_string(dp_rank), dp_name = "dp" + std::to_string(tp_rank);
  ncclUniqueId tp_id = Rendezvous(o.rdzv, tp_name, tp_rank == 0);
  CHECK_NCCL(ncclCommInitRank(&tp_comm, o.tp, tp_id, tp_rank));
  if (tp_rank == 0) unlink((o.rdzv + "/" + tp_name).c_str());
  ncclUniqueId dp_id = Rendezvous(o.rdzv, dp_name, dp_rank == 0);
  CHECK_NCCL(ncclCommInitRank(&dp_comm, dp, dp_id, dp_rank));
  if (dp_rank == 0) unlink((o.rdzv + "/" + dp_name).c_str());

  const int f = o.ffn / o.tp, b = o.batch, h = o.hidden;
  Tensor w1 = Make(h, f, o.bf16), w2 = Make(f, h, o.bf16), x = Make(b, h, o.bf16), t = Make(b, h, o.bf16);
  Tensor z1 = Make(b, f, o.bf16), a1 = Make(b, f, o.bf16), y = Make(b, h, o.bf16), dy = Make(b, h, o.bf16);
  Tensor dw1 = Make(h, f, o.bf16), dw2 = Make(f, h, o.bf16), da1 = Make(b, f, o.bf16), dx = Make(b, h, o.bf16);
  Tensor db1 = Make(1, o.bias ? f : 0, o.bf16), db2 = Make(1, o.bias ? h : 0, o.bf16);
  std::vector<float> b1(o.bias ? f : 0, 0.0f), b2(o.bias ? h : 0, 0.0f);
  // Full weights drawn in one order so every TP/DP layout shards the same model; this rank keeps its slice.
  g_lcg = 12345;
  const float s1 = 1.0f / std::sqrt(static_cast<float>(h)), s2 = 1.0f / std::sqrt(static_cast<float>(o.ffn));
  for (int i = 0; i < h; ++i)
    for (int j = 0; j < o.ffn; ++j) {
      float v = Rand() * s1;
      const size_t flat = static_cast<size_t>(i) * o.ffn + j;  // --bug wrong-split: a row block, reshaped
      if (o.bug == "wrong-split" && o.tp > 1) {
        if (flat / w1.host.size() == static_cast<size_t>(tp_rank)) w1.host[flat % w1.host.size()] = v;
      } else if (j / f == tp_rank) {
        w1.host[static_cast<size_t>(i) * f + j % f] = v;
      }
    }
  for (int i = 0; i < o.ffn; ++i)
    for (int j = 0; j < h; ++j) {
      float v = Rand() * s2;
      if (i / f == tp_rank) w2.host[static_cast<size_t>(i % f) * h + j] = v;
    }
  Upload(w1, s);
  Upload(w2, s);
  Blas blas(handle, o.bf16);

  for (int step = 0; step < o.steps && !g_stop; ++step) {
    // The global batch is drawn whatever the layout; this DP rank takes its rows (world size 1 is the reference).
    g_lcg = 777u + 1000u * static_cast<uint32_t>(step);
    std::vector<float> gx(x.host.size() * dp), gt(t.host.size() * dp);
    for (float& v : gx) v = Rand();
    for (float& v : gt) v = 0.5f * Rand();
    if (o.perturb != 0) {
      // --perturb: the calibration run of `ttrace diff --calibrate`, inputs moved by one rounding (u of the GEMM
      // dtype) from an independent stream, so the data and weights drawn above stay those of the reference.
      const uint32_t saved = g_lcg;
      g_lcg = o.perturb + 7919u * static_cast<uint32_t>(step);
      const double u = o.bf16 ? 0x1p-8 : 0x1p-24;
      for (float& v : gx) v = static_cast<float>(v * (1.0 + u * Rand()));
      g_lcg = saved;
    }
    std::copy(gx.begin() + x.host.size() * dp_rank, gx.begin() + x.host.size() * (dp_rank + 1), x.host.begin());
    std::copy(gt.begin() + t.host.size() * dp_rank, gt.begin() + t.host.size() * (dp_rank + 1), t.host.begin());
    Upload(x, s);
    // Forward.
    blas.MatMulMicro(x, w1, z1, o.micro);
    Download(z1, s);
    for (size_t i = 0; i < z1.host.size() && o.bias; ++i) z1.host[i] += b1[i % f];
    for (size_t i = 0; i < z1.host.size(); ++i) a1.host[i] = z1.host[i] > 0 ? z1.host[i] : 0.0f;
    Upload(a1, s);
    blas.MatMul(false, false, a1, w2, y);
    const ncclRedOp_t y_op = o.bug == "wrong-reduce-op" ? ncclMax : o.bug == "tp-allreduce-avg" ? ncclAvg : ncclSum;
    if (o.bug != "missing-allreduce") AllReduce(y, y_op, tp_comm, s);
    Download(y, s);
    for (size_t i = 0; i < y.host.size() && o.bias; ++i) y.host[i] += b2[i % h];
    double loss = 0;
    for (size_t i = 0; i < y.host.size(); ++i) {
      float d = y.host[i] - t.host[i];
      loss += 0.5 * d * d / b;
      dy.host[i] = d / b;
    }
    if (o.bias) {  // db2: the column sums of dY
      std::fill(db2.host.begin(), db2.host.end(), 0.0f);
      for (size_t i = 0; i < dy.host.size(); ++i) db2.host[i % h] += dy.host[i];
      Upload(db2, s);
    }
    Upload(dy, s);
    // Backward.
    blas.MatMul(true, false, a1, dy, dw2);
    blas.MatMul(false, true, dy, w2, da1);
    Download(da1, s);
    const float grad_scale = o.bug == "grad-scale-twice" ? 2.0f : 1.0f;  // scaled by the TP size a second time
    for (size_t i = 0; i < da1.host.size(); ++i) a1.host[i] = z1.host[i] > 0 ? grad_scale * da1.host[i] : 0.0f;  // dZ1
    if (o.bias) {  // db1: the column sums of dZ1
      std::fill(db1.host.begin(), db1.host.end(), 0.0f);
      for (size_t i = 0; i < a1.host.size(); ++i) db1.host[i % f] += a1.host[i];
      Upload(db1, s);
    }
    Upload(a1, s);
    blas.MatMul(true, false, x, a1, dw1);
    blas.MatMul(false, true, a1, w1, dx);
    AllReduce(dx, ncclSum, tp_comm, s);
    // Data-parallel gradient averaging and the update.
    std::vector<float> m1 = w1.host, m2 = w2.host;
    if (o.bucket) {
      Download(dw1, s);
      Download(dw2, s);
      ReduceInBuckets(o, dp, dp_comm, s, {&db2, &dw2, &db1, &dw1});
    } else {
      AllReduce(dw1, ncclAvg, dp_comm, s);
      AllReduce(dw2, ncclAvg, dp_comm, s);
      if (o.bias) AllReduce(db1, ncclAvg, dp_comm, s);
      if (o.bias) AllReduce(db2, ncclAvg, dp_comm, s);
      Download(db1, s);
      Download(dw1, s);
      Download(dw2, s);
      Download(db2, s);
    }
    // --bug grad-doubled-after-reduce: every rank doubles the averaged gradient after the last reduction, so the
    // ranks stay consistent and every captured op computes what its inputs imply; only the weights drift.
    const float update = o.lr * (o.bug == "grad-doubled-after-reduce" ? 2.0f : 1.0f);
    for (size_t i = 0; i < m1.size(); ++i) w1.host[i] = m1[i] - update * dw1.host[i];
    for (size_t i = 0; i < m2.size(); ++i) w2.host[i] = m2[i] - update * dw2.host[i];
    for (size_t i = 0; i < b1.size(); ++i) b1[i] -= update * db1.host[i];
    for (size_t i = 0; i < b2.size(); ++i) b2[i] -= update * db2.host[i];
    Upload(w1, s);
    Upload(w2, s);
    if (rank == 0) printf("step %d loss %.6f\n", step, loss);
  }
  CHECK_CUDA(cudaStreamSynchronize(s));
  printf("rank %d weights %016llx\n", rank,
         static_cast<unsigned long long>(Fnv(w2.host, Fnv(w1.host, 1469598103934665603ull))));
  // Every rank's communicators were up before rank 0's first collective completed, so no one needs the
  // rendezvous directory any more.
  if (rank == 0) rmdir(o.rdzv.c_str());
  CHECK_NCCL(ncclCommDestroy(tp_comm));
  CHECK_NCCL(ncclCommDestroy(dp_comm));
  CHECK_CUBLAS(cublasDestroy(handle));
  CHECK_CUDA(cudaStreamDestroy(s));
  for (Tensor* p : {&w1, &w2, &x, &t, &z1, &a1, &y, &dy, &dw1, &dw2, &da1, &dx, &db1, &db2})
    CHECK_CUDA(cudaFree(p->dev));
  return 0;
}

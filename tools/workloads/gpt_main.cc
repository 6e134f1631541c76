// gpt: a GPT-style language model trained with Megatron-LM's parallel layouts, written against the real CUDA /
// cuBLAS / NCCL headers and linked to the shared libraries. It runs on simgpu or on a GPU, under libttrace.so or
// not, and is the subject of TTrace's differential tests: a run of any layout must end where the world-size-1 run
// of the same --seed ends, and each --bug makes it end elsewhere without any single op computing wrongly.
//
// Model: token embedding + learned positions, --layers pre-LayerNorm transformer layers (causal self-attention
// with --heads heads, MLP 4·hidden with GeLU), final LayerNorm, untied LM head, cross-entropy; Adam (or
// --optimizer sgd: w -= lr·g, under which a gradient's scale reaches the weights) with --warmup steps of linear
// learning-rate warmup (the first steps of Adam move every weight by about lr whatever the size of
// its gradient, so round-off in a near-zero gradient would otherwise decide a whole step), after gradient clipping
// by the global L2 norm as Megatron-LM does by default (--clip-grad X, default 1.0, 0 off: the squares of the
// gradients each rank holds, TP duplicates once, summed and all-reduced over the model-parallel group TP x PP, or
// over every rank with --dist-opt; issued on a group of one too, as torch.distributed does, so the one-rank
// reference has it; gradients scaled by X / (norm + 1e-6) when that is < 1: gpt_train.cc). No dropout, so runs are
// deterministic. GEMMs are cublasGemmEx / cublasGemmStridedBatchedEx (FP32; or --dtype bf16: BF16
// operands, FP32 compute, FP32 master weights and optimizer, static loss scale); everything else on the host.
//
// Layout: WORLD_SIZE = tp · dp · pp; rank = tp_rank + tp · (dp_rank + dp · pp_rank) (Megatron's order: TP
// neighbours adjacent). TP: QKV and MLP-up column-parallel, attention output and MLP-down row-parallel, embedding
// and LM head split over the vocabulary, vocab-parallel cross-entropy. --sp: the residual stream split over TP
// ranks by positions, all-gather before and reduce-scatter after each TP region. DP: the global --batch split over
// DP ranks, gradients all-reduced, or with --dist-opt reduce-scattered and the updated weights all-gathered. PP:
// layers split evenly over stages, --microbatches micro-batches per DP rank, activations forward and gradients
// backward by ncclSend / ncclRecv. --schedule gpipe (default): every micro-batch forward, then every one backward
// (last first); --schedule 1f1b: Megatron-LM's forward_backward_pipelining_without_interleaving (stage s runs
// pp - s - 1 warm-up forwards, then one forward and one backward in turn, then the remaining backwards; the
// transfers that cross, a forward output sent while the matching gradient is received, issued as one NCCL
// group). With one stage 1f1b is Megatron's no-pipelining order (each micro-batch forward then backward). Every
// schedule computes the same sums; only the order in which micro-batch gradients accumulate differs. Communicators: one world communicator met through a file in --rdzv,
// TP, DP, PP and MP (model-parallel: TP x PP of one DP replica) groups split from it.
//
// Bugs (--bug NAME, repeatable), each a miniature of a real class of silent parallelization bug, and where it can
// occur (elsewhere it has no effect and the program says so):
//   sp-layernorm-grad-not-reduced  LayerNorm weight gradients not all-reduced over TP under sequence parallelism,
//                                  each rank keeps the sum over its positions only (Megatron-LM #1446). --sp.
//   replicated-weight-unsynced     the position embedding, replicated over TP, initialized inside the per-TP-rank
//                                  RNG fork, so TP ranks hold different copies that never re-sync (#599). tp > 1.
//   grad-scaled-twice              the TP-replicated weights' gradients divided by tp and then averaged over TP
//                                  by the all-reduce as well: 1/tp² of the sum (#1528). --sp.
//   loss-not-scaled-by-dp          each DP rank's loss is its local mean while the DP reduction sums, so the
//                                  gradient is dp times too large (#673, #906). dp > 1.
//   allgather-wrong-order          all-gathered chunks in the wrong order: the gathers run on a communicator
//                                  whose rank order is the group's rotated by one (split with the wrong key), so
//                                  chunk i comes from rank i + 1. --sp (sequence gathers); --dist-opt with dp > 1
//                                  (the weight all-gather).
//   column-split-wrong-dim         the MLP-up weight's shard cut along rows (a contiguous block) and viewed as the
//                                  column shard. tp > 1.
//   rowparallel-reduce-max         the row-parallel partial products (attention output, MLP-down) reduced with max
//                                  instead of sum. tp > 1.
//   grad-allreduce-on-tp-comm      the data-parallel gradient all-reduce issued on the TP communicator. tp > 1
//                                  (not with --dist-opt).
//   optimizer-before-reduce        rank 0 takes its optimizer step on its local gradient, before the DP reduction.
//                                  dp > 1.
//   embedding-grad-race            on rank tp-1 (stage 0, DP rank 0) the embedding gradient's scatter-add races: the
//                                  first four vocabulary rows hit twice keep only their last contribution. world > 1.
//   causal-mask-shifted            on ranks other than 0 the causal mask lets each position see the next one.
//                                  world > 1.
//   pp-stale-microbatch            a stage after the first computes micro-batch m on the activations received for
//                                  m - 1. pp > 1 with --microbatches ≥ 2.
//
// --perturb SEED (world size 1): the calibration run of `ttrace diff --calibrate`: the embedding output of every
// token moved by one rounding of the dtype, x·(1 + u·ρ), ρ uniform in [-1, 1) from SEED (docs/diff.md).
//
// Output: "step N loss L" per step (from the last stage's first rank); with --dump-weights FILE, rank 0 writes the
// merged checkpoint (every logical weight with its Adam moments, gpt_train.h) and prints "weights fnv HASH" and
// "replica spread S"; with --reference REF also "compare weights_rel=... weights_abs=... state_rel=... global_rel=...
// worst=...": the largest relative Frobenius difference per tensor of the weights and of the Adam moments from
// REF's, the largest absolute weight difference, and the relative difference of all weights as one vector. Adam
// is invariant to a constant scale of a tensor's gradient, so bugs that only scale gradients show in the moments.
// Exit status: 0; 1 when a CUDA / cuBLAS / NCCL call fails; 2 on bad flags.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "tools/workloads/gpt_model.h"
#include "tools/workloads/gpt_train.h"

namespace ttrace::workloads::gpt {
namespace {

struct Flags {
  Config cfg;
  std::string dump, reference, rdzv;
};

[[noreturn]] void Usage(const std::string& why) {
  fprintf(stderr,
          "gpt: %s\nusage: gpt [--tp N] [--dp N] [--pp N] [--sp] [--dist-opt] [--microbatches M]\n"
          "           [--schedule gpipe|1f1b] [--dtype fp32|bf16] [--vocab N] [--hidden N] [--heads N]\n"
          "           [--seq N] [--layers N] [--batch N] [--steps N] [--lr X] [--warmup N] [--loss-scale X]\n"
          "           [--optimizer adam|sgd] [--clip-grad X] [--seed N] [--bug NAME]...\n"
          "           [--dump-weights FILE] [--reference FILE] [--rdzv DIR] [--perturb SEED]\n",
          why.c_str());
  exit(2);
}

int Positive(const std::string& flag, const char* v) {
  char* end = nullptr;
  const long n = strtol(v, &end, 10);
  if (*end != '\0' || n < 1 || n > (1 << 20)) Usage(flag + " needs a positive integer, got '" + v + "'");
  return static_cast<int>(n);
}

Flags Parse(int argc, char** argv) {
  Flags f;
  Config& c = f.cfg;
  bool loss_scale_set = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--tp") c.tp = Positive(a, next());
    else if (a == "--dp") c.dp = Positive(a, next());
    else if (a == "--pp") c.pp = Positive(a, next());
    else if (a == "--sp") c.sp = true;
    else if (a == "--dist-opt") c.dist_opt = true;
    else if (a == "--optimizer") {
      const std::string o = next();
      if (o != "adam" && o != "sgd") Usage("--optimizer must be adam or sgd");
      c.sgd = o == "sgd";
    }
    else if (a == "--microbatches") c.microbatches = Positive(a, next());
    else if (a == "--schedule") {
      const std::string o = next();
      if (o != "gpipe" && o != "1f1b") Usage("--schedule must be gpipe or 1f1b");
      c.one_f_one_b = o == "1f1b";
    }
    else if (a == "--vocab") c.vocab = Positive(a, next());
    else if (a == "--hidden") c.hidden = Positive(a, next());
    else if (a == "--heads") c.heads = Positive(a, next());
    else if (a == "--seq") c.seq = Positive(a, next());
    else if (a == "--layers") c.layers = Positive(a, next());
    else if (a == "--batch") c.batch = Positive(a, next());
    else if (a == "--steps") c.steps = Positive(a, next());
    else if (a == "--warmup") c.warmup = Positive(a, next());
    else if (a == "--seed") c.seed = static_cast<uint32_t>(Positive(a, next()));
    else if (a == "--perturb") c.perturb = static_cast<uint32_t>(Positive(a, next()));
    else if (a == "--lr") c.lr = strtof(next(), nullptr);
    else if (a == "--clip-grad") c.clip_grad = strtof(next(), nullptr);
    else if (a == "--loss-scale") c.loss_scale = strtof(next(), nullptr), loss_scale_set = true;
    else if (a == "--dump-weights") f.dump = next();
    else if (a == "--reference") f.reference = next();
    else if (a == "--rdzv") f.rdzv = next();
    else if (a == "--dtype") {
      const std::string d = next();
      if (d != "fp32" && d != "bf16") Usage("--dtype must be fp32 or bf16");
      c.bf16 = d == "bf16";
    } else if (a == "--bug") {
      const std::string name = next();
      const Bug b = BugByName(name);
      if (b == Bug::kCount) Usage("unknown bug '" + name + "'");
      c.bugs |= 1u << static_cast<int>(b);
    } else {
      Usage("unknown flag '" + a + "'");
    }
  }
  if (!loss_scale_set && c.bf16) c.loss_scale = 1024.0f;
  if (!(c.lr > 0) || !(c.loss_scale > 0)) Usage("--lr and --loss-scale must be positive");
  if (!(c.clip_grad >= 0)) Usage("--clip-grad must be 0 (off) or positive");
  if (c.hidden % c.heads) Usage("--heads must divide --hidden");
  if (c.heads % c.tp || c.vocab % c.tp) Usage("--tp must divide --heads and --vocab");
  if (c.sp && c.tp == 1) Usage("--sp needs --tp > 1");
  if (c.sp && c.seq % c.tp) Usage("--sp needs --tp to divide --seq");
  if (c.layers % c.pp) Usage("--pp must divide --layers");
  if (c.batch % (c.dp * c.microbatches)) Usage("--dp × --microbatches must divide --batch");
  if (!f.reference.empty() && f.dump.empty()) Usage("--reference needs --dump-weights");
  return f;
}

// Why `b` cannot occur in this layout, or nullptr when it can.
const char* Inactive(Bug b, const Config& c) {
  const int world = c.tp * c.dp * c.pp;
  switch (b) {
    case Bug::kSpLayernormGradNotReduced:
    case Bug::kGradScaledTwice:
      return c.sp ? nullptr : "needs --sp";
    case Bug::kGradAllreduceOnTpComm:
      if (c.dist_opt) return "not modelled with --dist-opt";
      [[fallthrough]];
    case Bug::kReplicatedWeightUnsynced:
    case Bug::kColumnSplitWrongDim:
    case Bug::kRowparallelReduceMax:
      return c.tp > 1 ? nullptr : "needs --tp > 1";
    case Bug::kLossNotScaledByDp:
    case Bug::kOptimizerBeforeReduce:
      return c.dp > 1 ? nullptr : "needs --dp > 1";
    case Bug::kAllgatherWrongOrder:
      return c.sp || (c.dist_opt && c.dp > 1) ? nullptr : "needs --sp, or --dist-opt with --dp > 1";
    case Bug::kEmbeddingGradRace:
    case Bug::kCausalMaskShifted:
      return world > 1 ? nullptr : "needs more than one rank";
    case Bug::kPpStaleMicrobatch:
      return c.pp > 1 && c.microbatches > 1 ? nullptr : "needs --pp > 1 and --microbatches > 1";
    case Bug::kCount:
      break;
  }
  return nullptr;
}

int EnvInt(const char* name, int dflt) {
  const char* v = getenv(name);
  return v ? atoi(v) : dflt;
}

int Main(int argc, char** argv) {
  Flags f = Parse(argc, argv);
  const Config& c = f.cfg;
  const int rank = EnvInt("RANK", 0), world = EnvInt("WORLD_SIZE", 1);
  if (world != c.tp * c.dp * c.pp)
    Usage("WORLD_SIZE " + std::to_string(world) + " is not tp × dp × pp = " + std::to_string(c.tp * c.dp * c.pp));
  if (rank < 0 || rank >= world) Usage("RANK out of range");
  for (int b = 0; b < static_cast<int>(Bug::kCount); ++b)
    if (c.bug(static_cast<Bug>(b)) && rank == 0)
      if (const char* why = Inactive(static_cast<Bug>(b), c))
        printf("bug %s inactive in this layout (%s)\n", BugName(static_cast<Bug>(b)), why);
  if (f.rdzv.empty()) {
    const char* run = getenv("TORCHELASTIC_RUN_ID");
    f.rdzv = std::string("/tmp/gpt-") + (run ? run : "local");
  }
  const Layout at = Layout::Of(c, rank);
  Device dev(EnvInt("LOCAL_RANK", 0), c.bf16);
  // Ranks with equal color share a group: TP (same DP rank and stage), DP (same TP rank and stage), PP (same TP
  // and DP rank); ordered by the rank within the group.
  // MP (model parallel: TP x PP, same DP rank) is ordered by the rank within the DP replica.
  const int color[4] = {at.dp_rank + c.dp * at.pp_rank, at.tp_rank + c.tp * at.pp_rank, at.tp_rank + c.tp * at.dp_rank,
                        at.dp_rank};
  const int key[4] = {at.tp_rank, at.dp_rank, at.pp_rank, at.tp_rank + c.tp * at.pp_rank};
  Comms comms = OpenComms(f.rdzv, rank, world, color, key, c.bug(Bug::kAllgatherWrongOrder));
  {
    Model model(c, at);
    Trainer trainer(c, at, dev, comms, model);
    const bool logger = at.pp_rank == c.pp - 1 && at.tp_rank == 0 && at.dp_rank == 0;
    for (int step = 0; step < c.steps; ++step) {
      const double loss = trainer.Step(step);
      if (logger) printf("step %d loss %.6f\n", step, loss);
    }
    if (!f.dump.empty() && trainer.WriteCheckpoint(f.dump)) {
      std::vector<CheckpointTensor> ck;
      if (!ReadCheckpoint(f.dump, &ck)) Die("checkpoint read", f.dump);
      printf("weights fnv %016llx\n", static_cast<unsigned long long>(WeightsHash(ck)));
      if (!f.reference.empty()) {
        std::vector<CheckpointTensor> ref;
        Difference d;
        if (!ReadCheckpoint(f.reference, &ref) || !Compare(ck, ref, &d))
          Usage("--reference " + f.reference + " is not a checkpoint of this model");
        printf("compare weights_rel=%.3e weights_abs=%.3e state_rel=%.3e global_rel=%.3e worst=%s\n",
               d.weights_rel, d.weights_abs, d.state_rel, d.weights_global_rel, d.worst.c_str());
      }
    }
    fflush(stdout);
  }
  CloseComms(comms);
  return 0;
}

}  // namespace
}  // namespace ttrace::workloads::gpt

int main(int argc, char** argv) { return ttrace::workloads::gpt::Main(argc, argv); }

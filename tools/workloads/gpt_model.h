// The gpt workload's model: configuration, the injectable bugs, the parameters (logical tensors and this rank's
// shards of them) and the forward and backward passes of one micro-batch through the embedding, the transformer
// layers and the LM head with its loss, in Megatron-LM's tensor- and sequence-parallel layout.
//
// Activations are row-major [T, H] with the token of position s in sequence i at row s·b + i (Megatron's [s, b, h]
// order), so that a sequence-parallel shard, a contiguous block of rows, is a block of positions.
#ifndef TTRACE_TOOLS_WORKLOADS_GPT_MODEL_H_
#define TTRACE_TOOLS_WORKLOADS_GPT_MODEL_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "tools/workloads/gpt_device.h"

namespace ttrace::workloads::gpt {

// The injectable bugs, named as --bug takes them (see gpt_main.cc for what each does and where it applies).
#define TTRACE_GPT_BUGS(X)                                          \
  X(kSpLayernormGradNotReduced, "sp-layernorm-grad-not-reduced")    \
  X(kReplicatedWeightUnsynced, "replicated-weight-unsynced")        \
  X(kGradScaledTwice, "grad-scaled-twice")                          \
  X(kLossNotScaledByDp, "loss-not-scaled-by-dp")                    \
  X(kAllgatherWrongOrder, "allgather-wrong-order")                  \
  X(kColumnSplitWrongDim, "column-split-wrong-dim")                 \
  X(kRowparallelReduceMax, "rowparallel-reduce-max")                \
  X(kGradAllreduceOnTpComm, "grad-allreduce-on-tp-comm")            \
  X(kOptimizerBeforeReduce, "optimizer-before-reduce")              \
  X(kEmbeddingGradRace, "embedding-grad-race")                      \
  X(kCausalMaskShifted, "causal-mask-shifted")                      \
  X(kPpStaleMicrobatch, "pp-stale-microbatch")

enum class Bug {
#define TTRACE_GPT_BUG_ENUM(id, name) id,
  TTRACE_GPT_BUGS(TTRACE_GPT_BUG_ENUM)
#undef TTRACE_GPT_BUG_ENUM
      kCount
};

const char* BugName(Bug b);
// The bug named `name`, or Bug::kCount when there is none.
Bug BugByName(const std::string& name);

struct Config {
  int vocab = 64, hidden = 32, heads = 4, seq = 16, layers = 2;
  int batch = 8;         // global, in sequences
  int microbatches = 1;  // per DP rank and step
  bool one_f_one_b = false;  // --schedule 1f1b: Megatron-LM's one-forward-one-backward schedule (else GPipe)
  int steps = 3;
  float lr = 5e-3f;
  int warmup = 3;  // steps of linear learning-rate warmup
  float loss_scale = 1.0f;  // static; the gradients are unscaled before the optimizer
  uint32_t seed = 1;
  bool bf16 = false;
  int tp = 1, dp = 1, pp = 1;
  bool sp = false, dist_opt = false;
  bool sgd = false;  // --optimizer sgd: plain SGD (w -= lr·g) instead of Adam
  float clip_grad = 1.0f;  // --clip-grad: the gradients' global L2 norm clipped to this (Megatron's default 1.0); 0 off
  uint32_t bugs = 0;  // bit per Bug
  uint32_t perturb = 0;  // nonzero: the embedding output moved by one rounding (the calibration run of ttrace diff)

  bool bug(Bug b) const { return bugs >> static_cast<int>(b) & 1u; }
  int ffn() const { return 4 * hidden; }
  int head_dim() const { return hidden / heads; }
  int micro_seqs() const { return batch / (dp * microbatches); }
};

// Megatron's rank order: tensor-parallel fastest, then data-parallel, then pipeline stage.
struct Layout {
  int rank = 0, world = 1, tp_rank = 0, dp_rank = 0, pp_rank = 0;
  static Layout Of(const Config& c, int rank);
};

enum class Split { kReplicated, kRows, kCols };

// One logical parameter (row-major rows x cols; vectors are 1 x n) and this rank's shard of it. kCols with
// parts > 1 splits each of `parts` equal column blocks separately (the fused QKV weight: Q, K and V each by heads).
struct Param {
  std::string name;
  int rows = 0, cols = 0;
  Split split = Split::kReplicated;
  int parts = 1;
  bool sp_reduce = false;  // replicated over TP; under SP its gradient is a sum over the sequence shards
  bool layernorm = false;
  bool local = false;  // held by this rank's pipeline stage
  int lrows = 0, lcols = 0;
  std::vector<float> w, g;  // the shard: FP32 master weight, FP32 main gradient
  DevBuf dev;               // the weight's copy in the run's dtype, refreshed after every update

  // Flat logical index of element `local` of TP rank `tp_rank`'s shard.
  size_t LogicalIndex(size_t local, int tp_rank, int tp) const;
};

struct LayerParams {
  Param *ln1_g, *ln1_b, *qkv_w, *qkv_b, *out_w, *out_b, *ln2_g, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
};

class Model {
 public:
  // Every logical parameter, drawn from `c.seed` alone (so every layout holds the same model); this rank keeps
  // its shards of its stage's parameters.
  Model(const Config& c, const Layout& at);
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::vector<Param*> Local();
  void UploadWeights(const Device& dev);

  std::deque<Param> params;  // in a fixed order, the same on every rank
  Param *tok_emb, *pos_emb, *lnf_g, *lnf_b, *head_w;
  std::vector<LayerParams> layers;
  int first_layer = 0, end_layer = 0;  // this stage's layers
  bool first_stage = true, last_stage = true;
};

// What the passes need: the run's settings, this rank, its device and communicators.
struct Run {
  const Config& cfg;
  const Layout& at;
  const Device& dev;
  const Comms& comms;
  int T() const { return cfg.seq * cfg.micro_seqs(); }          // tokens of a micro-batch
  int Tx() const { return cfg.sp ? T() / cfg.tp : T(); }         // rows of the residual stream on this rank
  int RowOffset() const { return cfg.sp ? at.tp_rank * Tx() : 0; }  // first row of this rank's shard
};

struct LayerCache {
  std::vector<float> hat1, rstd1, a1, q, k, v, p, ctx, hat2, rstd2, a2, h, act;
};
struct HeadCache {
  std::vector<float> hat, rstd, a, dlogits;
};

// Entering a tensor-parallel region: under SP the sequence shards are all-gathered; otherwise every rank has all
// rows already. Returns the whole rows on the device and, in `full` when given, their host copy as the device
// holds them.
DevBuf EnterTp(const Run& r, const std::vector<float>& rows, std::vector<float>* full);
// Leaving it: the TP ranks' partial products summed (all-reduce) or, under SP, summed and split into the sequence
// shards (reduce-scatter). Returns this rank's rows.
std::vector<float> ExitTp(const Run& r, DevBuf& partial, ncclRedOp_t op);
// ncclAllGather of `in` from every rank of `g`, in `g`'s rank order (Comms::tp_gather / dp_gather: rotated by one
// under allgather-wrong-order).
DevBuf AllGatherChunks(const Device& dev, const Group& g, const DevBuf& in);

// x: this rank's rows of the residual stream ([Tx, H]); returns the layer's output rows.
std::vector<float> LayerForward(const Run& r, const LayerParams& p, const std::vector<float>& x, LayerCache& c);
// dy: gradient of the output rows; returns the input rows' gradient, adds the weight gradients to p's g.
std::vector<float> LayerBackward(const Run& r, const LayerParams& p, const std::vector<float>& dy,
                                 const LayerCache& c);

// tokens: the micro-batch's T inputs, row order. Returns the residual stream's rows on this rank.
std::vector<float> EmbedForward(const Run& r, const Model& m, const std::vector<int>& tokens);
void EmbedBackward(const Run& r, Model& m, const std::vector<int>& tokens, const std::vector<float>& dx);

// Final LayerNorm, LM head and vocabulary-parallel cross-entropy over the micro-batch; returns the summed loss of
// its T tokens and keeps the logits' gradient (for the loss scaled by `grad_scale`) in c.
double HeadForward(const Run& r, const Model& m, const std::vector<float>& x, const std::vector<int>& targets,
                   float grad_scale, HeadCache& c);
std::vector<float> HeadBackward(const Run& r, Model& m, const HeadCache& c);

}  // namespace ttrace::workloads::gpt

#endif  // TTRACE_TOOLS_WORKLOADS_GPT_MODEL_H_

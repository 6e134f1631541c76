// Megatron-LM's tensor parallelism (Shoeybi et al. 2019; Korthikanti et al. 2022 for sequence parallelism), in
// miniature: QKV and MLP-up are column-parallel (heads and FFN columns split over TP ranks), the attention output
// projection and MLP-down row-parallel (their partial products summed over TP), the embedding and the LM head split
// over the vocabulary. Without SP every TP rank holds all rows of the residual stream and the row-parallel sums are
// all-reduces; with SP each holds a block of positions, all-gathers it on entering a TP region and reduce-scatters
// on leaving, and the weights replicated over TP (LayerNorms, row-parallel biases, positions) get their gradient
// summed over TP ranks afterwards (gpt_train.cc). Everything the device does is rounded to the run's dtype where a
// real framework's tensors would be (the residual stream included), so a layout changes only the order of
// rounding, never what is rounded.
#include "tools/workloads/gpt_model.h"

#include <algorithm>
#include <cmath>

#include "tools/workloads/gpt_ops.h"

namespace ttrace::workloads::gpt {
namespace {

// A uniform value in [-1, 1) for element `index` of parameter `id`: a hash (splitmix64), so a parameter's values
// do not depend on which others a rank draws.
float Uniform(uint64_t seed, uint64_t id, uint64_t index) {
  uint64_t z = seed * 0x9e3779b97f4a7c15ull + (id << 40) + index + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) / 8388608.0f - 1.0f;
}

void AddTo(std::vector<float>& acc, const std::vector<float>& v) {
  for (size_t i = 0; i < acc.size(); ++i) acc[i] += v[i];
}

}  // namespace

DevBuf EnterTp(const Run& r, const std::vector<float>& rows, std::vector<float>* full) {
  DevBuf local = r.dev.Upload(rows);
  if (!r.cfg.sp || r.cfg.tp == 1) {
    if (full) *full = r.dev.Download(local);
    return local;
  }
  DevBuf out = AllGatherChunks(r.dev, r.comms.tp_gather, local);
  if (full) *full = r.dev.Download(out);
  return out;
}

std::vector<float> ExitTp(const Run& r, DevBuf& partial, ncclRedOp_t op) {
  if (r.cfg.tp == 1) return r.dev.Download(partial);
  if (!r.cfg.sp) {
    r.dev.AllReduce(r.comms.tp, partial, op);
    return r.dev.Download(partial);
  }
  DevBuf out = r.dev.Alloc(partial.size() / r.cfg.tp);
  r.dev.ReduceScatter(r.comms.tp, partial, out, op);
  return r.dev.Download(out);
}

DevBuf AllGatherChunks(const Device& dev, const Group& g, const DevBuf& in) {
  DevBuf out(in.size() * g.size, in.bf16());
  dev.AllGather(g, in, out);
  return out;
}

const char* BugName(Bug b) {
  static const char* const kNames[] = {
#define TTRACE_GPT_BUG_NAME(id, name) name,
      TTRACE_GPT_BUGS(TTRACE_GPT_BUG_NAME)
#undef TTRACE_GPT_BUG_NAME
  };
  return kNames[static_cast<int>(b)];
}

Bug BugByName(const std::string& name) {
  for (int i = 0; i < static_cast<int>(Bug::kCount); ++i)
    if (name == BugName(static_cast<Bug>(i))) return static_cast<Bug>(i);
  return Bug::kCount;
}

Layout Layout::Of(const Config& c, int rank) {
  Layout l;
  l.rank = rank;
  l.world = c.tp * c.dp * c.pp;
  l.tp_rank = rank % c.tp;
  l.dp_rank = rank / c.tp % c.dp;
  l.pp_rank = rank / (c.tp * c.dp);
  return l;
}

size_t Param::LogicalIndex(size_t local, int tp_rank, int tp) const {
  switch (split) {
    case Split::kReplicated:
      return local;
    case Split::kRows:
      return static_cast<size_t>(tp_rank) * lrows * cols + local;
    case Split::kCols: {
      const size_t i = local / lcols, j = local % lcols;
      const size_t block = cols / parts, lblock = block / tp;
      return i * cols + j / lblock * block + tp_rank * lblock + j % lblock;
    }
  }
  return local;
}

Model::Model(const Config& c, const Layout& at) {
  const int H = c.hidden, F = c.ffn(), per_stage = c.layers / c.pp;
  first_layer = at.pp_rank * per_stage;
  end_layer = first_layer + per_stage;
  first_stage = at.pp_rank == 0;
  last_stage = at.pp_rank == c.pp - 1;
  const float out_scale = 1.0f / std::sqrt(2.0f * c.layers);  // GPT-2's scaled init of residual projections
  auto add = [&](const std::string& name, int rows, int cols, Split split, int parts, bool local, float base,
                 float scale) {
    Param& p = params.emplace_back();
    const uint64_t id = params.size() - 1;
    p.name = name;
    p.rows = rows;
    p.cols = cols;
    p.split = split;
    p.parts = parts;
    p.sp_reduce = split == Split::kReplicated;
    p.local = local;
    p.lrows = split == Split::kRows ? rows / c.tp : rows;
    p.lcols = split == Split::kCols ? cols / c.tp : cols;
    if (!local) return &p;
    p.w.resize(static_cast<size_t>(p.lrows) * p.lcols);
    p.g.assign(p.w.size(), 0.0f);
    // replicated-weight-unsynced: a replicated weight drawn inside the model-parallel RNG fork, whose seed
    // differs per TP rank, as Megatron's get_cuda_rng_tracker().fork() seeds it.
    const bool unsynced = c.bug(Bug::kReplicatedWeightUnsynced) && name == "pos_emb" && at.tp_rank != 0;
    const uint64_t seed = unsynced ? c.seed + 2718u * static_cast<uint64_t>(at.tp_rank) : c.seed;
    // column-split-wrong-dim: the MLP-up shard cut from the weight along its rows (a contiguous block of the
    // logical tensor) and viewed as the expected [H, F / tp] shard.
    const bool wrong_dim = c.bug(Bug::kColumnSplitWrongDim) && name.find(".fc1_w") != std::string::npos;
    for (size_t i = 0; i < p.w.size(); ++i) {
      const size_t logical = wrong_dim ? at.tp_rank * p.w.size() + i : p.LogicalIndex(i, at.tp_rank, c.tp);
      p.w[i] = base + (scale == 0.0f ? 0.0f : scale * Uniform(seed, id, logical));
    }
    return &p;
  };
  const bool s0 = first_stage, sl = last_stage;
  tok_emb = add("tok_emb", c.vocab, H, Split::kRows, 1, s0, 0.0f, 0.5f);
  pos_emb = add("pos_emb", c.seq, H, Split::kReplicated, 1, s0, 0.0f, 0.2f);
  const float in_scale = 1.0f / std::sqrt(static_cast<float>(H));
  for (int l = 0; l < c.layers; ++l) {
    const bool mine = l >= first_layer && l < end_layer;
    const std::string n = "layer" + std::to_string(l);
    LayerParams lp;
    lp.ln1_g = add(n + ".ln1_g", 1, H, Split::kReplicated, 1, mine, 1.0f, 0.0f);
    lp.ln1_b = add(n + ".ln1_b", 1, H, Split::kReplicated, 1, mine, 0.0f, 0.0f);
    lp.qkv_w = add(n + ".qkv_w", H, 3 * H, Split::kCols, 3, mine, 0.0f, in_scale);
    lp.qkv_b = add(n + ".qkv_b", 1, 3 * H, Split::kCols, 3, mine, 0.0f, 0.0f);
    lp.out_w = add(n + ".out_w", H, H, Split::kRows, 1, mine, 0.0f, in_scale * out_scale);
    lp.out_b = add(n + ".out_b", 1, H, Split::kReplicated, 1, mine, 0.0f, 0.0f);
    lp.ln2_g = add(n + ".ln2_g", 1, H, Split::kReplicated, 1, mine, 1.0f, 0.0f);
    lp.ln2_b = add(n + ".ln2_b", 1, H, Split::kReplicated, 1, mine, 0.0f, 0.0f);
    lp.fc1_w = add(n + ".fc1_w", H, F, Split::kCols, 1, mine, 0.0f, in_scale);
    lp.fc1_b = add(n + ".fc1_b", 1, F, Split::kCols, 1, mine, 0.0f, 0.0f);
    lp.fc2_w = add(n + ".fc2_w", F, H, Split::kRows, 1, mine, 0.0f, out_scale / std::sqrt(static_cast<float>(F)));
    lp.fc2_b = add(n + ".fc2_b", 1, H, Split::kReplicated, 1, mine, 0.0f, 0.0f);
    for (Param* p : {lp.ln1_g, lp.ln1_b, lp.ln2_g, lp.ln2_b}) p->layernorm = true;
    layers.push_back(lp);
  }
  lnf_g = add("lnf_g", 1, H, Split::kReplicated, 1, sl, 1.0f, 0.0f);
  lnf_b = add("lnf_b", 1, H, Split::kReplicated, 1, sl, 0.0f, 0.0f);
  lnf_g->layernorm = lnf_b->layernorm = true;
  head_w = add("head_w", H, c.vocab, Split::kCols, 1, sl, 0.0f, in_scale);
}

std::vector<Param*> Model::Local() {
  std::vector<Param*> out;
  for (Param& p : params)
    if (p.local) out.push_back(&p);
  return out;
}

void Model::UploadWeights(const Device& dev) {
  for (Param* p : Local()) {
    if (p->dev.size() != p->w.size()) p->dev = dev.Alloc(p->w.size());
    dev.UploadTo(p->w, p->dev);
  }
}

std::vector<float> EmbedForward(const Run& r, const Model& m, const std::vector<int>& tokens) {
  const int H = r.cfg.hidden, T = r.T(), Tx = r.Tx(), vl = m.tok_emb->lrows, lo = r.at.tp_rank * vl;
  std::vector<float> part(static_cast<size_t>(T) * H, 0.0f);
  for (int t = 0; t < T; ++t)
    if (tokens[t] >= lo && tokens[t] < lo + vl)
      std::copy_n(&m.tok_emb->w[static_cast<size_t>(tokens[t] - lo) * H], H, &part[static_cast<size_t>(t) * H]);
  DevBuf d = r.dev.Upload(part);
  std::vector<float> x = ExitTp(r, d, ncclSum);
  const int b = r.cfg.micro_seqs();
  for (int t = 0; t < Tx; ++t)
    for (int j = 0; j < H; ++j) {
      float& v = x[static_cast<size_t>(t) * H + j];
      v = Round(v + m.pos_emb->w[static_cast<size_t>((r.RowOffset() + t) / b) * H + j], r.cfg.bf16);
      if (r.cfg.perturb != 0) {
        // --perturb: x·(1 + u·ρ), ρ in [-1, 1) hashed from the seed, the token, its row and the feature.
        uint64_t z = (static_cast<uint64_t>(r.cfg.perturb) << 32) ^
                     (static_cast<uint64_t>(tokens[t]) * 0x9E3779B97F4A7C15ull) ^
                     (static_cast<uint64_t>(r.RowOffset() + t) << 16) ^ static_cast<uint64_t>(j);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        const double rho = static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1p-52 - 1.0;
        v = Round(static_cast<float>(v * (1.0 + (r.cfg.bf16 ? 0x1p-8 : 0x1p-24) * rho)), r.cfg.bf16);
      }
    }
  return x;
}

void EmbedBackward(const Run& r, Model& m, const std::vector<int>& tokens, const std::vector<float>& dx) {
  const int H = r.cfg.hidden, T = r.T(), Tx = r.Tx(), vl = m.tok_emb->lrows, lo = r.at.tp_rank * vl;
  const int b = r.cfg.micro_seqs();
  for (int t = 0; t < Tx; ++t)
    for (int j = 0; j < H; ++j)
      m.pos_emb->g[static_cast<size_t>((r.RowOffset() + t) / b) * H + j] += dx[static_cast<size_t>(t) * H + j];
  std::vector<float> full = dx;
  if (r.cfg.sp && r.cfg.tp > 1) EnterTp(r, dx, &full);
  std::vector<float> acc(m.tok_emb->w.size(), 0.0f), last(acc.size(), 0.0f);
  std::vector<int> count(vl, 0);
  for (int t = 0; t < T; ++t) {
    if (tokens[t] < lo || tokens[t] >= lo + vl) continue;
    const size_t row = tokens[t] - lo;
    ++count[row];
    for (int j = 0; j < H; ++j) {
      acc[row * H + j] += full[static_cast<size_t>(t) * H + j];
      last[row * H + j] = full[static_cast<size_t>(t) * H + j];
    }
  }
  // embedding-grad-race: on one rank the scatter-add is not atomic, and the first four rows hit more than once
  // keep only their last contribution (the others' read-modify-writes were lost).
  if (r.cfg.bug(Bug::kEmbeddingGradRace) && r.at.world > 1 && r.at.rank == r.cfg.tp - 1)
    for (int row = 0, hit = 0; row < vl && hit < 4; ++row)
      if (count[row] >= 2) {
        ++hit;
        std::copy_n(&last[static_cast<size_t>(row) * H], H, &acc[static_cast<size_t>(row) * H]);
      }
  AddTo(m.tok_emb->g, acc);
}

double HeadForward(const Run& r, const Model& m, const std::vector<float>& x, const std::vector<int>& targets,
                   float grad_scale, HeadCache& c) {
  const int H = r.cfg.hidden, T = r.T(), Tx = r.Tx(), vl = m.head_w->lcols, lo = r.at.tp_rank * vl;
  std::vector<float> y(x.size());
  c.hat.resize(x.size());
  c.rstd.resize(Tx);
  LayerNorm(x.data(), Tx, H, m.lnf_g->w.data(), m.lnf_b->w.data(), y.data(), c.hat.data(), c.rstd.data());
  DevBuf a = EnterTp(r, y, &c.a);
  DevBuf logits_d = r.dev.Alloc(static_cast<size_t>(T) * vl);
  r.dev.MatMul(false, false, T, vl, H, a, m.head_w->dev, logits_d);
  const std::vector<float> logits = r.dev.Download(logits_d);
  // Megatron's vocab-parallel cross-entropy: the row maximum, the target's logit and the sum of exponentials,
  // each all-reduced over the TP ranks that hold a slice of the vocabulary.
  std::vector<float> mx(T), tgt(T, 0.0f), se(T, 0.0f);
  for (int t = 0; t < T; ++t) mx[t] = *std::max_element(&logits[static_cast<size_t>(t) * vl], &logits[(t + 1ul) * vl]);
  r.dev.AllReduceHost(r.comms.tp, mx, ncclMax);
  for (int t = 0; t < T; ++t) {
    if (targets[t] >= lo && targets[t] < lo + vl) tgt[t] = logits[static_cast<size_t>(t) * vl + targets[t] - lo] - mx[t];
    for (int v = 0; v < vl; ++v) se[t] += std::exp(logits[static_cast<size_t>(t) * vl + v] - mx[t]);
  }
  r.dev.AllReduceHost(r.comms.tp, tgt, ncclSum);
  r.dev.AllReduceHost(r.comms.tp, se, ncclSum);
  double loss = 0;
  c.dlogits.resize(logits.size());
  for (int t = 0; t < T; ++t) {
    loss += std::log(se[t]) - tgt[t];
    for (int v = 0; v < vl; ++v) {
      const size_t k = static_cast<size_t>(t) * vl + v;
      c.dlogits[k] = (std::exp(logits[k] - mx[t]) / se[t] - (v + lo == targets[t] ? 1.0f : 0.0f)) * grad_scale;
    }
  }
  return loss;
}

std::vector<float> HeadBackward(const Run& r, Model& m, const HeadCache& c) {
  const int H = r.cfg.hidden, T = r.T(), Tx = r.Tx(), vl = m.head_w->lcols;
  DevBuf dl = r.dev.Upload(c.dlogits), a = r.dev.Upload(c.a);
  DevBuf dw = r.dev.Alloc(static_cast<size_t>(H) * vl), da = r.dev.Alloc(static_cast<size_t>(T) * H);
  r.dev.MatMul(true, false, H, vl, T, a, dl, dw);
  r.dev.MatMul(false, true, T, H, vl, dl, m.head_w->dev, da);
  AddTo(m.head_w->g, r.dev.Download(dw));
  const std::vector<float> dy = ExitTp(r, da, ncclSum);
  std::vector<float> dx(dy.size());
  LayerNormBackward(dy.data(), c.hat.data(), c.rstd.data(), Tx, H, m.lnf_g->w.data(), dx.data(), m.lnf_g->g.data(),
                    m.lnf_b->g.data());
  RoundAll(dx, r.cfg.bf16);
  return dx;
}

}  // namespace ttrace::workloads::gpt

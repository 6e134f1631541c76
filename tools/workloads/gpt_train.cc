// Gradient flow of one step, in Megatron-LM's order (finalize_model_grads, then the optimizer):
//   1. under SP, the TP-replicated weights' gradients (LayerNorms, row-parallel biases, positions) all-reduced
//      (sum) over TP: each rank's holds only its block of positions;
//   2. data-parallel reduction of the flat gradient buffer: all-reduce (sum), or with --dist-opt reduce-scatter
//      (sum) so each DP rank gets the slice its optimizer owns. The loss is already scaled by 1 / (tokens of a
//      micro-batch · micro-batches · dp), so a sum is the global mean, as with Megatron's per-token loss;
//   3. unscale (static loss scale);
//   4. --clip-grad C (default 1.0, Megatron's; 0 off): clip_grad_norm_fp32. Each rank sums the squares of the
//      gradients it holds that are not tensor-parallel duplicates (a split parameter's shard on every TP rank, a
//      replicated one on TP rank 0 only; with --dist-opt only its own slice), as one FP32 scalar, and all-reduces it
//      (sum) over the model-parallel group (TP x PP, one DP replica), or with --dist-opt over every rank (the
//      grad-stats group of the distributed optimizer). The all-reduce is issued on a group of one too (world size
//      1: torch.distributed does not skip it), so the reference run has it. norm = sqrt(sum); every gradient is
//      scaled by C / (norm + 1e-6) when that is < 1;
//   5. Adam (β = 0.9, 0.95, ε = 1e-8, bias-corrected; or --optimizer sgd) on the FP32 master weights;
//   6. --dist-opt: the updated slices all-gathered over DP (in FP32, so every replica's master stays identical).
// Checkpoint: each rank writes what it holds with logical positions; for each element one owner counts (DP rank
// 0, TP rank 0 for replicated weights; with --dist-opt the DP rank holding the moments), the other replicas are
// compared with it ("replica spread": a DP or TP replica that drifted is a bug of its own).
#include "tools/workloads/gpt_train.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

namespace ttrace::workloads::gpt {
namespace {

constexpr char kMagic[8] = {'T', 'T', 'G', 'P', 'T', 'C', 'K', '1'};

struct PartRecord {
  uint32_t param, index;
  float w, m, v;
  uint32_t flags;
};
static_assert(sizeof(PartRecord) == 24, "part files are read back with the same layout");
constexpr uint32_t kOwnsWeight = 1, kOwnsState = 2;

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

std::vector<float> FlattenGrads(const std::vector<Param*>& ps, size_t padded) {
  std::vector<float> flat;
  flat.reserve(padded);
  for (const Param* p : ps) flat.insert(flat.end(), p->g.begin(), p->g.end());
  flat.resize(std::max(flat.size(), padded), 0.0f);
  return flat;
}

}  // namespace

Trainer::Trainer(const Config& c, const Layout& at, const Device& dev, const Comms& comms, Model& model)
    : c_(c), at_(at), dev_(dev), comms_(comms), model_(model), run_{c, at, dev, comms} {
  for (const Param* p : model_.Local()) flat_ += p->w.size();
  const size_t shards = c.dist_opt ? c.dp : 1;
  padded_ = (flat_ + shards - 1) / shards * shards;
  begin_ = c.dist_opt ? at.dp_rank * (padded_ / shards) : 0;
  end_ = begin_ + padded_ / shards;
  m_.assign(end_ - begin_, 0.0f);
  v_.assign(end_ - begin_, 0.0f);
  in_norm_.assign(end_ - begin_, 0);
  size_t o = 0;
  for (const Param* p : model_.Local()) {
    const bool counts = p->split != Split::kReplicated || at.tp_rank == 0;
    for (size_t e = 0; e < p->w.size(); ++e, ++o)
      if (o >= begin_ && o < end_) in_norm_[o - begin_] = counts;
  }
  model_.UploadWeights(dev_);
}

void Trainer::MakeBatch(int step, int micro, std::vector<int>& inputs, std::vector<int>& targets) const {
  // Sequences are drawn from (seed, step, global sequence number) alone, so every layout sees the same global batch;
  // DP rank d's micro-batch m holds sequences (m·dp + d)·b ... + b - 1, as Megatron-LM's sampler deals them: the
  // global micro-batch m (the one-rank run's micro-batch m with the same --microbatches) is the DP ranks' micro-batch
  // m side by side, so a run and its reference step through the same sequences in the same order.
  const int b = c_.micro_seqs(), first = (micro * c_.dp + at_.dp_rank) * b;
  inputs.resize(static_cast<size_t>(c_.seq) * b);
  targets.resize(inputs.size());
  for (int i = 0; i < b; ++i) {
    const uint64_t base = Mix(c_.seed * 1000003ull + static_cast<uint64_t>(step) * 7919ull) + (first + i) * 131ull;
    for (int s = 0; s < c_.seq; ++s) {
      inputs[static_cast<size_t>(s) * b + i] = static_cast<int>(Mix(base + s) % c_.vocab);
      targets[static_cast<size_t>(s) * b + i] = static_cast<int>(Mix(base + s + 1) % c_.vocab);
    }
  }
}

double Trainer::Step(int step) {
  for (Param* p : model_.Local()) std::fill(p->g.begin(), p->g.end(), 0.0f);
  const int M = c_.microbatches, rows = run_.Tx() * c_.hidden, layers = model_.end_layer - model_.first_layer;
  const int prev = at_.pp_rank - 1, next = at_.pp_rank + 1;
  // loss-not-scaled-by-dp: each DP rank's loss is its own mean, so the DP sum of gradients is dp times the mean.
  const int dp_divisor = c_.bug(Bug::kLossNotScaledByDp) ? 1 : c_.dp;
  const float grad_scale = c_.loss_scale / (static_cast<float>(run_.T()) * M * dp_divisor);
  std::vector<std::vector<int>> inputs(M), targets(M);
  std::vector<std::vector<LayerCache>> caches(M, std::vector<LayerCache>(layers));
  std::vector<HeadCache> heads(M);
  std::vector<float> last_received;
  double loss = 0;
  // pp-stale-microbatch: the stage computes on the buffer of the previous micro-batch's activations.
  auto take = [&](int m, std::vector<float> received) {
    std::vector<float> x = c_.bug(Bug::kPpStaleMicrobatch) && m > 0 ? last_received : received;
    last_received = std::move(received);
    return x;
  };
  // Micro-batch m's forward through this stage from its received input (unused on the first stage); returns what
  // goes to the next stage (nothing on the last, which computes the loss).
  auto forward = [&](int m, std::vector<float> x) {
    MakeBatch(step, m, inputs[m], targets[m]);
    if (model_.first_stage) x = EmbedForward(run_, model_, inputs[m]);
    for (int l = 0; l < layers; ++l) x = LayerForward(run_, model_.layers[model_.first_layer + l], x, caches[m][l]);
    if (!model_.last_stage) return x;
    loss += HeadForward(run_, model_, x, targets[m], grad_scale, heads[m]);
    return std::vector<float>();
  };
  // Micro-batch m's backward from the gradient received (unused on the last stage); returns what goes to the
  // previous stage (nothing on the first, which accumulates the embedding gradients).
  auto backward = [&](int m, std::vector<float> dx) {
    if (model_.last_stage) dx = HeadBackward(run_, model_, heads[m]);
    for (int l = layers - 1; l >= 0; --l)
      dx = LayerBackward(run_, model_.layers[model_.first_layer + l], dx, caches[m][l]);
    if (!model_.first_stage) return dx;
    EmbedBackward(run_, model_, inputs[m], dx);
    return std::vector<float>();
  };
  auto recv = [&](int peer) {
    DevBuf in = dev_.Alloc(rows);
    dev_.Recv(comms_.pp, in, peer);
    return dev_.Download(in);
  };
  auto send = [&](const std::vector<float>& v, int peer) { dev_.Send(comms_.pp, dev_.Upload(v), peer); };
  auto send_recv = [&](const std::vector<float>& v, int peer) {
    DevBuf in = dev_.Alloc(rows);
    dev_.SendRecv(comms_.pp, dev_.Upload(v), peer, in, peer);
    return dev_.Download(in);
  };
  const bool first = model_.first_stage, last = model_.last_stage;
  if (!c_.one_f_one_b) {  // GPipe: every micro-batch forward, then every one backward, the last first
    for (int m = 0; m < M; ++m) {
      std::vector<float> y = forward(m, first ? std::vector<float>() : take(m, recv(prev)));
      if (!last) send(y, next);
    }
    for (int m = M - 1; m >= 0; --m) {
      std::vector<float> dx = backward(m, last ? std::vector<float>() : recv(next));
      if (!first) send(dx, prev);
    }
  } else {  // 1F1B (Megatron-LM's forward_backward_pipelining_without_interleaving)
    const int warmup = std::min(c_.pp - at_.pp_rank - 1, M), steady = M - warmup;
    for (int m = 0; m < warmup; ++m) send(forward(m, first ? std::vector<float>() : take(m, recv(prev))), next);
    std::vector<float> x;
    if (steady > 0 && !first) x = take(warmup, recv(prev));
    for (int i = 0; i < steady; ++i) {
      const std::vector<float> y = forward(warmup + i, std::move(x));
      // send_forward_recv_backward: the output goes down while micro-batch i's gradient comes back.
      const std::vector<float> dx = backward(i, last ? std::vector<float>() : send_recv(y, next));
      if (first) continue;
      if (i + 1 < steady) x = take(warmup + i + 1, send_recv(dx, prev));  // send_backward_recv_forward
      else send(dx, prev);
    }
    for (int m = steady; m < M; ++m) {  // cool-down: the warm-up micro-batches' backwards
      const std::vector<float> dx = backward(m, recv(next));
      if (!first) send(dx, prev);
    }
  }
  std::vector<float> shard_grad;
  ReduceGradients(shard_grad);
  UnscaleAndClip(shard_grad);
  Adam(step, shard_grad);
  if (!model_.last_stage) return 0;
  std::vector<float> total = {static_cast<float>(loss)};
  dev_.AllReduceHost(comms_.dp, total, ncclSum);  // for the log line only, as Megatron averages its loss
  return total[0] / (static_cast<double>(c_.batch) * c_.seq);
}

void Trainer::ReduceGradients(std::vector<float>& shard_grad) {
  const std::vector<Param*> local = model_.Local();
  if (c_.sp && c_.tp > 1) {
    std::vector<Param*> replicated;
    for (Param* p : local)
      // sp-layernorm-grad-not-reduced: the LayerNorm weights are left out of the TP all-reduce (#1446).
      if (p->sp_reduce && !(p->layernorm && c_.bug(Bug::kSpLayernormGradNotReduced))) replicated.push_back(p);
    std::vector<float> flat = FlattenGrads(replicated, 0);
    ncclRedOp_t op = ncclSum;
    // grad-scaled-twice: the partial gradients divided by tp, then averaged over tp by the all-reduce as well.
    if (c_.bug(Bug::kGradScaledTwice)) {
      for (float& g : flat) g /= static_cast<float>(c_.tp);
      op = ncclAvg;
    }
    dev_.AllReduceHost(comms_.tp, flat, op);
    size_t o = 0;
    for (Param* p : replicated) {
      std::copy_n(flat.begin() + o, p->g.size(), p->g.begin());
      o += p->g.size();
    }
  }
  std::vector<float> flat = FlattenGrads(local, padded_);
  // optimizer-before-reduce: rank 0 steps on its own gradient; the reduction still runs, too late for it.
  const bool early = c_.bug(Bug::kOptimizerBeforeReduce) && c_.dp > 1 && at_.rank == 0;
  const std::vector<float> own = early ? flat : std::vector<float>();
  if (c_.bug(Bug::kGradAllreduceOnTpComm) && c_.tp > 1 && !c_.dist_opt) {
    dev_.AllReduceHost(comms_.tp, flat, ncclSum);  // the communicator handed to DDP was the TP group's
  } else if (c_.dist_opt && c_.dp > 1) {
    DevBuf in = dev_.Upload(flat, /*f32=*/true), out = dev_.Alloc(end_ - begin_, /*f32=*/true);
    dev_.ReduceScatter(comms_.dp, in, out, ncclSum);
    flat = dev_.Download(out);
  } else {
    dev_.AllReduceHost(comms_.dp, flat, ncclSum);
  }
  if (early) {
    shard_grad.assign(own.begin() + begin_, own.begin() + end_);
  } else if (flat.size() == padded_) {
    shard_grad.assign(flat.begin() + begin_, flat.begin() + end_);
  } else {
    shard_grad = std::move(flat);  // the reduce-scatter's slice
  }
}

void Trainer::UnscaleAndClip(std::vector<float>& shard_grad) {
  for (float& g : shard_grad) g /= c_.loss_scale;
  if (c_.clip_grad <= 0) return;
  double sum = 0;
  for (size_t i = 0; i < shard_grad.size(); ++i)
    if (in_norm_[i]) sum += static_cast<double>(shard_grad[i]) * shard_grad[i];
  std::vector<float> norm2 = {static_cast<float>(sum)};
  dev_.AllReduceStat(c_.dist_opt ? comms_.world : comms_.mp, norm2, ncclSum);
  const double coeff = c_.clip_grad / (std::sqrt(static_cast<double>(norm2[0])) + 1e-6);
  if (coeff >= 1.0) return;
  for (float& g : shard_grad) g *= static_cast<float>(coeff);
}

void Trainer::Adam(int step, const std::vector<float>& shard_grad) {
  constexpr float kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f;
  const std::vector<Param*> local = model_.Local();
  std::vector<float> w;
  w.reserve(padded_);
  for (const Param* p : local) w.insert(w.end(), p->w.begin(), p->w.end());
  w.resize(padded_, 0.0f);
  const float c1 = 1.0f - std::pow(kBeta1, static_cast<float>(step + 1));
  const float c2 = 1.0f - std::pow(kBeta2, static_cast<float>(step + 1));
  const float lr = c_.lr * std::min(1.0f, (step + 1.0f) / c_.warmup);
  for (size_t i = 0; i < shard_grad.size(); ++i) {
    const float g = shard_grad[i];
    if (c_.sgd) {
      w[begin_ + i] -= lr * g;
      continue;
    }
    m_[i] = kBeta1 * m_[i] + (1.0f - kBeta1) * g;
    v_[i] = kBeta2 * v_[i] + (1.0f - kBeta2) * g * g;
    w[begin_ + i] -= lr * (m_[i] / c1) / (std::sqrt(v_[i] / c2) + kEps);
  }
  if (c_.dist_opt && c_.dp > 1) {
    const std::vector<float> mine(w.begin() + begin_, w.begin() + end_);
    DevBuf slice = dev_.Upload(mine, /*f32=*/true);
    w = dev_.Download(AllGatherChunks(dev_, comms_.dp_gather, slice));
  }
  size_t o = 0;
  for (Param* p : local) {
    std::copy_n(w.begin() + o, p->w.size(), p->w.begin());
    o += p->w.size();
  }
  model_.UploadWeights(dev_);
}

bool Trainer::WriteCheckpoint(const std::string& file) {
  std::vector<PartRecord> recs;
  size_t flat = 0;
  for (uint32_t id = 0; id < model_.params.size(); ++id) {
    const Param& p = model_.params[id];
    if (!p.local) continue;
    const bool tp_owner = p.split != Split::kReplicated || at_.tp_rank == 0;
    for (size_t i = 0; i < p.w.size(); ++i, ++flat) {
      PartRecord r{id, static_cast<uint32_t>(p.LogicalIndex(i, at_.tp_rank, c_.tp)), p.w[i], 0, 0, 0};
      if (tp_owner && at_.dp_rank == 0) r.flags |= kOwnsWeight;
      if (flat >= begin_ && flat < end_) {
        r.m = m_[flat - begin_];
        r.v = v_[flat - begin_];
        if (tp_owner && (c_.dist_opt || at_.dp_rank == 0)) r.flags |= kOwnsState;
      }
      recs.push_back(r);
    }
  }
  const std::string part = file + ".part-" + std::to_string(at_.rank);
  FILE* f = fopen((part + ".tmp").c_str(), "wb");
  if (!f || fwrite(recs.data(), sizeof(PartRecord), recs.size(), f) != recs.size() || fclose(f) != 0)
    Die("checkpoint write", part);
  if (rename((part + ".tmp").c_str(), part.c_str()) != 0) Die("checkpoint rename", part);
  if (at_.rank != 0) return false;

  std::vector<CheckpointTensor> ck(model_.params.size());
  std::vector<std::vector<uint8_t>> seen(ck.size());
  for (size_t id = 0; id < ck.size(); ++id) {
    const size_t n = static_cast<size_t>(model_.params[id].rows) * model_.params[id].cols;
    ck[id].name = model_.params[id].name;
    ck[id].w.assign(n, 0.0f);
    ck[id].m.assign(n, 0.0f);
    ck[id].v.assign(n, 0.0f);
    seen[id].assign(n, 0);
  }
  std::vector<PartRecord> all;
  for (int r = 0; r < at_.world; ++r) {
    const std::string path = file + ".part-" + std::to_string(r);
    FILE* in = nullptr;
    for (int i = 0; i < 60000 && !(in = fopen(path.c_str(), "rb")); ++i) usleep(1000);
    if (!in) Die("checkpoint merge", "timed out waiting for " + path);
    PartRecord rec;
    while (fread(&rec, sizeof rec, 1, in) == 1) all.push_back(rec);
    fclose(in);
    unlink(path.c_str());
  }
  for (const PartRecord& r : all) {
    if (r.param >= ck.size() || r.index >= ck[r.param].w.size()) Die("checkpoint merge", "record out of range");
    if (r.flags & kOwnsWeight) ck[r.param].w[r.index] = r.w, seen[r.param][r.index] |= kOwnsWeight;
    if (r.flags & kOwnsState)
      ck[r.param].m[r.index] = r.m, ck[r.param].v[r.index] = r.v, seen[r.param][r.index] |= kOwnsState;
  }
  for (size_t id = 0; id < ck.size(); ++id)
    for (uint8_t s : seen[id])
      if (s != (kOwnsWeight | kOwnsState)) Die("checkpoint merge", ck[id].name + " is not covered exactly");
  double spread = 0;
  for (const PartRecord& r : all) spread = std::max(spread, std::fabs(double{r.w} - ck[r.param].w[r.index]));
  printf("replica spread %.3e\n", spread);

  FILE* out = fopen(file.c_str(), "wb");
  if (!out || fwrite(kMagic, 1, sizeof kMagic, out) != sizeof kMagic) Die("checkpoint write", file);
  const uint32_t count = ck.size();
  fwrite(&count, sizeof count, 1, out);
  for (const CheckpointTensor& t : ck) {
    const uint32_t len = t.name.size();
    const uint64_t n = t.w.size();
    fwrite(&len, sizeof len, 1, out);
    fwrite(t.name.data(), 1, len, out);
    fwrite(&n, sizeof n, 1, out);
    for (const std::vector<float>* v : {&t.w, &t.m, &t.v}) fwrite(v->data(), sizeof(float), n, out);
  }
  if (fclose(out) != 0) Die("checkpoint write", file);
  return true;
}

bool ReadCheckpoint(const std::string& file, std::vector<CheckpointTensor>* out) {
  FILE* f = fopen(file.c_str(), "rb");
  if (!f) return false;
  char magic[sizeof kMagic];
  uint32_t count = 0;
  bool ok = fread(magic, 1, sizeof magic, f) == sizeof magic && memcmp(magic, kMagic, sizeof magic) == 0 &&
            fread(&count, sizeof count, 1, f) == 1 && count < (1u << 20);
  out->assign(ok ? count : 0, {});
  for (CheckpointTensor& t : *out) {
    uint32_t len = 0;
    uint64_t n = 0;
    ok = ok && fread(&len, sizeof len, 1, f) == 1 && len < 4096;
    if (!ok) break;
    t.name.resize(len);
    ok = fread(t.name.data(), 1, len, f) == len && fread(&n, sizeof n, 1, f) == 1 && n < (1ull << 32);
    for (std::vector<float>* v : {&t.w, &t.m, &t.v}) {
      if (!ok) break;
      v->resize(n);
      ok = fread(v->data(), sizeof(float), n, f) == n;
    }
  }
  fclose(f);
  return ok;
}

uint64_t WeightsHash(const std::vector<CheckpointTensor>& ck) {
  uint64_t h = 1469598103934665603ull;
  for (const CheckpointTensor& t : ck) {
    const auto* p = reinterpret_cast<const unsigned char*>(t.w.data());
    for (size_t i = 0; i < t.w.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  return h;
}

bool Compare(const std::vector<CheckpointTensor>& a, const std::vector<CheckpointTensor>& ref, Difference* d) {
  if (a.size() != ref.size()) return false;
  double worst = -1, all_diff = 0, all_norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != ref[i].name || a[i].w.size() != ref[i].w.size()) return false;
    const std::vector<float>* got[3] = {&a[i].w, &a[i].m, &a[i].v};
    const std::vector<float>* want[3] = {&ref[i].w, &ref[i].m, &ref[i].v};
    for (int k = 0; k < 3; ++k) {
      double diff = 0, norm = 0;
      for (size_t e = 0; e < got[k]->size(); ++e) {
        const double x = (*got[k])[e], y = (*want[k])[e];
        diff += (x - y) * (x - y);
        norm += y * y;
        if (k == 0) d->weights_abs = std::max(d->weights_abs, std::fabs(x - y));
      }
      if (k == 0) all_diff += diff, all_norm += norm;
      // A tensor that is zero in the reference (e.g. moments of rows no token reached) is compared absolutely.
      const double rel = std::sqrt(diff) / (norm > 0 ? std::sqrt(norm) : 1.0);
      (k == 0 ? d->weights_rel : d->state_rel) = std::max(k == 0 ? d->weights_rel : d->state_rel, rel);
      if (rel > worst) {
        worst = rel;
        d->worst = a[i].name + (k == 0 ? ".w" : k == 1 ? ".adam_m" : ".adam_v");
      }
    }
  }
  d->weights_global_rel = std::sqrt(all_diff / all_norm);
  return true;
}

}  // namespace ttrace::workloads::gpt

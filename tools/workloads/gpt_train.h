// The gpt workload's training step: data, the pipeline schedule over micro-batches (GPipe or 1F1B), the gradient
// reductions (sequence-parallel replicated weights over TP, data-parallel all-reduce or the distributed optimizer's
// reduce-scatter and all-gather), gradient clipping by the global norm, Adam; and the checkpoint every layout writes in the same logical form, so that
// runs of different layouts can be compared element by element.
#ifndef TTRACE_TOOLS_WORKLOADS_GPT_TRAIN_H_
#define TTRACE_TOOLS_WORKLOADS_GPT_TRAIN_H_

#include <string>
#include <vector>

#include "tools/workloads/gpt_model.h"

namespace ttrace::workloads::gpt {

class Trainer {
 public:
  Trainer(const Config& c, const Layout& at, const Device& dev, const Comms& comms, Model& model);

  // One optimizer step over the global batch of step `step`; returns the mean token loss of the global batch
  // (meaningful on the last pipeline stage only).
  double Step(int step);

  // Every rank writes its shards (weights and Adam moments, with their logical positions) to `file`.part-RANK;
  // rank 0 then merges them into `file` and returns true (the others return false at once).
  bool WriteCheckpoint(const std::string& file);

 private:
  void MakeBatch(int step, int micro, std::vector<int>& inputs, std::vector<int>& targets) const;
  void ReduceGradients(std::vector<float>& shard_grad);
  // Unscales the gradients (static loss scale) and, with --clip-grad, clips their global L2 norm.
  void UnscaleAndClip(std::vector<float>& shard_grad);
  void Adam(int step, const std::vector<float>& shard_grad);

  const Config& c_;
  const Layout& at_;
  const Device& dev_;
  const Comms& comms_;
  Model& model_;
  Run run_;
  // The optimizer works on the flat concatenation of this rank's parameters (Model::Local order), padded to a
  // multiple of dp; it owns [begin_, end_) of it (all of it unless --dist-opt).
  size_t flat_ = 0, padded_ = 0, begin_ = 0, end_ = 0;
  // Per element of [begin_, end_): whether it counts in the gradient norm (not a TP duplicate: every TP rank's
  // shard of a split parameter, a replicated one on TP rank 0 only).
  std::vector<uint8_t> in_norm_;
  std::vector<float> m_, v_;  // Adam moments of [begin_, end_)
};

// The merged checkpoint: every logical parameter's weights and Adam moments, in Model order.
struct CheckpointTensor {
  std::string name;
  std::vector<float> w, m, v;
};
bool ReadCheckpoint(const std::string& file, std::vector<CheckpointTensor>* out);
// FNV-1a over the weights' bytes, tensor after tensor.
uint64_t WeightsHash(const std::vector<CheckpointTensor>& ck);

// Largest relative Frobenius difference ‖a − b‖ / ‖b‖ over tensors, for the weights and for the Adam moments, and
// the largest absolute element difference of the weights.
struct Difference {
  double weights_rel = 0, state_rel = 0, weights_abs = 0;
  double weights_global_rel = 0;  // ‖Δ‖ / ‖ref‖ over all weights as one vector
  std::string worst;  // the tensor (and which of w, m, v) with the largest relative difference
};
bool Compare(const std::vector<CheckpointTensor>& a, const std::vector<CheckpointTensor>& ref, Difference* d);

}  // namespace ttrace::workloads::gpt

#endif  // TTRACE_TOOLS_WORKLOADS_GPT_TRAIN_H_

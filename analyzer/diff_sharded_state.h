// The state of one sharded `ttrace diff` (diff_sharded.h), shared by diff_sharded.cc (alignment, GEMMs) and
// diff_sharded_reduce.cc (batched GEMMs, reductions). Internal to the diff library; single-threaded.
#ifndef TTRACE_ANALYZER_DIFF_SHARDED_STATE_H_
#define TTRACE_ANALYZER_DIFF_SHARDED_STATE_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/align.h"
#include "analyzer/diff.h"
#include "analyzer/pipeline.h"
#include "analyzer/shard.h"

namespace ttrace::analyzer::diff_internal {

struct Shard {
  int rank = -1;
  const Op* op = nullptr;
  LogicalGemm g;
  int cm = 0, cn = 0, ck = 0;
};

// A GEMM's merged input operands (divided by the averaging scales found) and their relative errors.
// rel_a and rel_b are the largest over every rank's copy of each block (diff_operands.cc WorstReplicaError),
// at_a and at_b the shards holding the worst copies.
struct MergedInputs {
  const std::vector<double>& a;
  const std::vector<double>& b;
  double sa, sb, rel_a, rel_b;
  OpName at_a, at_b;
};

// Σ over the shards that computed each output element (one per (cm, cn, ck), the lowest rank) of
// |A_s − A_r|·|B_s| + |A_r|·|B_s − B_r| over the shard's own slices (operands divided by sa and sb): exactly
// A_s B_s − A_r B_r shard by shard, so ranks that hold different copies of an operand block (data-parallel
// replicas whose weights drifted apart) are judged on their own inputs. Full m x n, column-major.
std::vector<double> PropagationTerms(const LogicalGemm& r, const std::vector<Shard>& shards, const GemmSplit& split,
                                     double sa, double sb);
// The relative Frobenius error of operand A (or B) against the reference's, taking per block the worst of the
// ranks that hold a copy of it; `at` is set to the shard with the largest block error.
double WorstReplicaError(const LogicalGemm& r, const std::vector<Shard>& shards, const GemmSplit& split,
                         bool operand_a, double scale, const Shard** at);

// How an input operand is judged: relative Frobenius error against `tau` (model diff.between or diff.calibrated).
struct OperandJudge {
  double tau = 0, eps = 0;
  std::string model, why, detail;
};

// What a linked all-reduce needs from its GEMM, over the full m x n output.
struct GemmOutcome {
  GemmSplit split;
  int64_t m = 0, n = 0, bm = 0, bn = 0;
  double scale = 1;
  std::vector<double> bound, abs_partials, partial_sum, ref_c;
  OpName name;
};

struct Link {
  int64_t gemm_ref = -1;
  const Op* gemm = nullptr;
  bool same_data = false;  // linked by data: its input is the GEMM's output, bitwise or `divided`
  bool divided = false;    // its input is the GEMM's output divided by the comm size (IsDividedCopy): a sum of them
                           // is an average taken as divide-then-sum
};

// One candidate reduction's share of a reference GEMM's output: received elements [offset, offset + length) reduce
// `gemm`'s output (the whole output for a reduction linked to its GEMM, one segment of a gradient bucket).
struct ReducePart {
  int rank = -1;
  const Op* op = nullptr;  // the all-reduce or reduce-scatter
  const Op* gemm = nullptr;
  bool same_data = false;  // as Link
  bool divided = false;
  size_t offset = 0, length = 0;
};

// A reduction judged against the reference (Sharded::ReduceAgainst); not_checked says why it could not be.
struct ReduceOutcome {
  std::string not_checked;
  ElementStats stats;
  double rel = 0, eps = 0;
  bool scatter = false;
  OpName name;
  std::string detail;
  std::string plain;  // what the wrong result is, when a scale explains it ("the result is 2 x the reference's: ...")
};

// An all-reduce or reduce-scatter: a collective that may sum a GEMM's partial outputs.
bool IsOutputReduction(const Op& op);

class Sharded {
 public:
  Sharded(const TraceSet& ref, const TraceSet& cand, const DiffOptions& o, DiffResult* out)
      : ref_(ref), cand_(cand), opt_(o), out_(out), comms_(cand) {
    for (const RankTrace& r : cand.ranks)
      for (uint64_t h : comms_.CommsOf(r.rank()))
        if (comms_.SizeOf(h) > 1 && std::find(sizes_.begin(), sizes_.end(), comms_.SizeOf(h)) == sizes_.end())
          sizes_.push_back(comms_.SizeOf(h));
    out_->calibration.used = o.calibration != nullptr;
    out_->calibration.multiple = o.calibration_multiple;
  }
  void Run();

 private:
  std::vector<std::pair<int, const Op*>> ShardsOf(size_t i) const;
  bool IsLinked(size_t i) const;  // whether some candidate op aligned with reference op i is linked to a GEMM
  void CompareGemm(size_t i, const Op& rop);
  void CompareBatched(size_t i, const Op& rop);
  // The all-reduce `shards` (one per candidate rank) that sum a GEMM's partial outputs, against the reference
  // all-reduce `rop`, or, with `ref_c`, against the reference GEMM `rop`'s output (a one-rank reference has no
  // all-reduce there).
  void CompareReduce(const std::vector<std::pair<int, const Op*>>& shards, const Op& rop,
                     const std::vector<double>* ref_c);
  void CompareUnalignedReductions(size_t i, const Op& rop);
  // The merged received values of `parts` (their coordinates in reference GEMM g's split) against `ref`, the
  // reference's reduced output of g (`ref_is_gemm`: the GEMM's output, the reference has no reduction there). The
  // bound is the GEMM's (outcomes_) plus the reduction's: reduce.deterministic, or divide-then-sum when every part's
  // input is its GEMM's output divided by the comm size. Element x is counted as index_at + x. The received values
  // are compared at the scale a right reduction gives (on a data-parallel communicator, dp_comms_: the gradient of
  // the whole batch's loss, its partials' averaging scale taken away; otherwise the partials' sum at their scale),
  // whatever reduction op the run used, so a sum where an average belongs, or the reverse, is found here.
  ReduceOutcome ReduceAgainst(int64_t g, const std::vector<ReducePart>& parts, const Op& rop,
                              const std::vector<double>& ref, bool ref_is_gemm, size_t index_at = 0);
  void ReportReduce(const Op& rop, const ReduceOutcome& o);
  // An inside finding at a reduction's output `at` when `stats` has violations ("`plain`; ... beyond `bound`"), else
  // `name` becomes the last matching op.
  void FindInsideRecv(const Op& rop, const OpName& at, const OpName& name, double rel, double eps,
                      const ElementStats& stats, const std::string& bound, const std::string& detail,
                      const std::string& plain = "");
  // The communicators of `split` as the ranks of `shards` see them: the first split a communicator is seen in tells
  // its role. One that splits n (the batch rows, or tokens, of Y = X·W in cuBLAS's column-major view) holds
  // different rows of the batch on its ranks: data parallelism, whose gradients may carry its size (each rank's loss
  // a mean over its own rows) and whose reductions take it away (dp_comms_, scales_); one that splits m or k first
  // (features: tensor parallelism) carries no scale.
  void NoteSplit(const GemmSplit& split, const std::vector<Shard>& shards);
  // A data-parallel gradient bucket of the one-rank reference (`rop`, index i) whose candidate buckets hold TP
  // shards of its gradients (other counts): each reference segment (a GEMM output, RecentGemmSegments) is compared
  // with the candidate segments that are shards of the same GEMM's output, merged over their (cm, cn) coordinates
  // (ReduceAgainst), and the bucket is counted once, its worst segment reported. False, reporting nothing, when a
  // reference segment has no complete set of candidate segments (the bucket is then folded).
  bool CompareBucket(size_t i, const Op& rop);
  // A reference all-reduce (one rank) that no aligned GEMM feeds: a value the host computed, e.g. the squared
  // gradient norm of gradient clipping. Each candidate call aligned with it (its members on every rank: equal
  // comm_hash and comm_op_index) is judged by the exact sum of its inputs against the reference's input (between:
  // diff.between, operand send; not calibrated) and by its output against the reference's output (inside:
  // diff.propagation, |y − y_r| ≤ |Σx − x_r| + the reduce.deterministic bound of the candidate's reduction).
  void CompareValueReduce(size_t i, const Op& rop);
  void LinkOutputs(size_t i, const std::vector<Shard>& shards);
  // Ranks that run different layers of identical signatures unsplit (the experts of an expert-parallel layer) may be
  // aligned with another rank's layer in the reference, leaving their own unaligned. For each reference GEMM left
  // unaligned, a candidate GEMM of the identical signature aligned within max_gap of it moves there when its
  // operands A and B match it at least 4 times better (sum of relative Frobenius errors, any communicator's size
  // allowed as a scale: it runs before any split, so before any data-parallel communicator, is known).
  void RepairByContent();
  // diff_operands.cc: judges the merged inputs of reference GEMM i (diff.between / diff.calibrated), at the
  // all-gather that produced an operand when there is one; true when an input diverged.
  bool JudgeOperands(size_t i, const Op& rop, const LogicalGemm& r, const std::vector<Shard>& shards,
                     const GemmSplit& split, const MergedInputs& in, const OpName& name, const std::string& detail);
  const Op* GatherFeeding(const Shard& s, bool operand_a) const;
  // A GEMM with β ≠ 0 (C = αAB + βC0, e.g. a weight gradient accumulated into its main gradient): `beta_c0` is
  // Σ over the shards of β_s·C0_s, merged over the full output like C (summed over k slices: each data-parallel
  // rank accumulates its own partial gradient). Judges it as input C0 against β_r·C0_r (diff.between) unless
  // `between` already holds, and adds the exact |Σβ_s·C0_s − β_r·C0_r| to `bound`. Returns `between`, or true
  // when C0 diverged.
  bool JudgeAccumulator(const Op& rop, const LogicalGemm& r, const std::vector<double>& beta_c0, const OpName& name,
                        const std::string& detail, bool between, std::vector<double>* bound);
  // Compares the all-gathers producing operand A or B of `shards` with the reference's operand; reports the first
  // that diverges when `diverged` (the merged operand did). True when it reported.
  bool JudgeGathers(const Op& rop, const std::vector<Shard>& shards, const GemmSplit& split, bool operand_a,
                    const GemmShape& rshape, const std::vector<double>& ref_full, double scale,
                    const OperandJudge& judge, bool diverged);
  // When the shard whose operand A (or B) differs most from the reference lies, as stored, in the output of an
  // all-gather issued earlier on its rank (a distributed optimizer's weight gather, copied into the parameters
  // and rounded to the operand's type before the GEMM reads them), reports the divergence at that all-gather:
  // inside when the reference's values are in another chunk of its output, else between at its input. True when
  // it reported.
  bool JudgeContainingGather(const Op& rop, const std::vector<Shard>& shards, const GemmSplit& split,
                             bool operand_a, const std::vector<double>& ref_full, double scale,
                             const OperandJudge& judge);
  // Reports a divergence at candidate op `op`, aligned with reference op `rop`; `ref_role` follows "reference seq
  // N" in the message when `rop` is not the op's own counterpart (", which reads its output").
  void Find(const std::string& check, const OpName& op, const Op& rop, const std::string& operand,
            const std::string& kind, double rel, double abs, double eps, double ratio, double threshold,
            const std::string& model,
            const std::string& message, const std::string& detail, const std::string& ref_role = "");
  // The reference op aligned with candidate op `op` of `rank`, nullptr when none.
  const Op* RefOf(int rank, const Op* op) const;
  // "comm rank C (rank R)": the candidate rank that is member C of the collective's communicator.
  std::string CommRankText(const Op& collective, size_t comm_rank) const;
  double BestScale(const std::vector<double>& x, const std::vector<double>& r, double* rel) const;
  void NoteCalibrated(const OpName& op, double ratio, double err_eps);

  const TraceSet& ref_;
  const TraceSet& cand_;
  const DiffOptions& opt_;
  DiffResult* out_;
  CheckReport& rep() { return out_->report; }
  CommLayout comms_;
  std::vector<double> scales_;  // the sizes of dp_comms_: the scales a gradient operand may carry
  std::vector<double> sizes_;   // every communicator's size > 1 (RepairByContent pairs ops before any split is known)
  std::set<uint64_t> dp_comms_, roled_;  // data-parallel communicators; communicators whose role is known
  PipelineLayout pipeline_;
  std::vector<RankAlignment> align_;  // per candidate rank index
  std::map<size_t, GemmOutcome> outcomes_;
  std::map<std::pair<int, const Op*>, Link> links_;
  std::set<const Op*> compared_;  // unaligned candidate collectives compared with a reference GEMM's output
  std::map<const Op*, std::vector<double>> gathered_;  // decoded all-gather outputs (JudgeContainingGather)
  // Candidate all-reduces by (comm_hash, comm_op_index): one call's members on every rank (CompareValueReduce).
  std::map<std::pair<uint64_t, uint64_t>, std::vector<std::pair<int, const Op*>>> calls_;
  double max_out_rel_ = 0;
  bool has_last_ = false;
  OpName last_;
};

}  // namespace ttrace::analyzer::diff_internal

#endif  // TTRACE_ANALYZER_DIFF_SHARDED_STATE_H_

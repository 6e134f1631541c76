// The gpt workload on simgpu (no shim): its parallel layouts compute what the one-rank reference computes, and
// each of its --bug switches makes the run end measurably elsewhere. tools/gpt_matrix.sh runs the whole matrix;
// this is the subset that fits a CI budget (about 30 s on 2 cores).
//
// Tolerances, on the checkpoint after 3 Adam steps (relative Frobenius difference per tensor, gpt_main.cc), and
// the model behind them:
// - FP32: every op rounds at 2^-24 and the layouts only reorder sums (GEMM partial products, TP and DP
//   reductions, micro-batch accumulation); over the model's depth that is a few hundred ulps. The whole matrix
//   measures ≤ 1.7e-6; the bound 1e-4 leaves almost two orders of magnitude and is three below every bug.
// - BF16: activations, GEMM outputs and the row-parallel partial sums are rounded at 2^-9 at different points in
//   different layouts, so gradients differ by about 1%; Adam divides by the gradient's own size, so in elements
//   whose gradient is near zero a 1% difference can become one of size lr·step (zero-initialized biases show this
//   most). Measured over the matrix: moments ≤ 0.03, weights ≤ 0.08. Bounds: moments 0.06, weights 0.2.
// A bug counts as caught when one of the two differences exceeds three times its bound.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"

namespace ttrace {
namespace {

struct Result {
  int exit_code = -1;
  std::string output;
  double weights_rel = -1, state_rel = -1;
  std::string hash;
};

std::string Dir() { return ttrace::test_support::TestScratchDir(); }

// Runs gpt on `world` simgpu ranks; `name` keeps its files apart. With `reference`, parses the comparison.
Result RunGpt(const std::string& name, int world, const std::string& args, const std::string& reference = "") {
  const std::string b = TTRACE_BUILD_DIR, d = Dir();
  std::string cmd = "env LD_LIBRARY_PATH=" + b + "/simgpu/lib " + b + "/bin/simrun -n " + std::to_string(world) +
                    " -- " + b + "/bin/gpt " + args + " --rdzv '" + d + "/" + name + ".rdzv' --dump-weights '" + d +
                    "/" + name + ".ck'";
  if (!reference.empty()) cmd += " --reference '" + d + "/" + reference + ".ck'";
  Result r;
  FILE* p = popen(("(" + cmd + ") 2>&1").c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  char hash[32];
  if (const char* at = strstr(r.output.c_str(), "weights fnv "); at && sscanf(at, "weights fnv %31s", hash) == 1)
    r.hash = hash;
  if (const char* at = strstr(r.output.c_str(), "compare "))
    sscanf(at, "compare weights_rel=%lf weights_abs=%*f state_rel=%lf", &r.weights_rel, &r.state_rel);
  return r;
}

struct Bounds {
  double weights, state;
};
Bounds BoundsFor(const std::string& dtype) { return dtype == "bf16" ? Bounds{0.2, 0.06} : Bounds{1e-4, 1e-4}; }

class GptWorkload : public ::testing::TestWithParam<std::string> {
 protected:
  // The one-rank reference of this dtype, made once per test.
  std::string Reference() {
    const std::string name = "ref_" + GetParam();
    Result r = RunGpt(name, 1, "--dtype " + GetParam());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_FALSE(r.hash.empty()) << r.output;
    return name;
  }
};

TEST_P(GptWorkload, ReferenceIsDeterministic) {
  Result a = RunGpt("det_a", 1, "--dtype " + GetParam());
  Result b = RunGpt("det_b", 1, "--dtype " + GetParam());
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.hash, b.hash);
  EXPECT_NE(a.output.find("step 2 loss "), std::string::npos) << a.output;
}

TEST_P(GptWorkload, CleanLayoutsMatchTheReference) {
  const std::string ref = Reference();
  const Bounds bound = BoundsFor(GetParam());
  const std::vector<std::pair<int, std::string>> layouts = {
      {2, "--tp 2"},
      {4, "--tp 4 --sp"},
      {2, "--dp 2"},
      {4, "--dp 2 --pp 2 --microbatches 2 --dist-opt"},
      {8, "--tp 2 --dp 2 --pp 2 --sp --microbatches 2"},
      {8, "--tp 4 --dp 2 --sp --dist-opt"},
  };
  for (const auto& [world, layout] : layouts) {
    Result r = RunGpt("clean", world, layout + " --dtype " + GetParam(), ref);
    ASSERT_EQ(r.exit_code, 0) << layout << "\n" << r.output;
    EXPECT_LE(r.weights_rel, bound.weights) << layout << "\n" << r.output;
    EXPECT_LE(r.state_rel, bound.state) << layout << "\n" << r.output;
    EXPECT_GE(r.state_rel, 0) << layout << "\n" << r.output;
    EXPECT_NE(r.output.find("replica spread 0.000e+00"), std::string::npos) << layout << "\n" << r.output;
  }
}

TEST_P(GptWorkload, EveryBugIsCaught) {
  const std::string ref = Reference();
  ASSERT_EQ(RunGpt(ref + "_noclip", 1, "--clip-grad 0 --dtype " + GetParam()).exit_code, 0);
  const Bounds bound = BoundsFor(GetParam());
  // One 8-rank layout where all twelve can occur; allgather-wrong-order also in the distributed optimizer's gather.
  const std::string all = "--tp 2 --dp 2 --pp 2 --sp --microbatches 2 --dtype " + GetParam();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sp-layernorm-grad-not-reduced", all},  {"replicated-weight-unsynced", all},
      {"grad-scaled-twice", all},              {"loss-not-scaled-by-dp", all},
      {"allgather-wrong-order", all},          {"column-split-wrong-dim", all},
      {"rowparallel-reduce-max", all},         {"grad-allreduce-on-tp-comm", all},
      {"optimizer-before-reduce", all},        {"embedding-grad-race", all},
      {"causal-mask-shifted", all},            {"pp-stale-microbatch", all},
      {"allgather-wrong-order", "--dp 2 --dist-opt --dtype " + GetParam()},
  };
  // loss-not-scaled-by-dp scales every gradient by dp. Gradient clipping (on by default, Megatron's) scales the
  // gradients to the clip norm whenever their norm exceeds it, as it does here at every step, which divides a
  // constant scale away: the checkpoint moves by 1e-6 (FP32), a few round-offs. It shows without clipping, and
  // `ttrace diff` finds it with clipping at the norm's all-reduce (tests/diff_e2e_test.cc).
  const std::string no_clip = " --clip-grad 0";
  for (const auto& [bug, layout] : cases) {
    const int world = layout.find("--tp 2") != std::string::npos ? 8 : 2;
    const bool scale_only = bug == "loss-not-scaled-by-dp";
    Result r = RunGpt("bug", world, layout + " --bug " + bug + (scale_only ? no_clip : ""),
                      scale_only ? ref + "_noclip" : ref);
    ASSERT_EQ(r.exit_code, 0) << bug << "\n" << r.output;
    EXPECT_EQ(r.output.find("inactive"), std::string::npos) << bug << "\n" << r.output;
    const double score = std::max(r.weights_rel / bound.weights, r.state_rel / bound.state);
    EXPECT_GE(score, 3.0) << bug << " in " << layout << "\n" << r.output;
  }
}

// --schedule 1f1b (Megatron-LM's one-forward-one-backward) computes the model GPipe computes; only the order in
// which micro-batch gradients accumulate changes (micro-batch 0 first instead of last), so against the GPipe
// reference a 1F1B run differs by round-off within the layouts' bound, and not by nothing (the order did
// change). Every 1F1B pipeline accumulates in the order of the one-rank 1F1B run (Megatron's no-pipelining order:
// each micro-batch forward then backward), so PP 2 and PP 4 under 1F1B end bitwise where that run ends; the
// transfers that cross in the steady state (send_forward_recv_backward) do not deadlock. Gradient clipping is off:
// its norm is a sum of squares over the stages' partial sums, rounded differently in every layout.
TEST_P(GptWorkload, OneForwardOneBackwardComputesWhatGpipeComputes) {
  const Bounds bound = BoundsFor(GetParam());
  const std::string common = " --layers 4 --microbatches 4 --clip-grad 0 --dtype " + GetParam();
  Result gpipe = RunGpt("sched_gpipe", 1, common);
  Result ref = RunGpt("sched_ref", 1, common + " --schedule 1f1b", "sched_gpipe");
  ASSERT_EQ(gpipe.exit_code, 0) << gpipe.output;
  ASSERT_EQ(ref.exit_code, 0) << ref.output;
  EXPECT_GT(ref.weights_rel, 0) << ref.output;
  EXPECT_LE(ref.weights_rel, bound.weights) << ref.output;
  EXPECT_LE(ref.state_rel, bound.state) << ref.output;
  for (const auto& [world, layout] : std::vector<std::pair<int, std::string>>{
           {2, "--pp 2"}, {4, "--pp 4"}, {8, "--pp 2 --tp 2 --dp 2 --sp"}}) {
    Result r = RunGpt("sched", world, layout + " --schedule 1f1b" + common, "sched_gpipe");
    ASSERT_EQ(r.exit_code, 0) << layout << "\n" << r.output;
    EXPECT_LE(r.weights_rel, bound.weights) << layout << "\n" << r.output;
    EXPECT_LE(r.state_rel, bound.state) << layout << "\n" << r.output;
    if (layout.find("--tp") == std::string::npos) EXPECT_EQ(r.hash, ref.hash) << layout << "\n" << r.output;
  }
}

// --optimizer sgd (w -= lr·g): a gradient's scale reaches the weights, where Adam divides it away. Under
// grad-scaled-twice (TP 2 + SP) the TP-replicated weights' gradients are 1/tp² = 1/4 of the right ones, so a
// zero-initialized replicated bias ends at 1/4 of the reference's value after every step: relative difference
// 0.75 (the checkpoint's worst tensor), while the clean run matches the SGD reference within the bound.
TEST_P(GptWorkload, SgdCarriesAGradientScaleIntoTheWeights) {
  const Bounds bound = BoundsFor(GetParam());
  const std::string sgd = " --optimizer sgd --lr 0.1 --dtype " + GetParam();
  ASSERT_EQ(RunGpt("sgd_ref", 1, sgd).exit_code, 0);
  Result clean = RunGpt("sgd_clean", 2, "--tp 2 --sp" + sgd, "sgd_ref");
  Result bug = RunGpt("sgd_bug", 2, "--tp 2 --sp --bug grad-scaled-twice" + sgd, "sgd_ref");
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  ASSERT_EQ(bug.exit_code, 0) << bug.output;
  EXPECT_LE(clean.weights_rel, bound.weights) << clean.output;
  EXPECT_NEAR(bug.weights_rel, 0.75, 0.05) << bug.output;
  EXPECT_EQ(bug.state_rel, 0.0) << "SGD keeps no moments";
}

TEST_P(GptWorkload, InactiveBugChangesNothing) {
  const std::string ref = Reference();
  Result r = RunGpt("inactive", 1, "--dtype " + GetParam() + " --bug pp-stale-microbatch --bug rowparallel-reduce-max", ref);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("bug pp-stale-microbatch inactive in this layout"), std::string::npos) << r.output;
  EXPECT_EQ(r.weights_rel, 0.0) << r.output;
  EXPECT_EQ(r.state_rel, 0.0) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GptWorkload, ::testing::Values("fp32", "bf16"));

TEST(GptWorkloadFlags, InvalidLayoutsExitTwo) {
  const std::map<std::string, int> cases = {
      {"--tp 2", 1},                // WORLD_SIZE is not tp · dp · pp
      {"--sp", 1},                  // SP needs TP
      {"--tp 3", 3},                // 3 divides neither the heads nor the vocabulary
      {"--pp 3", 3},                // nor the layers
      {"--dp 2 --batch 3", 2},      // the batch does not split over DP
      {"--bug no-such-bug", 1},
      {"--dtype fp16", 1},
      {"--steps 0", 1},
  };
  for (const auto& [args, world] : cases) {
    Result r = RunGpt("flags", world, args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("gpt: "), std::string::npos) << args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace ttrace

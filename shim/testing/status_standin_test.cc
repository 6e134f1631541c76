// Status pass-through, status by status: shim_status_standin_probe calls every intercepted entry point once
// (and an all-reduce inside a group) against stand-in vendor libraries (status_standin.h) that answer each
// documented status in turn. Under the shim
// every call must return the stand-in's status unchanged, and the trace must hold what that status implies: the
// record with the status, the inputs snapshotted before the call, and the outputs only after a successful call
// (never the outputs of a failed one, which the vendor may not have written).
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "shim/testing/process.h"

namespace ttrace::shim::testing {
namespace {

using format::TensorSlot;

const std::string kShim = TTRACE_SHIM_LIB;
const std::string kSimgpu = TTRACE_SIMGPU_LIBDIR;
const std::string kStandins = TTRACE_STANDIN_DIR;
const std::string kProbe = TTRACE_STANDIN_PROBE;

// cublasStatus_t, cudnnStatus_t and ncclResult_t, every documented value (cublas_api.h, cudnn_graph.h, nccl.h).
const int kCublasStatuses[] = {0, 1, 3, 7, 8, 11, 13, 14, 15, 16};
const int kCudnnStatuses[] = {0,    1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 2000, 2002, 2003, 2004,
                              2005, 2006, 2007, 2008, 2009, 2010, 2011, 2012, 3000, 3001, 3002, 3003, 3004,
                              3005, 3006, 3007, 3008, 3009, 3010, 3011, 3012, 3013, 3014, 4000, 4001, 4002,
                              4003, 4004, 4005, 4006, 5000, 5001, 5002, 5003, 5004};
const int kNcclStatuses[] = {0, 1, 2, 3, 4, 5, 6, 7};

struct Probe {
  RunResult run;
  std::map<std::string, int> ops, setup;  // name -> status printed
};

Probe RunProbe(const std::string& trace_dir, int cublas, int cudnn, int nccl, bool shim) {
  std::map<std::string, std::string> env = {{"LD_LIBRARY_PATH", kStandins + ":" + kSimgpu},
                                            {"STANDIN_CUBLAS_STATUS", std::to_string(cublas)},
                                            {"STANDIN_CUDNN_STATUS", std::to_string(cudnn)},
                                            {"STANDIN_NCCL_STATUS", std::to_string(nccl)}};
  if (shim) {
    env["LD_PRELOAD"] = kShim;
    env["TTRACE_DIR"] = trace_dir;
  }
  Probe p;
  p.run = RunProgram({kProbe}, env);
  std::istringstream lines(p.run.out);
  std::string kind, rest;
  while (lines >> kind >> rest) {
    const size_t eq = rest.find('=');
    if (eq == std::string::npos) continue;
    (kind == "op" ? p.ops : p.setup)[rest.substr(0, eq)] = std::stoi(rest.substr(eq + 1));
  }
  return p;
}

bool IsCublas(const std::string& name) { return name.rfind("cublas", 0) == 0; }
bool IsCudnn(const std::string& name) { return name.rfind("cudnn", 0) == 0; }

TEST(ShimStatusStandinTest, EveryStatusOfEveryEntryPointPassesThroughWithTheRecordsItImplies) {
  ASSERT_EQ(std::size(kCudnnStatuses), 48u);
  for (size_t i = 0; i < std::size(kCudnnStatuses); ++i) {
    const int cublas = kCublasStatuses[i % std::size(kCublasStatuses)], cudnn = kCudnnStatuses[i],
              nccl = kNcclStatuses[i % std::size(kNcclStatuses)];
    SCOPED_TRACE("cuBLAS status " + std::to_string(cublas) + ", cuDNN status " + std::to_string(cudnn) +
                 ", NCCL status " + std::to_string(nccl));
    ScratchDir dir;
    const Probe plain = RunProbe("", cublas, cudnn, nccl, /*shim=*/false);
    const Probe traced = RunProbe(dir.path(), cublas, cudnn, nccl, /*shim=*/true);
    ASSERT_EQ(plain.run.exit_code, 0) << plain.run.err;
    ASSERT_EQ(traced.run.exit_code, 0) << traced.run.err;
    EXPECT_EQ(traced.run.out, plain.run.out);
    // GEMMs, Lt, convolutions, the init, collectives, the group
    ASSERT_EQ(traced.ops.size(), 16u + 1 + 3 + 1 + 11 + 1) << traced.run.out;
    for (const auto& [name, status] : traced.ops)
      EXPECT_EQ(status, IsCublas(name) ? cublas : IsCudnn(name) ? cudnn : nccl) << name;
    for (const auto& [name, status] : traced.setup) EXPECT_EQ(status, 0) << name;

    auto set = analyzer::LoadTraceDir(dir.path());
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_EQ(set->ranks.size(), 1u);
    const analyzer::RankTrace& rank = set->ranks[0];
    ASSERT_EQ(rank.ops.size(), 16u + 1 + 3 + 11 + 1);
    std::set<std::string> seen;
    for (const analyzer::Op& op : rank.ops) {
      const std::string name = op.api_name();
      seen.insert(name);
      // ncclInProgress: still running on a non-blocking communicator; captured once ncclCommGetAsyncError, which
      // the probe calls last, reports it done.
      const bool ok = IsCublas(name) ? cublas == 0 : IsCudnn(name) ? cudnn == 0 : nccl == 0 || nccl == 7;
      if (&op == &rank.ops.back()) {  // the all-reduce inside the group: it succeeded, ncclGroupEnd said `nccl`
        ASSERT_EQ(name, "ncclAllReduce");
        EXPECT_EQ(op.coll.status, 0);
        EXPECT_TRUE(op.coll.in_group);
        EXPECT_NE(op.tensor(TensorSlot::kSend), nullptr) << "sent data is snapshotted at ncclGroupEnd";
        EXPECT_EQ(op.tensor(TensorSlot::kRecv) != nullptr, ok) << "received data iff the group succeeded";
        continue;
      }
      if (op.kind == analyzer::OpKind::kGemm) {
        EXPECT_EQ(op.gemm.status, cublas) << name;
        EXPECT_NE(op.tensor(TensorSlot::kA), nullptr) << name << ": inputs are snapshotted before the call";
        EXPECT_NE(op.tensor(TensorSlot::kB), nullptr) << name;
        EXPECT_EQ(op.tensor(TensorSlot::kCIn), nullptr) << name << ": beta is 0";
        EXPECT_EQ(op.tensor(TensorSlot::kCOut) != nullptr, ok) << name << ": C after the call iff it succeeded";
      } else if (op.kind == analyzer::OpKind::kConv) {
        EXPECT_EQ(op.conv.status, cudnn) << name;
        const int inputs = (op.tensor(TensorSlot::kConvX) != nullptr) + (op.tensor(TensorSlot::kConvW) != nullptr) +
                           (op.tensor(TensorSlot::kConvY) != nullptr);
        EXPECT_EQ(inputs, 2) << name << ": both inputs are snapshotted before the call";
        EXPECT_EQ(op.tensor(TensorSlot::kCIn), nullptr) << name << ": beta is 0";
        EXPECT_EQ(op.tensor(TensorSlot::kCOut) != nullptr, ok) << name << ": the output after the call iff it succeeded";
      } else if (op.kind == analyzer::OpKind::kLtMatmul) {
        EXPECT_EQ(op.lt.status, cublas) << name;
        EXPECT_NE(op.tensor(TensorSlot::kA), nullptr) << name;
        EXPECT_EQ(op.tensor(TensorSlot::kCOut) != nullptr, ok) << name << ": D after the call iff it succeeded";
      } else {
        EXPECT_EQ(op.coll.status, nccl) << name;
        const bool receives = name != "ncclSend";
        EXPECT_EQ(op.tensor(TensorSlot::kRecv) != nullptr, ok && receives)
            << name << ": the received data after the call iff it succeeded";
      }
    }
    EXPECT_EQ(seen.size(), 16u + 1 + 3 + 11) << "every entry point recorded once";
    // The 2-rank ncclCommInitRank: recorded with its status; the 1-rank one succeeded.
    std::vector<int> init_statuses;
    for (const auto& init : rank.comm_inits) init_statuses.push_back(init.status);
    EXPECT_EQ(init_statuses, (std::vector<int>{0, nccl}));
  }
}

}  // namespace
}  // namespace ttrace::shim::testing

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
  std::map<std::string, int> ops, call, setup;  // name -> status printed
};

Probe RunProbe(const std::string& trace_dir, int cublas, int cudnn, int nccl, int nccl_setup, bool shim) {
  std::map<std::string, std::string> env = {{"LD_LIBRARY_PATH", kStandins + ":" + kSimgpu},
                                            {"STANDIN_CUBLAS_STATUS", std::to_string(cublas)},
                                            {"STANDIN_CUDNN_STATUS", std::to_string(cudnn)},
                                            {"STANDIN_NCCL_STATUS", std::to_string(nccl)},
                                            {"STANDIN_NCCL_SETUP_STATUS", std::to_string(nccl_setup)}};
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
    (kind == "op" ? p.ops : kind == "call" ? p.call : p.setup)[rest.substr(0, eq)] = std::stoi(rest.substr(eq + 1));
  }
  return p;
}

bool IsCublas(const std::string& name) { return name.rfind("cublas", 0) == 0; }
bool IsCudnn(const std::string& name) { return name.rfind("cudnn", 0) == 0; }

TEST(ShimStatusStandinTest, EveryStatusOfEveryEntryPointPassesThroughWithTheRecordsItImplies) {
  ASSERT_EQ(std::size(kCudnnStatuses), 48u);
  for (size_t i = 0; i < std::size(kCudnnStatuses); ++i) {
    // The communicator calls' status runs through NCCL's statuses at another phase than the operations'.
    const int cublas = kCublasStatuses[i % std::size(kCublasStatuses)], cudnn = kCudnnStatuses[i],
              nccl = kNcclStatuses[i % std::size(kNcclStatuses)],
              nccl_setup = kNcclStatuses[(i + 3 + i / std::size(kNcclStatuses)) % std::size(kNcclStatuses)];
    SCOPED_TRACE("cuBLAS status " + std::to_string(cublas) + ", cuDNN status " + std::to_string(cudnn) +
                 ", NCCL status " + std::to_string(nccl) + ", NCCL communicator status " +
                 std::to_string(nccl_setup));
    ScratchDir dir;
    const Probe plain = RunProbe("", cublas, cudnn, nccl, nccl_setup, /*shim=*/false);
    const Probe traced = RunProbe(dir.path(), cublas, cudnn, nccl, nccl_setup, /*shim=*/true);
    ASSERT_EQ(plain.run.exit_code, 0) << plain.run.err;
    ASSERT_EQ(traced.run.exit_code, 0) << traced.run.err;
    EXPECT_EQ(traced.run.err.find("cudnnBackendPopulateCudaGraph (op ") != std::string::npos &&
                  traced.run.err.find("not captured (cuDNN native CUDA graph)") != std::string::npos,
              cudnn == 0)
        << "one log line for the first successful native CUDA graph call: " << traced.run.err;
    EXPECT_EQ(traced.run.out, plain.run.out);
    // GEMMs, Lt, convolutions, the backend graph (executed, put into a CUDA graph, updated there), the init,
    // collectives, the group
    ASSERT_EQ(traced.ops.size(), 28u + 1 + 3 + 3 + 1 + 11 + 1) << traced.run.out;
    for (const auto& [name, status] : traced.ops)
      EXPECT_EQ(status, IsCublas(name) ? cublas : IsCudnn(name) ? cudnn : nccl) << name;
    for (const auto& [name, status] : traced.setup) EXPECT_EQ(status, 0) << name;
    // Communicator calls (13) and cuDNN backend descriptor calls (5)
    ASSERT_EQ(traced.call.size(), 13u + 5) << traced.run.out;
    for (const auto& [name, status] : traced.call) EXPECT_EQ(status, IsCudnn(name) ? cudnn : nccl_setup) << name;

    auto set = analyzer::LoadTraceDir(dir.path());
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_EQ(set->ranks.size(), 1u);
    const analyzer::RankTrace& rank = set->ranks[0];
    ASSERT_EQ(rank.ops.size(), 28u + 1 + 3 + 3 + 11 + 1);
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
      if (op.kind == analyzer::OpKind::kGemm && (op.gemm.a_type == 4 || op.gemm.a_type == 5)) {
        // CUDA_C_32F, CUDA_C_64F: recorded; complex operands have no ttrace dtype
        EXPECT_EQ(op.gemm.status, cublas) << name;
        EXPECT_NE(op.gemm.flags & format::kPointerArrays, 0u) << name;
        EXPECT_EQ(op.tensor(TensorSlot::kA), nullptr) << name;
        EXPECT_EQ(op.tensor(TensorSlot::kCOut), nullptr) << name;
      } else if (op.kind == analyzer::OpKind::kGemm) {
        EXPECT_EQ(op.gemm.status, cublas) << name;
        if ((op.gemm.flags & format::kPointerArrays) && op.tensor(TensorSlot::kA) != nullptr)
          EXPECT_EQ(op.tensor(TensorSlot::kA)->meta.batch, 2) << name << ": both batches";
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
      } else if (op.kind == analyzer::OpKind::kGraph && name != "cudnnBackendExecute") {
        // cuDNN's native CUDA graph API: the op is recorded with its graph and the pack's pointers; its work runs
        // at the CUDA graph's launches, whose operands the shim does not capture, and the trace says so.
        EXPECT_EQ(op.graph.status, cudnn) << name;
        EXPECT_EQ(op.graph.flags, 0u) << name << ": the graph and its variant pack were shadowed";
        EXPECT_EQ(op.graph.stream, 0u) << name << ": the work runs on the stream the CUDA graph is launched on";
        ASSERT_EQ(op.graph_tensors.size(), 3u) << name;
        EXPECT_EQ(op.graph_ops.size(), 1u) << name;
        int pointers = 0;
        for (const format::GraphTensor& t : op.graph_tensors) pointers += t.ptr != 0;
        EXPECT_EQ(pointers, 3) << name << ": x, w and y from the variant pack";
        EXPECT_TRUE(op.graph_in.empty()) << name;
        EXPECT_TRUE(op.graph_out.empty()) << name;
        EXPECT_EQ(op.missing_tensors, cudnn == 0 ? "tensors dropped (graph capture)" : "") << name;
      } else if (op.kind == analyzer::OpKind::kGraph) {
        EXPECT_EQ(op.graph.status, cudnn) << name;
        EXPECT_EQ(op.graph.flags, 0u) << name << ": the graph and its variant pack were shadowed";
        EXPECT_EQ(op.graph_in.size(), 2u) << name << ": x and w are snapshotted before the call";
        EXPECT_EQ(op.graph_out.size(), ok ? 1u : 0u) << name << ": y after the call iff it succeeded";
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
    EXPECT_EQ(seen.size(), 28u + 1 + 3 + 3 + 11) << "every entry point recorded once";
    // Communicator creations: the 1-rank ncclCommInitRank succeeded, the 2-rank one answered `nccl`, the five
    // others `nccl_setup`; a handle and an identity iff the communicator exists (success or in progress).
    const auto created = [](int status) { return status == 0 || status == 7; };
    std::vector<std::pair<std::string, int>> inits, want_inits = {{"ncclCommInitRank", 0},
                                                                  {"ncclCommInitRank", nccl},
                                                                  {"ncclCommInitRankConfig", nccl_setup},
                                                                  {"ncclCommInitRankScalable", nccl_setup},
                                                                  {"ncclCommSplit", nccl_setup},
                                                                  {"ncclCommShrink", nccl_setup},
                                                                  {"ncclCommInitAll", nccl_setup}};
    std::map<uint64_t, uint64_t> hash_of;  // handle -> identity
    for (const auto& init : rank.comm_inits) {
      inits.emplace_back(format::ApiName(init.api), init.status);
      EXPECT_EQ(init.comm_handle != 0, created(init.status)) << format::ApiName(init.api);
      if (init.comm_handle != 0) {
        EXPECT_NE(init.comm_hash, 0u) << format::ApiName(init.api);
        EXPECT_EQ(init.comm_size, &init == &rank.comm_inits[1] ? 2 : 1) << format::ApiName(init.api);
        hash_of[init.comm_handle] = init.comm_hash;
      }
    }
    EXPECT_EQ(inits, want_inits);
    // Communicator ends, in the probe's order, each with its status and the identity of the communicator it
    // ended (none for one never created).
    std::vector<std::pair<std::string, int>> ends, want_ends = {{"ncclCommFinalize", nccl_setup},
                                                                {"ncclCommDestroy", nccl_setup},
                                                                {"ncclCommAbort", nccl_setup},
                                                                {"ncclCommDestroy", nccl_setup},
                                                                {"ncclCommDestroy", nccl_setup},
                                                                {"ncclCommDestroy", nccl_setup},
                                                                {"ncclCommDestroy", nccl_setup}};
    for (const auto& end : rank.comm_ends) {
      ends.emplace_back(format::ApiName(end.api), end.status);
      const auto it = hash_of.find(end.comm_handle);
      EXPECT_EQ(end.comm_hash, it == hash_of.end() ? 0 : it->second) << format::ApiName(end.api);
    }
    EXPECT_EQ(ends, want_ends);
    EXPECT_EQ(rank.comm_ends.back().comm_handle, rank.comm_inits.front().comm_handle);
    EXPECT_EQ(rank.comm_ends.back().comm_hash != 0, true) << "the first communicator is known when it ends";
  }
}

}  // namespace
}  // namespace ttrace::shim::testing

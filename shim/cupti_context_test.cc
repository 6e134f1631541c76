// The CUPTI callback fed synthetic callback records (CUpti_CallbackData with symbol names, CUpti_NvtxData with
// NVTX parameters) as CUPTI would pass them, without CUPTI: what a thread's context holds, what it leaves out
// (exit sites, launches inside intercepted calls, other threads), its bounds; and the engine writing it to a stream
// that the analyzer's reader resolves.
#include "shim/cupti_context.h"

#include <generated_nvtx_meta.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "analyzer/trace_model.h"
#include "gtest/gtest.h"
#include "tests/support/scratch_dir.h"
#include "shim/capture_engine.h"
#include "shim/interception.h"
#include "shim/sink.h"
#include "store/trace_reader.h"

namespace ttrace::shim {
namespace {

void Driver(CUpti_CallbackId cbid, const char* symbol, CUpti_ApiCallbackSite site = CUPTI_API_ENTER) {
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.callbackSite = site;
  d.functionName = "cuLaunchKernel";
  d.symbolName = symbol;
  ContextCallback(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}
void Launch(const char* symbol) {
  Driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, symbol, CUPTI_API_ENTER);
  Driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, symbol, CUPTI_API_EXIT);
}
void Nvtx(CUpti_CallbackId cbid, const void* params) {
  CUpti_NvtxData d;
  memset(&d, 0, sizeof d);
  d.functionName = "nvtx";
  d.functionParams = params;
  ContextCallback(nullptr, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
}
void PushA(const char* message) {
  nvtxRangePushA_params p{message};
  Nvtx(CUPTI_CBID_NVTX_nvtxRangePushA, &p);
}
void Pop() {
  nvtxRangePop_params p{nullptr};
  Nvtx(CUPTI_CBID_NVTX_nvtxRangePop, &p);
}
std::string Name(uint32_t id) {
  format::NameKind kind;
  const char* text;
  uint32_t len;
  if (!ContextName(id, &kind, &text, &len)) return "?";
  return std::string(text, len);
}

TEST(CuptiContextTest, CountsLaunchesByNameBetweenTakes) {
  ThreadContext c;
  while (TakeThreadContext(&c)) {  // a clean slate on this thread
    if (c.nvtx_depth == 0) break;
    Pop();
  }
  EXPECT_FALSE(TakeThreadContext(&c));  // nothing ran
  Launch("_Z4gemmv");
  Launch("_Z4reluPf");
  Launch("_Z4gemmv");
  Driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, "_Z4reluPf");
  Driver(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, nullptr);  // no name given
  Driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, nullptr);
  Driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, nullptr, CUPTI_API_EXIT);  // exit sites never count
  Driver(CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, "_Z4gemmv");                  // not a launch
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.kernels, 5u);
  EXPECT_EQ(c.unnamed_kernels, 1u);
  EXPECT_EQ(c.graph_launches, 1u);
  ASSERT_EQ(c.kernel_entries, 2u);
  EXPECT_EQ(Name(c.kernel_ids[0]), "_Z4gemmv");
  EXPECT_EQ(c.kernel_counts[0], 2u);
  EXPECT_EQ(Name(c.kernel_ids[1]), "_Z4reluPf");
  EXPECT_EQ(c.kernel_counts[1], 2u);
  EXPECT_EQ(c.nvtx_depth, 0u);
  EXPECT_FALSE(TakeThreadContext(&c));  // taken: the counts start again
  Launch("_Z4reluPf");
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.kernels, 1u);
  ASSERT_EQ(c.kernel_entries, 1u);
  EXPECT_EQ(Name(c.kernel_ids[0]), "_Z4reluPf");
}

TEST(CuptiContextTest, LaunchesInsideAnInterceptedCallAreTheOpsOwn) {
  setenv("TTRACE_DISABLE", "1", 1);  // the scope must not start an engine
  ThreadContext c;
  TakeThreadContext(&c);
  {
    InterceptorScope scope(0);
    Launch("_Z12cublas_innerv");
    Driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, nullptr);
  }
  EXPECT_FALSE(TakeThreadContext(&c));
  Launch("_Z12cublas_innerv");
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.kernels, 1u);
}

TEST(CuptiContextTest, OtherThreadsKeepTheirOwn) {
  ThreadContext c;
  TakeThreadContext(&c);
  std::thread([] {
    Launch("_Z5otherv");
    PushA("elsewhere");
  }).join();
  EXPECT_FALSE(TakeThreadContext(&c));
}

TEST(CuptiContextTest, NvtxRangeStackStaysAcrossTakes) {
  ThreadContext c;
  TakeThreadContext(&c);
  PushA("forward");
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "layer3";
  nvtxDomainRangePushEx_params dp;
  dp.domain = nullptr;
  dp.core.eventAttrib = &a;
  Nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &dp);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  nvtxRangePushEx_params ep{&a};
  Nvtx(CUPTI_CBID_NVTX_nvtxRangePushEx, &ep);
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.kernels, 0u);
  ASSERT_EQ(c.nvtx_depth, 3u);
  EXPECT_EQ(Name(c.nvtx_ids[0]), "forward");
  EXPECT_EQ(Name(c.nvtx_ids[1]), "layer3");
  EXPECT_EQ(Name(c.nvtx_ids[2]), "(registered string)");
  ASSERT_TRUE(TakeThreadContext(&c));  // the ranges are still open
  EXPECT_EQ(c.nvtx_depth, 3u);
  nvtxDomainRangePop_params pp{nullptr};
  Nvtx(CUPTI_CBID_NVTX_nvtxDomainRangePop, &pp);
  Pop();
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.nvtx_depth, 1u);
  Pop();
  Pop();  // one pop too many: the depth stays 0
  EXPECT_FALSE(TakeThreadContext(&c));
  // Deeper than kept: the depth counts on, the outermost kMaxNvtxEntries names are kept.
  for (uint32_t i = 0; i < kMaxNvtxEntries + 3; ++i) PushA(("r" + std::to_string(i)).c_str());
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.nvtx_depth, kMaxNvtxEntries + 3);
  EXPECT_EQ(Name(c.nvtx_ids[kMaxNvtxEntries - 1]), "r" + std::to_string(kMaxNvtxEntries - 1));
  for (uint32_t i = 0; i < kMaxNvtxEntries + 3; ++i) Pop();
  EXPECT_FALSE(TakeThreadContext(&c));
}

TEST(CuptiContextTest, DistinctNamesBeyondTheEntriesAreCountedUnnamed) {
  ThreadContext c;
  TakeThreadContext(&c);
  for (uint32_t i = 0; i < kMaxKernelEntries + 4; ++i) Launch(("_Z1k" + std::to_string(i)).c_str());
  Launch("_Z1k0");
  ASSERT_TRUE(TakeThreadContext(&c));
  EXPECT_EQ(c.kernels, kMaxKernelEntries + 5);
  EXPECT_EQ(c.kernel_entries, kMaxKernelEntries);
  EXPECT_EQ(c.unnamed_kernels, 4u);
  EXPECT_EQ(c.kernel_counts[0], 2u);
}

// A symbol address whose name changed (a module unloaded, another loaded at its address) is a new name.
TEST(CuptiContextTest, ASymbolAddressReusedForAnotherNameIsThatName) {
  ThreadContext c;
  TakeThreadContext(&c);
  char symbol[32];
  strcpy(symbol, "_Z6kernelILi1EEvv");
  Launch(symbol);
  Launch(symbol);
  strcpy(symbol, "_Z6kernelILi2EEvv");
  Launch(symbol);
  strcpy(symbol, "_Z6kernelILi1EEvvX");  // the old name is a prefix of the new one
  Launch(symbol);
  ASSERT_TRUE(TakeThreadContext(&c));
  ASSERT_EQ(c.kernel_entries, 3u);
  EXPECT_EQ(Name(c.kernel_ids[0]), "_Z6kernelILi1EEvv");
  EXPECT_EQ(c.kernel_counts[0], 2u);
  EXPECT_EQ(Name(c.kernel_ids[1]), "_Z6kernelILi2EEvv");
  EXPECT_EQ(Name(c.kernel_ids[2]), "_Z6kernelILi1EEvvX");
}

TEST(CuptiContextTest, NamesAreInternedByKindAndText) {
  const uint32_t a = InternName(format::NameKind::kKernel, "_Z6interny");
  EXPECT_NE(a, 0u);
  EXPECT_EQ(InternName(format::NameKind::kKernel, "_Z6interny"), a);
  const uint32_t b = InternName(format::NameKind::kNvtxRange, "_Z6interny");
  EXPECT_NE(b, a);
  const std::string long_name(format::kMaxNameBytes + 100, 'x');
  const uint32_t l = InternName(format::NameKind::kKernel, long_name.c_str());
  EXPECT_EQ(Name(l), long_name.substr(0, format::kMaxNameBytes));
  EXPECT_EQ(InternName(format::NameKind::kKernel, (long_name + "y").c_str()), l);  // same first 512 bytes
  EXPECT_EQ(Name(0), "?");
}

// The engine writes an op's context after its record, each name once per stream, and the reader resolves them.
TEST(CuptiContextTest, EngineWritesContextRecordsTheReaderResolves) {
  const std::string dir = test_support::TestScratchPath("engine_context");
  const std::string path = dir + "/rank-0.ttr";
  ThreadContext c;
  while (TakeThreadContext(&c) && c.nvtx_depth > 0) Pop();
  {
    std::string error;
    store::StreamIdentity id;
    id.rank = 0;
    auto sink = OpenFileSink(path, id, &error);
    ASSERT_NE(sink, nullptr) << error;
    EngineConfig config;
    config.flush_ms = 20;
    CaptureEngine engine(config, std::move(sink), nullptr);
    engine.Start();
    auto gemm = [&](int64_t m) {
      const CaptureEngine::Slot s = engine.Reserve(true);
      format::GemmRecord g;
      memset(&g, 0, sizeof g);
      g.seq = s.seq;
      g.m = g.n = g.k = m;
      engine.Publish(s, format::RecordType::kGemm, g);
    };
    gemm(1);  // seq 0: nothing before it
    PushA("step");
    Launch("_Z9embeddingv");
    Launch("_Z4reluPf");
    Launch("_Z4reluPf");
    gemm(2);  // seq 1
    Pop();
    Launch("_Z4reluPf");
    Driver(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, nullptr);
    gemm(3);  // seq 2
    gemm(4);  // seq 3: nothing before it
    engine.Shutdown();
  }
  auto reader = store::TraceReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  int names = 0, contexts = 0;
  store::RecordView r;
  while (true) {
    auto more = (*reader)->Next(&r);
    ASSERT_TRUE(more.ok()) << more.status();
    if (!*more) break;
    names += r.type == format::RecordType::kName;
    contexts += r.type == format::RecordType::kContext;
  }
  EXPECT_EQ(names, 3);  // _Z9embeddingv, _Z4reluPf, step: each once
  EXPECT_EQ(contexts, 2);
  auto t = analyzer::LoadRankTrace(path);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->ops.size(), 4u);
  EXPECT_TRUE(t->warnings.empty());
  EXPECT_FALSE(t->ops[0].context.valid);
  const analyzer::OpContext& c1 = t->ops[1].context;
  ASSERT_TRUE(c1.valid);
  EXPECT_EQ(c1.kernels, 3u);
  ASSERT_EQ(c1.kernel_names.size(), 2u);
  EXPECT_EQ(c1.kernel_names[0], (std::pair<std::string, uint64_t>{"_Z9embeddingv", 1}));
  EXPECT_EQ(c1.kernel_names[1], (std::pair<std::string, uint64_t>{"_Z4reluPf", 2}));
  EXPECT_EQ(c1.nvtx, std::vector<std::string>{"step"});
  EXPECT_EQ(analyzer::ContextText(c1),
            "after 3 kernels since the previous captured op on its thread: embedding x1, relu x2; "
            "in NVTX range step");
  const analyzer::OpContext& c2 = t->ops[2].context;
  ASSERT_TRUE(c2.valid);
  EXPECT_EQ(c2.kernels, 1u);
  EXPECT_EQ(c2.graph_launches, 1u);
  EXPECT_EQ(c2.nvtx_depth, 0u);
  EXPECT_EQ(analyzer::ContextText(c2),
            "after 1 kernel since the previous captured op on its thread: relu x1; 1 graph launch");
  EXPECT_FALSE(t->ops[3].context.valid);
  EXPECT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

}  // namespace
}  // namespace ttrace::shim

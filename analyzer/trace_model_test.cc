// Loading trace directories: joins tensors to ops regardless of order, skips unknown records, reads grown record
// bodies, and rejects inconsistent directories with a message naming the files.
#include "analyzer/trace_model.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "analyzer/check.h"
#include "analyzer/graph_check.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::StreamBuilder;

std::string F32(std::initializer_list<double> v) { return Encode(DType::kF32, std::vector<double>(v)); }

TEST(TraceModelTest, JoinsTensorsWrittenBeforeOrAfterTheirOp) {
  std::string dir = testing::TempDir("join");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "j", 64);  // tiny frames: records span many frames
    w.Tensor(0, TensorSlot::kA, DType::kF32, 1, 1, 1, F32({2}));
    w.Tensor(0, TensorSlot::kB, DType::kF32, 1, 1, 1, F32({3}));
    w.Gemm(testing::GemmRec(0, 1, 1, 1, DType::kF32, DType::kF32));
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 1, 1, 1, F32({6}));
    w.Tensor(9, TensorSlot::kCOut, DType::kF32, 1, 1, 1, F32({6}));  // no op 9
  }
  auto t = LoadRankTrace(dir + "/rank-0.ttr");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->ops.size(), 1u);
  const Op& op = t->ops[0];
  ASSERT_NE(op.tensor(TensorSlot::kA), nullptr);
  ASSERT_NE(op.tensor(TensorSlot::kCOut), nullptr);
  EXPECT_EQ(op.tensor(TensorSlot::kCIn), nullptr);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("1 tensors belong to no op record"), std::string::npos);
}

// Byte-shuffled payloads of many 64 KiB chunks (and a partial last one) decode to the bytes that were shuffled, for
// elements of 2, 4 and 8 bytes.
TEST(TraceModelTest, ShuffledPayloadsOfManyChunksDecodeToTheirBytes) {
  std::string dir = testing::TempDir("shuffled_chunks");
  std::mt19937_64 rng(3);
  std::vector<std::string> full;
  const DType types[] = {DType::kBF16, DType::kF32, DType::kF64};
  const TensorSlot slots[] = {TensorSlot::kA, TensorSlot::kB, TensorSlot::kCOut};
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "j", 1 << 20);
    w.Gemm(testing::GemmRec(0, 1, 1, 1, DType::kF32, DType::kF32));
    for (int t = 0; t < 3; ++t) {
      const int64_t rows = 1000 + 7 * t, cols = 53;  // 53,000 to 53,742 elements: 106 KB to 430 KB
      std::string bytes(static_cast<size_t>(rows * cols) * format::DTypeSize(static_cast<uint8_t>(types[t])), '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
      w.Tensor(0, slots[t], types[t], rows, cols, 1, bytes, true);
      full.push_back(bytes);
    }
  }
  auto t = LoadRankTrace(dir + "/rank-0.ttr");
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->ops.size(), 1u);
  for (int i = 0; i < 3; ++i) {
    const Tensor* tensor = t->ops[0].tensor(slots[i]);
    ASSERT_NE(tensor, nullptr) << i;
    EXPECT_EQ(tensor->meta.payload_kind, static_cast<uint8_t>(format::PayloadKind::kFull)) << i;
    EXPECT_TRUE(tensor->data == full[static_cast<size_t>(i)]) << "type " << i;
  }
}

// A deferred tensor is read by seeking to its frame: loading the last tensor of a many-frame stream, then the
// first, then a few in the middle reads a frame or two each, not the frames between them; what is loaded is the
// tensor's own data. A tensor whose frame is unknown is still found, from the start.
TEST(TraceModelTest, DeferredTensorsAreReadFromTheirOwnFrames) {
  std::string dir = testing::TempDir("seek");
  constexpr int kOps = 120;
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1, "j", 512);  // about two tensors of 64 floats per frame
    for (int s = 0; s < kOps; ++s) {
      w.Gemm(testing::GemmRec(s, 8, 8, 8, DType::kF32, DType::kF32));
      w.Tensor(s, TensorSlot::kA, DType::kF32, 8, 8, 1, Encode(DType::kF32, std::vector<double>(64, s + 0.5)));
    }
  }
  LoadOptions o;
  o.defer_tensors = true;
  auto t = LoadRankTrace(dir + "/rank-0.ttr", o);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->ops.size(), static_cast<size_t>(kOps));
  std::vector<Tensor*> a;
  for (Op& op : t->ops) a.push_back(op.tensors[static_cast<size_t>(TensorSlot::kA)].get());
  ASSERT_GT(a.back()->frame_index, 40u) << "the stream must span many frames";
  auto value = [](const Tensor* x) {
    float f = -1;
    if (x->data.size() == 64 * sizeof f) memcpy(&f, x->data.data() + 63 * sizeof f, sizeof f);
    return f;
  };
  DeferredTensorReader reader(dir + "/rank-0.ttr", false);
  ASSERT_TRUE(reader.Load({a[kOps - 1]}).ok());
  EXPECT_EQ(value(a[kOps - 1]), kOps - 0.5f);
  EXPECT_LE(reader.frames_read(), 2u);
  ASSERT_TRUE(reader.Load({a[0]}).ok());  // behind the reader
  EXPECT_EQ(value(a[0]), 0.5f);
  EXPECT_LE(reader.frames_read(), 4u);
  ASSERT_TRUE(reader.Load({a[70], a[60], a[61]}).ok());  // ahead, in any order
  EXPECT_EQ(value(a[60]), 60.5f);
  EXPECT_EQ(value(a[61]), 61.5f);
  EXPECT_EQ(value(a[70]), 70.5f);
  EXPECT_LE(reader.frames_read(), 10u);
  // Everything, forward from where it stands: each frame once more at most.
  for (Tensor* x : a) x->data.clear();
  ASSERT_TRUE(reader.Load(a).ok());
  for (int s = 0; s < kOps; ++s) EXPECT_EQ(value(a[s]), s + 0.5f) << s;
  EXPECT_LE(reader.frames_read(), 10u + a.back()->frame_index + 1);
  // A tensor whose frame is not known (as tests build them) is read from the start.
  a[5]->data.clear();
  a[5]->frame_offset = 0;
  a[5]->frame_index = 0;
  a[5]->frame_first_ordinal = 0;
  ASSERT_TRUE(reader.Load({a[5]}).ok());
  EXPECT_EQ(value(a[5]), 5.5f);
}

TEST(TraceModelTest, SkipsUnknownRecordsAndReadsGrownBodies) {
  std::string dir = testing::TempDir("evolve");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    w.Raw(999, "future record");
    format::GemmRecord g = testing::GemmRec(0, 1, 1, 1, DType::kF32, DType::kF32);
    std::string body(reinterpret_cast<const char*>(&g), sizeof g);
    w.Raw(static_cast<uint16_t>(format::RecordType::kGemm), body + std::string(24, '\x7f'));  // appended fields
    w.Tensor(0, TensorSlot::kA, DType::kF32, 1, 1, 1, F32({2}));
    w.Tensor(0, TensorSlot::kB, DType::kF32, 1, 1, 1, F32({3}));
    w.Tensor(0, TensorSlot::kCOut, DType::kF32, 1, 1, 1, F32({6}));
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->ranks[0].unknown_records, 1u);
  CheckReport r = RunChecks(*set);
  EXPECT_TRUE(r.no_findings());
  EXPECT_EQ(r.summary().checked.at("gemm"), 1u);
  EXPECT_EQ(r.summary().unknown_records, 1u);
}

// Graph entries grow like record bodies: a BackendGraph record written before GraphOp held the pointwise
// parameters (entry sizes 0: 160-byte tensors, 272-byte ops) reads with a plain ReLU (no parameter set; the bytes
// past 272 are not read), one written before GraphOp held more_operands (320-byte ops) reads with no operand past
// the eighth (-1, not the zero fill's tensor 0), and one from a later writer with longer entries reads the fields
// this reader knows, its operands 8..15 among them.
TEST(TraceModelTest, GraphEntriesOfOtherSizesRead) {
  std::string dir = testing::TempDir("graph-entries");
  format::GraphTensor t{};
  t.uid = 7, t.nb_dims = 1, t.dims[0] = 4, t.strides[0] = 1;
  format::GraphOp relu{};
  relu.type = 13, relu.mode = 100, relu.compute_type = 0, relu.axis = -1;
  for (int32_t& o : relu.operands) o = -1;
  relu.operands[0] = relu.operands[2] = 0;
  relu.relu_lower_clip = relu.relu_upper_clip = relu.relu_lower_clip_slope = 7;  // past 272 bytes: not read
  for (int32_t& o : relu.more_operands) o = 0;  // past 320 bytes: not read (-1 when read)
  auto bytes = [](const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); };
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    format::BackendGraphRecord g{};
    g.seq = 0, g.api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
    g.tensor_count = g.op_count = 1;
    g.payload_bytes = 160 + 272;  // entry sizes 0: the sizes before GraphOp grew
    w.Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), bytes(&g, sizeof g),
          bytes(&t, 160) + bytes(&relu, 272));
    format::GraphOp clipped = relu;
    clipped.params_set = format::kParamReluUpperClip | format::kParamReluLowerClipSlope;
    clipped.relu_upper_clip = 6, clipped.relu_lower_clip_slope = 0.1;
    for (int32_t& o : clipped.more_operands) o = -1;
    clipped.more_operands[1] = 0;  // role 9
    g.seq = 1;
    g.tensor_entry_bytes = sizeof t + 8, g.op_entry_bytes = sizeof clipped + 16;  // a later writer's entries
    g.payload_bytes = g.tensor_entry_bytes + g.op_entry_bytes;
    w.Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), bytes(&g, sizeof g),
          bytes(&t, sizeof t) + std::string(8, '\x7f') + bytes(&clipped, sizeof clipped) + std::string(16, '\x7f'));
    g.seq = 2;
    g.tensor_entry_bytes = 160, g.op_entry_bytes = 320;  // the writer before more_operands
    g.payload_bytes = 160 + 320;
    w.Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), bytes(&g, sizeof g),
          bytes(&t, 160) + bytes(&clipped, 320));
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  const auto& ops = set->ranks[0].ops;
  ASSERT_EQ(ops.size(), 3u);
  for (const Op& op : ops) {
    ASSERT_EQ(op.graph_tensors.size(), 1u);
    ASSERT_EQ(op.graph_ops.size(), 1u);
    EXPECT_EQ(op.graph_tensors[0].uid, 7);
    EXPECT_EQ(op.graph_tensors[0].dims[0], 4);
    EXPECT_EQ(op.graph_ops[0].mode, 100);
    EXPECT_EQ(op.graph_ops[0].operands[2], 0);
  }
  const ReluClips old = ReluClipsOf(ops[0].graph_ops[0]);
  EXPECT_EQ(ops[0].graph_ops[0].params_set, 0u);
  EXPECT_EQ(old.lower, 0);
  EXPECT_EQ(old.upper, HUGE_VAL);
  EXPECT_EQ(old.slope, 0);
  const ReluClips later = ReluClipsOf(ops[1].graph_ops[0]);
  EXPECT_EQ(later.lower, 0);  // not set: cuDNN's default
  EXPECT_EQ(later.upper, 6);
  EXPECT_EQ(later.slope, 0.1);
  EXPECT_EQ(ReluClipsOf(ops[2].graph_ops[0]).upper, 6);
  for (int role = 8; role < format::kGraphOpMaxOperands; ++role) {
    EXPECT_EQ(format::GraphOperand(ops[0].graph_ops[0], role), -1) << role;
    EXPECT_EQ(format::GraphOperand(ops[1].graph_ops[0], role), role == 9 ? 0 : -1) << role;
    EXPECT_EQ(format::GraphOperand(ops[2].graph_ops[0], role), -1) << role;
  }
  // An entry shorter than the first layout's is malformed.
  std::string bad = testing::TempDir("graph-entries-short");
  {
    StreamBuilder w(bad + "/rank-0.ttr", 0, 1);
    format::BackendGraphRecord g{};
    g.api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
    g.tensor_count = g.op_count = 1;
    g.op_entry_bytes = 100;
    g.payload_bytes = 160 + 100;
    w.Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), bytes(&g, sizeof g),
          bytes(&t, 160) + bytes(&relu, 100));
    // So is one whose operand 8..15 names no tensor of the record.
    format::GraphOp far = relu;
    for (int32_t& o : far.more_operands) o = -1;
    far.more_operands[7] = 1;
    g.seq = 1, g.op_entry_bytes = sizeof far, g.payload_bytes = 160 + sizeof far;
    w.Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), bytes(&g, sizeof g),
          bytes(&t, 160) + bytes(&far, sizeof far));
  }
  auto short_set = LoadTraceDir(bad);
  ASSERT_TRUE(short_set.ok()) << short_set.status();
  ASSERT_EQ(short_set->ranks[0].ops.size(), 2u);
  for (const Op& op : short_set->ranks[0].ops) {
    EXPECT_EQ(op.tensor_problem, "graph record malformed") << op.seq;
    EXPECT_TRUE(op.graph_ops.empty()) << op.seq;
  }
}

// A graph tensor no cuDNN graph finalizes (more than kGraphMaxDims dims, a dim below 1, dims whose element count
// overflows int64: fuzz_trace_load's regress_graph_tensor_count_overflow.rec) makes its record malformed: no
// entries, never a size computed from it; the same record with sizeable dims reads.
TEST(TraceModelTest, GraphTensorsNoGraphCanHaveAreMalformed) {
  format::GraphOp relu{};
  relu.type = 13, relu.mode = 100, relu.compute_type = 0, relu.axis = -1;
  for (int32_t& o : relu.operands) o = -1;
  relu.operands[0] = relu.operands[2] = 0;
  auto bytes = [](const void* p, size_t n) { return std::string(static_cast<const char*>(p), n); };
  struct Read {
    std::string problem = "not read";
    size_t tensors = 0, ops = 0;
  };
  auto load = [&](const format::GraphTensor& t) {
    const std::string dir = testing::TempDir("graph-tensor");
    {
      StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
      format::BackendGraphRecord g{};
      g.api = static_cast<uint16_t>(format::ApiId::kCudnnBackendExecute);
      g.tensor_count = g.op_count = 1;
      g.tensor_entry_bytes = sizeof t, g.op_entry_bytes = sizeof relu;
      g.payload_bytes = sizeof t + sizeof relu;
      w.Raw(static_cast<uint16_t>(format::RecordType::kBackendGraph), bytes(&g, sizeof g),
            bytes(&t, sizeof t) + bytes(&relu, sizeof relu));
    }
    auto set = LoadTraceDir(dir);
    EXPECT_TRUE(set.ok()) << set.status();
    Read read;
    if (!set.ok() || set->ranks[0].ops.size() != 1) return read;
    const Op& op = set->ranks[0].ops[0];
    read = {op.tensor_problem, op.graph_tensors.size(), op.graph_ops.size()};
    return read;
  };
  format::GraphTensor t{};
  t.uid = 7, t.nb_dims = 2, t.dims[0] = int64_t{1} << 31, t.dims[1] = int64_t{1} << 31;  // 2^62 elements: sizeable
  const Read good = load(t);
  EXPECT_EQ(good.problem, "");
  EXPECT_EQ(good.tensors, 1u);
  EXPECT_EQ(good.ops, 1u);
  format::GraphTensor overflow = t;
  overflow.dims[1] = int64_t{1} << 32;  // 2^63
  format::GraphTensor zero = t;
  zero.dims[1] = 0;
  format::GraphTensor negative = t;
  negative.dims[0] = negative.dims[1] = -(int64_t{1} << 31);  // a positive product of negative dims
  format::GraphTensor too_many = t;
  too_many.nb_dims = format::kGraphMaxDims + 1;
  for (const format::GraphTensor& bad : {overflow, zero, negative, too_many}) {
    const Read read = load(bad);
    EXPECT_EQ(read.problem, "graph record malformed") << int{bad.nb_dims} << " " << bad.dims[0] << " " << bad.dims[1];
    EXPECT_EQ(read.tensors, 0u);
    EXPECT_EQ(read.ops, 0u);
  }
}

TEST(TraceModelTest, DuplicateSeqAndDroppedPayloadsAreWarnings) {
  std::string dir = testing::TempDir("dups");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    w.Gemm(testing::GemmRec(4, 1, 1, 1, DType::kF32, DType::kF32));
    w.Gemm(testing::GemmRec(4, 1, 1, 1, DType::kF32, DType::kF32));
    format::NoticeRecord n{};
    n.code = static_cast<uint32_t>(format::NoticeCode::kPayloadDropped);
    n.message_bytes = 4;
    n.seq = 4;
    n.count = 1;
    w.Raw(static_cast<uint16_t>(format::RecordType::kNotice), std::string(reinterpret_cast<const char*>(&n), sizeof n),
          "full");
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->ranks[0].ops.size(), 1u);
  EXPECT_EQ(set->ranks[0].dropped_payloads, 1u);
  CheckReport r = RunChecks(*set);
  std::string all;
  for (const auto& w : r.summary().warnings) all += w + "\n";
  EXPECT_NE(all.find("duplicate op record for seq 4"), std::string::npos) << all;
  EXPECT_NE(all.find("dropped 1 tensors"), std::string::npos) << all;
  EXPECT_EQ(r.summary().not_checked.at("tensor unusable"), 1u);
}

TEST(TraceModelTest, DroppedCallRecordIsAWarningNamingTheOp) {
  std::string dir = testing::TempDir("record_dropped");
  {
    StreamBuilder w(dir + "/rank-0.ttr", 0, 1);
    w.Gemm(testing::GemmRec(8, 1, 1, 1, DType::kF32, DType::kF32));
    format::NoticeRecord n{};
    n.code = static_cast<uint32_t>(format::NoticeCode::kRecordDropped);
    const std::string msg = "call record dropped: the call had not returned";
    n.message_bytes = static_cast<uint32_t>(msg.size());
    n.seq = 7;
    n.count = 1;
    w.Raw(static_cast<uint16_t>(format::RecordType::kNotice), std::string(reinterpret_cast<const char*>(&n), sizeof n),
          msg);
  }
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  CheckReport r = RunChecks(*set);
  std::string all;
  for (const auto& w : r.summary().warnings) all += w + "\n";
  EXPECT_NE(all.find("op seq 7: call record dropped"), std::string::npos) << all;
}

void WriteEmpty(const std::string& path, int rank, int world, const std::string& job) {
  StreamBuilder w(path, rank, world, job);
}

TEST(TraceModelTest, RejectsInconsistentDirectories) {
  struct Case {
    const char* name;
    int r0, w0;
    const char* j0;
    int r1, w1;
    const char* j1;
    const char* expect;
  };
  const Case cases[] = {
      {"jobs", 0, 2, "a", 1, 2, "b", "different jobs"},
      {"dup", 1, 2, "a", 1, 2, "a", "rank 1 appears twice"},
      {"world", 0, 2, "a", 1, 3, "a", "inconsistent world size"},
      {"range", 0, 2, "a", 2, 2, "a", "outside world size 2"},
      {"unknown", -1, -1, "a", 0, -1, "a", "rank unknown"},
  };
  for (const Case& c : cases) {
    std::string dir = testing::TempDir(c.name);
    WriteEmpty(dir + "/x.ttr", c.r0, c.w0, c.j0);
    WriteEmpty(dir + "/y.ttr", c.r1, c.w1, c.j1);
    auto set = LoadTraceDir(dir);
    ASSERT_FALSE(set.ok()) << c.name;
    EXPECT_NE(std::string(set.status().message()).find(c.expect), std::string::npos)
        << c.name << ": " << set.status();
  }
}

TEST(TraceModelTest, SingleStreamWithoutRankAndForeignFilesAreFine) {
  std::string dir = testing::TempDir("single");
  WriteEmpty(dir + "/pid-77.ttr", -1, -1, "a");
  FILE* f = fopen((dir + "/notes.txt").c_str(), "w");
  fputs("not a stream", f);
  fclose(f);
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->ranks.size(), 1u);
  EXPECT_EQ(set->ranks[0].rank(), -1);
}

TEST(TraceModelTest, MissingAndEmptyDirectories) {
  auto missing = LoadTraceDir("/nonexistent/ttrace-dir");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  auto empty = LoadTraceDir(testing::TempDir("empty"));
  EXPECT_TRUE(absl::IsNotFound(empty.status()));
  EXPECT_NE(std::string(empty.status().message()).find("no trace streams"), std::string::npos);
}

TEST(TraceModelTest, HugeWorldSizeListsFewMissingRanks) {
  std::string dir = testing::TempDir("huge_world");
  WriteEmpty(dir + "/rank-1.ttr", 1, 2147483647, "j");
  auto set = LoadTraceDir(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_FALSE(set->warnings.empty());
  EXPECT_LT(set->warnings[0].size(), 300u);
  EXPECT_NE(set->warnings[0].find("1 of 2147483647 ranks present (missing: 0,2,3,"), std::string::npos)
      << set->warnings[0];
}

}  // namespace
}  // namespace ttrace::analyzer

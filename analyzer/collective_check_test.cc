// All-reduce checks across rank streams written with TraceWriter: clean runs are clean for every op and dtype;
// a flipped output bit is attributed to the flipped rank's (rank, seq) only; argument mismatches, missing ranks
// and missing tensors are handled as the header says.
#include "analyzer/collective_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analyzer/check.h"
#include "analyzer/tensor_data.h"
#include "analyzer/test_util.h"
#include "gtest/gtest.h"

namespace ttrace::analyzer {
namespace {

using format::DType;
using format::TensorSlot;
using testing::Encode;
using testing::RoundTo;
using testing::StreamBuilder;

constexpr uint64_t kComm = 0xc0ffee;

uint64_t SeqOf(int rank, int op) { return static_cast<uint64_t>(3 * op + rank); }  // differs across ranks

// Inputs per rank, and the output NCCL would give (a ring in the dtype from rank 0; integers wrap).
struct AllReduce {
  DType dt;
  int op;
  std::vector<std::vector<double>> in;  // [rank][element]
  std::vector<double> out;
};

double Wrap(DType dt, double v) {
  switch (dt) {
    case DType::kI8: return static_cast<int8_t>(static_cast<int64_t>(v));
    case DType::kU8: return static_cast<uint8_t>(static_cast<int64_t>(v));
    case DType::kI32: return static_cast<int32_t>(static_cast<int64_t>(v));
    case DType::kU32: return static_cast<uint32_t>(static_cast<int64_t>(v));
    default: return v;
  }
}

AllReduce MakeAllReduce(int n, DType dt, int op, uint64_t count, std::mt19937_64& rng) {
  AllReduce ar{dt, op, {}, {}};
  const bool is_int = !IsFloatDType(dt);
  std::uniform_real_distribution<double> u(-1, 1), g(0.5, 2);
  std::uniform_int_distribution<int> small(-3, 9);
  ar.in.resize(static_cast<size_t>(n));
  for (auto& v : ar.in) {
    v.resize(count);
    for (double& x : v) {
      if (is_int) {
        x = small(rng);
        if (dt == DType::kU8 || dt == DType::kU32 || dt == DType::kU64) x = std::fabs(x);
      } else {
        x = RoundTo(dt, op == 1 ? (rng() % 2 ? -1 : 1) * g(rng) : u(rng));
      }
    }
  }
  ar.out.resize(count);
  for (uint64_t e = 0; e < count; ++e) {
    double r = ar.in[0][e];
    for (int k = 1; k < n; ++k) {
      const double x = ar.in[static_cast<size_t>(k)][e];
      switch (op) {
        case 0: case 4: r = r + x; break;
        case 1: r = r * x; break;
        case 2: r = std::max(r, x); break;
        case 3: r = std::min(r, x); break;
      }
      r = is_int ? Wrap(dt, r) : RoundTo(dt, r);
    }
    if (op == 4) r = is_int ? std::trunc(r / n) : RoundTo(dt, r / n);
    ar.out[e] = r;
  }
  return ar;
}

// Options of one synthetic trace.
struct Write {
  int world = 0;                 // ranks in the world; streams written for ranks < present
  int present = -1;              // -1: all
  std::function<void(int rank, std::string* recv)> mutate;  // alters a rank's captured output
  std::function<void(int rank, format::CollectiveRecord* rec)> edit;
  bool drop_tensors_rank1 = false;
};

std::string WriteTrace(const AllReduce& ar, const Write& w) {
  const std::string dir = testing::TempDir("allreduce");
  const int present = w.present < 0 ? w.world : w.present;
  for (int r = 0; r < present; ++r) {
    StreamBuilder s(dir + "/rank-" + std::to_string(r) + ".ttr", r, w.world);
    s.CommInit(kComm, r, w.world);
    format::CollectiveRecord rec =
        testing::AllReduceRec(SeqOf(r, 0), kComm, 0, r, w.world, ar.dt, ar.out.size(), ar.op);
    if (w.edit) w.edit(r, &rec);
    s.Collective(rec);
    if (w.drop_tensors_rank1 && r == 1) continue;
    std::string recv = Encode(ar.dt, ar.out);
    if (w.mutate) w.mutate(r, &recv);
    s.Tensor(rec.seq, TensorSlot::kSend, ar.dt, static_cast<int64_t>(ar.out.size()), 1, 1,
             Encode(ar.dt, ar.in[static_cast<size_t>(r)]));
    s.Tensor(rec.seq, TensorSlot::kRecv, ar.dt, static_cast<int64_t>(ar.out.size()), 1, 1, recv);
  }
  return dir;
}

CheckReport Check(const std::string& dir) {
  auto set = LoadTraceDir(dir);
  EXPECT_TRUE(set.ok()) << set.status();
  if (!set.ok()) return CheckReport();
  return RunChecks(*set);
}

TEST(CollectiveCheckTest, CleanForEveryOpAndDtype) {
  std::mt19937_64 rng(1);
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kU8, DType::kI32,
                   DType::kU32, DType::kI64, DType::kU64}) {
    for (int op = 0; op < 5; ++op) {
      for (int n : {2, 3, 4}) {
        AllReduce ar = MakeAllReduce(n, dt, op, 33, rng);
        CheckReport r = Check(WriteTrace(ar, {n}));
        EXPECT_TRUE(r.no_findings()) << DTypeName(static_cast<uint8_t>(dt)) << " op " << op << " n " << n << ": "
                               << (r.no_findings() ? "" : r.findings()[0].message);
        EXPECT_EQ(r.summary().checked.at("allreduce"), static_cast<uint64_t>(n));
      }
    }
  }
}

// With 3 ranks every flip is attributed to the flipped rank: beyond the bound as allreduce.bound, within it as
// allreduce.identical (the other two agree).
TEST(CollectiveCheckTest, BitFlipSweepThreeRanksBlamesOnlyTheFlippedRank) {
  std::mt19937_64 rng(2);
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32}) {
    AllReduce ar = MakeAllReduce(3, dt, 0, 8, rng);
    int flips = 0, beyond = 0;
    for (int rank = 0; rank < 3; ++rank) {
      for (uint64_t e : {0u, 5u}) {
        for (int bit = 0; bit < 8 * static_cast<int>(format::DTypeSize(static_cast<uint8_t>(dt))); ++bit) {
          Write w{3};
          w.mutate = [&](int r, std::string* recv) {
            if (r == rank) testing::FlipBit(recv, dt, e, bit);
          };
          CheckReport rep = Check(WriteTrace(ar, w));
          ++flips;
          ASSERT_EQ(rep.findings().size(), 1u) << "rank " << rank << " elem " << e << " bit " << bit;
          const Finding& f = rep.findings()[0];
          EXPECT_EQ(f.rank, rank);
          EXPECT_EQ(f.seq, SeqOf(rank, 0));
          EXPECT_EQ(f.api, "ncclAllReduce");
          EXPECT_EQ(f.first.index, e);
          if (f.check == "allreduce.bound") {
            ++beyond;
          } else {
            EXPECT_EQ(f.check, "allreduce.identical");
          }
        }
      }
    }
    printf("[bitflip] allreduce 3 ranks %-4s: %d flips, all attributed to the flipped rank; %d beyond the bound\n",
           DTypeName(static_cast<uint8_t>(dt)).c_str(), flips, beyond);
    if (dt == DType::kI32) EXPECT_EQ(beyond, flips);  // integers are exact
  }
}

// With 2 ranks a flip beyond the bound is attributed to the flipped rank; one within it still yields exactly one
// identity finding (which of two agreeing-with-the-bound outputs is wrong cannot always be told).
TEST(CollectiveCheckTest, BitFlipSweepTwoRanks) {
  std::mt19937_64 rng(3);
  for (DType dt : {DType::kF32, DType::kBF16}) {
    AllReduce ar = MakeAllReduce(2, dt, 0, 6, rng);
    int beyond = 0, within = 0, within_right = 0;
    for (int rank = 0; rank < 2; ++rank) {
      for (int bit = 0; bit < 8 * static_cast<int>(format::DTypeSize(static_cast<uint8_t>(dt))); ++bit) {
        Write w{2};
        w.mutate = [&](int r, std::string* recv) {
          if (r == rank) testing::FlipBit(recv, dt, 3, bit);
        };
        CheckReport rep = Check(WriteTrace(ar, w));
        ASSERT_EQ(rep.findings().size(), 1u) << "bit " << bit;
        const Finding& f = rep.findings()[0];
        if (f.check == "allreduce.bound") {
          ++beyond;
          EXPECT_EQ(f.rank, rank);
          EXPECT_EQ(f.seq, SeqOf(rank, 0));
        } else {
          ++within;
          within_right += f.rank == rank;
        }
      }
    }
    printf("[bitflip] allreduce 2 ranks %-4s: %d flips beyond the bound (all at the flipped rank), %d within "
           "(attributed to the flipped rank %d times)\n",
           DTypeName(static_cast<uint8_t>(dt)).c_str(), beyond, within, within_right);
    EXPECT_GT(beyond, 0);
  }
}

TEST(CollectiveCheckTest, ArgumentMismatchBlamesTheOddRank) {
  std::mt19937_64 rng(4);
  AllReduce ar = MakeAllReduce(3, DType::kF32, 0, 8, rng);
  Write w{3};
  w.edit = [](int r, format::CollectiveRecord* rec) {
    if (r == 2) rec->red_op = 2;  // max where the others sum
  };
  CheckReport rep = Check(WriteTrace(ar, w));
  ASSERT_EQ(rep.findings().size(), 1u);
  EXPECT_EQ(rep.findings()[0].check, "allreduce.args");
  EXPECT_EQ(rep.findings()[0].rank, 2);
  EXPECT_EQ(rep.findings()[0].seq, SeqOf(2, 0));
  EXPECT_EQ(rep.summary().not_checked.at("arguments differ across ranks"), 2u);
}

TEST(CollectiveCheckTest, MissingRankOrTensorsIsNotCheckedNotAFinding) {
  std::mt19937_64 rng(5);
  AllReduce ar = MakeAllReduce(3, DType::kF32, 0, 8, rng);
  Write w{3};
  w.present = 2;
  CheckReport rep = Check(WriteTrace(ar, w));
  EXPECT_TRUE(rep.no_findings());
  EXPECT_EQ(rep.summary().not_checked.at("incomplete collective (ranks missing)"), 2u);
  bool warned = false;
  for (const auto& s : rep.summary().warnings) warned |= s.find("missing: 2") != std::string::npos;
  EXPECT_TRUE(warned);

  Write d{3};
  d.drop_tensors_rank1 = true;
  rep = Check(WriteTrace(ar, d));
  EXPECT_TRUE(rep.no_findings());
  EXPECT_EQ(rep.summary().not_checked.at("tensors not captured"), 3u);
}

TEST(CollectiveCheckTest, ConsistentlyWrongOutputIsFoundOnEveryRank) {
  std::mt19937_64 rng(6);
  AllReduce ar = MakeAllReduce(3, DType::kBF16, 0, 8, rng);
  ar.out[4] = RoundTo(DType::kBF16, ar.out[4] + 0.5);  // every rank got the same wrong value
  CheckReport rep = Check(WriteTrace(ar, {3}));
  ASSERT_EQ(rep.findings().size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(rep.findings()[static_cast<size_t>(r)].check, "allreduce.bound");
    EXPECT_EQ(rep.findings()[static_cast<size_t>(r)].first.index, 4u);
  }
}

// Every rank holds the same output, so the identity check cannot help: only the bound decides. One element is
// moved away from the exact sum (avg) by a multiple of the textbook worst case of any reduction order, written out
// here independently of error_model.cc: T = (n - 1)·u·Σ|x_i| + u·|s| for a sum (n - 1 additions in the dtype, or
// one final rounding), T = (n + 1)·u·Σ|x_i|/n + u·|s/n| for an average (two more roundings). At 0.5-0.95 T it is a
// value a correct NCCL could return: no finding. At 1.3-1.9 T no order can produce it: a finding on every rank at
// that element. So the all-reduce bound is pinned within a factor 2 from both sides.
TEST(CollectiveCheckTest, AllRanksEquallyWrongAreJudgedByTheBoundAlone) {
  std::mt19937_64 rng(17);
  int cases = 0;
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    const double u = dt == DType::kF32 ? 0x1p-24 : dt == DType::kBF16 ? 0x1p-8 : 0x1p-11;
    for (int op : {0, 4}) {
      for (int n : {2, 3, 5, 8}) {
        AllReduce ar = MakeAllReduce(n, dt, op, 64, rng);
        bool done = false;
        for (size_t e = 0; e < ar.out.size() && !done; ++e) {
          double s = 0, abs_sum = 0;
          for (const auto& x : ar.in) {
            s += x[e];
            abs_sum += std::fabs(x[e]);
          }
          const double worst = op == 0 ? (n - 1) * u * abs_sum + u * std::fabs(s)
                                       : (n + 1) * u * abs_sum / n + u * std::fabs(s / n);
          if (op == 4) s /= n;
          const double sign = e % 2 ? 1 : -1;
          const double near = RoundTo(dt, s + sign * 0.75 * worst), far = RoundTo(dt, s + sign * 1.6 * worst);
          if (std::fabs(near - s) < 0.5 * worst || std::fabs(near - s) > 0.95 * worst) continue;
          if (std::fabs(far - s) < 1.3 * worst || std::fabs(far - s) > 1.9 * worst) continue;
          done = true;
          AllReduce plausible = ar, impossible = ar;
          plausible.out[e] = near;
          impossible.out[e] = far;
          const std::string what = std::string(DTypeName(static_cast<uint8_t>(dt))) + " op " + std::to_string(op) +
                                   " n " + std::to_string(n) + " element " + std::to_string(e);
          CheckReport clean = Check(WriteTrace(plausible, {n}));
          EXPECT_TRUE(clean.no_findings()) << what << ": " << clean.findings()[0].message;
          CheckReport rep = Check(WriteTrace(impossible, {n}));
          ASSERT_EQ(rep.findings().size(), static_cast<size_t>(n)) << what;
          for (const Finding& f : rep.findings()) {
            EXPECT_EQ(f.check, "allreduce.bound") << what;
            EXPECT_EQ(f.first.index, e) << what;
            EXPECT_EQ(f.violations, 1u) << what;
            EXPECT_GT(f.ratio, 1.0) << what;
          }
          ++cases;
        }
        EXPECT_TRUE(done) << "no element fits the windows: " << DTypeName(static_cast<uint8_t>(dt)) << " n " << n;
      }
    }
  }
  EXPECT_EQ(cases, 24);
}

// A reduction over one rank returns its input (avg: scaled by 1/1 or divided by 1, both exact): any change, even
// one ulp, is a finding.
TEST(CollectiveCheckTest, OneRankReductionsAreExact) {
  for (int op : {0, 1, 4}) {
    for (DType dt : {DType::kF32, DType::kBF16}) {
      std::mt19937_64 rng(static_cast<uint64_t>(op) + 40);
      AllReduce ar = MakeAllReduce(1, dt, op, 16, rng);
      CheckReport clean = Check(WriteTrace(ar, {1}));
      EXPECT_EQ(clean.verdict(), Verdict::kClean) << "op " << op;
      const Write ulp{1, -1, [dt](int, std::string* recv) { testing::FlipBit(recv, dt, 5, 0); }};
      CheckReport rep = Check(WriteTrace(ar, ulp));
      ASSERT_EQ(rep.findings().size(), 1u) << "op " << op << " dtype " << static_cast<int>(dt);
      EXPECT_EQ(rep.findings()[0].model, "exact");
      EXPECT_EQ(rep.findings()[0].first.index, 5u);
    }
  }
}

TEST(CollectiveCheckTest, ExtremaWithNaNAcceptNaNOrAnInput) {
  AllReduce ar{DType::kF32, 2, {{1, std::nan("")}, {2, 3}}, {2, std::nan("")}};
  EXPECT_TRUE(Check(WriteTrace(ar, {2})).no_findings());
  ar.out[1] = 3;  // NaN-ignoring max
  EXPECT_TRUE(Check(WriteTrace(ar, {2})).no_findings());
  ar.out[1] = 7;
  EXPECT_FALSE(Check(WriteTrace(ar, {2})).no_findings());
}

TEST(CollectiveCheckTest, ReduceReferenceTerms) {
  ReduceElementTerms t = ReduceReference(ReduceOp::kSum, {1, -2, 4});
  EXPECT_EQ(t.ref, 3);
  EXPECT_EQ(t.abs_sum, 7);
  t = ReduceReference(ReduceOp::kAvg, {1, -2, 4});
  EXPECT_EQ(t.ref, 1);
  t = ReduceReference(ReduceOp::kProd, {0.5, -2, 4});
  EXPECT_EQ(t.ref, -4);
  EXPECT_EQ(t.abs_prod, 4);
  EXPECT_EQ(t.prod_scale, 8);
  EXPECT_EQ(ReduceReference(ReduceOp::kMin, {1, -2, 4}).ref, -2);
  EXPECT_EQ(ReduceReference(ReduceOp::kMax, {1, -2, 4}).ref, 4);
}

TEST(CollectiveCheckTest, CountWhoseByteSizeOverflowsIsAShapeMismatch) {
  std::mt19937_64 rng(9);
  AllReduce ar = MakeAllReduce(2, DType::kF32, 0, 0, rng);  // empty buffers captured
  Write w{2};
  w.edit = [](int, format::CollectiveRecord* rec) { rec->count = uint64_t{1} << 62; };  // 4·2^62 wraps to 0
  CheckReport rep = Check(WriteTrace(ar, w));
  EXPECT_TRUE(rep.no_findings());
  EXPECT_EQ(rep.summary().not_checked.at("shape mismatch"), 2u);
}

TEST(CollectiveCheckTest, Int8AverageOverManyRanksDividesByTheRankCount) {
  std::mt19937_64 rng(10);
  for (int n : {200, 256}) {  // not representable in int8
    AllReduce ar = MakeAllReduce(n, DType::kI8, 4, 3, rng);
    CheckReport r = Check(WriteTrace(ar, {n}));
    EXPECT_TRUE(r.no_findings()) << n << ": " << (r.no_findings() ? "" : r.findings()[0].message);
    EXPECT_EQ(r.summary().checked.at("allreduce"), static_cast<uint64_t>(n));
  }
}

TEST(CollectiveCheckTest, ArgumentVoteTieGoesToTheLowestCommRank) {
  std::mt19937_64 rng(11);
  AllReduce ar = MakeAllReduce(5, DType::kF32, 0, 4, rng);
  Write w{5};
  w.edit = [](int r, format::CollectiveRecord* rec) {
    rec->red_op = r == 0 ? 0 : r <= 2 ? 2 : 1;  // sum; max on ranks 1, 2; prod on ranks 3, 4 (a tie)
  };
  CheckReport rep = Check(WriteTrace(ar, w));
  std::vector<int> blamed;
  for (const Finding& f : rep.findings()) blamed.push_back(f.rank);
  std::sort(blamed.begin(), blamed.end());
  EXPECT_EQ(blamed, (std::vector<int>{0, 3, 4}));
}

TEST(CollectiveCheckTest, EquallyFarOutputsAreEachComparedWithTheOther) {
  // 1 + 2^-24 lies halfway between two FP32 values: each rank rounded it another way, both within the bound and
  // equally far from it, so both are blamed, each against the other's output.
  AllReduce ar{DType::kF32, 0, {{1.0}, {0x1p-24}}, {1.0}};
  Write w{2};
  w.mutate = [](int r, std::string* recv) {
    if (r == 1) *recv = Encode(DType::kF32, {1 + 0x1p-23});
  };
  CheckReport rep = Check(WriteTrace(ar, w));
  ASSERT_EQ(rep.findings().size(), 2u);
  for (const Finding& f : rep.findings()) {
    EXPECT_EQ(f.check, "allreduce.identical");
    EXPECT_EQ(f.violations, 1u) << f.message;
    EXPECT_NE(f.message.find(absl::StrCat("from rank ", 1 - f.rank, "'s")), std::string::npos) << f.message;
  }
}

// ---- every collective of the table, and point-to-point -------------------------------------------------------

// One call of `api` on n ranks: each rank's input and the output NCCL would give, written by hand per collective
// (not from the table, which is what is under test). Empty: the rank has no such buffer.
struct Call {
  format::ApiId api;
  int n;
  uint64_t count;
  int root;
  std::vector<std::vector<double>> in, out;
};

Call MakeCall(format::ApiId api, int n, uint64_t count, int root, std::mt19937_64& rng) {
  using format::ApiId;
  Call c{api, n, count, root, std::vector<std::vector<double>>(n), std::vector<std::vector<double>>(n)};
  std::uniform_real_distribution<double> u(-1, 1);
  auto values = [&](uint64_t k) {
    std::vector<double> v(k);
    for (double& x : v) x = RoundTo(DType::kF32, u(rng));
    return v;
  };
  const uint64_t nc = count * static_cast<uint64_t>(n);
  for (int r = 0; r < n; ++r) {
    const bool root = r == c.root;
    switch (api) {
      case ApiId::kNcclAllGather: case ApiId::kNcclGather: case ApiId::kNcclReduce: c.in[r] = values(count); break;
      case ApiId::kNcclBroadcast: case ApiId::kNcclBcast: if (root) c.in[r] = values(count); break;
      case ApiId::kNcclScatter: if (root) c.in[r] = values(nc); break;
      default: c.in[r] = values(nc); break;  // reduce-scatter, all-to-all
    }
  }
  auto sum = [&](uint64_t idx) {  // a chain in FP32 from rank 0, as simgpu's ring would round
    double acc = c.in[0][idx];
    for (int k = 1; k < n; ++k) acc = RoundTo(DType::kF32, acc + c.in[static_cast<size_t>(k)][idx]);
    return acc;
  };
  for (int r = 0; r < n; ++r) {
    std::vector<double>& o = c.out[static_cast<size_t>(r)];
    const bool root = r == c.root;
    for (uint64_t j = 0; j < nc; ++j) {
      const uint64_t k = j / count, i = j % count;
      switch (api) {
        case ApiId::kNcclAllGather: o.push_back(c.in[k][i]); break;
        case ApiId::kNcclGather: if (root) o.push_back(c.in[k][i]); break;
        case ApiId::kNcclAlltoAll: o.push_back(c.in[k][static_cast<uint64_t>(r) * count + i]); break;
        default: break;
      }
    }
    for (uint64_t j = 0; j < count; ++j) {
      switch (api) {
        case ApiId::kNcclBroadcast: case ApiId::kNcclBcast: o.push_back(c.in[static_cast<size_t>(c.root)][j]); break;
        case ApiId::kNcclScatter:
          o.push_back(c.in[static_cast<size_t>(c.root)][static_cast<uint64_t>(r) * count + j]);
          break;
        case ApiId::kNcclReduceScatter: o.push_back(sum(static_cast<uint64_t>(r) * count + j)); break;
        case ApiId::kNcclReduce: if (root) o.push_back(sum(j)); break;
        default: break;
      }
    }
  }
  return c;
}

std::string WriteCall(const Call& c, const std::function<void(int, std::vector<double>*)>& mutate = {}) {
  const std::string dir = testing::TempDir("collective");
  const bool reduces = c.api == format::ApiId::kNcclReduceScatter || c.api == format::ApiId::kNcclReduce;
  const bool rooted = c.root >= 0;
  for (int r = 0; r < c.n; ++r) {
    StreamBuilder s(dir + "/rank-" + std::to_string(r) + ".ttr", r, c.n);
    s.CommInit(kComm, r, c.n);
    format::CollectiveRecord rec = testing::AllReduceRec(SeqOf(r, 0), kComm, 0, r, c.n, DType::kF32, c.count);
    rec.api = static_cast<uint16_t>(c.api);
    rec.red_op = reduces ? 0 : 0xff;
    rec.root_or_peer = rooted ? c.root : -1;
    s.Collective(rec);
    std::vector<double> out = c.out[static_cast<size_t>(r)];
    if (mutate) mutate(r, &out);
    const auto& in = c.in[static_cast<size_t>(r)];
    if (!in.empty()) s.Tensor(rec.seq, TensorSlot::kSend, DType::kF32, static_cast<int64_t>(in.size()), 1, 1,
                              Encode(DType::kF32, in));
    if (!out.empty()) s.Tensor(rec.seq, TensorSlot::kRecv, DType::kF32, static_cast<int64_t>(out.size()), 1, 1,
                               Encode(DType::kF32, out));
  }
  return dir;
}

// Each collective: clean has no finding and every member checked (seq numbers differ across ranks on purpose, so
// the streams' end records count ops the test did not write: the verdict itself is incomplete); one element of one rank's output moved far off is
// one finding, on that rank's (rank, seq), at that element, named "<collective>.exact" or ".bound".
TEST(CollectiveCheckTest, EveryCollectiveCleanAndOneCorruptedElementFoundOnItsRank) {
  using format::ApiId;
  struct Case {
    ApiId api;
    bool rooted;
    const char* check;
  };
  const Case cases[] = {
      {ApiId::kNcclAllGather, false, "allgather.exact"}, {ApiId::kNcclReduceScatter, false, "reducescatter.bound"},
      {ApiId::kNcclBroadcast, true, "broadcast.exact"},  {ApiId::kNcclBcast, true, "broadcast.exact"},
      {ApiId::kNcclReduce, true, "reduce.bound"},        {ApiId::kNcclAlltoAll, false, "alltoall.exact"},
      {ApiId::kNcclGather, true, "gather.exact"},        {ApiId::kNcclScatter, true, "scatter.exact"},
  };
  std::mt19937_64 rng(20);
  for (const Case& k : cases) {
    for (int n : {1, 2, 3, 4}) {
      const int root = k.rooted ? n - 1 : -1;
      const Call c = MakeCall(k.api, n, 5, root, rng);
      const std::string what = absl::StrCat(format::ApiName(static_cast<uint16_t>(k.api)), " n=", n);
      CheckReport clean = Check(WriteCall(c));
      for (const auto& [why, k] : clean.summary().not_checked) ADD_FAILURE() << what << " not checked: " << why;
      EXPECT_TRUE(clean.no_findings()) << what << ": " << clean.findings()[0].message;
      const std::string kind = std::string(k.check).substr(0, std::string(k.check).find('.'));
      EXPECT_EQ(clean.summary().checked[kind], static_cast<uint64_t>(n)) << what;

      const int victim = k.rooted && (k.api == ApiId::kNcclReduce || k.api == ApiId::kNcclGather) ? root : n / 2;
      const uint64_t elem = c.out[static_cast<size_t>(victim)].size() - 2;
      CheckReport bad = Check(WriteCall(c, [&](int r, std::vector<double>* out) {
        if (r == victim) (*out)[elem] += 1000;
      }));
      ASSERT_EQ(bad.findings().size(), 1u) << what;
      const Finding& f = bad.findings()[0];
      EXPECT_EQ(f.check, k.check) << what;
      EXPECT_EQ(f.rank, victim) << what;
      EXPECT_EQ(f.seq, SeqOf(victim, 0)) << what;
      EXPECT_EQ(f.first.index, elem) << what << ": " << f.message;
    }
  }
}

TEST(CollectiveCheckTest, RootThatDiffersIsAnArgumentFinding) {
  std::mt19937_64 rng(21);
  Call c = MakeCall(format::ApiId::kNcclBroadcast, 3, 4, 0, rng);
  const std::string dir = WriteCall(c);
  // Rewrite rank 2's stream with root 1.
  StreamBuilder s(dir + "/rank-2.ttr", 2, 3);
  s.CommInit(kComm, 2, 3);
  format::CollectiveRecord rec = testing::AllReduceRec(SeqOf(2, 0), kComm, 0, 2, 3, DType::kF32, 4);
  rec.api = static_cast<uint16_t>(format::ApiId::kNcclBroadcast);
  rec.red_op = 0xff;
  rec.root_or_peer = 1;
  s.Collective(rec);
  s.Tensor(rec.seq, TensorSlot::kRecv, DType::kF32, 4, 1, 1, Encode(DType::kF32, c.out[2]));
  s.Close();
  CheckReport rep = Check(dir);
  ASSERT_EQ(rep.findings().size(), 1u);
  EXPECT_EQ(rep.findings()[0].check, "broadcast.args");
  EXPECT_EQ(rep.findings()[0].rank, 2);
}

// A ring of 3 ranks, two messages from each rank to the next: the k-th receive at b from a holds the k-th send
// from a to b. Corrupted or reordered receives, and a count that differs, are the receiver's findings.
struct Ring {
  std::vector<std::vector<std::vector<double>>> msg;  // [sender][k]
  std::function<void(int rank, int k, format::CollectiveRecord*, std::vector<double>*)> edit_recv;
  bool drop_rank0 = false;
};

std::string WriteRing(const Ring& ring) {
  const std::string dir = testing::TempDir("sendrecv");
  const int n = 3;
  for (int r = 0; r < n; ++r) {
    if (ring.drop_rank0 && r == 0) continue;
    StreamBuilder s(dir + "/rank-" + std::to_string(r) + ".ttr", r, n);
    s.CommInit(kComm, r, n);
    uint64_t seq = 0;
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    for (int k = 0; k < 2; ++k) {
      const auto& out = ring.msg[static_cast<size_t>(r)][static_cast<size_t>(k)];
      format::CollectiveRecord snd = testing::AllReduceRec(seq++, kComm, k, r, n, DType::kF32, out.size());
      snd.api = static_cast<uint16_t>(format::ApiId::kNcclSend);
      snd.red_op = 0xff;
      snd.root_or_peer = next;
      s.Collective(snd);
      s.Tensor(snd.seq, TensorSlot::kSend, DType::kF32, static_cast<int64_t>(out.size()), 1, 1,
               Encode(DType::kF32, out));
      std::vector<double> in = ring.msg[static_cast<size_t>(prev)][static_cast<size_t>(k)];
      format::CollectiveRecord rcv = testing::AllReduceRec(seq++, kComm, k, r, n, DType::kF32, in.size());
      rcv.api = static_cast<uint16_t>(format::ApiId::kNcclRecv);
      rcv.red_op = 0xff;
      rcv.root_or_peer = prev;
      if (ring.edit_recv) ring.edit_recv(r, k, &rcv, &in);
      s.Collective(rcv);
      s.Tensor(rcv.seq, TensorSlot::kRecv, DType::kF32, static_cast<int64_t>(in.size()), 1, 1,
               Encode(DType::kF32, in));
    }
  }
  return dir;
}

TEST(CollectiveCheckTest, SendsAndReceivesPairInOrderPerPeer) {
  std::mt19937_64 rng(22);
  std::uniform_real_distribution<double> u(-1, 1);
  Ring ring;
  ring.msg.resize(3);
  for (auto& m : ring.msg)
    for (int k = 0; k < 2; ++k) {
      m.emplace_back(6);
      for (double& x : m.back()) x = RoundTo(DType::kF32, u(rng));
    }
  CheckReport clean = Check(WriteRing(ring));
  EXPECT_EQ(clean.verdict(), Verdict::kClean) << (clean.no_findings() ? "" : clean.findings()[0].message);
  EXPECT_EQ(clean.summary().checked["sendrecv"], 12u);

  Ring flipped = ring;  // rank 2's second receive, element 3
  flipped.edit_recv = [](int r, int k, format::CollectiveRecord*, std::vector<double>* in) {
    if (r == 2 && k == 1) (*in)[3] = -(*in)[3] + 0.25;
  };
  CheckReport rep = Check(WriteRing(flipped));
  ASSERT_EQ(rep.findings().size(), 1u);
  EXPECT_EQ(rep.findings()[0].check, "sendrecv.match");
  EXPECT_EQ(rep.findings()[0].rank, 2);
  EXPECT_EQ(rep.findings()[0].seq, 3u);  // send, recv, send, recv: the second receive
  EXPECT_EQ(rep.findings()[0].first.index, 3u);

  Ring swapped = ring;  // rank 1 got its two messages in the wrong order
  swapped.edit_recv = [&ring](int r, int k, format::CollectiveRecord*, std::vector<double>* in) {
    if (r == 1) *in = ring.msg[0][static_cast<size_t>(1 - k)];
  };
  rep = Check(WriteRing(swapped));
  ASSERT_EQ(rep.findings().size(), 2u);
  for (const Finding& f : rep.findings()) EXPECT_EQ(f.rank, 1);

  Ring shorter = ring;  // rank 0 receives 5 elements where 6 were sent
  shorter.edit_recv = [](int r, int k, format::CollectiveRecord* rec, std::vector<double>* in) {
    if (r == 0 && k == 0) {
      rec->count = 5;
      in->resize(5);
    }
  };
  rep = Check(WriteRing(shorter));
  ASSERT_EQ(rep.findings().size(), 1u);
  EXPECT_EQ(rep.findings()[0].rank, 0);
  EXPECT_NE(rep.findings()[0].message.find("of 6"), std::string::npos) << rep.findings()[0].message;

  Ring missing = ring;  // rank 0's stream is missing: its partners are not checked, nothing is a finding
  missing.drop_rank0 = true;
  rep = Check(WriteRing(missing));
  EXPECT_TRUE(rep.no_findings());
  EXPECT_EQ(rep.summary().not_checked.at("point-to-point partner missing"), 4u);
}

}  // namespace
}  // namespace ttrace::analyzer

// Decoding applies op() once so every later comparison works on plain m x k, k x n and m x n matrices; folding a
// shared-A batch into n makes micro-batched first layers comparable across different micro-batch sizes.
#include "analyzer/shard.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "analyzer/tensor_data.h"

namespace ttrace::analyzer {

using format::DType;
using format::TensorSlot;

namespace {

bool Scalar(const Tensor* t, double* out) {
  if (t == nullptr || t->meta.rows != 1 || t->meta.cols != 1 || t->meta.batch != 1) return false;
  const std::vector<double> v = DecodeAll(static_cast<DType>(t->meta.dtype), t->data);
  if (v.size() != 1) return false;
  *out = v[0];
  return true;
}

// Whether x[0..n) is y[0..n) divided by p, each element within one rounding of f: -1 when not, 0 when y is all zero
// there, 1 otherwise.
int DividedRun(const double* x, const double* y, size_t n, int p, const FloatFormat& f) {
  bool nonzero = false;
  for (size_t e = 0; e < n; ++e) {
    const double want = y[e] / p;
    if (std::fabs(x[e] - want) > f.u * std::fabs(want) + f.eta) return -1;
    nonzero = nonzero || y[e] != 0;
  }
  return nonzero ? 1 : 0;
}

// DividedRun against stored values, decoded in blocks (8 elements first: most probes fail there) so that no output
// is ever decoded whole.
bool DividedRunStored(const double* x, const StoredValues& y, size_t n, int p, const FloatFormat& f) {
  double block[1024];
  bool nonzero = false;
  for (size_t at = 0, len = 8; at < n; at += len, len = std::min<size_t>(2 * len, 1024)) {
    len = std::min(len, n - at);
    DecodeStrided(y.dtype, y.bytes.data(), at, 1, len, block);
    const int r = DividedRun(x + at, block, len, p, f);
    if (r < 0) return false;
    nonzero = nonzero || r > 0;
  }
  return nonzero;
}

}  // namespace

std::vector<double> OpFolded(const std::vector<double>& x, int64_t rows, int64_t cols, int64_t batch, bool trans) {
  if (!trans) return x;
  std::vector<double> out(x.size());
  const int64_t per = rows * cols;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t i = 0; i < rows; ++i) out[b * per + j + i * cols] = x[b * per + i + j * rows];
  return out;
}

GemmShape LogicalShape(const format::GemmRecord& g) {
  GemmShape s{g.m, g.n, g.k, std::max<int64_t>(g.batch_count, 1)};
  if (s.batch > 1 && g.stride_a == 0 && !(g.flags & format::kPointerArrays)) {
    s.n *= s.batch;
    s.batch = 1;
  }
  return s;
}

absl::StatusOr<LogicalGemm> DecodeLogicalGemm(const Op& op) {
  const format::GemmRecord& g = op.gemm;
  if (g.status != 0) return absl::FailedPreconditionError("call failed");
  if (!op.tensor_problem.empty()) return absl::FailedPreconditionError("tensor unusable");
  LogicalGemm L;
  L.alpha = g.alpha;
  L.beta = g.beta;
  if ((g.flags & format::kScalarsUnknown) &&
      (!Scalar(op.tensor(TensorSlot::kAlpha), &L.alpha) || !Scalar(op.tensor(TensorSlot::kBeta), &L.beta)))
    return absl::FailedPreconditionError("alpha/beta on device");
  const Tensor* a = op.tensor(TensorSlot::kA);
  const Tensor* b = op.tensor(TensorSlot::kB);
  const Tensor* c = op.tensor(TensorSlot::kCOut);
  const Tensor* c0 = op.tensor(TensorSlot::kCIn);
  if (a == nullptr || b == nullptr || c == nullptr || (L.beta != 0 && c0 == nullptr))
    return absl::FailedPreconditionError(op.MissingTensorsReason());
  const int64_t batch = std::max<int64_t>(g.batch_count, 1);
  if (batch > 1 && a->meta.batch != 1 && (g.stride_a != 0 || (g.flags & format::kPointerArrays)))
    return absl::FailedPreconditionError("batched GEMM with per-batch A");
  const bool ta = g.transa != 0, tb = g.transb != 0;
  if (a->meta.rows != (ta ? g.k : g.m) || a->meta.cols != (ta ? g.m : g.k) || b->meta.rows != (tb ? g.n : g.k) ||
      b->meta.cols != (tb ? g.k : g.n) || c->meta.rows != g.m || c->meta.cols != g.n || c->meta.batch != batch ||
      (b->meta.batch != batch && b->meta.batch != 1))
    return absl::FailedPreconditionError("shape mismatch");
  L.ab_type = static_cast<DType>(a->meta.dtype);
  L.c_type = static_cast<DType>(c->meta.dtype);
  absl::StatusOr<GemmPrecision> p = ResolveGemmPrecision(g.api, g.compute_type, g.math_mode, L.ab_type,
                                                         static_cast<DType>(b->meta.dtype), L.c_type);
  if (!p.ok()) return absl::FailedPreconditionError("no error model");
  L.precision = *p;
  L.m = g.m;
  L.k = g.k;
  L.n = g.n * batch;
  std::vector<double> av = DecodeAll(L.ab_type, a->data);
  av.resize(static_cast<size_t>(a->meta.rows * a->meta.cols));  // stride 0: every batch's A is the first
  L.a = OpFolded(av, a->meta.rows, a->meta.cols, 1, ta);
  std::vector<double> bv = DecodeAll(static_cast<DType>(b->meta.dtype), b->data);
  if (b->meta.batch == 1 && batch > 1) {
    std::vector<double> rep;
    for (int64_t i = 0; i < batch; ++i) rep.insert(rep.end(), bv.begin(), bv.end());
    bv = std::move(rep);
  }
  L.b = OpFolded(bv, b->meta.rows, b->meta.cols, batch, tb);
  L.c = DecodeAll(L.c_type, c->data);
  if (L.beta != 0) {
    L.c_in = DecodeAll(static_cast<DType>(c0->meta.dtype), c0->data);
    if (c0->meta.batch == 1 && batch > 1) {
      std::vector<double> rep;
      for (int64_t i = 0; i < batch; ++i) rep.insert(rep.end(), L.c_in.begin(), L.c_in.end());
      L.c_in = std::move(rep);
    }
  }
  if (L.a.size() != static_cast<size_t>(L.m * L.k) || L.b.size() != static_cast<size_t>(L.k * L.n) ||
      L.c.size() != static_cast<size_t>(L.m * L.n) || (L.beta != 0 && L.c_in.size() != L.c.size()))
    return absl::FailedPreconditionError("shape mismatch");
  return L;
}

bool IsDividedCopy(const std::vector<double>& x, const std::vector<double>& y, int p, const FloatFormat& f) {
  return x.size() == y.size() && p >= 2 && DividedRun(x.data(), y.data(), y.size(), p, f) > 0;
}

std::vector<DividedSegment> FindDividedSegments(const std::vector<double>& x, const std::vector<StoredValues>& outputs,
                                                int p, const FloatFormat& f) {
  std::vector<DividedSegment> out;
  if (p < 1) return out;
  struct Head {
    double first;  // element 0 divided by p
    size_t source, length;
  };
  std::vector<Head> heads;
  for (size_t g = 0; g < outputs.size(); ++g) {
    const uint32_t es = format::DTypeSize(static_cast<uint8_t>(outputs[g].dtype));
    const size_t n = es == 0 ? 0 : outputs[g].bytes.size() / es;
    if (n == 0 || n > x.size() || !IsFloatDType(outputs[g].dtype)) continue;
    heads.push_back(Head{DecodeElement(outputs[g].dtype, outputs[g].bytes.data(), 0) / p, g, n});
  }
  std::sort(heads.begin(), heads.end(), [](const Head& a, const Head& b) { return a.first < b.first; });
  // A filter in front of the search: the keys (sign, exponent, top 8 significand bits of the value as a float) of
  // every value within one rounding of some head; a position whose key is not among them matches no head. Rounding
  // to float is monotone, so the floats of [lo, hi] have the keys between those of lo and hi.
  auto key = [](double v) {
    const float fv = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &fv, sizeof b);
    return b >> 15;
  };
  std::vector<uint64_t> seen((1u << 17) / 64, 0);
  auto mark = [&](uint32_t a, uint32_t b) {
    for (uint32_t k = a; k <= b; ++k) seen[k >> 6] |= uint64_t{1} << (k & 63);
  };
  for (const Head& h : heads) {
    const double r = (f.u * std::fabs(h.first) + f.eta) * (1 + 1e-9);
    const double lo = h.first - r, hi = h.first + r;
    if (lo >= 0) mark(key(lo), key(hi));
    else if (hi <= 0) mark(key(hi), key(lo));
    else mark(key(0.0), key(hi)), mark(key(-0.0), key(lo));
  }
  for (size_t i = 0; i < x.size();) {
    const uint32_t k = key(x[i]);
    if (((seen[k >> 6] >> (k & 63)) & 1) == 0) {
      ++i;
      continue;
    }
    // |x − w| ≤ u·|w| + η with w the first element divided by p gives |w| ≤ (|x| + η)/(1 − u), so every w that may
    // match lies within u·(|x| + η)/(1 − u) + η of x.
    const double tol = f.u * (std::fabs(x[i]) + f.eta) / (1 - f.u) + f.eta;
    auto it = std::lower_bound(heads.begin(), heads.end(), x[i] - tol,
                               [](const Head& h, double v) { return h.first < v; });
    size_t taken = 0;
    for (; it != heads.end() && it->first <= x[i] + tol && taken == 0; ++it) {
      if (i + it->length > x.size() || !DividedRunStored(x.data() + i, outputs[it->source], it->length, p, f))
        continue;
      out.push_back(DividedSegment{i, it->length, it->source});
      taken = it->length;
    }
    i += taken == 0 ? 1 : taken;
  }
  return out;
}

std::vector<DividedSegment> RecentGemmSegments(const std::vector<Op>& ops, size_t j, const std::vector<int>& divisors) {
  const Op& op = ops[j];
  const bool reduction = op.kind == OpKind::kCollective &&
                         (op.api == static_cast<uint16_t>(format::ApiId::kNcclAllReduce) ||
                          op.api == static_cast<uint16_t>(format::ApiId::kNcclReduceScatter));
  const Tensor* send = op.tensor(TensorSlot::kSend);
  if (!reduction || send == nullptr || !IsFloatDType(static_cast<DType>(send->meta.dtype))) return {};
  const DType dt = static_cast<DType>(send->meta.dtype);
  constexpr size_t kLookBack = 64;  // GEMMs searched back from the reduction: 32 layers' weight and input gradients
  std::vector<StoredValues> outputs;
  std::vector<size_t> at;  // the op index of each output
  size_t gemms = 0;
  for (size_t i = j; i-- > 0 && gemms < kLookBack;) {
    if (ops[i].kind != OpKind::kGemm) continue;
    ++gemms;
    const Tensor* c = ops[i].tensor(TensorSlot::kCOut);
    if (c != nullptr && c->meta.dtype == send->meta.dtype && c->data.size() <= send->data.size()) {
      outputs.push_back(StoredValues{dt, c->data});
      at.push_back(i);
    }
  }
  if (outputs.empty()) return {};  // the send is decoded only when some output could lie in it
  const std::vector<double> x = DecodeAll(dt, send->data);
  std::vector<DividedSegment> out;
  for (int p : divisors)
    for (DividedSegment s : FindDividedSegments(x, outputs, p, FormatOf(dt))) {
      s.divisor = p;
      s.op = at[s.source];
      out.push_back(s);
    }
  return out;
}

CommLayout::CommLayout(const TraceSet& set) {
  for (const RankTrace& r : set.ranks)
    for (const Op& op : r.ops) {
      if (op.kind != OpKind::kCollective) continue;
      auto& v = by_rank_[r.rank()];
      const uint64_t h = op.coll.comm_hash;
      if (std::none_of(v.begin(), v.end(), [&](const auto& e) { return e.first == h; }))
        v.emplace_back(h, op.coll.comm_rank);
      size_[h] = op.coll.comm_size;
    }
  // Communicators a rank created but issued no collective on (a data-parallel group whose gradient reduction went
  // to another communicator) still say which ranks hold which slices; they come after the used ones.
  for (const RankTrace& r : set.ranks)
    for (const format::CommInitRecord& c : r.comm_inits) {
      if (c.status != 0 || c.comm_size < 2) continue;
      auto& v = by_rank_[r.rank()];
      if (std::none_of(v.begin(), v.end(), [&](const auto& e) { return e.first == c.comm_hash; }))
        v.emplace_back(c.comm_hash, c.comm_rank);
      size_.emplace(c.comm_hash, c.comm_size);
    }
}

int CommLayout::CoordOf(int rank, uint64_t comm) const {
  auto it = by_rank_.find(rank);
  if (it == by_rank_.end()) return -1;
  for (const auto& [h, r] : it->second)
    if (h == comm) return r;
  return -1;
}

int CommLayout::SizeOf(uint64_t comm) const {
  auto it = size_.find(comm);
  return it == size_.end() ? 0 : it->second;
}

std::vector<uint64_t> CommLayout::CommsOf(int rank) const {
  std::vector<uint64_t> out;
  auto it = by_rank_.find(rank);
  if (it != by_rank_.end())
    for (const auto& e : it->second) out.push_back(e.first);
  return out;
}

std::string SplitText(const GemmSplit& s) {
  std::vector<std::string> parts;
  for (const auto& [name, d] : {std::pair<const char*, DimSplit>{"m", s.m}, {"n", s.n}, {"k", s.k}})
    if (d.factor > 1)
      parts.push_back(absl::StrCat(name, "/", d.factor, " by comm 0x", absl::Hex(d.comm),
                                   d.groups > 1 ? absl::StrCat(" in ", d.groups, " groups") : std::string()));
  return parts.empty() ? "not split" : absl::StrJoin(parts, ", ");
}

std::vector<GemmSplit> CandidateSplits(const GemmShape& ref, const GemmShape& cand, const CommLayout& comms,
                                       int rank) {
  auto factor = [](int64_t r, int64_t c) -> int { return c > 0 && r % c == 0 ? static_cast<int>(r / c) : 0; };
  const int fm = factor(ref.m, cand.m), fn = factor(ref.n, cand.n), fk = factor(ref.k, cand.k);
  if (fm == 0 || fn == 0 || fk == 0 || ref.batch != cand.batch) return {};
  std::vector<uint64_t> options = comms.CommsOf(rank);
  auto choices = [&](int f) {
    std::vector<uint64_t> out;
    if (f == 1) return std::vector<uint64_t>{0};
    for (uint64_t h : options)
      if (comms.SizeOf(h) == f) out.push_back(h);
    return out;
  };
  auto groups = [](int f, int64_t len) {
    std::vector<int64_t> g{1};
    if (f > 1)
      for (int64_t d = 2; d <= len; ++d)
        if (len % d == 0) g.push_back(d);
    return g;
  };
  std::vector<GemmSplit> out;
  for (uint64_t cm : choices(fm))
    for (uint64_t cn : choices(fn))
      for (uint64_t ck : choices(fk)) {
        if ((cm && (cm == cn || cm == ck)) || (cn && cn == ck)) continue;
        GemmSplit s;
        s.m = {fm, cm};
        s.n = {fn, cn};
        s.k = {fk, ck};
        if (!ResolveRoles(comms, rank, &s)) continue;
        for (int64_t gm : groups(fm, cand.m))
          for (int64_t gn : groups(fn, cand.n))
            for (int64_t gk : groups(fk, cand.k)) {
              if (out.size() >= kMaxSplits) return out;
              GemmSplit g = s;
              g.m.groups = gm;
              g.n.groups = gn;
              g.k.groups = gk;
              out.push_back(g);
            }
      }
  std::stable_sort(out.begin(), out.end(), [](const GemmSplit& a, const GemmSplit& b) {
    return a.m.groups * a.n.groups * a.k.groups < b.m.groups * b.n.groups * b.k.groups;
  });
  return out;
}

int64_t FullIndex(const DimSplit& d, int64_t len, int coord, int64_t x) {
  const int64_t b = len / d.groups;
  return (x / b) * (d.factor * b) + coord * b + x % b;
}

int CoordOfFull(const DimSplit& d, int64_t len, int64_t f) {
  const int64_t b = len / d.groups;
  return static_cast<int>((f % (d.factor * b)) / b);
}

bool ResolveRoles(const CommLayout& comms, int rank, GemmSplit* split) {
  const std::vector<uint64_t> mine = comms.CommsOf(rank);
  for (DimSplit* d : {&split->m, &split->n, &split->k}) {
    if (d->factor == 1) continue;
    auto it = std::find(mine.begin(), mine.end(), d->comm);
    if (it == mine.end()) return false;
    d->role = static_cast<int>(it - mine.begin());
  }
  return true;
}

bool ShardCoords(const GemmSplit& split, const CommLayout& comms, int rank, int* cm, int* cn, int* ck) {
  const std::vector<uint64_t> mine = comms.CommsOf(rank);
  auto coord = [&](const DimSplit& d, int* out) {
    *out = 0;
    if (d.factor == 1) return true;
    if (d.role < 0 || d.role >= static_cast<int>(mine.size())) return false;
    const uint64_t h = mine[static_cast<size_t>(d.role)];
    *out = comms.SizeOf(h) == d.factor ? comms.CoordOf(rank, h) : -1;
    return *out >= 0 && *out < d.factor;
  };
  return coord(split.m, cm) && coord(split.n, cn) && coord(split.k, ck);
}

void PlaceBlock(const std::vector<double>& block, int64_t rows, int64_t cols, int bi, int bj, const DimSplit& rs,
                const DimSplit& cs, std::vector<double>* full) {
  const int64_t full_rows = rows * rs.factor;
  for (int64_t j = 0; j < cols; ++j) {
    const int64_t fj = FullIndex(cs, cols, bj, j);
    for (int64_t i = 0; i < rows; ++i) (*full)[FullIndex(rs, rows, bi, i) + fj * full_rows] = block[i + j * rows];
  }
}

absl::StatusOr<SplitMapping> ParseSplitMapping(const std::string& text) {
  SplitMapping out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (words.empty()) continue;
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("mapping line ", line_no, ": ", why));
    };
    uint64_t seq = 0;
    if (words[0] == "owns") {
      int rank = -1;
      if (words.size() < 3 || !absl::SimpleAtoi(words[1], &rank) || rank < 0)
        return bad("expected: owns RANK REF_SEQ[-REF_SEQ][,...] ...");
      std::vector<std::pair<uint64_t, uint64_t>>& ranges = out.owns[rank];
      for (size_t i = 2; i < words.size(); ++i)
        for (absl::string_view item : absl::StrSplit(words[i], ',', absl::SkipEmpty())) {
          std::vector<absl::string_view> ends = absl::StrSplit(item, absl::MaxSplits('-', 1));
          uint64_t lo = 0, hi = 0;
          if (!absl::SimpleAtoi(ends[0], &lo) || !absl::SimpleAtoi(ends.size() == 2 ? ends[1] : ends[0], &hi) ||
              hi < lo)
            return bad(absl::StrCat("bad reference seq range '", item, "' (SEQ or FIRST-LAST)"));
          ranges.emplace_back(lo, hi);
        }
      continue;
    }
    if (words.size() < 2 || words[0] != "op" || !absl::SimpleAtoi(words[1], &seq))
      return bad("expected: op REF_SEQ [m|n|k=FACTOR@COMM_HASH] ... or owns RANK REF_SEQ[-REF_SEQ][,...]");
    GemmSplit s;
    s.source = "mapping";
    for (size_t i = 2; i < words.size(); ++i) {
      std::vector<std::string> kv = absl::StrSplit(words[i], absl::MaxSplits('=', 1));
      std::vector<std::string> fc = absl::StrSplit(kv.size() == 2 ? kv[1] : "", absl::MaxSplits('@', 1));
      DimSplit d;
      std::string hex = fc.size() == 2 ? fc[1] : "";
      if (hex.rfind("0x", 0) == 0) hex = hex.substr(2);
      if (kv.size() != 2 || fc.size() != 2 || !absl::SimpleAtoi(fc[0], &d.factor) || d.factor < 1 ||
          !absl::SimpleHexAtoi(hex, &d.comm))
        return bad(absl::StrCat("bad split '", words[i], "' (DIM=FACTOR@COMM_HASH)"));
      if (kv[0] == "m") s.m = d;
      else if (kv[0] == "n") s.n = d;
      else if (kv[0] == "k") s.k = d;
      else return bad(absl::StrCat("unknown dimension '", kv[0], "'"));
    }
    out.ops[seq] = s;
  }
  return out;
}

absl::StatusOr<SplitMapping> ReadSplitMapping(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the mapping file"));
  std::stringstream ss;
  ss << in.rdbuf();
  absl::StatusOr<SplitMapping> m = ParseSplitMapping(ss.str());
  if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", m.status().message()));
  return m;
}

}  // namespace ttrace::analyzer

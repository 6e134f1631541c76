// libFuzzer harness: the collector's connection logic (collector::Session, transport-free) fed the bytes of one
// hostile client connection: hello, token, stream header, then index entries and frames (include/ttrace/wire.h).
// The session requires a token ("fuzz-token") and has small limits (16 KiB frames, 48 KiB streams) so that seeds
// reach every refusal and every limit.
//
// Each input runs as sent, and again with every checksum the session verifies recomputed (the file header's, each
// frame header's and payload's, each index entry's and its copy of the frame header's), found by walking the
// input the way the session does; mutations of the second kind get past the checksums to the structural checks
// and to the end-record parsing of the last frame. Each of the two runs twice, fed at once and in small uneven
// chunks. Besides "no crash, no read out of bounds, no leak of a bounded allocation" (sanitizers, libFuzzer's
// -malloc_limit_mb), it asserts the session's contract:
// - the output is nothing (the client went away before a whole handshake) or one Reply (magic, version, size,
//   a known status; a refusal is final and counted once by its reason) followed, after a welcome only, by one
//   Ack per frame written, numbered 1, 2, 3, ...;
// - the stream file is exactly the stream header and the first frames() frames the client sent, byte for byte,
//   each frame numbered in order, with right checksums and within the limits; its index has one entry per frame that describes it,
//   and its manifest's last entry counts the same frames;
// - a session the client ended cleanly on a frame boundary has no close reason; a stream whose records the store's
//   reader reads to an end record is counted as closed, not cut;
// - the metrics count this one connection, its bytes, its frames, and no connection stays active;
// - how the input is chunked changes nothing: output, close reason, frames and the stored bytes are identical.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "collector/metrics.h"
#include "collector/session.h"
#include "collector/stream_store.h"
#include "fuzz/fuzz_assert.h"
#include "fuzz/fuzz_stream.h"
#include "store/crc32c.h"
#include "store/manifest.h"
#include "store/trace_reader.h"
#include "ttrace/format.h"
#include "ttrace/wire.h"

namespace {

namespace collector = ttrace::collector;
namespace format = ttrace::format;
namespace store = ttrace::store;
namespace wire = ttrace::wire;

constexpr char kToken[] = "fuzz-token";
constexpr uint32_t kMaxFrameBytes = 16u << 10;
constexpr uint64_t kMaxStreamBytes = 48u << 10;
constexpr size_t kMaxHelloSkip = 4096;  // what collector/session.cc skips of a larger hello

// Where the parts of a client's input lie, by their sizes only (no check): what a session that accepts
// everything reads. Frames lists [entry offset, frame offset, frame end) of each entry whose frame header is
// complete; the payload may be cut.
struct Layout {
  bool header = false;  // the hello was sane and a whole FileHeader follows it
  size_t header_at = 0;
  struct Frame {
    size_t entry, frame, end;
  };
  std::vector<Frame> frames;
};

Layout Walk(const std::string& in) {
  Layout l;
  wire::Hello h;
  if (in.size() < sizeof h) return l;
  memcpy(&h, in.data(), sizeof h);
  if (h.hello_size < sizeof h || h.hello_size - sizeof h > kMaxHelloSkip || h.token_bytes > wire::kMaxTokenBytes)
    return l;
  size_t pos = size_t{h.hello_size} + h.token_bytes;
  if (in.size() < pos + sizeof(format::FileHeader)) return l;
  l.header = true;
  l.header_at = pos;
  pos += sizeof(format::FileHeader);
  while (in.size() - pos >= sizeof(format::IndexEntry) + sizeof(format::FrameHeader)) {
    format::FrameHeader fh;
    memcpy(&fh, in.data() + pos + sizeof(format::IndexEntry), sizeof fh);
    const size_t frame = pos + sizeof(format::IndexEntry);
    const size_t end = frame + sizeof fh + fh.compressed_size;  // compressed_size < 2^32: no overflow
    l.frames.push_back({pos, frame, end});
    if (end > in.size()) break;
    pos = end;
  }
  return l;
}

template <typename T>
void Edit(std::string* s, size_t at, void (*edit)(T*, const std::string&, size_t)) {
  T v;
  memcpy(&v, s->data() + at, sizeof v);
  edit(&v, *s, at);
  memcpy(s->data() + at, &v, sizeof v);
}

// The input with every checksum the session verifies made right.
std::string FixChecksums(std::string in) {
  const Layout l = Walk(in);
  if (!l.header) return in;
  Edit<format::FileHeader>(&in, l.header_at, [](format::FileHeader* h, const std::string&, size_t) {
    h->header_crc = store::Crc32c(h, offsetof(format::FileHeader, header_crc));
  });
  for (const Layout::Frame& f : l.frames) {
    if (f.end <= in.size()) {
      Edit<format::FrameHeader>(&in, f.frame, [](format::FrameHeader* fh, const std::string& s, size_t at) {
        fh->payload_crc = store::Crc32c(s.data() + at + sizeof *fh, fh->compressed_size);
      });
    }
    Edit<format::FrameHeader>(&in, f.frame, [](format::FrameHeader* fh, const std::string&, size_t) {
      fh->header_crc = store::Crc32c(fh, offsetof(format::FrameHeader, header_crc));
    });
    Edit<format::IndexEntry>(&in, f.entry, [](format::IndexEntry* e, const std::string& s, size_t at) {
      format::FrameHeader fh;
      memcpy(&fh, s.data() + at + sizeof *e, sizeof fh);
      e->frame_header_crc = fh.header_crc;
      e->entry_crc = store::Crc32c(e, offsetof(format::IndexEntry, entry_crc));
    });
  }
  return in;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct Outcome {
  std::string output, close_reason, path, stored, index;
  uint64_t frames = 0;
  bool closed_clean = false;
};

// One connection: `in` fed at once (chunk_seed 0) or in chunks of 1..61 bytes drawn from chunk_seed, then a clean
// end of input. Asserts what needs the session and its metrics alive.
Outcome Run(const std::string& in, uint32_t chunk_seed) {
  const std::string root = ttrace::fuzz::ScratchDir() + "/collector";
  ttrace::fuzz::RemoveTree(root);
  collector::StreamStore streams(root, 0600, /*durable=*/false);
  collector::Metrics metrics;
  collector::SessionConfig config;
  config.require_token = true;
  config.token = kToken;
  config.limits.max_frame_bytes = kMaxFrameBytes;
  config.limits.max_stream_bytes = kMaxStreamBytes;
  Outcome o;
  {
    collector::Session session(&streams, &metrics, config);
    uint32_t x = chunk_seed;
    bool fed = true;
    for (size_t pos = 0; pos < in.size();) {
      x = x * 1664525u + 1013904223u;
      const size_t n = chunk_seed == 0 ? in.size() : std::min<size_t>(in.size() - pos, 1 + (x >> 16) % 61);
      const bool more = session.Feed(in.data() + pos, n);
      FUZZ_ASSERT(more == !session.done());
      FUZZ_ASSERT(fed || !more);  // a finished session stays finished
      fed = more;
      pos += n;
      o.output += session.TakeOutput();
    }
    const bool done_before_end = session.done();
    session.End(true);
    o.output += session.TakeOutput();
    FUZZ_ASSERT(session.done());
    o.close_reason = session.close_reason();
    o.path = session.stream_path();
    o.frames = session.frames();

    const Layout l = Walk(in);
    const bool ended_on_boundary = l.header && (l.frames.empty() ? in.size() == l.header_at +
                                                                       sizeof(format::FileHeader)
                                                                 : l.frames.back().end == in.size());
    if (!done_before_end && !o.path.empty() && ended_on_boundary && o.frames == l.frames.size())
      FUZZ_ASSERT(o.close_reason.empty());
    FUZZ_ASSERT(!o.path.empty() || !o.close_reason.empty());  // no stream: refused, or the client went away
  }
  FUZZ_ASSERT(metrics.active.load() == 0);
  FUZZ_ASSERT(metrics.connections.load() == 1);
  FUZZ_ASSERT(metrics.bytes_in.load() == in.size());
  FUZZ_ASSERT(metrics.frames.load() == o.frames);
  o.closed_clean = metrics.closed_clean.load() == 1;
  FUZZ_ASSERT(metrics.closed_clean.load() + metrics.closed_cut.load() == (o.path.empty() ? 0u : 1u));
  uint64_t refused = 0;
  for (const auto& r : metrics.refused) refused += r.load();

  // The replies.
  if (o.output.empty()) {
    FUZZ_ASSERT(o.path.empty() && o.frames == 0 && refused == 0);
  } else {
    wire::Reply r;
    FUZZ_ASSERT(o.output.size() >= sizeof r);
    memcpy(&r, o.output.data(), sizeof r);
    FUZZ_ASSERT(memcmp(r.magic, wire::kReplyMagic, sizeof r.magic) == 0);
    FUZZ_ASSERT(r.version == wire::kProtocolVersion && r.reply_size == sizeof r);
    FUZZ_ASSERT(r.message[sizeof r.message - 1] == '\0');
    const uint32_t welcome = static_cast<uint32_t>(wire::ReplyStatus::kWelcome);
    const uint32_t refused_status = static_cast<uint32_t>(wire::ReplyStatus::kRefused);
    FUZZ_ASSERT(r.status >= welcome && r.status <= refused_status);
    if (r.status != welcome) {
      FUZZ_ASSERT(o.output.size() == sizeof r && o.frames == 0 && !o.close_reason.empty());
      FUZZ_ASSERT(refused == (r.status == refused_status ? 1u : 0u));
      FUZZ_ASSERT(r.status != refused_status || (r.reason > 0 && r.reason < wire::kRefuseReasons));
    } else {
      FUZZ_ASSERT(refused == 0 && !o.path.empty());
      const std::string relative = o.path.substr(root.size() + 1);  // "job/rank-R.ttr", cut to fit the message
      FUZZ_ASSERT(relative.compare(0, sizeof r.message - 1, r.message) == 0);
      FUZZ_ASSERT((o.output.size() - sizeof r) % sizeof(wire::Ack) == 0);
      FUZZ_ASSERT((o.output.size() - sizeof r) / sizeof(wire::Ack) == o.frames);
      for (uint64_t i = 0; i < o.frames; ++i) {
        wire::Ack a;
        memcpy(&a, o.output.data() + sizeof r + i * sizeof a, sizeof a);
        FUZZ_ASSERT(a.magic == wire::kAckMagic && a.reserved == 0 && a.frames == i + 1);
      }
    }
  }

  // What reached the store: the client's header and frames, as sent, nothing else.
  if (!o.path.empty()) {
    FUZZ_ASSERT(o.path.compare(0, root.size() + 1, root + "/") == 0);
    const Layout l = Walk(in);
    FUZZ_ASSERT(l.header && l.frames.size() >= o.frames);
    std::string expect = in.substr(l.header_at, sizeof(format::FileHeader));
    for (uint64_t i = 0; i < o.frames; ++i)
      expect.append(in, l.frames[i].frame, l.frames[i].end - l.frames[i].frame);
    o.stored = ReadFile(o.path);
    FUZZ_ASSERT(o.stored == expect);
    // ... and only frames that pass every check: numbered, intact, within the limits.
    FUZZ_ASSERT(o.stored.size() <= kMaxStreamBytes);
    format::FileHeader h;
    memcpy(&h, o.stored.data(), sizeof h);
    FUZZ_ASSERT(h.header_crc == store::Crc32c(&h, offsetof(format::FileHeader, header_crc)));
    o.index = ReadFile(o.path + ".idx");
    FUZZ_ASSERT(o.index.size() == sizeof(format::IndexHeader) + o.frames * sizeof(format::IndexEntry));
    size_t pos = sizeof h;
    for (uint64_t i = 0; i < o.frames; ++i) {
      format::FrameHeader fh;
      memcpy(&fh, o.stored.data() + pos, sizeof fh);
      format::IndexEntry e;  // the index entry describes this frame
      memcpy(&e, o.index.data() + sizeof(format::IndexHeader) + i * sizeof e, sizeof e);
      FUZZ_ASSERT(e.offset == pos && e.frame_index == i && e.record_count == fh.record_count);
      FUZZ_ASSERT(e.compressed_size == fh.compressed_size && e.frame_header_crc == fh.header_crc);
      FUZZ_ASSERT(fh.magic == format::kFrameMagic && fh.frame_index == i);
      FUZZ_ASSERT(fh.header_crc == store::Crc32c(&fh, offsetof(format::FrameHeader, header_crc)));
      FUZZ_ASSERT(fh.compressed_size > 0 && fh.compressed_size <= kMaxFrameBytes);
      FUZZ_ASSERT(fh.payload_crc == store::Crc32c(o.stored.data() + pos + sizeof fh, fh.compressed_size));
      pos += sizeof fh + fh.compressed_size;
    }

    const std::string dir = o.path.substr(0, o.path.rfind('/'));
    store::Manifest m;
    std::string error;
    FUZZ_ASSERT(store::ReadManifest(dir + "/manifest.ttm", &m, &error));
    FUZZ_ASSERT(m.streams.size() == 1 && m.skipped == 0);
    const format::ManifestEntry& e = m.streams[0];
    FUZZ_ASSERT(e.frames == o.frames);
    FUZZ_ASSERT(e.state == static_cast<uint32_t>(o.closed_clean ? format::ManifestState::kClosed
                                                                : format::ManifestState::kCut));

    // A stream the store's reader reads to its end record was closed, unless the session failed it.
    if (o.close_reason.empty()) {
      auto reader = store::TraceReader::Open(o.path);
      if (reader.ok()) {
        store::RecordView rec;
        bool last_is_end = false;
        absl::StatusOr<bool> more;
        while ((more = (*reader)->Next(&rec)).ok() && *more) last_is_end = rec.type == format::RecordType::kEnd;
        if (more.ok() && last_is_end) FUZZ_ASSERT(o.closed_clean);
      }
    } else {
      FUZZ_ASSERT(!o.closed_clean);
    }
  }
  return o;
}

void Check(const std::string& in) {
  const Outcome whole = Run(in, 0);
  const Outcome chunked = Run(in, static_cast<uint32_t>(in.size()) | 1u);
  FUZZ_ASSERT(whole.output == chunked.output);
  FUZZ_ASSERT(whole.close_reason == chunked.close_reason);
  FUZZ_ASSERT(whole.path == chunked.path && whole.frames == chunked.frames);
  FUZZ_ASSERT(whole.stored == chunked.stored && whole.index == chunked.index);
  FUZZ_ASSERT(whole.closed_clean == chunked.closed_clean);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  Check(in);
  const std::string fixed = FixChecksums(in);
  if (fixed != in) Check(fixed);
  return 0;
}

// The collector protocol: how a traced process streams its trace to `ttrace-collector` over a unix socket or TCP.
// Hermetic (depends on <cstdint> and format.h). docs/format.md "Collector protocol" is the written spec; this
// header and that section change together.
//
// One connection carries one stream (one rank). The client speaks first:
//
//   client:    Hello, token (Hello.token_bytes bytes), FileHeader (the stream's, FileHeader.header_size bytes)
//   collector: Reply (welcome, version mismatch, or refused with a reason); on anything but welcome it closes
//   client:    { IndexEntry, Frame }*     the store's frames (FrameHeader + compressed bytes), each preceded by
//                                         its index entry (offset 0; entry_crc over it as it is sent)
//   collector: Ack* (one per frame written to the store, in order), until the client shuts its side down;
//              after the last frame it finishes the stream and closes.
//
// The frames are exactly the bytes the embedded sink writes to `rank-N.ttr`: the collector checks each frame's
// header, payload checksum and its entry, then writes it as it came. A stream ends cleanly when the client shuts
// down its sending side on a frame boundary (its last frame holds its EndRecord); anything else is a cut stream.
//
// Evolution: Hello and Reply carry their size; a peer reads the fields it knows and skips the rest.
// kProtocolVersion changes for any change a peer of the other version could misread; a collector answers a
// version it does not speak with kVersionMismatch and its own version, so the client can say what to upgrade.
#ifndef TTRACE_INCLUDE_TTRACE_WIRE_H_
#define TTRACE_INCLUDE_TTRACE_WIRE_H_

#include <cstdint>

#include "ttrace/format.h"

namespace ttrace::wire {

inline constexpr char kHelloMagic[8] = {'T', 'T', 'C', 'O', 'L', 'L', '\r', '\n'};
inline constexpr char kReplyMagic[8] = {'T', 'T', 'C', 'R', 'E', 'P', 'L', 'Y'};
inline constexpr uint32_t kAckMagic = 0x4B415454;  // "TTAK" in memory order
inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxTokenBytes = 256;

struct Hello {
  char magic[8];         // kHelloMagic
  uint32_t version;      // kProtocolVersion of the client
  uint32_t hello_size;   // sizeof(Hello) of the client: the token starts this far from the start
  uint32_t token_bytes;  // bytes of token after the hello, at most kMaxTokenBytes (0: none)
  uint32_t flags;        // 0
  uint64_t reserved;     // 0
};
static_assert(sizeof(Hello) == 32, "Hello layout is part of the protocol");

enum class ReplyStatus : uint32_t {
  kWelcome = 1,          // send the frames
  kVersionMismatch = 2,  // Reply.version is the collector's protocol version
  kRefused = 3,          // Reply.reason says why; the message has details
};
// Why a collector refuses a connection (Reply.reason), also the label of its refusal metrics.
#define TTRACE_REFUSE_REASONS(X)                                                          \
  X(kNone, 0, "none")                                                                     \
  X(kBadToken, 1, "bad token")                                                            \
  X(kBadHeader, 2, "bad stream header")                                                   \
  X(kBadName, 3, "job or stream name not allowed")                                        \
  X(kStreamBusy, 4, "a connection is already writing this stream")                        \
  X(kTooManyConnections, 5, "too many connections")                                       \
  X(kStorage, 6, "the stream cannot be created")                                          \
  X(kMalformedHello, 7, "not a ttrace collector client")
enum class RefuseReason : uint32_t {
#define TTRACE_REFUSE_ENUM(name, id, text) name = id,
  TTRACE_REFUSE_REASONS(TTRACE_REFUSE_ENUM)
#undef TTRACE_REFUSE_ENUM
};
inline constexpr uint32_t kRefuseReasons = 8;
inline const char* RefuseReasonName(uint32_t reason) {
  switch (reason) {
#define TTRACE_REFUSE_NAME(name, id, text) \
  case id:                                 \
    return text;
    TTRACE_REFUSE_REASONS(TTRACE_REFUSE_NAME)
#undef TTRACE_REFUSE_NAME
  }
  return "unknown";
}

struct Reply {
  char magic[8];         // kReplyMagic
  uint32_t version;      // kProtocolVersion of the collector
  uint32_t reply_size;   // sizeof(Reply) of the collector
  uint32_t status;       // ReplyStatus
  uint32_t reason;       // RefuseReason for kRefused, else 0
  char message[40];      // NUL-padded detail for people ("stream rank-3.ttr of job j" or why not)
};
static_assert(sizeof(Reply) == 64, "Reply layout is part of the protocol");

struct Ack {
  uint32_t magic;        // kAckMagic
  uint32_t reserved;     // 0
  uint64_t frames;       // frames of this stream written to the store so far (frame indexes 0 .. frames-1)
};
static_assert(sizeof(Ack) == 16, "Ack layout is part of the protocol");

}  // namespace ttrace::wire

#endif  // TTRACE_INCLUDE_TTRACE_WIRE_H_

// Session: the collector's side of one connection, apart from any transport (collector/server.h feeds it bytes
// from a socket; tests and fuzzers feed it bytes directly). It speaks the protocol of include/ttrace/wire.h:
// validates the hello, the token and the stream header, answers, then checks every index entry and frame (sizes
// against the limits, header and payload checksums, frame numbering, the entry against its frame) and writes
// each good frame to the store, acknowledging it. Input is hostile: any violation ends the session with a reason
// (close_reason()), counted in the metrics and the manifest; it never affects another session.
//
// One thread drives a Session: Feed() with bytes as they arrive, TakeOutput() for bytes to send back, End() when
// the client has shut down its side (or the connection broke). After done() the transport sends what is left
// and closes.
#ifndef TTRACE_COLLECTOR_SESSION_H_
#define TTRACE_COLLECTOR_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collector/metrics.h"
#include "collector/stream_store.h"
#include "store/stream_file.h"
#include "store/trace_writer.h"
#include "ttrace/format.h"
#include "ttrace/wire.h"

namespace ttrace::collector {

struct SessionLimits {
  uint32_t max_frame_bytes = 64u << 20;    // compressed bytes of one frame (the shim's frames are ~4 MiB)
  uint64_t max_stream_bytes = 1ull << 40;  // bytes one connection may send in all
};

struct SessionConfig {
  bool require_token = false;  // TCP: a connection must present `token`
  std::string token;
  SessionLimits limits;
};

// Compares in time that depends only on the lengths, never on where the bytes differ.
bool TokenEquals(const std::string& expected, const std::string& presented);

class Session {
 public:
  Session(StreamStore* store, Metrics* metrics, const SessionConfig& config);
  ~Session();  // ends the session as a broken connection if End() was not called

  // Consumes bytes from the client. False once the session is done (refused, malformed, over a limit, a write
  // failed): the rest of the input is ignored.
  bool Feed(const char* data, size_t n);
  // The same without a copy: the transport receives straight into the session's buffer. InputWindow() says where
  // the current unit's next bytes go and how many it still lacks (`room`, at least 1 while not done); Received(n)
  // says the first n <= room of them are there. A frame's payload is one unit, so a transport that receives into
  // the window when room is large moves payload bytes from the socket to the file with no copy of its own.
  char* InputWindow(size_t* room);
  bool Received(size_t n);
  // The client shut down its side (`clean` true: EOF) or the connection broke (false). Finishes the stream:
  // closed when it stopped on a frame boundary after its end record, else cut, with what was lost.
  void End(bool clean);
  // Bytes to send to the client (replies, acks), taken.
  std::string TakeOutput();

  bool done() const { return done_; }
  const std::string& close_reason() const { return close_reason_; }  // empty while running or after a clean end
  const std::string& stream_path() const { return path_; }            // empty until a stream is opened
  uint64_t frames() const { return frames_; }

 private:
  enum class State { kHello, kSkipHello, kToken, kHeader, kEntry, kFrameHeader, kPayload, kDone };
  void Refuse(wire::ReplyStatus status, wire::RefuseReason reason, const std::string& message);
  void Fail(format::LossReason reason, const std::string& why);
  void Reply(wire::ReplyStatus status, wire::RefuseReason reason, const std::string& message);
  void Need(State state, size_t bytes);
  void Consume(size_t n);  // n more bytes of the current unit are in buffer_; Step() when it is complete
  bool Step();             // acts on a complete buffer_
  void Finish();

  StreamStore* store_;
  Metrics* metrics_;
  SessionConfig config_;
  State state_ = State::kHello;
  size_t need_ = sizeof(wire::Hello);
  std::vector<char> buffer_;  // bytes of the current unit; a frame: FrameHeader + payload, kept until the next
  size_t have_ = 0;
  std::string output_;
  bool done_ = false;
  bool ended_ = false;
  std::string close_reason_;

  wire::Hello hello_{};
  format::FileHeader header_{};
  format::IndexEntry entry_{};
  format::FrameHeader frame_{};
  std::unique_ptr<store::StreamFile> file_;
  std::string path_;
  uint64_t bytes_in_ = 0;
  uint64_t frames_ = 0, records_ = 0, stream_bytes_ = 0;
  bool last_frame_kept_ = false;  // buffer_ holds the last frame written (for its end record)
};

}  // namespace ttrace::collector

#endif  // TTRACE_COLLECTOR_SESSION_H_

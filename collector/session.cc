// Everything a client sends is checked before it is used: sizes against the protocol's and the session's limits
// before anything is allocated, checksums before a frame reaches the store. The collector does not decompress
// the frames it passes through (the analyzer's reader checks the records); it decompresses only the last frame
// of a stream, to read its end record for the manifest.
#include "collector/session.h"

#include <zstd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

#include "store/crc32c.h"

namespace ttrace::collector {
namespace {

constexpr size_t kMaxSkip = 4096;  // bytes of a newer peer's larger hello we skip

}  // namespace

bool TokenEquals(const std::string& expected, const std::string& presented) {
  const size_t n = std::max(expected.size(), presented.size());
  unsigned diff = expected.size() == presented.size() ? 0u : 1u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    const unsigned char b = i < presented.size() ? static_cast<unsigned char>(presented[i]) : 0;
    diff |= a ^ b;
  }
  return diff == 0 && !expected.empty();
}

Session::Session(StreamStore* store, Metrics* metrics, const SessionConfig& config)
    : store_(store), metrics_(metrics), config_(config) {
  Metrics::Add(metrics_->connections, 1);
  metrics_->active.fetch_add(1, std::memory_order_relaxed);
  Need(State::kHello, sizeof(wire::Hello));
}

Session::~Session() {
  if (!done_) End(false);
  metrics_->active.fetch_sub(1, std::memory_order_relaxed);
}

void Session::Need(State state, size_t bytes) {
  state_ = state;
  need_ = bytes;
  have_ = 0;
  const size_t start = state == State::kPayload ? sizeof(format::FrameHeader) : 0;
  if (buffer_.size() < start + bytes) buffer_.resize(start + bytes);
}

bool Session::Feed(const char* data, size_t n) {
  bytes_in_ += n;
  Metrics::Add(metrics_->bytes_in, n);
  while (n > 0 && !done_) {
    size_t room;
    char* at = InputWindow(&room);
    const size_t take = std::min(n, room);
    memcpy(at, data, take);
    data += take;
    n -= take;
    Consume(take);
  }
  return !done_;
}

char* Session::InputWindow(size_t* room) {
  const size_t start = state_ == State::kPayload ? sizeof(format::FrameHeader) : 0;
  *room = done_ ? 0 : need_ - have_;
  return buffer_.data() + start + have_;
}

bool Session::Received(size_t n) {
  bytes_in_ += n;
  Metrics::Add(metrics_->bytes_in, n);
  if (!done_) Consume(n);
  return !done_;
}

void Session::Consume(size_t n) {
  have_ += std::min(n, need_ - have_);
  if (have_ == need_) Step();
}

std::string Session::TakeOutput() {
  std::string out;
  out.swap(output_);
  return out;
}

void Session::Reply(wire::ReplyStatus status, wire::RefuseReason reason, const std::string& message) {
  wire::Reply r;
  memset(&r, 0, sizeof r);
  memcpy(r.magic, wire::kReplyMagic, sizeof r.magic);
  r.version = wire::kProtocolVersion;
  r.reply_size = sizeof r;
  r.status = static_cast<uint32_t>(status);
  r.reason = static_cast<uint32_t>(reason);
  memcpy(r.message, message.data(), std::min(message.size(), sizeof r.message - 1));
  output_.append(reinterpret_cast<const char*>(&r), sizeof r);
}

void Session::Refuse(wire::ReplyStatus status, wire::RefuseReason reason, const std::string& message) {
  Reply(status, reason, message);
  if (status == wire::ReplyStatus::kRefused) Metrics::Add(metrics_->refused[static_cast<uint32_t>(reason)], 1);
  close_reason_ = status == wire::ReplyStatus::kVersionMismatch
                      ? "protocol version " + std::to_string(hello_.version) + " (this collector speaks " +
                            std::to_string(wire::kProtocolVersion) + ")"
                      : std::string("refused: ") + wire::RefuseReasonName(static_cast<uint32_t>(reason)) +
                            (message.empty() ? "" : " (" + message + ")");
  done_ = true;
  state_ = State::kDone;
}

void Session::Fail(format::LossReason reason, const std::string& why) {
  // The frame being received, if any, is lost (whole or in part).
  uint64_t lost_bytes = 0;
  if (state_ == State::kFrameHeader) lost_bytes = sizeof entry_ + have_;
  if (state_ == State::kPayload) lost_bytes = sizeof entry_ + sizeof frame_ + have_;
  if (state_ == State::kEntry) lost_bytes = have_;
  const uint64_t lost_frames = lost_bytes > 0 ? 1 : 0;
  if (file_ != nullptr && reason != format::LossReason::kWriteFailed) file_->NoteLoss(reason, lost_frames, lost_bytes);
  const uint32_t r = static_cast<uint32_t>(reason);
  Metrics::Add(metrics_->frames_lost[r], lost_frames + (reason == format::LossReason::kWriteFailed ? 1 : 0));
  Metrics::Add(metrics_->bytes_lost[r], lost_bytes);
  close_reason_ = std::string(format::LossReasonName(r)) + ": " + why;
  last_frame_kept_ = false;
  Finish();
}

bool Session::Step() {
  switch (state_) {
    case State::kHello: {
      memcpy(&hello_, buffer_.data(), sizeof hello_);
      if (memcmp(hello_.magic, wire::kHelloMagic, sizeof hello_.magic) != 0) {
        Refuse(wire::ReplyStatus::kRefused, wire::RefuseReason::kMalformedHello, "bad magic");
        return false;
      }
      if (hello_.version != wire::kProtocolVersion) {
        Refuse(wire::ReplyStatus::kVersionMismatch, wire::RefuseReason::kNone,
               "collector speaks protocol " + std::to_string(wire::kProtocolVersion));
        return false;
      }
      if (hello_.hello_size < sizeof hello_ || hello_.hello_size - sizeof hello_ > kMaxSkip ||
          hello_.token_bytes > wire::kMaxTokenBytes) {
        Refuse(wire::ReplyStatus::kRefused, wire::RefuseReason::kMalformedHello, "bad hello size");
        return false;
      }
      if (hello_.hello_size > sizeof hello_) {
        Need(State::kSkipHello, hello_.hello_size - sizeof hello_);
        return true;
      }
    }
      [[fallthrough]];
    case State::kSkipHello:
      if (hello_.token_bytes > 0) {
        Need(State::kToken, hello_.token_bytes);
        return true;
      }
      [[fallthrough]];
    case State::kToken: {
      const std::string presented =
          state_ == State::kToken ? std::string(buffer_.data(), hello_.token_bytes) : std::string();
      if (config_.require_token && !TokenEquals(config_.token, presented)) {
        Refuse(wire::ReplyStatus::kRefused, wire::RefuseReason::kBadToken, "");
        return false;
      }
      Need(State::kHeader, sizeof(format::FileHeader));
      return true;
    }
    case State::kHeader: {
      memcpy(&header_, buffer_.data(), sizeof header_);
      const char* bad = nullptr;
      if (memcmp(header_.magic, format::kFileMagic, sizeof header_.magic) != 0)
        bad = "bad magic";
      else if (store::Crc32c(&header_, offsetof(format::FileHeader, header_crc)) != header_.header_crc)
        bad = "checksum mismatch";
      else if (header_.version != format::kFormatVersion)
        bad = "format version";
      else if (header_.header_size != sizeof header_)
        bad = "header size";
      if (bad != nullptr) {
        Refuse(wire::ReplyStatus::kRefused, wire::RefuseReason::kBadHeader, bad);
        return false;
      }
      StreamStore::Opened opened = store_->Open(header_);
      if (opened.file == nullptr) {
        Refuse(wire::ReplyStatus::kRefused, opened.refused, opened.why);
        return false;
      }
      file_ = std::move(opened.file);
      path_ = opened.path;
      std::string error;
      if (!file_->Begin(header_, &error)) {
        Reply(wire::ReplyStatus::kRefused, wire::RefuseReason::kStorage, error);
        Metrics::Add(metrics_->refused[static_cast<uint32_t>(wire::RefuseReason::kStorage)], 1);
        Fail(format::LossReason::kWriteFailed, error);
        return false;
      }
      stream_bytes_ = sizeof header_;
      Metrics::Add(metrics_->bytes_written, sizeof header_);
      Reply(wire::ReplyStatus::kWelcome, wire::RefuseReason::kNone, path_.substr(store_->root().size() + 1));
      Need(State::kEntry, sizeof entry_);
      return true;
    }
    case State::kEntry: {
      memcpy(&entry_, buffer_.data(), sizeof entry_);
      if (store::Crc32c(&entry_, offsetof(format::IndexEntry, entry_crc)) != entry_.entry_crc) {
        Fail(format::LossReason::kMalformed, "index entry checksum mismatch before frame " + std::to_string(frames_));
        return false;
      }
      if (entry_.seq_records > entry_.record_count || (entry_.seq_records > 0 && entry_.min_seq > entry_.max_seq)) {
        Fail(format::LossReason::kMalformed, "impossible seq range before frame " + std::to_string(frames_));
        return false;
      }
      last_frame_kept_ = false;  // buffer_ is about to hold the next frame
      Need(State::kFrameHeader, sizeof frame_);
      return true;
    }
    case State::kFrameHeader: {
      memcpy(&frame_, buffer_.data(), sizeof frame_);
      const std::string at = " at frame " + std::to_string(frames_);
      if (frame_.magic != format::kFrameMagic ||
          store::Crc32c(&frame_, offsetof(format::FrameHeader, header_crc)) != frame_.header_crc) {
        Fail(format::LossReason::kMalformed, "bad frame header" + at);
        return false;
      }
      if (frame_.frame_index != frames_) {
        Fail(format::LossReason::kMalformed, "frame index " + std::to_string(frame_.frame_index) + at);
        return false;
      }
      if (entry_.frame_index != frame_.frame_index || entry_.record_count != frame_.record_count ||
          entry_.compressed_size != frame_.compressed_size || entry_.frame_header_crc != frame_.header_crc) {
        Fail(format::LossReason::kMalformed, "index entry does not describe its frame" + at);
        return false;
      }
      if (frame_.compressed_size == 0 || frame_.uncompressed_size > format::kMaxFrameBytes) {
        Fail(format::LossReason::kMalformed, "frame size" + at);
        return false;
      }
      if (frame_.compressed_size > config_.limits.max_frame_bytes) {
        Fail(format::LossReason::kOverLimit, "frame of " + std::to_string(frame_.compressed_size) +
                                                 " bytes over the limit of " +
                                                 std::to_string(config_.limits.max_frame_bytes) + at);
        return false;
      }
      if (stream_bytes_ + sizeof frame_ + frame_.compressed_size > config_.limits.max_stream_bytes) {
        Fail(format::LossReason::kOverLimit,
             "stream over the limit of " + std::to_string(config_.limits.max_stream_bytes) + " bytes" + at);
        return false;
      }
      Need(State::kPayload, frame_.compressed_size);
      return true;
    }
    case State::kPayload: {
      const char* payload = buffer_.data() + sizeof frame_;
      if (store::Crc32c(payload, frame_.compressed_size) != frame_.payload_crc) {
        Fail(format::LossReason::kMalformed, "frame payload checksum mismatch at frame " + std::to_string(frames_));
        return false;
      }
      const size_t bytes = sizeof frame_ + frame_.compressed_size;
      std::string error;
      if (!file_->WriteFrame(buffer_.data(), bytes, entry_, &error)) {
        Fail(format::LossReason::kWriteFailed, error);
        return false;
      }
      ++frames_;
      records_ += frame_.record_count;
      stream_bytes_ += bytes;
      Metrics::Add(metrics_->frames, 1);
      Metrics::Add(metrics_->records, frame_.record_count);
      Metrics::Add(metrics_->bytes_written, bytes);
      wire::Ack ack{wire::kAckMagic, 0, frames_};
      output_.append(reinterpret_cast<const char*>(&ack), sizeof ack);
      last_frame_kept_ = true;
      Need(State::kEntry, sizeof entry_);
      return true;
    }
    case State::kDone:
      return false;
  }
  return false;
}

void Session::End(bool clean) {
  if (done_) return;
  if (file_ != nullptr && !(clean && state_ == State::kEntry && have_ == 0)) {
    Fail(format::LossReason::kConnectionLost,
         "the client went away " +
             std::string(state_ == State::kEntry && have_ == 0 ? "between frames" : "inside frame ") +
             (state_ == State::kEntry && have_ == 0 ? "" : std::to_string(frames_)));
    return;
  }
  if (file_ == nullptr && close_reason_.empty()) close_reason_ = "the client went away before its stream began";
  Finish();
}

void Session::Finish() {
  done_ = true;
  state_ = State::kDone;
  if (file_ == nullptr) return;
  store::StreamSummary summary;
  summary.frames = frames_;
  summary.records = records_;
  summary.bytes = stream_bytes_;
  if (last_frame_kept_ && close_reason_.empty()) {
    // The stream's last record, from its last frame (still in buffer_): its end record, if it has one.
    const size_t size = frame_.uncompressed_size;
    std::unique_ptr<char[]> decompressed(new char[size]);  // not zero-filled: zstd writes it
    char* records = decompressed.get();
    const size_t n = ZSTD_decompress(records, size, buffer_.data() + sizeof frame_, frame_.compressed_size);
    if (!ZSTD_isError(n) && n == size) {
      size_t pos = 0, last = SIZE_MAX;
      format::RecordHeader rh{};
      for (uint32_t i = 0; i < frame_.record_count && pos + sizeof rh <= n; ++i) {
        memcpy(&rh, records + pos, sizeof rh);
        if (rh.size < sizeof rh || rh.body_offset < sizeof rh || rh.body_offset > rh.size || rh.size > n - pos) break;
        last = pos;
        pos += rh.size;
      }
      if (last != SIZE_MAX && pos == n) {
        memcpy(&rh, records + last, sizeof rh);
        if (rh.type == static_cast<uint16_t>(format::RecordType::kEnd)) {
          summary.has_end = true;
          memcpy(&summary.end, records + last + rh.body_offset,
                 std::min<size_t>(rh.size - rh.body_offset, sizeof summary.end));
          for (uint32_t r = 0; r < format::kDropReasons; ++r)
            Metrics::Add(metrics_->client_dropped[r], summary.end.dropped[r]);
        }
      }
    }
  }
  std::string error;
  file_->Finish(summary, &error);
  Metrics::Add(summary.has_end ? metrics_->closed_clean : metrics_->closed_cut, 1);
  file_.reset();
  store_->Release(path_);
}

}  // namespace ttrace::collector

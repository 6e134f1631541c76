// Blocking sockets with SO_SNDTIMEO / SO_RCVTIMEO bound every wait; acknowledgements are read without blocking
// after each frame, so the collector's side never fills up with unread acks.
#include "store/remote_output.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "store/crc32c.h"
#include "store/endpoint.h"

namespace ttrace::store {
namespace {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

bool SendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Sends a and then b with as few sendmsg calls as the socket allows (one, when it takes them whole).
bool SendAll2(int fd, const char* a, size_t na, const char* b, size_t nb) {
  iovec v[2] = {{const_cast<char*>(a), na}, {const_cast<char*>(b), nb}};
  iovec* next = v;
  size_t left = 2;
  while (left > 0) {
    msghdr m{};
    m.msg_iov = next;
    m.msg_iovlen = left;
    const ssize_t w = ::sendmsg(fd, &m, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    size_t sent = static_cast<size_t>(w);
    while (left > 0 && sent >= next->iov_len) {
      sent -= next->iov_len;
      ++next;
      --left;
    }
    if (left > 0) {
      next->iov_base = static_cast<char*>(next->iov_base) + sent;
      next->iov_len -= sent;
    }
  }
  return true;
}

bool RecvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t r = ::recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// connect(2) within `timeout_ms`; the socket is blocking again afterwards.
bool ConnectWithin(int fd, const sockaddr* addr, socklen_t len, int timeout_ms) {
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, addr, len);
  if (rc != 0 && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, timeout_ms) == 1 ? 0 : -1;
    if (rc == 0) {
      int err = 0;
      socklen_t l = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
      if (err != 0) {
        errno = err;
        rc = -1;
      }
    } else {
      errno = ETIMEDOUT;
    }
  }
  fcntl(fd, F_SETFL, flags);
  return rc == 0;
}

}  // namespace

RemoteOutput::RemoteOutput(RemoteOptions options) : options_(std::move(options)) {}

RemoteOutput::~RemoteOutput() { CloseSocket(); }

void RemoteOutput::CloseSocket() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RemoteOutput::Connect(std::string* why) {
  Endpoint ep;
  if (!ParseEndpoint(options_.endpoint, &ep, why)) return false;
  if (ep.kind == Endpoint::Kind::kUnix) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, ep.path.data(), ep.path.size());
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || !ConnectWithin(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr, options_.timeout_ms)) {
      *why = "cannot connect to " + options_.endpoint + ": " + strerror(errno);
      CloseSocket();
      return false;
    }
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const std::string port = std::to_string(ep.port);
    const int rc = getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0) {
      *why = "cannot resolve " + ep.host + ": " + gai_strerror(rc);
      return false;
    }
    *why = "no address";
    for (addrinfo* a = res; a != nullptr && fd_ < 0; a = a->ai_next) {
      fd_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd_ < 0) continue;
      if (!ConnectWithin(fd_, a->ai_addr, a->ai_addrlen, options_.timeout_ms)) {
        *why = "cannot connect to " + options_.endpoint + ": " + strerror(errno);
        CloseSocket();
      }
    }
    freeaddrinfo(res);
    if (fd_ < 0) return false;
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  timeval tv{options_.timeout_ms / 1000, (options_.timeout_ms % 1000) * 1000};
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return true;
}

bool RemoteOutput::Handshake(std::string* why) {
  wire::Hello hello;
  memset(&hello, 0, sizeof hello);
  memcpy(hello.magic, wire::kHelloMagic, sizeof hello.magic);
  hello.version = wire::kProtocolVersion;
  hello.hello_size = sizeof hello;
  const size_t token = std::min<size_t>(options_.token.size(), wire::kMaxTokenBytes);
  hello.token_bytes = static_cast<uint32_t>(token);
  std::string out(reinterpret_cast<const char*>(&hello), sizeof hello);
  out.append(options_.token.data(), token);
  out.append(reinterpret_cast<const char*>(&header_), sizeof header_);
  wire::Reply reply;
  if (!SendAll(fd_, out.data(), out.size()) || !RecvAll(fd_, reinterpret_cast<char*>(&reply), sizeof reply)) {
    *why = options_.endpoint + ": no answer to the handshake (" + (errno ? strerror(errno) : "closed") + ")";
    return false;
  }
  if (memcmp(reply.magic, wire::kReplyMagic, sizeof reply.magic) != 0) {
    *why = options_.endpoint + ": not a ttrace collector";
    return false;
  }
  if (reply.reply_size > sizeof reply) {
    std::string rest(std::min<size_t>(reply.reply_size - sizeof reply, 4096), '\0');
    if (!RecvAll(fd_, rest.data(), rest.size())) {
      *why = options_.endpoint + ": short answer to the handshake";
      return false;
    }
  }
  reply.message[sizeof reply.message - 1] = '\0';
  switch (static_cast<wire::ReplyStatus>(reply.status)) {
    case wire::ReplyStatus::kWelcome:
      welcome_ = reply.message;
      return true;
    case wire::ReplyStatus::kVersionMismatch:
      *why = options_.endpoint + " speaks collector protocol " + std::to_string(reply.version) + ", this shim " +
             std::to_string(wire::kProtocolVersion);
      return false;
    default:
      *why = options_.endpoint + " refused the stream: " + wire::RefuseReasonName(reply.reason) +
             (reply.message[0] ? std::string(" (") + reply.message + ")" : std::string());
      return false;
  }
}

bool RemoteOutput::Begin(const format::FileHeader& header, std::string* error) {
  header_ = header;
  std::string why;
  if (Connect(&why) && Handshake(&why)) return true;
  return Failover(why, error);
}

bool RemoteOutput::ReadAcks(int wait_ms, std::string* why) {
  pollfd p{fd_, POLLIN, 0};
  const int rc = ::poll(&p, 1, wait_ms);
  if (rc < 0 && errno != EINTR) {
    *why = std::string("poll: ") + strerror(errno);
    return false;
  }
  if (rc <= 0) return true;
  char buf[4096];
  ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) {
    *why = "the collector closed the connection" + std::string(n < 0 ? std::string(": ") + strerror(errno) : "");
    return false;
  }
  ack_buf_.append(buf, static_cast<size_t>(n));
  size_t pos = 0;
  for (; pos + sizeof(wire::Ack) <= ack_buf_.size(); pos += sizeof(wire::Ack)) {
    wire::Ack ack;
    memcpy(&ack, ack_buf_.data() + pos, sizeof ack);
    if (ack.magic != wire::kAckMagic || ack.frames <= acked_ || ack.frames > sent_) {
      *why = "bad acknowledgement from the collector";
      return false;
    }
    while (acked_ < ack.frames) {
      unacked_bytes_ -= unacked_.front().frame.size();
      if (spare_.size() < kSpareFrames) spare_.push_back(std::move(unacked_.front().frame));
      unacked_.pop_front();
      ++acked_;
    }
  }
  ack_buf_.erase(0, pos);
  return true;
}

bool RemoteOutput::WriteFrame(const char* frame, size_t bytes, const format::IndexEntry& entry, std::string* error) {
  if (local_ != nullptr) return WriteLocal(std::string(frame, bytes), entry, error);
  if (failover_tried_) {
    if (error) *error = failover_reason_;
    return false;
  }
  format::IndexEntry e = entry;
  e.offset = 0;
  e.entry_crc = Crc32c(&e, offsetof(format::IndexEntry, entry_crc));
  // The copy kept for failover reuses an acknowledged frame's buffer: no allocation (and no fresh pages to fault
  // in) per frame once the window is warm.
  std::string copy;
  if (!spare_.empty()) {
    copy.swap(spare_.back());
    spare_.pop_back();
  }
  copy.assign(frame, bytes);
  unacked_.push_back(Pending{std::move(copy), entry});
  unacked_bytes_ += bytes;
  ++sent_;
  std::string why;
  if (!SendAll2(fd_, reinterpret_cast<const char*>(&e), sizeof e, frame, bytes)) {
    why = "sending to " + options_.endpoint + " failed: " + (errno == EAGAIN ? "timed out" : strerror(errno));
    return Failover(why, error);
  }
  if (!ReadAcks(0, &why)) return Failover(why, error);
  const int64_t deadline = NowMs() + options_.timeout_ms;
  while (unacked_bytes_ > options_.window_bytes) {
    const int64_t left = deadline - NowMs();
    if (left <= 0) return Failover(options_.endpoint + ": no acknowledgement in " +
                                       std::to_string(options_.timeout_ms) + " ms", error);
    if (!ReadAcks(static_cast<int>(left), &why)) return Failover(why, error);
  }
  return true;
}

bool RemoteOutput::WriteLocal(const std::string& frame, format::IndexEntry entry, std::string* error) {
  std::string copy = frame;
  format::FrameHeader fh;
  memcpy(&fh, copy.data(), sizeof fh);
  fh.frame_index = local_frames_;
  fh.header_crc = Crc32c(&fh, offsetof(format::FrameHeader, header_crc));
  memcpy(copy.data(), &fh, sizeof fh);
  entry.frame_index = local_frames_;
  entry.frame_header_crc = fh.header_crc;
  entry.offset = 0;
  entry.entry_crc = 0;
  if (!local_->WriteFrame(copy.data(), copy.size(), entry, error)) return false;
  ++local_frames_;
  return true;
}

bool RemoteOutput::Failover(const std::string& reason, std::string* error) {
  failover_tried_ = true;
  failover_reason_ = reason;
  CloseSocket();
  if (options_.on_failover) options_.on_failover(reason);
  format::FileHeader h = header_;
  if (!welcome_.empty()) {
    h.flags |= format::kFileFailover;  // the stream's start is in the collector's store
    h.header_crc = Crc32c(&h, offsetof(format::FileHeader, header_crc));
  }
  std::string why;
  local_ = StreamFile::Create(options_.fallback_path, options_.fallback_options, &why);
  if (local_ == nullptr || !local_->Begin(h, &why)) {
    local_.reset();
    if (error) *error = reason + "; and the local fallback failed: " + why;
    return false;
  }
  for (const Pending& p : unacked_)
    if (!WriteLocal(p.frame, p.entry, error)) return false;
  unacked_.clear();
  unacked_bytes_ = 0;
  return true;
}

bool RemoteOutput::Finish(const StreamSummary& summary, std::string* error) {
  if (local_ == nullptr && !failover_tried_ && fd_ >= 0) {
    // Every frame must be acknowledged; then the collector finishes the stream and closes.
    ::shutdown(fd_, SHUT_WR);
    const int64_t deadline = NowMs() + options_.timeout_ms;
    std::string why;
    bool ok = true;
    while (acked_ < sent_ && ok) {
      const int64_t left = deadline - NowMs();
      if (left <= 0) {
        why = options_.endpoint + ": " + std::to_string(sent_ - acked_) + " frames not acknowledged in " +
              std::to_string(options_.timeout_ms) + " ms";
        ok = false;
        break;
      }
      ok = ReadAcks(static_cast<int>(left), &why);
    }
    if (ok) {
      // Wait for the collector to close (its stream is finished by then), within what is left of the time.
      char b;
      pollfd p{fd_, POLLIN, 0};
      const int64_t left = std::max<int64_t>(0, deadline - NowMs());
      if (::poll(&p, 1, static_cast<int>(left)) == 1) {
        const ssize_t r = ::recv(fd_, &b, 1, MSG_DONTWAIT);
        (void)r;
      }
      CloseSocket();
      return true;
    }
    if (!Failover(why, error)) return false;
  }
  if (local_ == nullptr) {
    if (error) *error = failover_reason_;
    return false;
  }
  StreamSummary local = summary;
  local.frames = local_->frames();
  local.records = local_->records();
  local.bytes = local_->bytes();
  const bool ok = local_->Finish(local, error);
  return ok;
}

}  // namespace ttrace::store

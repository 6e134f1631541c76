// Server: the collector's transport. Listens on a unix socket (created 0600: only its owner's processes connect)
// or a TCP port (every connection must present the token), runs one thread per connection that feeds a Session
// with what it reads and sends back what the Session answers, and logs each connection's end with its reason.
// The connection logic is all in Session; this file knows sockets, threads and time-outs only.
//
// Threads: Run() accepts on the calling thread until Stop() (async-signal-safe: a byte into a pipe); the
// destructor ends every connection (their streams are finished as cut unless they had ended) and joins them.
#ifndef TTRACE_COLLECTOR_SERVER_H_
#define TTRACE_COLLECTOR_SERVER_H_

#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "collector/metrics.h"
#include "collector/session.h"
#include "collector/stream_store.h"
#include "store/endpoint.h"

namespace ttrace::collector {

struct ServerOptions {
  store::Endpoint listen;
  std::string dir;  // the store's root: <dir>/<job>/rank-<R>.ttr
  SessionConfig session;
  int max_connections = 1024;
  int handshake_timeout_ms = 10000;  // a client that has not sent its stream header by then is dropped
};

class Server {
 public:
  // Binds and listens. nullptr + `error` on failure (also: TCP without a token).
  static std::unique_ptr<Server> Start(const ServerOptions& options, Metrics* metrics, std::ostream* log,
                                       std::string* error);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  void Run();
  void Stop();
  int port() const { return port_; }  // the TCP port bound (useful with port 0)

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> finished{false};
  };
  Server(const ServerOptions& options, Metrics* metrics, std::ostream* log);
  void Serve(Connection* c, uint64_t id, std::string peer);
  void Log(const std::string& line);
  void Reap(bool all);

  ServerOptions options_;
  Metrics* metrics_;
  std::ostream* log_;
  std::mutex log_mu_;
  StreamStore store_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  std::mutex mu_;
  std::list<Connection> connections_;
  std::atomic<int> live_{0};
  uint64_t next_id_ = 1;
};

}  // namespace ttrace::collector

#endif  // TTRACE_COLLECTOR_SERVER_H_

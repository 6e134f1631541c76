// Flags by hand, as in the analyzer's CLI. Signals reach the server through its stop pipe (Stop() is one write).
#include "collector/collector_main.h"

#include <signal.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>

#include "collector/metrics.h"
#include "collector/server.h"
#include "store/endpoint.h"

namespace ttrace::collector {
namespace {

constexpr char kUsage[] =
    "usage: ttrace-collector --listen unix:PATH|tcp:HOST:PORT --dir DIR [--token-file F]\n"
    "                        [--metrics-port P | --metrics-listen HOST:PORT]\n"
    "                        [--max-frame-mb N] [--max-stream-gb N] [--max-connections N]\n"
    "  Receives rank streams from libttrace.so (TTRACE_COLLECTOR=unix:PATH|tcp:HOST:PORT) and writes them to\n"
    "  DIR/<job>/rank-<R>.ttr with their index and the job's manifest. A unix socket is created 0600; TCP needs\n"
    "  --token-file (the shim reads the same token from TTRACE_COLLECTOR_TOKEN_FILE). --metrics-port P serves\n"
    "  Prometheus text at http://127.0.0.1:P/metrics (this machine only); --metrics-listen HOST:PORT at another\n"
    "  address (0.0.0.0:P: every interface; [::1]:P; port 0: any free port, printed). Limits per connection:\n"
    "  --max-frame-mb (64) compressed bytes of one frame, --max-stream-gb (1024) bytes in all;\n"
    "  --max-connections (1024) at once.\n";

Server* g_server = nullptr;

void OnSignal(int) {
  if (g_server != nullptr) g_server->Stop();
}

bool ParsePositive(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 12 || s.find_first_not_of("0123456789") != std::string::npos) return false;
  *out = std::stoull(s);
  return *out > 0;
}

int Usage(std::ostream& err, const std::string& why) {
  err << "ttrace-collector: " << why << "\n" << kUsage;
  return 2;
}

}  // namespace

int CollectorMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  ServerOptions options;
  std::string listen, token_file;
  // The metrics are served on the loopback interface unless --metrics-listen names another address: they are
  // unauthenticated and describe the jobs (connections, bytes, losses).
  store::Endpoint metrics_at;
  bool serve_metrics = false;
  uint64_t max_frame_mb = 64, max_stream_gb = 1024, max_connections = 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      out << kUsage;
      return 0;
    }
    if (i + 1 >= argc) return Usage(err, a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--listen") {
      listen = v;
    } else if (a == "--dir") {
      options.dir = v;
    } else if (a == "--token-file") {
      token_file = v;
    } else if (a == "--metrics-port") {
      uint64_t port = 0;
      if (!ParsePositive(v, &port) || port > 65535) return Usage(err, "bad --metrics-port");
      metrics_at.host = "127.0.0.1";
      metrics_at.port = static_cast<int>(port);
      serve_metrics = true;
    } else if (a == "--metrics-listen") {
      std::string why;
      if (!store::ParseEndpoint("tcp:" + v, &metrics_at, &why))
        return Usage(err, "bad --metrics-listen '" + v + "' (HOST:PORT): " + why);
      serve_metrics = true;
    } else if (a == "--max-frame-mb") {
      if (!ParsePositive(v, &max_frame_mb) || max_frame_mb > 256) return Usage(err, "--max-frame-mb needs 1..256");
    } else if (a == "--max-stream-gb") {
      if (!ParsePositive(v, &max_stream_gb)) return Usage(err, "bad --max-stream-gb");
    } else if (a == "--max-connections") {
      if (!ParsePositive(v, &max_connections) || max_connections > 1000000) return Usage(err, "bad --max-connections");
    } else {
      return Usage(err, "unknown option " + a);
    }
  }
  std::string error;
  if (listen.empty() || options.dir.empty()) return Usage(err, "--listen and --dir are required");
  if (!store::ParseEndpoint(listen, &options.listen, &error)) return Usage(err, error);
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string token = ss.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (!in || token.empty()) return Usage(err, "cannot read a token from " + token_file);
    options.session.require_token = true;
    options.session.token = token;
  }
  options.session.limits.max_frame_bytes = static_cast<uint32_t>(max_frame_mb << 20);
  options.session.limits.max_stream_bytes = max_stream_gb << 30;
  options.max_connections = static_cast<int>(max_connections);

  Metrics counters;
  std::unique_ptr<Server> server = Server::Start(options, &counters, &err, &error);
  if (server == nullptr) {
    err << "ttrace-collector: " << error << "\n";
    return 2;
  }
  store::Endpoint bound = options.listen;
  if (bound.kind == store::Endpoint::Kind::kTcp) bound.port = server->port();
  err << "ttrace-collector: listening on " << bound.text() << ", writing to " << options.dir << "\n";

  std::unique_ptr<httplib::Server> http;
  std::thread http_thread;
  if (serve_metrics) {
    http = std::make_unique<httplib::Server>();
    http->Get("/metrics", [&counters](const httplib::Request&, httplib::Response& res) {
      res.set_content(counters.Render(), "text/plain; version=0.0.4");
    });
    const std::string host = metrics_at.host.find(':') != std::string::npos ? "[" + metrics_at.host + "]"
                                                                             : metrics_at.host;
    int port = metrics_at.port;
    if (port == 0) {
      port = http->bind_to_any_port(metrics_at.host);
    } else if (!http->bind_to_port(metrics_at.host, port)) {
      port = -1;
    }
    if (port <= 0) {
      err << "ttrace-collector: cannot serve metrics on " << host << ":" << metrics_at.port << "\n";
      return 2;
    }
    http_thread = std::thread([&] { http->listen_after_bind(); });
    err << "ttrace-collector: metrics on http://" << host << ":" << port << "/metrics\n";
  }
  err.flush();

  g_server = server.get();
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  server->Run();
  g_server = nullptr;
  server.reset();  // ends the connections: their streams are finished
  if (http != nullptr) {
    http->stop();
    http_thread.join();
  }
  err << "ttrace-collector: stopped\n";
  return 0;
}

}  // namespace ttrace::collector

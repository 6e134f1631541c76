// The ttrace-collector command line, as a function so tests drive it in process:
//   ttrace-collector --listen unix:PATH|tcp:HOST:PORT --dir DIR [--token-file F] [--metrics-port P]
//                    [--max-frame-mb N] [--max-stream-gb N] [--max-connections N]
// Runs until SIGTERM or SIGINT (or `stop`, when given, is set and Stop() is called). Exit 0 after a stop, 2 on a
// usage error or when it cannot listen. Prints "ttrace-collector: listening on <endpoint>" (the TCP port bound,
// also for port 0) and "... metrics on port P" first, then one line per connection's start and end.
#ifndef TTRACE_COLLECTOR_COLLECTOR_MAIN_H_
#define TTRACE_COLLECTOR_COLLECTOR_MAIN_H_

#include <ostream>

namespace ttrace::collector {

int CollectorMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace ttrace::collector

#endif  // TTRACE_COLLECTOR_COLLECTOR_MAIN_H_

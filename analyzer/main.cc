// ttrace: the analyzer's command line (cli.h).
#include <iostream>

#include "analyzer/cli.h"

int main(int argc, char** argv) { return ttrace::analyzer::RunCli(argc, argv, std::cout, std::cerr); }

#include <iostream>

#include "collector/collector_main.h"

int main(int argc, char** argv) { return ttrace::collector::CollectorMain(argc, argv, std::cout, std::cerr); }

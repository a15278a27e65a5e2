// dtcrun: the launcher. Starts N ranks of a program on this node with the
// torchrun-compatible environment, forwards their output with `[rank R] `
// prefixes, and stops the whole job as soon as one rank fails. The pieces:
// Options (command line), Environment (the variables per rank), Spawn (one
// rank's process), Output (line forwarding), Signals, Supervisor (the loop).
#include "tools/dtcrun/Options.h"
#include "tools/dtcrun/Supervisor.h"

#include <cstdio>

int main(int argc, char** argv) {
  dtcrun::Options options;
  try {
    options = dtcrun::parseOptions(argc, argv);
  } catch (const dtcrun::HelpRequested&) {
    std::fputs(dtcrun::usage().c_str(), stdout);
    return 0;
  } catch (const dtcrun::UsageError& e) {
    std::fprintf(stderr, "dtcrun: %s\n", e.what());
    return 2;
  }
  return dtcrun::runJob(options);
}

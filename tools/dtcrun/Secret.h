// Secret: the job secret dtcrun gives its ranks (DTC_JOB_SECRET), with which
// they authenticate to rank 0's rendezvous store (docs/security.md).
#pragma once

#include "tools/dtcrun/Options.h"

#include <string>

namespace dtcrun {

// DTC_JOB_SECRET from dtcrun's own environment when set; else, for a
// single-node job, 32 fresh random bytes as hex. A multi-node job needs the
// same secret on every node, which dtcrun cannot invent: UsageError unless
// the master is a loopback address (then "": the ranks accept any local
// process and warn).
std::string jobSecret(const Options& options);

}  // namespace dtcrun

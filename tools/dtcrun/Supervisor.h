// Supervisor: runs the job. Starts the ranks, forwards their output, and
// watches them in one poll() loop: the first rank to fail (non-zero exit or
// killed by a signal) stops the others; SIGINT/SIGTERM to dtcrun are
// forwarded; --timeout stops everything. Stopping is SIGTERM to each rank's
// process group, then SIGKILL after the grace period. With --max-restarts,
// a job stopped by a failed rank is started again (all ranks, new processes,
// TORCHELASTIC_RESTART_COUNT counting the restarts). A rank that exits 75
// stopped early on a signal after its checkpoint: not a failure.
#pragma once

#include "tools/dtcrun/Options.h"

namespace dtcrun {

// Returns dtcrun's exit status: 0 when every rank exited 0; the first failed
// rank's status (128+signal if killed) once no restart is left; 75 when the
// ranks stopped early on a signal (every rank exited 75); 128+signal when
// dtcrun was interrupted otherwise; 124 on --timeout; 2 when a rank could
// not be started.
int runJob(const Options& options);

}  // namespace dtcrun

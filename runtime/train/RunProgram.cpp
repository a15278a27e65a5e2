// runProgram: mode selection, flags, error reporting (see RunProgram.h).
#include "runtime/train/RunProgram.h"

#include "runtime/cpu/Kernels.h"
#include "runtime/support/Error.h"
#include "runtime/comm/Communicator.h"
#include "runtime/support/Rank.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/Device.h"
#include "runtime/train/GradCheck.h"
#include "runtime/train/Inference.h"
#include "runtime/train/Options.h"
#include "runtime/train/Pipeline.h"
#include "runtime/train/StopSignal.h"
#include "runtime/train/ThreadEnvironment.h"
#include "runtime/train/Trainer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>

namespace dtcrt {

namespace {

// "error: MESSAGE", or "error: rank R: MESSAGE" when several ranks run.
void reportError(const char* message) {
  std::fflush(stdout);
  if (worldSize() > 1)
    std::fprintf(stderr, "error: rank %d: %s\n", processRank(), message);
  else
    std::fprintf(stderr, "error: %s\n", message);
}

} // namespace

int runProgram(const ProgramSpec& spec, int argc, char** argv) {
  const bool pipeline = spec.pipelineStages > 0;
  const ProgramMode mode =
      spec.trainStep || pipeline ? ProgramMode::Train : ProgramMode::Inference;
  try {
    Options opts = parseOptions(argc, argv, mode, std::getenv("OMP_NUM_THREADS"));
    if (opts.help) {
      std::fputs(usage(argc > 0 ? argv[0] : "train", mode,
                       spec.modelName ? spec.modelName : "the model").c_str(),
                 stdout);
      return 0;
    }
    settleThreadEnvironment(opts.threads, argv);
    setNumThreads(opts.threads);
    const RankInfo rank = rankInfoFromEnvironment();
    setProcessRank(rank.rank, rank.worldSize);
    // GPU programs: refuse what they cannot do before touching the device.
    Device::checkSupported(spec);
    if (mode == ProgramMode::Train && opts.gradcheck) {
      if (spec.device)
        fail("--gradcheck: not available for programs compiled for --target=",
             Device::targetOf(spec), " yet (check the model compiled for --target=cpu)");
      if (pipeline)
        fail("--gradcheck: not available for pipeline programs (check the model compiled "
             "without --strategy=pipeline)");
      return runGradCheck(spec, opts) ? 0 : 1;
    } else if (mode == ProgramMode::Train) {
      const std::string strategy = spec.strategy ? spec.strategy : "none";
      // A pipeline needs exactly its stages x replicas ranks: every rank
      // knows the job's size, so each refuses before connecting.
      if (pipeline) pipelinePlace(spec, rank.rank, rank.worldSize);
      // --tp: whole tensor-parallel groups; several only under ddp.
      if (spec.tensorParallel > 1 &&
          (rank.worldSize % spec.tensorParallel != 0 ||
           (strategy == "tp" && rank.worldSize != spec.tensorParallel)))
        fail("this program splits layers over ", spec.tensorParallel,
             " ranks (dtc --tp=", spec.tensorParallel, ") but was started as rank ", rank.rank,
             " of ", rank.worldSize, " (", rank.source, "); start it on ",
             strategy == "tp" ? "exactly " : "a multiple of ", spec.tensorParallel,
             strategy == "tp" ? " ranks (compile with --strategy=ddp for data-parallel groups)"
                              : " ranks");
      if (rank.worldSize > 1 && strategy != "ddp" && strategy != "fsdp" && strategy != "tp" &&
          !pipeline)
        fail("this program was compiled for one process (--strategy=", strategy,
             ") but was started as rank ", rank.rank, " of ", rank.worldSize,
             " (", rank.source, "); compile it with dtc --strategy=ddp to train on several ranks");
      CommOptions commOptions;
      commOptions.timeout = std::chrono::milliseconds(
          static_cast<int64_t>(opts.timeoutSeconds * 1000.0));
      commOptions.programFingerprint = std::to_string(programFingerprint(spec));
      // The device first, so this rank's CUDA context lands on its own GPU
      // (LOCAL_RANK) before any communicator touches one.
      std::unique_ptr<Device> device;
      if (spec.device) device = std::make_unique<Device>(*spec.device, rank.localRank);
      std::unique_ptr<Communicator> comm = connectCpu(rank, commOptions);
      if (device) device->connect(rank, commOptions, *comm);
      if (Trainer(spec, opts, -1, comm.get(), device.get()).run().stoppedBySignal)
        return kExitStoppedBySignal;
    } else {
      std::unique_ptr<Device> device;
      if (spec.device) device = std::make_unique<Device>(*spec.device, rank.localRank);
      runInference(spec, opts, device.get());
    }
    return 0;
  } catch (const CommError& e) {
    reportError(e.what());
  } catch (const Error& e) {
    reportError(e.what());
  } catch (const std::bad_alloc&) {
    reportError("out of memory");
  } catch (const std::exception& e) {
    reportError(e.what());
  }
  return 1;
}

} // namespace dtcrt

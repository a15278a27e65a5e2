// --gradcheck (see GradCheck.h).
//
// Tolerance: everything runs in float32, so the loss itself carries a
// relative rounding error near 1e-7 and a central difference with step h
// has an error of about 1e-7 * |L| / h plus the truncation term h^2 * f'''/6.
// With h = 1e-2 * max(1, |w|) both stay near 1e-4 for smooth functions of
// unit scale; an element passes when |g_fd - g| <= 2e-2 * |g| + 2e-3 * max|g|
// over its tensor (the second term absorbs the absolute noise on elements
// whose gradient is near zero). Kinks (ReLU at 0, max-pool ties) can break
// central differences; a kink inside [w - h, w + h] is unlikely with random
// data but would show up as a single failing element.
#include "runtime/train/GradCheck.h"

#include "runtime/data/Dataset.h"
#include "runtime/data/Sampler.h"
#include "runtime/io/OnnxModel.h"
#include "runtime/support/AlignedBuffer.h"
#include "runtime/support/Error.h"
#include "runtime/support/TensorInfo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace dtcrt {

namespace {

constexpr int kElementsPerWeight = 6;

struct Buffers {
  AlignedBuffer state, arena, workspace, labels;
  std::vector<AlignedBuffer> inputs;
  std::vector<const void*> inputPtrs;
};

float runStep(const ProgramSpec& spec, Buffers& b, double lr) {
  float loss = NAN;
  StepContext ctx{};
  ctx.state = b.state.data();
  ctx.arena = b.arena.data();
  ctx.workspace = reinterpret_cast<float*>(b.workspace.data());
  ctx.inputs = b.inputPtrs.data();
  ctx.labels = b.labels.data();
  ctx.loss = &loss;
  ctx.lr = lr;
  ctx.step = 1;
  ctx.seed = 0;
  spec.trainStep(ctx);
  return loss;
}

} // namespace

bool runGradCheck(const ProgramSpec& spec, const Options& opts) {
  if (!spec.optimizer || std::string(spec.optimizer) != "sgd")
    fail("--gradcheck needs a program compiled with --optimizer=sgd (no weight decay or "
         "Nesterov), this one uses ", spec.optimizer ? spec.optimizer : "?");
  if (spec.strategy && std::string(spec.strategy) != "none")
    fail("--gradcheck runs on one process: compile with --strategy=none");
  Buffers b{AlignedBuffer(spec.stateBytes), AlignedBuffer(spec.arenaBytes),
            AlignedBuffer(spec.workspaceBytes ? spec.workspaceBytes() : 0),
            AlignedBuffer(byteSize(spec.labels)), {}, {}};
  for (int32_t i = 0; i < spec.numInputs; ++i) {
    b.inputs.emplace_back(byteSize(spec.inputs[i]));
    b.inputPtrs.push_back(b.inputs.back().data());
  }
  Dataset data = loadDataset(spec, opts.data, Split::Train, opts.seed, 1, opts.tokenBytes,
                             opts.image);
  DistributedSampler sampler(data.size(), spec.batchSize, /*shuffle=*/false, 0, 0, 1);
  if (sampler.batchesPerEpoch() == 0) fail("--gradcheck: --data has no full batch");
  std::vector<int64_t> order = sampler.epochIndices(0);
  for (size_t i = 0; i < b.inputs.size(); ++i)
    data.inputs[i].copyRows(order.data(), spec.batchSize, b.inputs[i].data());
  data.labels.copyRows(order.data(), spec.batchSize, b.labels.data());

  loadInitialState(spec, b.state.data());
  std::vector<char> initial(b.state.data(), b.state.data() + spec.stateBytes);
  const float loss0 = runStep(spec, b, 1.0);
  std::vector<char> updated(b.state.data(), b.state.data() + spec.stateBytes);
  std::printf("gradcheck: loss %.6f, %d elements per weight, central differences\n", loss0,
              kElementsPerWeight);

  bool allOk = true;
  for (int32_t p = 0; p < spec.numParams; ++p) {
    const ParamSpec& param = spec.params[p];
    if (param.kind != ParamKind::Weight || param.tensor.dtype != DType::F32) continue;
    const int64_t n = numElements(param.tensor);
    const float* w0 = reinterpret_cast<const float*>(initial.data() + param.offset);
    const float* w1 = reinterpret_cast<const float*>(updated.data() + param.offset);
    double gmax = 0;
    for (int64_t i = 0; i < n; ++i) gmax = std::max(gmax, std::fabs(double(w0[i]) - w1[i]));
    double worst = 0;
    int64_t worstAt = -1;
    bool ok = true;
    for (int k = 0; k < kElementsPerWeight && k < n; ++k) {
      // Elements spread over the tensor, always including the first and last.
      const int64_t i = kElementsPerWeight == 1 ? 0 : k * (n - 1) / (kElementsPerWeight - 1);
      const double analytic = double(w0[i]) - double(w1[i]);
      const float h = 1e-2f * std::max(1.0f, std::fabs(w0[i]));
      double losses[2];
      for (int side = 0; side < 2; ++side) {
        std::memcpy(b.state.data(), initial.data(), spec.stateBytes);
        reinterpret_cast<float*>(b.state.data() + param.offset)[i] = w0[i] + (side ? -h : h);
        losses[side] = runStep(spec, b, 0.0);
      }
      const double numeric = (losses[0] - losses[1]) / (2.0 * h);
      const double error = std::fabs(numeric - analytic);
      const double allowed = 2e-2 * std::fabs(analytic) + 2e-3 * gmax + 1e-6;
      if (error / allowed > worst) {
        worst = error / allowed;
        worstAt = i;
      }
      if (error > allowed) {
        ok = false;
        std::printf("  MISMATCH %s[%lld]: backward %.6g, finite difference %.6g\n",
                    param.tensor.name, static_cast<long long>(i), analytic, numeric);
      }
    }
    std::printf("  %-40s %s (max |g| %.3g, worst error %.2f of tolerance at %lld)\n",
                param.tensor.name, ok ? "ok" : "FAILED", gmax, worst,
                static_cast<long long>(worstAt));
    allOk &= ok;
  }
  std::printf("gradcheck: %s\n", allOk ? "all weights agree" : "MISMATCH");
  return allOk;
}

} // namespace dtcrt

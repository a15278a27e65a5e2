// image_loader: images/s that an image folder's loader decodes and
// transforms, as the training program fills batches (Column::copyRows on a
// Decoded column), for a given input shape, augmentation and thread count.
//   image_loader DIR C H W BATCH BATCHES WORKERS [AUGMENT]
// prints one line: images, seconds, images/s, images/s per thread.
// Built with the runtime tests (test/runtime/TrainerTests.cmake); driven by
// bench/image_loader.py.
#include "runtime/data/Dataset.h"
#include "runtime/data/Sampler.h"
#include "runtime/support/Error.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dtcrt;

namespace {

TensorSpec tensorOf(const char* name, DType t, std::vector<int64_t> dims) {
  TensorSpec s{};
  s.name = name;
  s.dtype = t;
  s.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.dims[i] = dims[i];
  return s;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s DIR C H W BATCH BATCHES WORKERS [AUGMENT]\n", argv[0]);
    return 1;
  }
  const int64_t c = std::atoll(argv[2]), h = std::atoll(argv[3]), w = std::atoll(argv[4]);
  const int64_t batch = std::atoll(argv[5]), batches = std::atoll(argv[6]);
  TensorSpec input = tensorOf("image", DType::F32, {batch, c, h, w});
  TensorSpec labels = tensorOf("labels", DType::I64, {batch});
  TensorSpec logits = tensorOf("logits", DType::F32, {batch, 1000});
  ProgramSpec spec{};
  spec.inputs = &input;
  spec.numInputs = 1;
  spec.outputs = &logits;
  spec.numOutputs = 1;
  spec.labels = labels;
  spec.batchSize = batch;
  spec.loss = "cross-entropy";
  try {
    ImageOptions options;
    options.workers = std::atoi(argv[7]);
    if (argc > 8) parseAugment(argv[8], options);
    Dataset d = loadDataset(spec, argv[1], Split::Train, 0, 1, 0, options);
    DistributedSampler sampler(d.size(), batch, /*shuffle=*/true, 0);
    std::vector<float> out(static_cast<size_t>(batch * c * h * w));
    int64_t images = 0, epoch = 0;
    const auto t0 = std::chrono::steady_clock::now();
    while (images < batches * batch) {
      const std::vector<int64_t> order = sampler.epochIndices(epoch);
      for (int64_t b = 0; b < sampler.batchesPerEpoch() && images < batches * batch; ++b) {
        d.inputs[0].copyRows(order.data() + b * batch, batch, out.data(), epoch);
        images += batch;
      }
      ++epoch;
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("images %lld seconds %.3f images/s %.1f per-thread %.1f\n",
                static_cast<long long>(images), s, images / s, images / s / options.workers);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}

// Dataset: the samples and labels a program trains or evaluates on, already
// matched to the ProgramSpec (one Column per model input, in the input's
// dtype and per-sample shape, and one Column of labels), from the value of
// --data:
//   synthetic   deterministic random data from the seed (see Synthetic.cpp);
//   DIR         IDX files (train-images-idx3-ubyte[.gz], ...), npy pairs
//               (train_x.npy, train_y.npy; test_x.npy, test_y.npy for eval)
//               or token files (train.bin; val.bin for eval; see Tokens.h)
//               or an image folder (train/; test/ or val/ for eval; class
//               folders of PNG/JPEG files; see ImageFolder.h);
//   FILE        a token file (training only).
// npy arrays in the model's dtype and token files are memory-mapped and
// read in place; images are decoded batch by batch; the rest is converted
// into memory.
// Every check happens here, up front, with errors naming the file: count
// mismatch between samples and labels, sample shape mismatch, labels outside
// [0, C) for cross-entropy; except token ids and image files, checked batch
// by batch.
#pragma once

#include "runtime/Program.h"
#include "runtime/data/Column.h"
#include "runtime/data/ImageTransform.h"

#include <string>
#include <vector>

namespace dtcrt {

enum class Split { Train, Test };

struct Dataset {
  std::string description;     // for logs, e.g. "IDX /data/mnist (60000 samples)"
  std::vector<Column> inputs;  // one per ProgramSpec::inputs
  Column labels;               // ProgramSpec::labels' per-sample shape and dtype
  int64_t size() const { return labels.count(); }
};

// Samples per rank of the synthetic train and test sets (whole batches).
constexpr int64_t kSyntheticTrainBatches = 100;
constexpr int64_t kSyntheticTestBatches = 10;

// Loads `split` of --data=`data` for `spec`. `tokenBytes` is --tokens (2
// for uint16, 4 for uint32, 0 when not given: uint16, and any other kind of
// data is accepted). `image` holds --augment, --normalize and --data-workers
// (image folders only: given for any other data they are an error). Throws
// Error naming the file.
Dataset loadDataset(const ProgramSpec& spec, const std::string& data, Split split,
                    uint64_t seed, int worldSize = 1, int tokenBytes = 0,
                    const ImageOptions& image = ImageOptions());

// C for a cross-entropy program with int64 labels (the last dim of output 0),
// else 0 (no range check).
int64_t numClasses(const ProgramSpec& spec);

// Throws Error naming `file` and the first offending sample when a label is
// outside [0, numClasses(spec)) and not -100 (ignored, as PyTorch's
// ignore_index). A no-op when numClasses(spec) is 0.
void checkLabelRange(const ProgramSpec& spec, const Column& labels, const std::string& file);

// The synthetic dataset (defined in Synthetic.cpp): float inputs uniform in
// [0,1); int64 inputs (tokens) uniform in [0, C) when the program is a
// cross-entropy classifier with C classes (for language models C is the
// vocabulary), else in [0, 2) — the spec carries no vocabulary size yet;
// labels uniform in [0, C) (or [0, 2)), float labels uniform in [0, 1).
Dataset syntheticDataset(const ProgramSpec& spec, Split split, uint64_t seed, int worldSize);

} // namespace dtcrt

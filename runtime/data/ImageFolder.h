// Image-folder datasets, as torchvision's ImageFolder: --data=DIR where
// DIR/train (and, for --eval, DIR/test or else DIR/val) holds one folder per
// class. Classes are the sorted folder names, labelled 0..C-1; a class's
// samples are its .png/.jpg/.jpeg files (any case) found by walking its
// folder (links followed), in the order of sorted(os.walk(...)) with sorted
// file names; other files are skipped. The evaluation split's class folders
// must be the training split's.
//
// Nothing is decoded up front: the inputs are a Decoded Column whose
// RowSource decodes a sample's file (ImageDecode.h) and transforms it
// (ImageTransform.h) when its batch is filled, spread over a few threads
// (--data-workers, default min(8, cores)); the labels are an in-memory
// int64 Column. Rows depend only on (seed, epoch, index), so the thread
// count never changes them, and each rank decodes only the indices the
// DistributedSampler gives it. GPU programs fill the next batch while the
// device runs the current step (Trainer's prefetch).
#pragma once

#include "runtime/Program.h"
#include "runtime/data/Dataset.h"
#include "runtime/data/ImageTransform.h"

#include <string>
#include <vector>

namespace dtcrt {

struct ImageFolderIndex {
  std::vector<std::string> classes;  // sorted folder names
  std::vector<std::string> files;    // every sample's path
  std::vector<int64_t> labels;       // its class index
};

// Lists `splitDir`'s classes and images. Throws Error naming the folder when
// it has no class folder or a class folder has no image.
ImageFolderIndex indexImageFolder(const std::string& splitDir);

// The split's folder under `root` ("" when absent): train, or test else val.
std::string imageFolderSplitDir(const std::string& root, Split split);

// The dataset of `split` under `root` for `spec` (one [C, H, W] float32 input
// with C = 1 or 3, int64 class labels). Throws Error naming the folder or the
// flag on any mismatch.
Dataset loadImageFolder(const ProgramSpec& spec, const std::string& root, Split split,
                        uint64_t seed, const ImageOptions& options);

} // namespace dtcrt

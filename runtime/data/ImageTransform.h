// The per-sample transform of image-folder datasets: decoded 8-bit RGB pixels
// to the model's [C, H, W] float32 input, following torchvision's
// definitions (torchvision.transforms, PIL images):
//   train, --augment=random-resized-crop: RandomResizedCrop((H, W),
//       scale=(0.08, 1), ratio=(3/4, 4/3)), crop box drawn as
//       RandomResizedCrop.get_params draws it (10 tries, then the centred
//       fallback), then resized to H x W;
//   train without it, and evaluation: the image unchanged when it is
//       already H x W; otherwise Resize(S) of the shorter side with
//       S = round(max(H, W) / 0.875) (ImageNet's 256 for 224) and
//       CenterCrop((H, W));
//   train, --augment=hflip: RandomHorizontalFlip(p=0.5) after the crop;
//   then ToTensor (v / 255) and --normalize's Normalize(mean, std).
// Resizes are PIL's bilinear filter (a triangle filter widened by the
// downscale factor: antialiased), computed in float rather than PIL's 8-bit
// fixed point, so values differ from PIL's by at most about 1/255. C = 1
// converts RGB to gray first with PIL's convert("L") integer formula
// (ITU-R 601-2 luma), so gray files stay exact.
// The random draws come from SplitMix64 seeded by (seed, epoch, sample
// index): the same sample of the same epoch gets the same crop and flip
// whichever thread decodes it.
#pragma once

#include "runtime/data/ImageDecode.h"
#include "runtime/support/Random.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct ImageOptions {
  bool randomResizedCrop = false;  // --augment=random-resized-crop
  bool hflip = false;              // --augment=hflip
  std::vector<float> mean, std;    // --normalize=M,..:S,.. (empty: none)
  int workers = 0;                 // --data-workers=N decoding threads (0: automatic)
  bool any() const { return randomResizedCrop || hflip || !mean.empty() || workers != 0; }
};

// Parses --augment's comma-separated list into `o`; throws Error naming the flag.
void parseAugment(const std::string& value, ImageOptions& o);
// Parses --normalize=M1,..,Mc:S1,..,Sc into `o`; throws Error naming the flag.
void parseNormalize(const std::string& value, ImageOptions& o);

// A crop of an image: rows [top, top + height), columns [left, left + width).
struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
};

// RandomResizedCrop.get_params for an image of `height` x `width` with
// scale (0.08, 1) and ratio (3/4, 4/3), drawing from `rng`.
CropBox randomResizedCropBox(int height, int width, SplitMix64& rng);

// PIL's bilinear resize of the `box` of `src` (height x width x channels,
// 8-bit) to outHeight x outWidth, as float values in [0, 255], written
// channel-major (channels x outHeight x outWidth) to `dst`.
void resizeBilinear(const uint8_t* src, int width, int channels, const CropBox& box,
                    int outHeight, int outWidth, float* dst);

// The whole transform (see above) of sample `index` in `epoch`: writes
// channels x height x width floats to `dst`. `train` selects the training
// transform. `channels` is 1 or 3.
void transformImage(const RgbImage& image, const ImageOptions& o, bool train, uint64_t seed,
                    int64_t epoch, int64_t index, int channels, int height, int width,
                    float* dst);

} // namespace dtcrt

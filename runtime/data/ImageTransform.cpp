// The image-folder sample transform and its flags (see ImageTransform.h).
#include "runtime/data/ImageTransform.h"

#include "runtime/support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace dtcrt {

namespace {

std::vector<std::string> splitOn(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.push_back("");
  return parts;
}

std::vector<float> parseFloats(const std::string& list, const char* what) {
  std::vector<float> values;
  for (const std::string& item : splitOn(list, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != 0 || !std::isfinite(v))
      fail("--normalize: expected comma-separated numbers for the ", what, ", got '", item, "'");
    values.push_back(static_cast<float>(v));
  }
  return values;
}

// Uniform double in [lo, hi) from 53 random bits.
double uniform(SplitMix64& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng.next() >> 11) * (1.0 / 9007199254740992.0);
}

// Python's round() (half to even) as an int.
int roundHalfEven(double v) { return static_cast<int>(std::nearbyint(v)); }

// PIL's bilinear filter taps for resizing `inSize` samples to `outSize`:
// for each output sample its first input sample and normalized weights.
struct Taps {
  std::vector<int> first, count;
  std::vector<float> weights;  // outSize * stride
  int stride = 0;
};

float triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? static_cast<float>(1.0 - x) : 0.0f;
}

Taps bilinearTaps(int inSize, int outSize) {
  const double scale = static_cast<double>(inSize) / outSize;
  const double filterScale = std::max(scale, 1.0);
  const double support = 1.0 * filterScale;
  Taps t;
  t.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(outSize);
  t.count.resize(outSize);
  t.weights.assign(static_cast<size_t>(outSize) * t.stride, 0.0f);
  for (int o = 0; o < outSize; ++o) {
    const double center = (o + 0.5) * scale;
    const int lo = std::max(0, static_cast<int>(center - support + 0.5));
    const int hi = std::min(inSize, static_cast<int>(center + support + 0.5));
    float* w = &t.weights[static_cast<size_t>(o) * t.stride];
    double sum = 0;
    for (int i = lo; i < hi; ++i) sum += w[i - lo] = triangle((i - center + 0.5) / filterScale);
    for (int i = lo; i < hi; ++i) w[i - lo] = static_cast<float>(w[i - lo] / sum);
    t.first[o] = lo;
    t.count[o] = hi - lo;
  }
  return t;
}

// PIL's convert("L"): ITU-R 601-2 luma in 16-bit fixed point, rounded.
std::vector<uint8_t> toGray(const RgbImage& image) {
  const size_t n = static_cast<size_t>(image.height) * image.width;
  std::vector<uint8_t> gray(n);
  const uint8_t* p = image.pixels.data();
  for (size_t i = 0; i < n; ++i, p += 3)
    gray[i] = static_cast<uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
  return gray;
}

} // namespace

void parseAugment(const std::string& value, ImageOptions& o) {
  o.randomResizedCrop = o.hflip = false;
  for (const std::string& item : splitOn(value, ',')) {
    if (item == "random-resized-crop")
      o.randomResizedCrop = true;
    else if (item == "hflip")
      o.hflip = true;
    else if (item != "none" || value != "none")
      fail("--augment: unknown augmentation '", item,
           "' (expected a comma-separated list of random-resized-crop, hflip; or none)");
  }
}

void parseNormalize(const std::string& value, ImageOptions& o) {
  const std::vector<std::string> halves = splitOn(value, ':');
  if (halves.size() != 2)
    fail("--normalize: expected MEAN,..:STD,.. (one value per channel), got '", value, "'");
  o.mean = parseFloats(halves[0], "means");
  o.std = parseFloats(halves[1], "standard deviations");
  if (o.mean.size() != o.std.size())
    fail("--normalize: ", o.mean.size(), " means but ", o.std.size(), " standard deviations");
  for (float s : o.std)
    if (!(s > 0)) fail("--normalize: a standard deviation must be positive, got ", s);
}

CropBox randomResizedCropBox(int height, int width, SplitMix64& rng) {
  const double area = static_cast<double>(height) * width;
  const double minRatio = 3.0 / 4.0, maxRatio = 4.0 / 3.0;
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double targetArea = area * uniform(rng, 0.08, 1.0);
    const double aspect = std::exp(uniform(rng, std::log(minRatio), std::log(maxRatio)));
    const int w = roundHalfEven(std::sqrt(targetArea * aspect));
    const int h = roundHalfEven(std::sqrt(targetArea / aspect));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      CropBox box;
      box.height = h;
      box.width = w;
      box.top = static_cast<int>(rng.below(static_cast<uint64_t>(height - h + 1)));
      box.left = static_cast<int>(rng.below(static_cast<uint64_t>(width - w + 1)));
      return box;
    }
  }
  // The fallback: a centred crop of the whole image clamped to the ratios.
  CropBox box{0, 0, height, width};
  const double inRatio = static_cast<double>(width) / height;
  if (inRatio < minRatio)
    box.height = roundHalfEven(width / minRatio);
  else if (inRatio > maxRatio)
    box.width = roundHalfEven(height * maxRatio);
  box.top = (height - box.height) / 2;
  box.left = (width - box.width) / 2;
  return box;
}

void resizeBilinear(const uint8_t* src, int width, int channels, const CropBox& box,
                    int outHeight, int outWidth, float* dst) {
  const Taps horizontal = bilinearTaps(box.width, outWidth);
  const Taps vertical = bilinearTaps(box.height, outHeight);
  // Horizontal pass over the box's rows: box.height x outWidth per channel.
  std::vector<float> rows(static_cast<size_t>(channels) * box.height * outWidth);
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < box.height; ++y) {
      const uint8_t* in = src + (static_cast<size_t>(box.top + y) * width + box.left) * channels + c;
      float* out = &rows[(static_cast<size_t>(c) * box.height + y) * outWidth];
      for (int x = 0; x < outWidth; ++x) {
        const float* w = &horizontal.weights[static_cast<size_t>(x) * horizontal.stride];
        float acc = 0;
        for (int k = 0; k < horizontal.count[x]; ++k)
          acc += w[k] * in[static_cast<size_t>(horizontal.first[x] + k) * channels];
        out[x] = acc;
      }
    }
  // Vertical pass into dst, channel-major.
  for (int c = 0; c < channels; ++c)
    for (int y = 0; y < outHeight; ++y) {
      const float* w = &vertical.weights[static_cast<size_t>(y) * vertical.stride];
      float* out = dst + (static_cast<size_t>(c) * outHeight + y) * outWidth;
      std::fill(out, out + outWidth, 0.0f);
      for (int k = 0; k < vertical.count[y]; ++k) {
        const float* in = &rows[(static_cast<size_t>(c) * box.height + vertical.first[y] + k) * outWidth];
        for (int x = 0; x < outWidth; ++x) out[x] += w[k] * in[x];
      }
    }
}

void transformImage(const RgbImage& image, const ImageOptions& o, bool train, uint64_t seed,
                    int64_t epoch, int64_t index, int channels, int height, int width,
                    float* dst) {
  std::vector<uint8_t> gray;
  const uint8_t* pixels = image.pixels.data();
  if (channels == 1) {
    gray = toGray(image);
    pixels = gray.data();
  }
  SplitMix64 rng(hash2(hash2(seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(index)));
  const size_t plane = static_cast<size_t>(height) * width;
  if (train && o.randomResizedCrop) {
    const CropBox box = randomResizedCropBox(image.height, image.width, rng);
    resizeBilinear(pixels, image.width, channels, box, height, width, dst);
  } else if (image.height == height && image.width == width) {
    for (int c = 0; c < channels; ++c)
      for (size_t i = 0; i < plane; ++i) dst[c * plane + i] = pixels[i * channels + c];
  } else {
    // Resize(S) of the shorter side (the longer one truncated, as
    // torchvision computes it), then CenterCrop((height, width)).
    const int s = roundHalfEven(std::max(height, width) / 0.875);
    const bool tall = image.height > image.width;
    const int shortSide = tall ? image.width : image.height;
    const int longSide = tall ? image.height : image.width;
    const int longResized = static_cast<int>(static_cast<double>(s) * longSide / shortSide);
    const int rh = tall ? longResized : s, rw = tall ? s : longResized;
    std::vector<float> resized(static_cast<size_t>(channels) * rh * rw);
    resizeBilinear(pixels, image.width, channels, CropBox{0, 0, image.height, image.width}, rh, rw,
                   resized.data());
    if (rh < height || rw < width)
      fail("internal: a resized image of ", rh, "x", rw, " is smaller than ", height, "x", width);
    const int top = roundHalfEven((rh - height) / 2.0), left = roundHalfEven((rw - width) / 2.0);
    for (int c = 0; c < channels; ++c)
      for (int y = 0; y < height; ++y)
        std::copy_n(&resized[(static_cast<size_t>(c) * rh + top + y) * rw + left], width,
                    dst + c * plane + static_cast<size_t>(y) * width);
  }
  if (train && o.hflip && uniform(rng, 0.0, 1.0) < 0.5)
    for (int c = 0; c < channels; ++c)
      for (int y = 0; y < height; ++y) {
        float* row = dst + c * plane + static_cast<size_t>(y) * width;
        std::reverse(row, row + width);
      }
  for (int c = 0; c < channels; ++c) {
    const size_t m = o.mean.empty() ? 0 : (o.mean.size() == 1 ? 0 : c);
    const float mean = o.mean.empty() ? 0.0f : o.mean[m];
    const float stddev = o.std.empty() ? 1.0f : o.std[m];
    float* p = dst + c * plane;
    // ToTensor then Normalize: ((v / 255) - mean) / std.
    for (size_t i = 0; i < plane; ++i) p[i] = (p[i] / 255.0f - mean) / stddev;
  }
}

} // namespace dtcrt

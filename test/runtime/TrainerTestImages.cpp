// Image-folder datasets: PNG and JPEG decoding (PNG exact, JPEG within a
// stated tolerance), class and file order, the transforms against references
// computed here (resize, crop, flip, normalize), determinism per (seed,
// epoch, index) whatever the thread count, and every error message.
#include "runtime/data/Dataset.h"
#include "runtime/data/ImageDecode.h"
#include "runtime/data/ImageFolder.h"
#include "runtime/data/ImageTransform.h"
#include "runtime/support/Files.h"

#include "TrainerTestImageFiles.h"
#include "TrainerTestPrograms.h"
#include "TrainerTestUtil.h"

#include <cmath>
#include <sys/stat.h>

using namespace dtcrt;
using namespace dtcrt_test;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Batch 2 of [C, H, W] images, `classes` output classes.
SpecBuilder folderSpec(int64_t c, int64_t h, int64_t w, int64_t classes = 10) {
  return SpecBuilder(tensor("image", DType::F32, {2, c, h, w}), tensor("labels", DType::I64, {2}),
                     tensor("logits", DType::F32, {2, classes}), "cross-entropy");
}

void mkdir(const std::string& path) { ASSERT_EQ(::mkdir(path.c_str(), 0755), 0) << path; }

// Pixel (y, x) channel c of the test pattern: distinct, not symmetric.
uint8_t pattern(int y, int x, int c, int seed = 0) {
  return static_cast<uint8_t>((37 * y + 11 * x + 80 * c + 13 * seed) % 256);
}

std::vector<uint8_t> patternPixels(int h, int w, int channels, int seed = 0) {
  std::vector<uint8_t> p;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) p.push_back(pattern(y, x, c, seed));
  return p;
}

// DIR/train/{cat,dog}/ with `perClass` RGB PNGs of h x w each.
void writeFolder(const TempDir& dir, int perClass, int h, int w, const char* split = "train") {
  mkdir(dir.file(split));
  int seed = 0;
  for (const char* cls : {"cat", "dog"}) {
    mkdir(dir.file(std::string(split) + "/" + cls));
    for (int i = 0; i < perClass; ++i)
      writePng(dir.file(std::string(split) + "/" + cls + "/" + std::to_string(i) + ".png"), h, w, 3,
               patternPixels(h, w, 3, seed++));
  }
}

// PIL's bilinear resize written directly (double precision, 2-D weights):
// the reference for resizeBilinear.
double triangleRef(double x) { return std::fabs(x) < 1 ? 1 - std::fabs(x) : 0; }
std::vector<std::pair<int, double>> weightsRef(int in, int out, int o) {
  const double scale = double(in) / out, fs = std::max(1.0, scale), support = fs;
  const double center = (o + 0.5) * scale;
  std::vector<std::pair<int, double>> w;
  double sum = 0;
  for (int i = std::max(0, int(center - support + 0.5)); i < std::min(in, int(center + support + 0.5)); ++i) {
    w.push_back({i, triangleRef((i - center + 0.5) / fs)});
    sum += w.back().second;
  }
  for (auto& p : w) p.second /= sum;
  return w;
}
double resizeRef(const std::vector<uint8_t>& src, int width, int channels, const CropBox& b,
                 int outH, int outW, int c, int y, int x) {
  double v = 0;
  for (auto [iy, wy] : weightsRef(b.height, outH, y))
    for (auto [ix, wx] : weightsRef(b.width, outW, x))
      v += wy * wx * src[(size_t(b.top + iy) * width + b.left + ix) * channels + c];
  return v;
}

} // namespace

TEST(TrainerImageDecode, PngIsExactInEveryLayout) {
  TempDir dir;
  const int h = 3, w = 5;
  writePng(dir.file("rgb.png"), h, w, 3, patternPixels(h, w, 3));
  writePng(dir.file("gray.png"), h, w, 1, patternPixels(h, w, 1));
  std::vector<uint8_t> rgba = patternPixels(h, w, 4);
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] = 255;  // opaque: alpha drops exactly
  writePng(dir.file("rgba.png"), h, w, 4, rgba);
  RgbImage rgb = decodeImage(dir.file("rgb.png"));
  ASSERT_EQ(rgb.height, h);
  ASSERT_EQ(rgb.width, w);
  EXPECT_EQ(rgb.pixels, patternPixels(h, w, 3));
  RgbImage gray = decodeImage(dir.file("gray.png"));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(gray.pixels[(y * w + x) * 3 + c], pattern(y, x, 0));
  RgbImage fromRgba = decodeImage(dir.file("rgba.png"));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(fromRgba.pixels[(y * w + x) * 3 + c], pattern(y, x, c));
}

// JPEG is lossy. At quality 100 every quantizer is 1, so the error is the
// integer DCT's rounding plus the YCbCr round trip's, a couple of levels; the
// test images have constant chroma (a gray ramp, one flat colour), so 4:2:0
// subsampling and the decoder's interpolating chroma upsampling lose nothing
// (at an edge between colours they would blur chroma over a pixel or two,
// as in every JPEG decoder). Hence a tolerance of 3 levels (3/255 scaled).
TEST(TrainerImageDecode, JpegIsWithinThreeLevels) {
  TempDir dir;
  const int h = 16, w = 32;
  std::vector<uint8_t> ramp, blocks;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint8_t g = static_cast<uint8_t>(4 * x + 2 * y + 20);
      for (int c = 0; c < 3; ++c) ramp.push_back(g);
      const uint8_t colour[3] = {200, 40, 90};
      for (int c = 0; c < 3; ++c) blocks.push_back(colour[c]);
    }
  writeJpeg(dir.file("ramp.jpg"), h, w, 3, ramp);
  writeJpeg(dir.file("blocks.jpeg"), h, w, 3, blocks);
  std::vector<uint8_t> grayRamp;
  for (size_t i = 0; i < ramp.size(); i += 3) grayRamp.push_back(ramp[i]);
  writeJpeg(dir.file("gray.jpg"), h, w, 1, grayRamp);
  for (auto [file, want] : {std::pair{"ramp.jpg", &ramp}, std::pair{"blocks.jpeg", &blocks},
                            std::pair{"gray.jpg", &ramp}}) {
    RgbImage img = decodeImage(dir.file(file));
    ASSERT_EQ(img.height, h);
    ASSERT_EQ(img.width, w);
    int worst = 0;
    for (size_t i = 0; i < want->size(); ++i)
      worst = std::max(worst, std::abs(int(img.pixels[i]) - int((*want)[i])));
    EXPECT_LE(worst, 3) << file;
  }
}

TEST(TrainerImageFolder, ClassesAndFilesInImageFolderOrder) {
  TempDir dir;
  mkdir(dir.file("train"));
  for (const char* d : {"train/b", "train/a", "train/a/sub", "train/a/sub/deep", "train/a/sub-x",
                        "train/c"})
    mkdir(dir.file(d));
  const std::vector<uint8_t> px = patternPixels(2, 2, 3);
  for (const char* f : {"train/b/2.png", "train/b/10.PNG", "train/a/z.jpg", "train/a/sub/y.png",
                        "train/a/sub/deep/w.png", "train/a/sub-x/x.png", "train/c/k.jpeg"}) {
    const std::string name = f;
    if (name.find(".jp") != std::string::npos)
      writeJpeg(dir.file(f), 2, 2, 3, px);
    else
      writePng(dir.file(f), 2, 2, 3, px);
  }
  writeBytes(dir.file("train/b/notes.txt"), "not an image");
  writeBytes(dir.file("train/readme.md"), "not a class");
  ImageFolderIndex index = indexImageFolder(dir.file("train"));
  EXPECT_EQ(index.classes, (std::vector<std::string>{"a", "b", "c"}));
  // sorted(os.walk(a)) sorts folder paths as strings: "a" < "a/sub" <
  // "a/sub-x" < "a/sub/deep" ('-' sorts before '/'), as Python prints it.
  const std::string t = dir.file("train/");
  EXPECT_EQ(index.files, (std::vector<std::string>{t + "a/z.jpg", t + "a/sub/y.png",
                                                   t + "a/sub-x/x.png", t + "a/sub/deep/w.png",
                                                   t + "b/10.PNG", t + "b/2.png", t + "c/k.jpeg"}));
  EXPECT_EQ(index.labels, (std::vector<int64_t>{0, 0, 0, 0, 1, 1, 2}));

  SpecBuilder s = folderSpec(3, 2, 2);
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);
  ASSERT_EQ(d.size(), 7);
  int64_t labels[7];
  const int64_t all[7] = {0, 1, 2, 3, 4, 5, 6};
  d.labels.copyRows(all, 7, labels);
  EXPECT_EQ(std::vector<int64_t>(labels, labels + 7), index.labels);
}

TEST(TrainerImageFolder, UnchangedSizeIsScaledPixelsAndGrayIsPilLuma) {
  TempDir dir;
  writeFolder(dir, 2, 3, 4);
  SpecBuilder rgb = folderSpec(3, 3, 4);
  Dataset d = loadDataset(rgb.spec, dir.path(), Split::Train, 0);
  ASSERT_EQ(d.size(), 4);
  std::vector<float> row(3 * 3 * 4);
  d.inputs[0].copyRow(3, row.data());  // dog/1.png, pattern seed 3
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x)
        EXPECT_EQ(row[(c * 3 + y) * 4 + x], pattern(y, x, c, 3) / 255.0f);
  SpecBuilder gray = folderSpec(1, 3, 4);
  Dataset g = loadDataset(gray.spec, dir.path(), Split::Train, 0);
  g.inputs[0].copyRow(3, row.data());
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) {
      const unsigned r = pattern(y, x, 0, 3), gr = pattern(y, x, 1, 3), b = pattern(y, x, 2, 3);
      // PIL's convert("L"): L = R * 299/1000 + G * 587/1000 + B * 114/1000.
      const unsigned l = (r * 19595 + gr * 38470 + b * 7471 + 0x8000) >> 16;
      EXPECT_EQ(row[y * 4 + x], l / 255.0f);
      EXPECT_NEAR(l, 0.299 * r + 0.587 * gr + 0.114 * b, 0.51);
    }
}

TEST(TrainerImageFolder, NormalizeIsPerChannel) {
  TempDir dir;
  writeFolder(dir, 1, 2, 2);
  ImageOptions o;
  parseNormalize("0.5,0.25,0:0.5,2,1", o);
  SpecBuilder s = folderSpec(3, 2, 2);
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0, 1, 0, o);
  float row[12];
  d.inputs[0].copyRow(0, row);
  const float mean[3] = {0.5f, 0.25f, 0}, stdv[3] = {0.5f, 2, 1};
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 2; ++x)
        EXPECT_FLOAT_EQ(row[(c * 2 + y) * 2 + x], (pattern(y, x, c) / 255.0f - mean[c]) / stdv[c]);
}

TEST(TrainerImageTransform, ResizeMatchesPilBilinearReference) {
  const int h = 13, w = 17;
  const std::vector<uint8_t> src = patternPixels(h, w, 3);
  for (CropBox box : {CropBox{0, 0, h, w}, CropBox{2, 3, 9, 11}, CropBox{5, 1, 4, 4}})
    for (auto [oh, ow] : {std::pair{6, 7}, std::pair{4, 4}, std::pair{20, 9}}) {
      std::vector<float> out(3 * oh * ow);
      resizeBilinear(src.data(), w, 3, box, oh, ow, out.data());
      for (int c = 0; c < 3; ++c)
        for (int y = 0; y < oh; ++y)
          for (int x = 0; x < ow; ++x)
            ASSERT_NEAR(out[(c * oh + y) * ow + x], resizeRef(src, w, 3, box, oh, ow, c, y, x), 1e-3)
                << box.top << "," << box.left << " " << oh << "x" << ow;
    }
  // A box already the output's size is copied exactly.
  std::vector<float> out(3 * 4 * 4);
  resizeBilinear(src.data(), w, 3, CropBox{5, 1, 4, 4}, 4, 4, out.data());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) EXPECT_EQ(out[(c * 4 + y) * 4 + x], pattern(5 + y, 1 + x, c));
}

TEST(TrainerImageTransform, RandomResizedCropBoxFollowsTorchvision) {
  int fallbacks = 0;
  for (uint64_t seed = 0; seed < 2000; ++seed) {
    SplitMix64 rng(seed);
    const CropBox b = randomResizedCropBox(40, 60, rng);
    ASSERT_GE(b.top, 0);
    ASSERT_GE(b.left, 0);
    ASSERT_LE(b.top + b.height, 40);
    ASSERT_LE(b.left + b.width, 60);
    const double area = double(b.height) * b.width / (40 * 60);
    const double ratio = double(b.width) / b.height;
    if (b.height == 40 && b.width == 53) {  // the fallback: centred, ratio clamped to 4/3
      EXPECT_EQ(b.top, 0);
      EXPECT_EQ(b.left, 3);
      ++fallbacks;
      continue;
    }
    // Rounding w and h moves area and ratio a little off their draws.
    EXPECT_GE(area, 0.08 * 0.9);
    EXPECT_LE(area, 1.0);
    EXPECT_GE(ratio, 0.75 * 0.9);
    EXPECT_LE(ratio, 4.0 / 3 * 1.1);
  }
  EXPECT_LT(fallbacks, 20);
  // A 1 x 100 strip can never fit the ratios: always the fallback, the
  // centred 1 x round(4/3) = 1 x 1 box.
  SplitMix64 rng(7);
  const CropBox b = randomResizedCropBox(1, 100, rng);
  EXPECT_EQ(b.height, 1);
  EXPECT_EQ(b.width, 1);
  EXPECT_EQ(b.left, 49);
}

TEST(TrainerImageTransform, AugmentationsAgainstReference) {
  RgbImage img;
  img.height = 12;
  img.width = 10;
  img.pixels = patternPixels(12, 10, 3);
  ImageOptions o;
  parseAugment("random-resized-crop,hflip", o);
  int flipped = 0;
  for (int64_t index = 0; index < 40; ++index) {
    std::vector<float> got(3 * 6 * 5);
    transformImage(img, o, /*train=*/true, 42, 3, index, 3, 6, 5, got.data());
    // The same draws, in the same order: the crop box, then the flip.
    SplitMix64 rng(hash2(hash2(42, 3), static_cast<uint64_t>(index)));
    const CropBox box = randomResizedCropBox(12, 10, rng);
    const bool flip = (rng.next() >> 11) * (1.0 / 9007199254740992.0) < 0.5;
    flipped += flip;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 6; ++y)
        for (int x = 0; x < 5; ++x) {
          const int sx = flip ? 4 - x : x;
          ASSERT_NEAR(got[(c * 6 + y) * 5 + x],
                      resizeRef(img.pixels, 10, 3, box, 6, 5, c, y, sx) / 255.0, 1e-5)
              << "index " << index;
        }
  }
  EXPECT_GT(flipped, 5);
  EXPECT_LT(flipped, 35);
}

TEST(TrainerImageTransform, EvalResizesTheShorterSideThenCentreCrops) {
  RgbImage img;
  img.height = 8;
  img.width = 12;
  img.pixels = patternPixels(8, 12, 3);
  // 4x4: S = round(4 / 0.875) = 5; 8x12 -> 5x7 (7 = int(5 * 12 / 8)); the
  // centre 4x4 starts at row round(0.5) = 0 and column round(1.5) = 2.
  std::vector<float> got(3 * 16);
  ImageOptions o;
  parseAugment("random-resized-crop,hflip", o);  // ignored when evaluating
  transformImage(img, o, /*train=*/false, 1, 0, 0, 3, 4, 4, got.data());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x)
        EXPECT_NEAR(got[(c * 4 + y) * 4 + x],
                    resizeRef(img.pixels, 12, 3, CropBox{0, 0, 8, 12}, 5, 7, c, y, x + 2) / 255.0,
                    1e-5);
}

TEST(TrainerImageFolder, DeterministicPerSeedEpochIndexWhateverTheThreads) {
  TempDir dir;
  writeFolder(dir, 6, 20, 24);
  SpecBuilder s = folderSpec(3, 8, 8);
  ImageOptions one, four;
  parseAugment("random-resized-crop,hflip", one);
  parseAugment("random-resized-crop,hflip", four);
  one.workers = 1;
  four.workers = 4;
  Dataset a = loadDataset(s.spec, dir.path(), Split::Train, 5, 1, 0, one);
  Dataset b = loadDataset(s.spec, dir.path(), Split::Train, 5, 1, 0, four);
  const int64_t idx[12] = {3, 11, 0, 7, 7, 1, 2, 9, 10, 4, 5, 6};
  const size_t n = 12 * 3 * 64;
  std::vector<float> x1(n), x4(n), again(n), nextEpoch(n);
  a.inputs[0].copyRows(idx, 12, x1.data(), 2);
  b.inputs[0].copyRows(idx, 12, x4.data(), 2);
  EXPECT_EQ(x1, x4);
  b.inputs[0].copyRows(idx, 12, again.data(), 2);
  EXPECT_EQ(x4, again);
  // Index 7 twice in one batch: the same sample, the same view.
  EXPECT_TRUE(std::equal(x1.begin() + 3 * 192, x1.begin() + 4 * 192, x1.begin() + 4 * 192));
  b.inputs[0].copyRows(idx, 12, nextEpoch.data(), 3);
  EXPECT_NE(x4, nextEpoch);
  Dataset otherSeed = loadDataset(s.spec, dir.path(), Split::Train, 6, 1, 0, four);
  otherSeed.inputs[0].copyRows(idx, 12, again.data(), 2);
  EXPECT_NE(x4, again);
}

TEST(TrainerImageFolder, EvalReadsTestElseValWithTrainClasses) {
  TempDir dir;
  writeFolder(dir, 2, 4, 4);
  SpecBuilder s = folderSpec(3, 4, 4);
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Test, 0); }),
            dir.file("test") + ": no such folder, nor val (--eval reads the test split)");
  writeFolder(dir, 1, 4, 4, "val");
  EXPECT_EQ(loadDataset(s.spec, dir.path(), Split::Test, 0).size(), 2);
  mkdir(dir.file("test"));
  mkdir(dir.file("test/cat"));
  writePng(dir.file("test/cat/0.png"), 4, 4, 3, patternPixels(4, 4, 3));
  const std::string err = errorOf([&] { loadDataset(s.spec, dir.path(), Split::Test, 0); });
  EXPECT_EQ(err, dir.file("test") + ": class folders (cat) differ from " + dir.file("train") +
                     "'s (cat, dog): labels would not match");
}

TEST(TrainerImageFolderErrors, FolderProblems) {
  SpecBuilder s = folderSpec(3, 4, 4, 2);
  {
    TempDir dir;
    mkdir(dir.file("train"));
    EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); }),
              dir.file("train") +
                  ": no class folders (an image folder holds one folder of images per class)");
  }
  {
    TempDir dir;
    writeFolder(dir, 1, 4, 4);
    mkdir(dir.file("train/emu"));
    writeBytes(dir.file("train/emu/a.txt"), "x");
    EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); }),
              dir.file("train/emu") +
                  ": no .png, .jpg or .jpeg files (every class folder needs at least one image)");
    writePng(dir.file("train/emu/0.png"), 4, 4, 3, patternPixels(4, 4, 3));
    EXPECT_EQ(errorOf([&] { loadDataset(s.spec, dir.path(), Split::Train, 0); }),
              dir.file("train") + ": 3 class folders (cat, dog, emu) but model output 'logits' "
                                  "has 2 classes");
  }
}

TEST(TrainerImageFolderErrors, ModelThatImagesCannotFeed) {
  TempDir dir;
  writeFolder(dir, 1, 4, 4);
  SpecBuilder fourChannels = folderSpec(4, 4, 4);
  EXPECT_EQ(errorOf([&] { loadDataset(fourChannels.spec, dir.path(), Split::Train, 0); }),
            dir.file("train") + ": images cannot feed model input 'image' (float32 [4,4,4] per "
                                "sample); image folders feed float32 [C, H, W] with C = 1 (gray) "
                                "or 3 (RGB)");
  SpecBuilder flat(tensor("x", DType::F32, {2, 48}), tensor("labels", DType::I64, {2}),
                   tensor("logits", DType::F32, {2, 10}), "cross-entropy");
  EXPECT_TRUE(contains(errorOf([&] { loadDataset(flat.spec, dir.path(), Split::Train, 0); }),
                       "images cannot feed model input 'x'"));
  SpecBuilder regression(tensor("image", DType::F32, {2, 3, 4, 4}),
                         tensor("labels", DType::F32, {2, 1}), tensor("y", DType::F32, {2, 1}),
                         "mse");
  EXPECT_EQ(errorOf([&] { loadDataset(regression.spec, dir.path(), Split::Train, 0); }),
            dir.file("train") + ": image folders give one int64 class label per sample, but the "
                                "model's labels are float32 [1]");
  ImageOptions o;
  parseNormalize("0.5,0.5:1,1", o);
  SpecBuilder rgb = folderSpec(3, 4, 4);
  EXPECT_EQ(errorOf([&] { loadDataset(rgb.spec, dir.path(), Split::Train, 0, 1, 0, o); }),
            "--normalize: 2 values per list, but model input 'image' has 3 channels");
}

TEST(TrainerImageFolderErrors, BadFilesNameTheFileWhenRead) {
  TempDir dir;
  writeFolder(dir, 1, 8, 8);
  const std::string png = dir.file("train/cat/0.png"), jpg = dir.file("train/dog/0.jpg");
  writeJpeg(jpg, 8, 8, 3, patternPixels(8, 8, 3));
  const std::string cmyk = dir.file("train/dog/1.jpg"), text = dir.file("train/dog/2.png");
  writeJpeg(cmyk, 8, 8, 4, patternPixels(8, 8, 4));
  writeBytes(text, "hello, not a picture");
  SpecBuilder s = folderSpec(3, 8, 8);
  Dataset d = loadDataset(s.spec, dir.path(), Split::Train, 0);  // nothing decoded yet
  ASSERT_EQ(d.size(), 5);  // cat/0.png, dog/0.jpg, dog/0.png, dog/1.jpg, dog/2.png
  std::vector<float> row(3 * 64);
  auto readError = [&](int64_t i) { return errorOf([&] { d.inputs[0].copyRow(i, row.data()); }); };
  EXPECT_EQ(readError(1), "");
  EXPECT_EQ(readError(3), cmyk + ": corrupt or unsupported JPEG (Unsupported color conversion request)");
  EXPECT_EQ(readError(4), text + ": not a PNG or JPEG file (its first bytes are neither signature)");
  // Truncated files.
  std::string bytes = readFile(png);
  writeBytes(png, bytes.substr(0, bytes.size() / 2));
  EXPECT_TRUE(contains(readError(0), png + ": corrupt or unsupported PNG (")) << readError(0);
  bytes = readFile(jpg);
  writeBytes(jpg, bytes.substr(0, bytes.size() / 2));
  EXPECT_TRUE(contains(readError(1), jpg + ": corrupt or unsupported JPEG (")) << readError(1);
  // From a batch decoded by several threads, the error comes back the same.
  const int64_t idx[4] = {2, 2, 1, 2};
  ImageOptions o;
  o.workers = 4;
  Dataset threaded = loadDataset(s.spec, dir.path(), Split::Train, 0, 1, 0, o);
  std::vector<float> batch(4 * 3 * 64);
  EXPECT_TRUE(contains(errorOf([&] { threaded.inputs[0].copyRows(idx, 4, batch.data()); }),
                       jpg + ": corrupt or unsupported JPEG ("));
  std::remove(png.c_str());
  EXPECT_TRUE(contains(readError(0), png)) << readError(0);
}

TEST(TrainerImageFolderErrors, Flags) {
  ImageOptions o;
  EXPECT_EQ(errorOf([&] { parseAugment("random-resized-crop,vflip", o); }),
            "--augment: unknown augmentation 'vflip' (expected a comma-separated list of "
            "random-resized-crop, hflip; or none)");
  EXPECT_EQ(errorOf([&] { parseNormalize("0.5", o); }),
            "--normalize: expected MEAN,..:STD,.. (one value per channel), got '0.5'");
  EXPECT_EQ(errorOf([&] { parseNormalize("0.5,x:1,1", o); }),
            "--normalize: expected comma-separated numbers for the means, got 'x'");
  EXPECT_EQ(errorOf([&] { parseNormalize("0.5:1,1", o); }),
            "--normalize: 1 means but 2 standard deviations");
  EXPECT_EQ(errorOf([&] { parseNormalize("0.5:0", o); }),
            "--normalize: a standard deviation must be positive, got 0");
  parseAugment("hflip", o);
  SpecBuilder s = folderSpec(3, 4, 4);
  EXPECT_EQ(errorOf([&] { loadDataset(s.spec, "synthetic", Split::Train, 0, 1, 0, o); }),
            "--augment, --normalize and --data-workers apply to image folders only; "
            "--data=synthetic is not one (no train/ folder of class folders)");
}

// Image-folder datasets: indexing the folders, checking them against the
// program, and the RowSource that decodes samples (see ImageFolder.h).
#include "runtime/data/ImageFolder.h"

#include "runtime/data/ImageDecode.h"
#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/TensorInfo.h"

#include <algorithm>
#include <filesystem>
#include <thread>

namespace dtcrt {

namespace fs = std::filesystem;

namespace {

constexpr unsigned kDefaultDecodeThreads = 8;

std::vector<std::string> sortedEntries(const std::string& dir, bool wantDirs) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code typeError;
    const bool isDir = fs::is_directory(it->path(), typeError);  // follows links
    if (typeError) continue;
    if (isDir == wantDirs && (isDir || fs::is_regular_file(it->path(), typeError)))
      names.push_back(it->path().filename().string());
  }
  if (ec) fail(dir, ": cannot list the folder (", ec.message(), ")");
  std::sort(names.begin(), names.end());
  return names;
}

// The images under `classDir` in sorted(os.walk(classDir)) order: folders
// sorted by path, each one's files sorted by name.
std::vector<std::string> classImages(const std::string& classDir) {
  std::vector<std::string> dirs{classDir};
  for (size_t i = 0; i < dirs.size(); ++i) {
    if (dirs.size() > 100000) fail(classDir, ": more than 100000 folders (a link loop?)");
    for (const std::string& sub : sortedEntries(dirs[i], /*wantDirs=*/true))
      dirs.push_back(joinPath(dirs[i], sub));
  }
  std::sort(dirs.begin(), dirs.end());
  std::vector<std::string> files;
  for (const std::string& dir : dirs)
    for (const std::string& name : sortedEntries(dir, /*wantDirs=*/false))
      if (hasImageExtension(name)) files.push_back(joinPath(dir, name));
  return files;
}

class ImageFolderSource : public RowSource {
public:
  ImageFolderSource(std::vector<std::string> files, const ImageOptions& options, bool train,
                    uint64_t seed, std::vector<int64_t> chw, unsigned threads)
      : files_(std::move(files)), options_(options), train_(train), seed_(seed),
        chw_(std::move(chw)), threads_(threads) {}

  void fillRow(int64_t index, int64_t epoch, float* dst) const override {
    const RgbImage image = decodeImage(files_[index]);
    if (image.height < 1 || image.width < 1) fail(files_[index], ": an empty image");
    transformImage(image, options_, train_, seed_, epoch, index, static_cast<int>(chw_[0]),
                   static_cast<int>(chw_[1]), static_cast<int>(chw_[2]), dst);
  }
  unsigned threads() const override { return threads_; }

private:
  std::vector<std::string> files_;
  ImageOptions options_;
  bool train_;
  uint64_t seed_;
  std::vector<int64_t> chw_;
  unsigned threads_;
};

std::string listNames(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 5; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > 5) s += ", ...";
  return s;
}

} // namespace

ImageFolderIndex indexImageFolder(const std::string& splitDir) {
  ImageFolderIndex index;
  index.classes = sortedEntries(splitDir, /*wantDirs=*/true);
  if (index.classes.empty())
    fail(splitDir, ": no class folders (an image folder holds one folder of images per class)");
  for (size_t c = 0; c < index.classes.size(); ++c) {
    const std::string classDir = joinPath(splitDir, index.classes[c]);
    std::vector<std::string> files = classImages(classDir);
    if (files.empty())
      fail(classDir, ": no .png, .jpg or .jpeg files (every class folder needs at least one image)");
    for (std::string& f : files) {
      index.files.push_back(std::move(f));
      index.labels.push_back(static_cast<int64_t>(c));
    }
  }
  return index;
}

std::string imageFolderSplitDir(const std::string& root, Split split) {
  for (const char* name : split == Split::Train ? std::vector<const char*>{"train"}
                                                : std::vector<const char*>{"test", "val"})
    if (dirExists(joinPath(root, name))) return joinPath(root, name);
  return "";
}

Dataset loadImageFolder(const ProgramSpec& spec, const std::string& root, Split split,
                        uint64_t seed, const ImageOptions& options) {
  const std::string dir = imageFolderSplitDir(root, split);
  if (dir.empty())
    fail(joinPath(root, split == Split::Train ? "train" : "test"),
         split == Split::Train ? ": no such folder (an image folder's training split)"
                               : ": no such folder, nor val (--eval reads the test split)");
  if (spec.numInputs != 1)
    fail("--data=", root, ": the model has ", spec.numInputs,
         " inputs; image folders feed exactly one");
  const TensorSpec& in = spec.inputs[0];
  const std::vector<int64_t> chw = perSampleDims(in);
  if (in.dtype != DType::F32 || chw.size() != 3 || (chw[0] != 1 && chw[0] != 3))
    fail(dir, ": images cannot feed model input '", in.name, "' (", dtypeName(in.dtype), " ",
         shapeString(chw), " per sample); image folders feed float32 [C, H, W] with C = 1 (gray) "
         "or 3 (RGB)");
  if (spec.labels.dtype != DType::I64 || numElements(perSampleDims(spec.labels)) != 1)
    fail(dir, ": image folders give one int64 class label per sample, but the model's labels are ",
         dtypeName(spec.labels.dtype), " ", shapeString(perSampleDims(spec.labels)));
  if (!options.mean.empty() && options.mean.size() != 1 &&
      static_cast<int64_t>(options.mean.size()) != chw[0])
    fail("--normalize: ", options.mean.size(), " values per list, but model input '", in.name,
         "' has ", chw[0], chw[0] == 1 ? " channel" : " channels");

  ImageFolderIndex index = indexImageFolder(dir);
  const int64_t c = numClasses(spec);
  if (c > 0 && static_cast<int64_t>(index.classes.size()) > c)
    fail(dir, ": ", index.classes.size(), " class folders (", listNames(index.classes),
         ") but model output '", spec.outputs[0].name, "' has ", c, " classes");
  if (split == Split::Test) {
    const std::string trainDir = imageFolderSplitDir(root, Split::Train);
    if (!trainDir.empty()) {
      const std::vector<std::string> trainClasses = sortedEntries(trainDir, /*wantDirs=*/true);
      if (trainClasses != index.classes)
        fail(dir, ": class folders (", listNames(index.classes), ") differ from ", trainDir,
             "'s (", listNames(trainClasses), "): labels would not match");
    }
  }

  const int64_t n = static_cast<int64_t>(index.files.size());
  const unsigned threads =
      options.workers > 0 ? static_cast<unsigned>(options.workers)
                          : std::min(kDefaultDecodeThreads, std::max(1u, std::thread::hardware_concurrency()));
  Dataset d;
  d.description = str("image folder ", dir, " (", n, " images, ", index.classes.size(), " classes)");
  auto source = std::make_shared<ImageFolderSource>(std::move(index.files), options,
                                                    split == Split::Train, seed, chw, threads);
  d.inputs.push_back(Column::decoded(std::move(source), n, chw));
  d.labels = Column::fromI64(std::move(index.labels), n, perSampleDims(spec.labels), DType::I64);
  return d;
}

} // namespace dtcrt

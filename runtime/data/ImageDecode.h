// decodeImage: a PNG (libpng) or JPEG (libjpeg-turbo) file as 8-bit RGB
// pixels, row-major height x width x 3. The format comes from the file's
// first bytes, not its name. Gray files are expanded to R = G = B (exact);
// palettes and low bit depths are expanded; 16-bit PNGs are reduced to 8 bits
// and an alpha channel is dropped by compositing on black, both done by
// libpng's simplified reader. A truncated or corrupt file, or a JPEG whose
// colours libjpeg cannot convert to RGB (CMYK, YCCK), throws Error naming the
// file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtcrt {

struct RgbImage {
  int height = 0, width = 0;
  std::vector<uint8_t> pixels;  // height * width * 3, R G B per pixel
};

RgbImage decodeImage(const std::string& path);

// Whether `name` ends in .png, .jpg or .jpeg, in any case (torchvision's
// IMG_EXTENSIONS, restricted to what decodeImage reads).
bool hasImageExtension(const std::string& name);

} // namespace dtcrt

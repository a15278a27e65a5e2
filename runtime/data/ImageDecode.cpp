// decodeImage with libpng's simplified reader and libjpeg's decompressor
// (see ImageDecode.h). libjpeg reports errors through a callback that must not
// return: it longjmps back to decodeJpeg, whose frame holds no C++ object
// with a destructor across the setjmp.
#include "runtime/data/ImageDecode.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"

#include <png.h>
// jpeglib.h needs FILE and size_t declared first.
#include <cstdio>
#include <jpeglib.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstring>

namespace dtcrt {

namespace {

bool isPng(const std::string& b) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return b.size() >= 8 && std::memcmp(b.data(), sig, 8) == 0;
}

bool isJpeg(const std::string& b) {
  return b.size() >= 3 && static_cast<unsigned char>(b[0]) == 0xff &&
         static_cast<unsigned char>(b[1]) == 0xd8 && static_cast<unsigned char>(b[2]) == 0xff;
}

RgbImage decodePng(const std::string& path, const std::string& bytes) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    fail(path, ": corrupt or unsupported PNG (", image.message, ")");
  image.format = PNG_FORMAT_RGB;
  RgbImage out;
  out.height = static_cast<int>(image.height);
  out.width = static_cast<int>(image.width);
  // Zeros: alpha is composited onto this (black) buffer.
  out.pixels.assign(PNG_IMAGE_SIZE(image), 0);
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr)) {
    std::string message = image.message;
    png_image_free(&image);
    fail(path, ": corrupt or unsupported PNG (", message, ")");
  }
  return out;
}

struct JpegErrors {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpegErrorExit(j_common_ptr cinfo) {
  JpegErrors* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

// Warnings (corrupt data, a premature end) are counted, not printed.
void jpegQuiet(j_common_ptr, int) {}

// Decodes into `rows` (resized by the caller after the header is read);
// returns false with `errors.message` set on any error or warning.
bool decodeJpegInto(const std::string& bytes, jpeg_decompress_struct& cinfo, JpegErrors& errors,
                    std::vector<uint8_t>& pixels, int& height, int& width) {
  cinfo.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpegErrorExit;
  errors.mgr.emit_message = jpegQuiet;
  errors.message[0] = 0;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  height = static_cast<int>(cinfo.output_height);
  width = static_cast<int>(cinfo.output_width);
  pixels.resize(static_cast<size_t>(height) * width * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels.data() + static_cast<size_t>(cinfo.output_scanline) * width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  const long warnings = errors.mgr.num_warnings;
  if (warnings > 0) (*errors.mgr.format_message)(reinterpret_cast<j_common_ptr>(&cinfo), errors.message);
  jpeg_destroy_decompress(&cinfo);
  return warnings == 0;
}

RgbImage decodeJpeg(const std::string& path, const std::string& bytes) {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  RgbImage out;
  if (!decodeJpegInto(bytes, cinfo, errors, out.pixels, out.height, out.width))
    fail(path, ": corrupt or unsupported JPEG (", errors.message, ")");
  return out;
}

} // namespace

RgbImage decodeImage(const std::string& path) {
  const std::string bytes = readFile(path);
  if (isPng(bytes)) return decodePng(path, bytes);
  if (isJpeg(bytes)) return decodeJpeg(path, bytes);
  fail(path, ": not a PNG or JPEG file (its first bytes are neither signature)");
}

bool hasImageExtension(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto endsWith = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return lower.size() > n && lower.compare(lower.size() - n, n, ext) == 0;
  };
  return endsWith(".png") || endsWith(".jpg") || endsWith(".jpeg");
}

} // namespace dtcrt

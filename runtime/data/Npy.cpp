// .npy reader (see Npy.h).
#include "runtime/data/Npy.h"

#include "runtime/support/Error.h"
#include "runtime/support/Files.h"
#include "runtime/support/SizeMath.h"

#include <cctype>
#include <cstring>

namespace dtcrt {

namespace {

// Finds 'key': in the header dict and returns the text after the colon.
size_t findKey(const std::string& header, const std::string& key, const std::string& name) {
  for (const char* quote : {"'", "\""}) {
    size_t p = header.find(quote + key + quote);
    if (p != std::string::npos) {
      size_t colon = header.find(':', p);
      if (colon != std::string::npos) return colon + 1;
    }
  }
  fail(name, ": bad .npy header: no '", key, "' key in ", header);
}

size_t skipSpace(const std::string& s, size_t p) {
  while (p < s.size() && std::isspace(static_cast<unsigned char>(s[p]))) ++p;
  return p;
}

} // namespace

std::string NpyArray::dtypeString() const {
  switch (kind) {
  case 'f': return "float" + std::to_string(itemSize * 8);
  case 'i': return "int" + std::to_string(itemSize * 8);
  case 'u': return "uint" + std::to_string(itemSize * 8);
  case 'b': return "bool";
  }
  return "?";
}

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<float> NpyArray::toF32() const {
  std::vector<float> out(static_cast<size_t>(numElements()));
  const char* p = bytes();
  for (size_t i = 0; i < out.size(); ++i, p += itemSize) {
    if (kind == 'f' && itemSize == 4) { std::memcpy(&out[i], p, 4); }
    else if (kind == 'f' && itemSize == 8) { double d; std::memcpy(&d, p, 8); out[i] = static_cast<float>(d); }
    else if (kind == 'i' && itemSize == 8) { int64_t v; std::memcpy(&v, p, 8); out[i] = static_cast<float>(v); }
    else if (kind == 'i' && itemSize == 4) { int32_t v; std::memcpy(&v, p, 4); out[i] = static_cast<float>(v); }
    else if ((kind == 'u' || kind == 'b') && itemSize == 1) { out[i] = static_cast<uint8_t>(*p); }
    else fail("internal: npy conversion from ", dtypeString(), " to float32");
  }
  return out;
}

std::vector<int64_t> NpyArray::toI64() const {
  std::vector<int64_t> out(static_cast<size_t>(numElements()));
  const char* p = bytes();
  for (size_t i = 0; i < out.size(); ++i, p += itemSize) {
    if (kind == 'i' && itemSize == 8) { std::memcpy(&out[i], p, 8); }
    else if (kind == 'i' && itemSize == 4) { int32_t v; std::memcpy(&v, p, 4); out[i] = v; }
    else if (kind == 'i' && itemSize == 2) { int16_t v; std::memcpy(&v, p, 2); out[i] = v; }
    else if (kind == 'i' && itemSize == 1) { out[i] = static_cast<int8_t>(*p); }
    else if ((kind == 'u' || kind == 'b') && itemSize == 1) { out[i] = static_cast<uint8_t>(*p); }
    else if (kind == 'u' && itemSize == 2) { uint16_t v; std::memcpy(&v, p, 2); out[i] = v; }
    else if (kind == 'u' && itemSize == 4) { uint32_t v; std::memcpy(&v, p, 4); out[i] = v; }
    else fail("internal: npy conversion from ", dtypeString(), " to int64");
  }
  return out;
}

namespace {

// Parses the header of the `size` bytes at `bytes` into `a` (kind, itemSize,
// shape) and checks that the data is all there; returns where it starts.
size_t parseHeader(const char* bytes, size_t size, const std::string& name, NpyArray& a) {
  static const char kMagic[] = "\x93NUMPY";
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    fail(name, ": bad magic (not a .npy file)");
  const unsigned char major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, headerStart;
  if (major == 1) {
    headerLen = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(name, ": truncated file: the header ends early");
    headerLen = 0;
    for (int i = 3; i >= 0; --i) headerLen = (headerLen << 8) | static_cast<unsigned char>(bytes[8 + i]);
    headerStart = 12;
  } else {
    fail(name, ": unsupported .npy version ", int(major));
  }
  if (size < headerStart + headerLen) fail(name, ": truncated file: the header ends early");
  const std::string header(bytes + headerStart, headerLen);

  // descr: '<f4', '|u1', '<i8', ...
  size_t p = skipSpace(header, findKey(header, "descr", name));
  if (p >= header.size() || (header[p] != '\'' && header[p] != '"'))
    fail(name, ": bad .npy header: descr is not a string: ", header);
  size_t end = header.find(header[p], p + 1);
  if (end == std::string::npos) fail(name, ": bad .npy header: ", header);
  const std::string descr = header.substr(p + 1, end - p - 1);
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|' && descr[0] != '='))
    fail(name, ": unsupported dtype '", descr, "' (only little-endian numeric arrays)");
  a.kind = descr[1];
  a.itemSize = std::atoi(descr.c_str() + 2);
  const bool known = (a.kind == 'f' && (a.itemSize == 4 || a.itemSize == 8)) ||
                     (a.kind == 'i' && (a.itemSize == 1 || a.itemSize == 2 || a.itemSize == 4 || a.itemSize == 8)) ||
                     (a.kind == 'u' && (a.itemSize == 1 || a.itemSize == 2 || a.itemSize == 4)) ||
                     (a.kind == 'b' && a.itemSize == 1);
  if (!known) fail(name, ": unsupported dtype '", descr, "'");

  p = skipSpace(header, findKey(header, "fortran_order", name));
  if (header.compare(p, 4, "True") == 0)
    fail(name, ": Fortran-order arrays are not supported (save with np.ascontiguousarray)");

  p = skipSpace(header, findKey(header, "shape", name));
  if (p >= header.size() || header[p] != '(') fail(name, ": bad .npy header: shape: ", header);
  end = header.find(')', p);
  if (end == std::string::npos) fail(name, ": bad .npy header: shape: ", header);
  const std::string shape = header.substr(p + 1, end - p - 1);
  size_t q = 0;
  while (true) {
    q = skipSpace(shape, q);
    if (q >= shape.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(shape[q])))
      fail(name, ": bad .npy header: shape: (", shape, ")");
    size_t used = 0;
    try {
      a.shape.push_back(std::stoll(shape.substr(q), &used));
    } catch (const std::exception&) {
      fail(name, ": bad .npy header: a dim of shape (", shape, ") is out of range");
    }
    q = skipSpace(shape, q + used);
    if (q < shape.size() && shape[q] == ',') ++q;
  }

  const size_t dataStart = headerStart + headerLen;
  int64_t wantBytes = 0;
  if (!checkedByteSize(a.shape, a.itemSize, wantBytes))
    fail(name, ": bad .npy header: shape (", shape, ") of ", a.dtypeString(),
         " overflows a 64-bit size");
  const size_t want = static_cast<size_t>(wantBytes);
  if (size - dataStart < want)
    fail(name, ": truncated file: shape ", [&] {
      std::string s = "(";
      for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
      return s + ")";
    }(), " of ", a.dtypeString(), " needs ", want, " data bytes, the file has ", size - dataStart);
  return dataStart;
}

} // namespace

NpyArray parseNpy(const std::string& bytes, const std::string& name) {
  NpyArray a;
  const size_t dataStart = parseHeader(bytes.data(), bytes.size(), name, a);
  a.data = bytes.substr(dataStart, static_cast<size_t>(a.numElements()) * a.itemSize);
  return a;
}

NpyArray readNpy(const std::string& path) {
  if (!fileExists(path)) fail(path, ": no such file");
  NpyArray a;
  std::shared_ptr<const MappedFile> file = MappedFile::open(path);
  a.dataOffset = parseHeader(file->data(), file->size(), path, a);
  a.mapped = std::move(file);
  return a;
}

} // namespace dtcrt

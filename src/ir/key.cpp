#include "ir/key.h"

#include <cstring>

namespace onnxfold {

void putKeyPart(std::string& s, std::string_view part) {
  s += std::to_string(part.size());
  s += ':';
  s.append(part.data(), part.size());
}

void putKeyNumber(std::string& s, int64_t v) {
  s += std::to_string(v);
  s += ',';
}

namespace {

void putTensorKey(std::string& s, const Tensor& t) {
  putKeyNumber(s, static_cast<int64_t>(t.dtype()));
  for (int64_t d : t.dims())
    putKeyNumber(s, d);
  s += '|';
  putKeyPart(s, std::string_view(reinterpret_cast<const char*>(t.bytes()), t.byteSize()));
  for (const std::string& str : t.strings())
    putKeyPart(s, str);
}

}  // namespace

std::string attributeKey(const Attribute& a) {
  std::string s;
  putKeyPart(s, a.name);
  putKeyNumber(s, static_cast<int64_t>(a.type));
  putKeyPart(s, a.ref_attr_name);
  uint32_t bits = 0;
  std::memcpy(&bits, &a.f, sizeof bits);
  putKeyNumber(s, bits);
  putKeyNumber(s, a.i);
  putKeyPart(s, a.s);
  putTensorKey(s, a.t);
  for (float f : a.floats) {
    std::memcpy(&bits, &f, sizeof bits);
    putKeyNumber(s, bits);
  }
  s += '|';
  for (int64_t v : a.ints)
    putKeyNumber(s, v);
  s += '|';
  for (const std::string& str : a.strings)
    putKeyPart(s, str);
  for (const Tensor& t : a.tensors)
    putTensorKey(s, t);
  putKeyPart(s, a.unknown_fields);
  return s;
}

}  // namespace onnxfold

#include "onnx/wire.h"

#include <protozero/buffer_string.hpp>
#include <protozero/varint.hpp>

namespace onnxfold::wire {

namespace {
const char* wireTypeName(WireType t) {
  switch (t) {
    case WireType::varint:
      return "varint";
    case WireType::fixed64:
      return "fixed64";
    case WireType::length_delimited:
      return "length-delimited";
    case WireType::fixed32:
      return "fixed32";
    default:
      return "unknown";
  }
}
}  // namespace

std::string FieldReader::describe(const protozero::exception& e) {
  if (dynamic_cast<const protozero::end_of_buffer_exception*>(&e)) return "truncated (ends early)";
  if (dynamic_cast<const protozero::varint_too_long_exception*>(&e)) return "varint too long";
  if (dynamic_cast<const protozero::invalid_tag_exception*>(&e)) return "invalid field number";
  if (dynamic_cast<const protozero::unknown_pbf_wire_type_exception*>(&e))
    return "unknown wire type";
  if (dynamic_cast<const protozero::invalid_length_exception*>(&e)) {
    return "length not a multiple of the element size";
  }
  return e.what();
}

std::string FieldReader::fieldLabel() const {
  const uint32_t t = reader_.tag();
  for (size_t i = 0; i < num_names_; ++i) {
    if (names_[i].number == t) return std::string(message_) + "." + names_[i].name;
  }
  return std::string(message_) + " field " + std::to_string(t);
}

void FieldReader::fail(const std::string& problem) const {
  throw ParseError(fieldLabel(), problem);
}

void FieldReader::expect(WireType t) const {
  if (reader_.wire_type() != t) {
    fail(std::string("wrong wire type: expected ") + wireTypeName(t) + ", found " +
         wireTypeName(reader_.wire_type()));
  }
}

template <class F>
auto FieldReader::guarded(F f) -> decltype(f()) {
  try {
    if (reader_.wire_type() == WireType::length_delimited) checkLength();
    return f();
  } catch (const protozero::exception& e) {
    fail(describe(e));
  }
}

// protozero keeps lengths in 32 bits and compares them as ptrdiff_t, which on
// 32-bit targets (wasm32) lets a length of 2^31 or more pass its bounds check.
// Decode the full 64-bit length here and check it against what is left.
void FieldReader::checkLength() const {
  const protozero::data_view rest = reader_.data();
  const char* p = rest.data();
  const char* end = p + rest.size();
  const uint64_t len = protozero::decode_varint(&p, end);
  if (len > static_cast<uint64_t>(end - p)) {
    fail("length " + std::to_string(len) + " runs past the end of the message (" +
         std::to_string(end - p) + " bytes left)");
  }
}

uint64_t FieldReader::getVarint() {
  expect(WireType::varint);
  return guarded([&] { return reader_.get_uint64(); });
}

float FieldReader::getFloat() {
  expect(WireType::fixed32);
  return guarded([&] { return reader_.get_float(); });
}

double FieldReader::getDouble() {
  expect(WireType::fixed64);
  return guarded([&] { return reader_.get_double(); });
}

std::string_view FieldReader::getBytes() {
  expect(WireType::length_delimited);
  return guarded([&] {
    const protozero::data_view v = reader_.get_view();
    return std::string_view(v.data(), v.size());
  });
}

void FieldReader::appendInt64s(std::vector<int64_t>& out) {
  if (reader_.wire_type() == WireType::length_delimited) {
    guarded([&] {
      for (int64_t v : reader_.get_packed_int64())
        out.push_back(v);
      return 0;
    });
  } else {
    out.push_back(getInt64());
  }
}

void FieldReader::appendUint64s(std::vector<uint64_t>& out) {
  if (reader_.wire_type() == WireType::length_delimited) {
    guarded([&] {
      for (uint64_t v : reader_.get_packed_uint64())
        out.push_back(v);
      return 0;
    });
  } else {
    out.push_back(getVarint());
  }
}

void FieldReader::appendInt32s(std::vector<int32_t>& out) {
  if (reader_.wire_type() == WireType::length_delimited) {
    guarded([&] {
      for (int32_t v : reader_.get_packed_int32())
        out.push_back(v);
      return 0;
    });
  } else {
    out.push_back(getInt32());
  }
}

void FieldReader::appendFloats(std::vector<float>& out) {
  if (reader_.wire_type() == WireType::length_delimited) {
    guarded([&] {
      for (float v : reader_.get_packed_float())
        out.push_back(v);
      return 0;
    });
  } else {
    out.push_back(getFloat());
  }
}

void FieldReader::appendDoubles(std::vector<double>& out) {
  if (reader_.wire_type() == WireType::length_delimited) {
    guarded([&] {
      for (double v : reader_.get_packed_double())
        out.push_back(v);
      return 0;
    });
  } else {
    out.push_back(getDouble());
  }
}

void FieldReader::keepUnknown(std::string& out) {
  guarded([&] {
    reader_.skip();
    return 0;
  });
  const char* end = reader_.data().data();
  out.append(start_, static_cast<size_t>(end - start_));
}

void appendVarint(std::string& out, uint64_t v) {
  protozero::add_varint_to_buffer(&out, v);
}

}  // namespace onnxfold::wire

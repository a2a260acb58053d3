// Protobuf wire-level helpers on top of protozero.
//
// FieldReader wraps protozero::pbf_reader so that a field with the wrong wire
// type, a truncated value or an invalid length is a ParseError naming the
// message and field, never an assert or a read past the end. It also captures
// the raw bytes of fields we do not know, so they are written back unchanged.
#pragma once

#include <cstdint>
#include <cstring>
#include <protozero/exception.hpp>
#include <protozero/pbf_reader.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ir/error.h"

namespace onnxfold::wire {

using WireType = protozero::pbf_wire_type;

// Field names of one message type, for error messages: {number, name}.
struct FieldName {
  uint32_t number;
  const char* name;
};

class FieldReader {
 public:
  template <size_t N>
  FieldReader(std::string_view data, const char* message, const FieldName (&names)[N])
      : reader_(data.data(), data.size()), message_(message), names_(names), num_names_(N) {}

  // Advances to the next field; false at the end of the message.
  bool next() {
    start_ = reader_.data().data();
    try {
      return reader_.next();
    } catch (const protozero::exception& e) {
      throw ParseError(message_, std::string("bad field key: ") + describe(e));
    }
  }
  uint32_t tag() const { return reader_.tag(); }

  // Scalars. Each checks the wire type first.
  uint64_t getVarint();
  int64_t getInt64() { return static_cast<int64_t>(getVarint()); }
  int32_t getInt32() { return static_cast<int32_t>(getVarint()); }
  float getFloat();
  double getDouble();
  std::string_view getBytes();
  std::string getString() { return std::string(getBytes()); }

  // Repeated scalars accept both packed and unpacked encodings.
  void appendInt64s(std::vector<int64_t>& out);
  void appendUint64s(std::vector<uint64_t>& out);
  void appendInt32s(std::vector<int32_t>& out);
  void appendFloats(std::vector<float>& out);
  void appendDoubles(std::vector<double>& out);

  // Skips the current field, appending its encoded bytes (key included) to `out`.
  void keepUnknown(std::string& out);

  // Throws a ParseError about the current field.
  [[noreturn]] void fail(const std::string& problem) const;
  std::string fieldLabel() const;

 private:
  void expect(WireType t) const;
  void checkLength() const;
  template <class F>
  auto guarded(F f) -> decltype(f());
  static std::string describe(const protozero::exception& e);

  protozero::pbf_reader reader_;
  const char* start_ = nullptr;
  const char* message_;
  const FieldName* names_;
  size_t num_names_;
};

// Encoded-output helpers for the writer.
void appendVarint(std::string& out, uint64_t v);
inline void appendKey(std::string& out, uint32_t field, WireType t) {
  appendVarint(out, (uint64_t{field} << 3U) | static_cast<uint32_t>(t));
}

}  // namespace onnxfold::wire

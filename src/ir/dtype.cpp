#include "ir/dtype.h"

#include <cstdint>
#include <string>

#include "ir/error.h"

namespace onnxfold {

namespace {
struct Info {
  int bits;
  std::string_view name;
  std::string_view proto_name;
};

const Info& info(DataType t) {
  static const Info table[] = {
      {0, "undefined", "UNDEFINED"},
      {32, "float32", "FLOAT"},
      {8, "uint8", "UINT8"},
      {8, "int8", "INT8"},
      {16, "uint16", "UINT16"},
      {16, "int16", "INT16"},
      {32, "int32", "INT32"},
      {64, "int64", "INT64"},
      {0, "string", "STRING"},
      {8, "bool", "BOOL"},
      {16, "float16", "FLOAT16"},
      {64, "float64", "DOUBLE"},
      {32, "uint32", "UINT32"},
      {64, "uint64", "UINT64"},
      {64, "complex64", "COMPLEX64"},
      {128, "complex128", "COMPLEX128"},
      {16, "bfloat16", "BFLOAT16"},
      {8, "float8e4m3fn", "FLOAT8E4M3FN"},
      {8, "float8e4m3fnuz", "FLOAT8E4M3FNUZ"},
      {8, "float8e5m2", "FLOAT8E5M2"},
      {8, "float8e5m2fnuz", "FLOAT8E5M2FNUZ"},
      {4, "uint4", "UINT4"},
      {4, "int4", "INT4"},
      {4, "float4e2m1", "FLOAT4E2M1"},
      {8, "float8e8m0", "FLOAT8E8M0"},
      {2, "uint2", "UINT2"},
      {2, "int2", "INT2"},
  };
  const auto v = static_cast<int32_t>(t);
  return table[isKnownDataType(v) ? v : 0];
}
}  // namespace

bool isKnownDataType(int32_t v) {
  return v >= 1 && v <= kMaxDataType;
}

int bitsPerElement(DataType t) {
  return info(t).bits;
}

uint64_t rawByteSize64(DataType t, int64_t count) {
  const auto bits = static_cast<uint64_t>(bitsPerElement(t));
  const auto n = static_cast<uint64_t>(count < 0 ? 0 : count);
  if (bits != 0 && n > (UINT64_MAX - 7) / bits) {
    throw Error(std::to_string(count) + " elements of " + std::string(dataTypeName(t)) +
                " overflow a 64-bit byte count");
  }
  return (n * bits + 7) / 8;
}

size_t rawByteSize(DataType t, int64_t count) {
  const uint64_t bytes = rawByteSize64(t, count);
  // In wasm32 size_t is 32 bits: a size that does not fit must not wrap into a small buffer.
  if (bytes > static_cast<uint64_t>(SIZE_MAX)) {
    throw Error(std::to_string(count) + " elements of " + std::string(dataTypeName(t)) + " take " +
                std::to_string(bytes) + " bytes, more than this build can address");
  }
  return static_cast<size_t>(bytes);
}

bool isFloatingPoint(DataType t) {
  switch (t) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kFloat16:
    case DataType::kBfloat16:
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kFloat4E2M1:
      return true;
    default:
      return false;
  }
}

bool isSignedInteger(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kInt4:
    case DataType::kInt2:
      return true;
    default:
      return false;
  }
}

bool isUnsignedInteger(DataType t) {
  switch (t) {
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
    case DataType::kUint64:
    case DataType::kUint4:
    case DataType::kUint2:
      return true;
    default:
      return false;
  }
}

std::string_view dataTypeName(DataType t) {
  return info(t).name;
}
std::string_view dataTypeProtoName(DataType t) {
  return info(t).proto_name;
}

}  // namespace onnxfold

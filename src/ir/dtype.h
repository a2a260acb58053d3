// Element types of ONNX tensors (TensorProto.DataType), with the facts every
// layer needs: storage width, signedness, float-ness and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace onnxfold {

// Values equal the field values of TensorProto.DataType in onnx.proto.
enum class DataType : int32_t {
  kUndefined = 0,
  kFloat = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kDouble = 11,
  kUint32 = 12,
  kUint64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBfloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUint4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUint2 = 25,
  kInt2 = 26,
};

constexpr int32_t kMaxDataType = 26;

// True for any value in 1..kMaxDataType.
bool isKnownDataType(int32_t v);

// Bits per element in raw_data (4 for int4, 2 for int2, 0 for string/undefined).
int bitsPerElement(DataType t);

// Bytes needed in raw_data for `count` elements (sub-byte types round up).
// Bytes of `count` packed elements; throws Error when that does not fit size_t (wasm32: 4 GB)
// or 64 bits. rawByteSize64 only throws on 64-bit overflow (for estimates and budgets).
size_t rawByteSize(DataType t, int64_t count);
uint64_t rawByteSize64(DataType t, int64_t count);

bool isFloatingPoint(DataType t);  // float, double, half, bfloat16, float8, float4
bool isSignedInteger(DataType t);
bool isUnsignedInteger(DataType t);
inline bool isInteger(DataType t) {
  return isSignedInteger(t) || isUnsignedInteger(t);
}

// "float32", "int64", ... as used by onnxruntime-web and our reports.
std::string_view dataTypeName(DataType t);
// The name in onnx.proto: "FLOAT", "INT64", ...
std::string_view dataTypeProtoName(DataType t);

}  // namespace onnxfold

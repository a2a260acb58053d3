// Helpers every op family uses: half-precision conversions, dtype dispatch,
// broadcasting (static and symbolic), axis handling and small-tensor access.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/tensor.h"
#include "ir/type.h"
#include "kernels/op_registry.h"

namespace onnxfold::kernels {

// The most dims a rank read from a declared shape length (a 1-D shape input of n entries) may
// give: a fuzzed model declared 2^31, and making that many symbols exhausted memory.
constexpr int64_t kMaxDeclaredRank = 1 << 16;

// ------------------------------------------------------------ 16-bit floats

// IEEE half <-> float; float -> half rounds to nearest even, keeps NaN and Inf.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
// bfloat16 <-> float; float -> bfloat16 rounds to nearest even.
inline float bfloat16ToFloat(uint16_t b) {
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t floatToBfloat16(float f);

// Storage wrappers so templates can tell 16-bit floats from integers.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2, "16-bit storage");

// The 16-bit float storage types, which kernels compute in float.
template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// ------------------------------------------------------------ dtype dispatch

template <class T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) with the C++ type stored for `t`: float, double, int8_t..
// int64_t, uint8_t..uint64_t, bool, Half, BFloat16. Returns false for other
// types (string, complex, float8, 4-bit), so the caller can report them.
template <class F>
bool dispatchNumeric(DataType t, F&& f) {
  switch (t) {
    case DataType::kFloat:
      f(Tag<float>{});
      return true;
    case DataType::kDouble:
      f(Tag<double>{});
      return true;
    case DataType::kInt8:
      f(Tag<int8_t>{});
      return true;
    case DataType::kInt16:
      f(Tag<int16_t>{});
      return true;
    case DataType::kInt32:
      f(Tag<int32_t>{});
      return true;
    case DataType::kInt64:
      f(Tag<int64_t>{});
      return true;
    case DataType::kUint8:
      f(Tag<uint8_t>{});
      return true;
    case DataType::kUint16:
      f(Tag<uint16_t>{});
      return true;
    case DataType::kUint32:
      f(Tag<uint32_t>{});
      return true;
    case DataType::kUint64:
      f(Tag<uint64_t>{});
      return true;
    case DataType::kBool:
      f(Tag<bool>{});
      return true;
    case DataType::kFloat16:
      f(Tag<Half>{});
      return true;
    case DataType::kBfloat16:
      f(Tag<BFloat16>{});
      return true;
    default:
      return false;
  }
}

// Element as double / from double for any numeric storage type (Half, BFloat16 included).
template <class T>
inline double toDouble(T v) {
  if constexpr (std::is_same_v<T, Half>)
    return halfToFloat(v.bits);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bfloat16ToFloat(v.bits);
  else
    return static_cast<double>(v);
}
template <class T>
inline T fromDouble(double d) {
  if constexpr (std::is_same_v<T, Half>)
    return Half{floatToHalf(static_cast<float>(d))};
  else if constexpr (std::is_same_v<T, BFloat16>)
    return BFloat16{floatToBfloat16(static_cast<float>(d))};
  else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Out of range or NaN is undefined behaviour in C++ (and hostile models ask for it):
    // saturate, as wasm's non-trapping conversion does; NaN gives 0.
    if (d != d) return T{0};
    if (d <= static_cast<double>(std::numeric_limits<T>::min()))
      return std::numeric_limits<T>::min();
    if (d >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(d);
  } else
    return static_cast<T>(d);
}

// Typed views of tensor storage. Inputs handed to compute() are aligned.
template <class T>
inline const T* dataAs(const Tensor& t) {
  return reinterpret_cast<const T*>(t.bytes());
}
template <class T>
inline T* mutableDataAs(Tensor& t) {
  return reinterpret_cast<T*>(t.mutableBytes());
}

// ------------------------------------------------------------ shapes and broadcasting

// Multidirectional (numpy) broadcast of static shapes; nullopt if incompatible.
std::optional<std::vector<int64_t>> broadcastDims(const std::vector<int64_t>& a,
                                                  const std::vector<int64_t>& b);
// The same for symbolic shapes: a known 1 yields to the other dim; equal
// symbols stay; a symbol against a known n > 1 gives n; two different symbols
// give a fresh unknown dim. Returns nullopt only when known dims conflict.
std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b);

// Row-major strides of `dims` for an input broadcast to `out_dims` (0 on broadcast axes).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims);

// Calls f(out_index, in_offsets[k]) for every element of `out_dims`, where
// in_offsets[k] is the element offset into input k broadcast with `strides[k]`.
template <class F>
void forEachBroadcast(const std::vector<int64_t>& out_dims,
                      const std::vector<std::vector<int64_t>>& strides, F&& f) {
  const size_t rank = out_dims.size();
  const size_t n_in = strides.size();
  // Empty first: an empty output's other dims may overflow int64 when multiplied.
  for (int64_t d : out_dims)
    if (d == 0) return;
  int64_t total = 1;
  for (int64_t d : out_dims)
    total *= d;
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> off(n_in, 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    for (size_t ax = rank; ax-- > 0;) {
      if (++idx[ax] < out_dims[ax]) {
        for (size_t k = 0; k < n_in; ++k)
          off[k] += strides[k][ax];
        break;
      }
      for (size_t k = 0; k < n_in; ++k)
        off[k] -= strides[k][ax] * (out_dims[ax] - 1);
      idx[ax] = 0;
    }
  }
}

// Shape from static dims, and back (nullopt when not static).
Shape shapeOf(const std::vector<int64_t>& dims);
std::optional<std::vector<int64_t>> staticDims(const Shape* s);

// Normalizes a possibly negative axis into [0, rank); ctx.fail()s otherwise.
int64_t normalizeAxis(const OpContext& ctx, int64_t axis, int64_t rank);

// The elements of an int32/int64 tensor as int64 (ctx.fail()s for other types).
std::vector<int64_t> toInt64Vector(const OpContext& ctx, const Tensor& t);

// A 0-d or 1-element tensor as double.
double scalarAsDouble(const OpContext& ctx, const Tensor& t);

// Row-major element count of dims[begin, end); an Error when it overflows int64 (declared
// dims may be anything: a fuzzed DequantizeLinear's did).
int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end);

// ------------------------------------------------- float kernels computing in double

// float32/64, float16 and bfloat16: the types of the ops whose kernels compute in double.
inline bool isFloatType(DataType t) {
  return t == DataType::kFloat || t == DataType::kDouble || t == DataType::kFloat16 ||
         t == DataType::kBfloat16;
}

// Fails inference unless input i is a float type (or not known yet); `what` names the
// input in the message ("input i" by default).
void requireFloatInput(const InferContext& ctx, size_t i, const char* what = nullptr);

// Every element of a numeric tensor as double (memcpy reads: any alignment).
std::vector<double> readAll(const Tensor& t);
// Stores `v` into t's elements, converted to its numeric element type.
void writeAll(Tensor& t, const std::vector<double>& v);

}  // namespace onnxfold::kernels

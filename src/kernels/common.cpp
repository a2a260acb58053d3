#include "kernels/common.h"

#include <algorithm>

#include "ir/error.h"

namespace onnxfold::kernels {

namespace {
uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  uint32_t e = (h >> 10) & 0x1f;
  uint32_t m = h & 0x3ff;
  if (e == 0) {
    if (m == 0) return bitsFloat(sign);
    // Subnormal: normalise the mantissa.
    e = 113;
    while ((m & 0x400) == 0) {
      m <<= 1;
      --e;
    }
    m &= 0x3ff;
    return bitsFloat(sign | (e << 23) | (m << 13));
  }
  if (e == 31) return bitsFloat(sign | 0x7f800000u | (m << 13));
  return bitsFloat(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  const auto sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7fffffff;
  if (x >= 0x7f800000) {  // Inf or NaN (NaN stays quiet)
    return static_cast<uint16_t>(sign | (x > 0x7f800000 ? 0x7e00 | ((x >> 13) & 0x3ff) : 0x7c00));
  }
  if (x >= 0x477ff000) return static_cast<uint16_t>(sign | 0x7c00);  // rounds past 65504
  if (x < 0x38800000) {                                              // half subnormal or zero
    if (x < 0x33000000) return sign;  // below half the smallest subnormal: 0
    const uint32_t e = x >> 23;
    const uint32_t m = (x & 0x7fffff) | 0x800000;
    const uint32_t shift = 126 - e;
    uint32_t mh = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (mh & 1))) ++mh;
    return static_cast<uint16_t>(sign | mh);
  }
  uint32_t h = (x - 0x38000000) >> 13;
  const uint32_t rem = x & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(sign | h);
}

uint16_t floatToBfloat16(float f) {
  const uint32_t x = floatBits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

std::optional<std::vector<int64_t>> broadcastDims(const std::vector<int64_t>& a,
                                                  const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return std::nullopt;
  }
  return out;
}

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.rank(), b.rank());
  Shape out;
  out.dims.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim one = Dim::known(1);
    const Dim& da = i < rank - a.rank() ? one : a.dims[i - (rank - a.rank())];
    const Dim& db = i < rank - b.rank() ? one : b.dims[i - (rank - b.rank())];
    if (da.isKnown() && db.isKnown()) {
      if (da.value == db.value || db.value == 1)
        out.dims[i] = Dim::known(da.value);
      else if (da.value == 1)
        out.dims[i] = Dim::known(db.value);
      else
        return std::nullopt;
    } else if (da.isKnown() && da.value == 1) {
      out.dims[i] = db;
    } else if (db.isKnown() && db.value == 1) {
      out.dims[i] = da;
    } else if (da.isKnown()) {
      out.dims[i] = Dim::known(da.value);  // a symbol must equal n (or be 1) to broadcast
    } else if (db.isKnown()) {
      out.dims[i] = Dim::known(db.value);
    } else if (!da.param.empty() && da.param == db.param) {
      out.dims[i] = da;
    } else {
      out.dims[i] = Dim();  // two different unknowns: could be either
    }
  }
  return out;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> strides(out_dims.size(), 0);
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const size_t o = k + (out_dims.size() - dims.size());
    strides[o] = dims[k] == 1 ? 0 : s;
    // Wrapping: an empty tensor's other dims may overflow int64, and its strides are never used.
    s = static_cast<int64_t>(static_cast<uint64_t>(s) * static_cast<uint64_t>(dims[k]));
  }
  return strides;
}

Shape shapeOf(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims)
    s.dims.push_back(Dim::known(d));
  return s;
}

std::optional<std::vector<int64_t>> staticDims(const Shape* s) {
  if (s == nullptr || !s->isStatic()) return std::nullopt;
  std::vector<int64_t> d;
  for (const Dim& x : s->dims)
    d.push_back(x.value);
  return d;
}

int64_t normalizeAxis(const OpContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> toInt64Vector(const OpContext& ctx, const Tensor& t) {
  const auto n = static_cast<size_t>(t.numElements());
  std::vector<int64_t> out(n);
  if (t.dtype() == DataType::kInt64) {
    for (size_t i = 0; i < n; ++i)
      out[i] = t.at<int64_t>(i);
  } else if (t.dtype() == DataType::kInt32) {
    for (size_t i = 0; i < n; ++i)
      out[i] = t.at<int32_t>(i);
  } else {
    ctx.fail(std::string("expected an int32 or int64 tensor, got ") +
             std::string(dataTypeName(t.dtype())));
  }
  return out;
}

double scalarAsDouble(const OpContext& ctx, const Tensor& t) {
  if (t.numElements() != 1) ctx.fail("expected a single value");
  double v = 0;
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    v = toDouble(t.at<T>(0));
  });
  if (!ok)
    ctx.unsupported(std::string("unsupported scalar type ") + std::string(dataTypeName(t.dtype())));
  return v;
}

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) {
    if (!checkedMul(p, dims[i], &p)) throw Error("a size overflows int64 (a product of dims)");
  }
  return p;
}

void requireFloatInput(const InferContext& ctx, size_t i, const char* what) {
  const DataType t = ctx.inputDtype(i);
  if (t != DataType::kUndefined && !isFloatType(t)) {
    ctx.fail((what != nullptr ? std::string(what) : "input " + std::to_string(i)) + " has type " +
             std::string(dataTypeName(t)) + ", expected a float type");
  }
}

std::vector<double> readAll(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numElements()));
  dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = toDouble(t.at<T>(i));
  });
  return v;
}

void writeAll(Tensor& t, const std::vector<double>& v) {
  dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = mutableDataAs<T>(t);
    for (size_t i = 0; i < v.size(); ++i)
      p[i] = fromDouble<T>(v[i]);
  });
}

}  // namespace onnxfold::kernels

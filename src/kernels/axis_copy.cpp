#include "kernels/axis_copy.h"

#include <cstring>
#include <string>

#include "ir/error.h"

namespace onnxfold::kernels {

namespace {

size_t elementBytes(DataType t) {
  if (t == DataType::kString) return 0;
  const int bits = bitsPerElement(t);
  if (bits % 8 != 0) {
    throw UnsupportedError("cutting " + std::string(dataTypeName(t)) + " tensors along an axis");
  }
  return static_cast<size_t>(bits / 8);
}

int64_t product(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) {
    // An empty tensor's other dims may multiply out of int64.
    if (!checkedMul(p, d[i], &p)) throw Error("a size overflows int64 (a product of dims)");
  }
  return p;
}

// Copies `n` elements from src[from] to dst[to] (strings element by element).
void copyElements(const Tensor& src, int64_t from, Tensor& dst, int64_t to, int64_t n, size_t eb) {
  if (n <= 0) return;
  if (src.dtype() == DataType::kString) {
    for (int64_t k = 0; k < n; ++k)
      dst.mutableStrings()[static_cast<size_t>(to + k)] =
          src.strings()[static_cast<size_t>(from + k)];
    return;
  }
  std::memcpy(dst.mutableBytes() + static_cast<size_t>(to) * eb,
              src.bytes() + static_cast<size_t>(from) * eb, static_cast<size_t>(n) * eb);
}

Tensor allocate(DataType dt, std::vector<int64_t> dims) {
  return dt == DataType::kString ? Tensor(dt, std::move(dims))
                                 : Tensor::uninitialized(dt, std::move(dims));
}

}  // namespace

Tensor sliceAlong(const Tensor& t, size_t axis, int64_t start, int64_t count) {
  const size_t eb = elementBytes(t.dtype());
  const std::vector<int64_t>& d = t.dims();
  const int64_t outer = product(d, 0, axis);
  const int64_t inner = product(d, axis + 1, d.size());
  const int64_t len = d[axis];
  std::vector<int64_t> out_dims = d;
  out_dims[axis] = count;
  Tensor out = allocate(t.dtype(), out_dims);
  for (int64_t o = 0; o < outer; ++o)
    copyElements(t, (o * len + start) * inner, out, o * count * inner, count * inner, eb);
  return out;
}

Tensor concatAlong(const std::vector<Tensor>& parts, size_t axis) {
  const DataType dt = parts.at(0).dtype();
  const size_t eb = elementBytes(dt);
  std::vector<int64_t> dims = parts[0].dims();
  if (axis >= dims.size()) throw Error("axis " + std::to_string(axis) + " out of range");
  int64_t total = 0;
  for (const Tensor& p : parts) {
    if (p.dtype() != dt || p.rank() != dims.size()) throw Error("parts differ in type or rank");
    for (size_t k = 0; k < dims.size(); ++k) {
      if (k != axis && p.dims()[k] != dims[k]) throw Error("parts differ in a dim off the axis");
    }
    if (!checkedAdd(total, p.dims()[axis], &total))
      throw Error("the concatenated axis overflows int64");
  }
  dims[axis] = total;
  const int64_t outer = product(dims, 0, axis);
  const int64_t inner = product(dims, axis + 1, dims.size());
  Tensor out = allocate(dt, dims);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = o * total * inner;
    for (const Tensor& p : parts) {
      const int64_t n = p.dims()[axis] * inner;
      copyElements(p, o * n, out, at, n, eb);
      at += n;
    }
  }
  return out;
}

Tensor stackAlong(const std::vector<Tensor>& parts, size_t axis) {
  std::vector<Tensor> lifted;
  lifted.reserve(parts.size());
  for (const Tensor& p : parts) {
    if (p.dims() != parts.at(0).dims()) throw Error("parts differ in shape");
    if (axis > p.rank()) throw Error("axis " + std::to_string(axis) + " out of range");
    Tensor t = p;
    std::vector<int64_t> d = p.dims();
    d.insert(d.begin() + static_cast<std::ptrdiff_t>(axis), 1);
    t.reshape(std::move(d));
    lifted.push_back(std::move(t));
  }
  return concatAlong(lifted, axis);
}

}  // namespace onnxfold::kernels

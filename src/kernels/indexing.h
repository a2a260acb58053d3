// The helpers the indexing op files share (gather_slice.cpp, scatter.cpp,
// sorting.cpp, indexing.cpp): raw element copies, strides and index checks.
// Inline because Copier and checkIndex run in the kernels' inner loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/elementwise.h"

namespace onnxfold::kernels {

// Copies runs of elements between two tensors of the same dtype: memcpy for
// fixed-width types, string assignment for STRING. Sub-byte types are refused
// because their elements are not addressable.
class Copier {
 public:
  Copier(const OpContext& ctx, const Tensor& src, Tensor& dst) {
    if (src.dtype() != dst.dtype()) ctx.fail("internal: copy between different dtypes");
    if (src.dtype() == DataType::kString) {
      src_strings_ = &src.strings();
      dst_strings_ = &dst.mutableStrings();
      return;
    }
    const int bits = bitsPerElement(src.dtype());
    if (bits == 0 || bits % 8 != 0) {
      ctx.unsupported("element type " + std::string(dataTypeName(src.dtype())) +
                      " is not supported");
    }
    esz_ = static_cast<size_t>(bits / 8);
    src_ = src.bytes();
    dst_ = dst.numElements() > 0 ? dst.mutableBytes() : nullptr;
  }
  // dst[d .. d+n) = src[s .. s+n)
  void operator()(int64_t d, int64_t s, int64_t n) const {
    if (n <= 0) return;
    if (src_strings_ != nullptr) {
      std::copy_n(src_strings_->begin() + s, n, dst_strings_->begin() + d);
    } else {
      std::memcpy(dst_ + static_cast<size_t>(d) * esz_, src_ + static_cast<size_t>(s) * esz_,
                  static_cast<size_t>(n) * esz_);
    }
  }

 private:
  size_t esz_ = 0;
  const uint8_t* src_ = nullptr;
  uint8_t* dst_ = nullptr;
  const std::vector<std::string>* src_strings_ = nullptr;
  std::vector<std::string>* dst_strings_ = nullptr;
};

inline std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  // Wrapping: an empty tensor's other dims may overflow int64, and its strides are never used.
  for (size_t i = dims.size(); i-- > 1;)
    s[i - 1] = elementwise::wrapMul(s[i], dims[i]);
  return s;
}

inline int64_t numel(const std::vector<int64_t>& dims) {
  return product(dims, 0, dims.size());
}

// An index into a dim of size n; negative counts from the end.
inline int64_t checkIndex(const OpContext& ctx, int64_t idx, int64_t n, const char* what) {
  const int64_t k = idx < 0 ? idx + n : idx;
  if (k < 0 || k >= n) {
    ctx.fail(std::string(what) + " " + std::to_string(idx) + " is out of range for a dim of " +
             std::to_string(n));
  }
  return k;
}

// GatherND's and ScatterND's index tuple t (k values in `idx`) addressing the axes `first`,
// `first` + 1, ... of data (dims, strides): its element offset, each index checked.
inline int64_t tupleOffset(const OpContext& ctx, const std::vector<int64_t>& idx, int64_t t,
                           size_t k, const std::vector<int64_t>& dims,
                           const std::vector<int64_t>& strides, size_t first) {
  int64_t off = 0;
  for (size_t j = 0; j < k; ++j) {
    const int64_t v = idx[static_cast<size_t>(t) * k + j];
    off += checkIndex(ctx, v, dims[first + j], "index") * strides[first + j];
  }
  return off;
}

// Every dim known, else null.
inline std::optional<std::vector<int64_t>> inputStaticDims(const InferContext& ctx, size_t i) {
  return staticDims(ctx.inputShape(i));
}

}  // namespace onnxfold::kernels

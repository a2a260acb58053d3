#include "ir/tensor.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>

#include "ir/error.h"

namespace onnxfold {

namespace {
constexpr size_t kAlignment = 64;

struct AlignedFree {
  void operator()(uint8_t* p) const { std::free(p); }
};
}  // namespace

Buffer Buffer::allocate(size_t size, uint8_t** out) {
  uint8_t* p = nullptr;
  Buffer b = allocateUninitialized(size, &p);
  // The padding too: kernels may read whole vectors past the end.
  std::memset(p, 0, (size + kAlignment - 1) / kAlignment * kAlignment + kAlignment);
  if (out != nullptr) *out = p;
  return b;
}

Buffer Buffer::allocateUninitialized(size_t size, uint8_t** out) {
  // aligned_alloc needs a size that is a multiple of the alignment; never 0.
  if (size > std::numeric_limits<size_t>::max() - 2 * kAlignment) {
    throw Error("cannot allocate " + std::to_string(size) + " bytes: too large to address");
  }
  const size_t padded = (size + kAlignment - 1) / kAlignment * kAlignment + kAlignment;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, padded));
  if (p == nullptr) {
    // In wasm the whole heap is capped at 4 GB, so this is a limit users meet.
    throw Error("out of memory allocating " + std::to_string(size) + " bytes" +
                (sizeof(void*) == 4 ? " (the WebAssembly heap is limited to 4 GB)" : ""));
  }
  // Only the padding is zeroed, so whole-vector reads past the end see defined bytes.
  std::memset(p + size, 0, padded - size);
  std::shared_ptr<uint8_t> owner(p, AlignedFree());
  if (out != nullptr) *out = p;
  return Buffer(p, size, std::move(owner));
}

Buffer Buffer::copyOf(const void* data, size_t size) {
  uint8_t* p = nullptr;
  Buffer b = allocateUninitialized(size, &p);
  if (size != 0) std::memcpy(p, data, size);
  return b;
}

int64_t checkedElementCount(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  const int64_t n = numElements();
  assert(n >= 0);
  if (dtype_ == DataType::kString) {
    strings_.resize(static_cast<size_t>(n));
  } else {
    buffer_ = Buffer::allocate(rawByteSize(dtype_, n), nullptr);
  }
}

Tensor Tensor::uninitialized(DataType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  const int64_t n = t.numElements();
  assert(n >= 0 && dtype != DataType::kString);
  t.buffer_ = Buffer::allocateUninitialized(rawByteSize(dtype, n), nullptr);
  return t;
}

Tensor::Tensor(DataType dtype, std::vector<int64_t> dims, Buffer bytes)
    : dtype_(dtype), dims_(std::move(dims)), buffer_(std::move(bytes)) {
  assert(buffer_.size() == rawByteSize(dtype_, numElements()));
}

int64_t Tensor::numElements() const {
  return checkedElementCount(dims_);
}

bool Tensor::isLoaded() const {
  return !external || dtype_ == DataType::kString ||
         buffer_.size() == rawByteSize(dtype_, numElements());
}

uint8_t* Tensor::mutableBytes() {
  // Only storage we allocated and nobody else holds may be written in place.
  const bool exclusive = buffer_.owner() && buffer_.owner().use_count() == 1 &&
                         buffer_.owner().get() == buffer_.data() && buffer_.isAligned(kAlignment);
  if (!exclusive) buffer_ = Buffer::copyOf(buffer_.data(), buffer_.size());
  external.reset();  // the data no longer matches the external file
  hash_valid_ = false;
  return const_cast<uint8_t*>(buffer_.data());
}

Tensor Tensor::aligned() const {
  Tensor t = *this;
  if (!buffer_.isAligned(16)) t.buffer_ = Buffer::copyOf(buffer_.data(), buffer_.size());
  return t;
}

bool Tensor::sameContent(const Tensor& o) const {
  if (dtype_ != o.dtype_ || dims_ != o.dims_) return false;
  if (dtype_ == DataType::kString) return strings_ == o.strings_;
  return buffer_.size() == o.buffer_.size() &&
         (buffer_.data() == o.buffer_.data() ||
          std::memcmp(buffer_.data(), o.buffer_.data(), buffer_.size()) == 0);
}

uint64_t Tensor::contentHash() const {
  // Cached: pool-constants hashes every initializer on every pipeline round. Every mutator
  // (mutableBytes, mutableStrings, setBuffer, reshape) drops the cached value.
  if (hash_valid_) return hash_;
  // FNV-1a over dtype, dims and bytes: cheap, deterministic across builds.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i)
      h = (h ^ b[i]) * 1099511628211ull;
  };
  const auto dt = static_cast<int32_t>(dtype_);
  mix(&dt, sizeof dt);
  for (int64_t d : dims_)
    mix(&d, sizeof d);
  if (dtype_ == DataType::kString) {
    for (const auto& s : strings_) {
      const uint64_t n = s.size();
      mix(&n, sizeof n);
      mix(s.data(), s.size());
    }
  } else {
    // Whole 8-byte words first: one multiply per word instead of per byte (pool-constants hashes
    // every weight each round; byte-wise FNV was its main cost, in wasm most of all).
    const uint8_t* p = buffer_.data();
    size_t n = buffer_.size();
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h = (h ^ w) * 1099511628211ull;
      h ^= h >> 29;
    }
    mix(p, n);
  }
  hash_ = h;
  hash_valid_ = true;
  return h;
}

}  // namespace onnxfold

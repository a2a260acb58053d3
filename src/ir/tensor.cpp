#include "ir/tensor.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/hash.h"

namespace onnxfold {

namespace {
constexpr size_t kAlignment = 64;
}  // namespace

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

Tensor Tensor::sequence(DataType elem, std::vector<Tensor> elements) {
  Tensor t;
  t.kind_ = Kind::kSequence;
  t.dtype_ = elem;
  t.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(elements));
  return t;
}

Tensor Tensor::none() {
  Tensor t;
  t.kind_ = Kind::kNone;
  return t;
}

int64_t Tensor::numElements() const {
  return checkedElementCount(dims_);
}

uint64_t Tensor::storedBytes() const {
  if (kind_ == Kind::kSequence) {
    uint64_t n = 0;
    for (const Tensor& e : *elements_)
      n += e.storedBytes();
    return n;
  }
  if (dtype_ != DataType::kString) return buffer_.size();
  uint64_t n = 0;
  for (const std::string& s : strings_)
    n += s.size() + 2;  // tag and a (usually) one-byte length
  return n;
}

bool Tensor::isLoaded() const {
  return !external || dtype_ == DataType::kString ||
         buffer_.size() == rawByteSize(dtype_, numElements());
}

uint8_t* Tensor::mutableBytes() {
  // Only storage we allocated and nobody else holds may be written in place.
  const bool exclusive = buffer_.owner() && buffer_.owner().use_count() == 1 &&
                         buffer_.owner().get() == buffer_.data() && buffer_.isAligned(kAlignment);
  if (!exclusive) {
    uint8_t* p = nullptr;
    Buffer copy = Buffer::allocateUninitialized(buffer_.size(), &p);
    buffer_.copyTo(0, buffer_.size(), p);  // a source range is read straight into the copy
    buffer_ = std::move(copy);
  }
  external.reset();  // the data no longer matches the external file
  hash_valid_ = false;
  return const_cast<uint8_t*>(buffer_.data());
}

Tensor Tensor::aligned() const {
  Tensor t = *this;
  if (kind_ == Kind::kSequence) {
    std::vector<Tensor> e;
    for (const Tensor& x : *elements_)
      e.push_back(x.aligned());
    t.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(e));
    return t;
  }
  if (!buffer_.isAligned(16)) t.buffer_ = Buffer::copyOf(buffer_.data(), buffer_.size());
  return t;
}

namespace {

// Streams [0, size) of a and b in matching chunks to f(pa, pb, n), reading source ranges
// through a small buffer instead of making them resident.
template <class F>
bool forEachChunk(const Buffer& a, const Buffer* b, F&& f) {
  constexpr size_t kChunk = size_t{1} << 20;
  std::vector<uint8_t> sa, sb;
  for (size_t off = 0; off < a.size(); off += kChunk) {
    const size_t n = std::min(kChunk, a.size() - off);
    const uint8_t* pa;
    if (a.isResident()) {
      pa = a.data() + off;
    } else {
      sa.resize(n);
      a.copyTo(off, n, sa.data());
      pa = sa.data();
    }
    const uint8_t* pb = nullptr;
    if (b != nullptr) {
      if (b->isResident()) {
        pb = b->data() + off;
      } else {
        sb.resize(n);
        b->copyTo(off, n, sb.data());
        pb = sb.data();
      }
    }
    if (!f(pa, pb, n)) return false;
  }
  return true;
}

}  // namespace

bool Tensor::sameContent(const Tensor& o) const {
  if (kind_ != o.kind_ || dtype_ != o.dtype_ || dims_ != o.dims_) return false;
  if (kind_ == Kind::kSequence) {
    if (elements_->size() != o.elements_->size()) return false;
    for (size_t i = 0; i < elements_->size(); ++i) {
      if (!(*elements_)[i].sameContent((*o.elements_)[i])) return false;
    }
    return true;
  }
  if (dtype_ == DataType::kString) return strings_ == o.strings_;
  if (buffer_.size() != o.buffer_.size()) return false;
  const Buffer& a = buffer_;
  const Buffer& b = o.buffer_;
  // The same range of one source, or of two computing the same bytes (identity()).
  if (a.isSourceRange() && b.isSourceRange() && a.sourceOffset() == b.sourceOffset() &&
      (a.source() == b.source() ||
       (a.source()->identity() && a.source()->identity() == b.source()->identity()))) {
    return true;
  }
  if (a.isResident() && b.isResident() && a.data() == b.data()) return true;
  return forEachChunk(a, &b, [](const uint8_t* pa, const uint8_t* pb, size_t n) {
    return std::memcmp(pa, pb, n) == 0;
  });
}

uint64_t Tensor::contentHash() const {
  // Cached: every mutator (mutableBytes, mutableStrings, setBuffer, reshape) drops it.
  if (hash_valid_) return hash_;
  // FNV-1a over dtype, dims and bytes: cheap, deterministic across builds.
  Fnv1a h;
  h.pod(static_cast<int32_t>(dtype_));
  for (int64_t d : dims_)
    h.pod(d);
  if (dtype_ == DataType::kString) {
    for (const auto& s : strings_)
      h.str(s);
  } else {
    // Chunked words; a chunk boundary is a multiple of 8, so this equals one pass.
    forEachChunk(buffer_, nullptr, [&h](const uint8_t* p, const uint8_t*, size_t n) {
      h.words(p, n);
      return true;
    });
  }
  hash_ = h.h;
  hash_valid_ = true;
  return hash_;
}

uint64_t Tensor::sampleHash() const {
  constexpr size_t kSamples = 16, kSampleBytes = 64;
  if (dtype_ == DataType::kString || buffer_.size() <= kSamples * kSampleBytes) {
    return contentHash();
  }
  Fnv1a h;
  h.pod(static_cast<int32_t>(dtype_));
  for (int64_t d : dims_)
    h.pod(d);
  if (buffer_.isSourceRange() && buffer_.source()->identity()) {
    // Computed bytes (a deferred fold): hashed by how they are computed, not computed here.
    // Two different computations of equal bytes are then not pooled.
    h.pod(*buffer_.source()->identity());
    h.pod(buffer_.sourceOffset());
    return h.h;
  }
  // Evenly spread samples, first and last included: weights that differ (trained or random)
  // differ almost everywhere, so this rejects them after reading 1 KiB each.
  uint8_t sample[kSampleBytes];
  const size_t span = buffer_.size() - kSampleBytes;
  for (size_t i = 0; i < kSamples; ++i) {
    buffer_.copyTo(span * i / (kSamples - 1), kSampleBytes, sample);
    h.words(sample, kSampleBytes);
  }
  return h.h;
}

}  // namespace onnxfold

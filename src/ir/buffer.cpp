#include "ir/buffer.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "ir/error.h"

#ifdef __EMSCRIPTEN__
#include <emscripten/heap.h>
#endif

namespace onnxfold {

namespace {

constexpr size_t kAlignment = 64;

// Single-threaded by design (wasm32 without threads; natively passes run on one thread).
MemoryStats g_stats;
uint64_t g_limit = 0;

std::string mib(uint64_t bytes) {
  return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
}

struct AlignedFree {
  size_t counted;
  void operator()(uint8_t* p) const {
    g_stats.live -= counted;
    std::free(p);
  }
};

}  // namespace

struct Buffer::Range {
  std::shared_ptr<const Source> source;
  uint64_t offset = 0;
  Buffer resident;  // the bytes once read
};

Buffer Buffer::fromSource(std::shared_ptr<const Source> source, uint64_t offset, size_t size) {
  Buffer b;
  b.size_ = size;
  b.range_ = std::make_shared<Range>();
  b.range_->source = std::move(source);
  b.range_->offset = offset;
  return b;
}

namespace {

// Times a source read for MemoryStats::read_ms; a read nested in another (a computed
// source reading its inputs) is counted once, in the outer one.
class ReadTimer {
 public:
  ReadTimer() : start_(depth_++ == 0 ? std::chrono::steady_clock::now() : Clock::time_point()) {}
  ~ReadTimer() {
    if (--depth_ == 0)
      g_stats.read_ms += std::chrono::duration<double, std::milli>(Clock::now() - start_).count();
  }
  ReadTimer(const ReadTimer&) = delete;
  ReadTimer& operator=(const ReadTimer&) = delete;

 private:
  using Clock = std::chrono::steady_clock;
  static inline int depth_ = 0;
  Clock::time_point start_;
};

}  // namespace

const uint8_t* Buffer::residentData() const {
  Range& r = *range_;
  if (r.resident.data_ == nullptr && size_ != 0) {
    uint8_t* p = nullptr;
    Buffer b = allocateUninitialized(size_, &p);
    {
      const ReadTimer timer;
      r.source->read(r.offset, size_, p);
    }
    g_stats.read += size_;
    r.resident = std::move(b);
  }
  return r.resident.data_;
}

bool Buffer::isResident() const {
  return data_ != nullptr || !range_ || size_ == 0 || range_->resident.data_ != nullptr;
}

const std::shared_ptr<const Source>& Buffer::source() const {
  static const std::shared_ptr<const Source> none;
  return range_ ? range_->source : none;
}

uint64_t Buffer::sourceOffset() const {
  return range_ ? range_->offset : 0;
}

void Buffer::copyTo(uint64_t offset, size_t n, uint8_t* dst) const {
  if (n == 0) return;
  if (isResident()) {
    std::memcpy(dst, data() + offset, n);
    return;
  }
  {
    const ReadTimer timer;
    range_->source->read(range_->offset + offset, n, dst);
  }
  g_stats.read += n;
}

void Buffer::release() const {
  if (range_) range_->resident = Buffer();
}

Buffer Buffer::slice(size_t offset, size_t size) const {
  if (!range_) return Buffer(data_ + offset, size, owner_);
  Buffer b = fromSource(range_->source, range_->offset + offset, size);
  if (range_->resident.data_ != nullptr) b.range_->resident = range_->resident.slice(offset, size);
  return b;
}

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
#ifndef __EMSCRIPTEN__
  if (g_limit != 0 && g_stats.live + padded > g_limit) {
    throw ResourceError("memory limit of " + mib(g_limit) + " reached allocating " +
                        std::to_string(size) + " bytes (" + mib(g_stats.live) + " in use)");
  }
#endif
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, padded));
  if (p == nullptr) {
    // In wasm the whole heap is capped at 4 GB, so this is a limit users meet.
    throw Error("out of memory allocating " + std::to_string(size) + " bytes" +
                (sizeof(void*) == 4 ? " (the WebAssembly heap is limited to 4 GB)" : ""));
  }
#ifdef __EMSCRIPTEN__
  if (g_limit != 0 && emscripten_get_heap_size() > g_limit) {
    std::free(p);
    throw ResourceError("memory limit of " + mib(g_limit) + " reached allocating " +
                        std::to_string(size) + " bytes (the WebAssembly heap is " +
                        mib(emscripten_get_heap_size()) + ")");
  }
#endif
  // Only the padding is zeroed, so whole-vector reads past the end see defined bytes.
  std::memset(p + size, 0, padded - size);
  g_stats.live += padded;
  if (g_stats.live > g_stats.peak) g_stats.peak = g_stats.live;
  std::shared_ptr<uint8_t> owner(p, AlignedFree{padded});
  if (out != nullptr) *out = p;
  return Buffer(p, size, std::move(owner));
}

Buffer Buffer::copyOf(const void* data, size_t size) {
  uint8_t* p = nullptr;
  Buffer b = allocateUninitialized(size, &p);
  if (size != 0) std::memcpy(p, data, size);
  return b;
}

MemoryStats Buffer::memoryStats() {
  return g_stats;
}

void Buffer::resetPeakMemory() {
  g_stats.peak = g_stats.live;
  g_stats.read = 0;
  g_stats.read_ms = 0;
}

void Buffer::setMemoryLimit(uint64_t bytes) {
  g_limit = bytes;
}

void MemorySource::read(uint64_t offset, size_t n, uint8_t* dst) const {
  bytes_.copyTo(offset, n, dst);
}

Buffer rangeOf(const std::shared_ptr<const Source>& source, uint64_t offset, size_t size) {
  if (const auto* m = dynamic_cast<const MemorySource*>(source.get())) {
    return m->bytes().slice(static_cast<size_t>(offset), size);
  }
  return Buffer::fromSource(source, offset, size);
}

uint64_t Buffer::heapBytes() {
#ifdef __EMSCRIPTEN__
  return emscripten_get_heap_size();
#else
  return g_stats.live;
#endif
}

}  // namespace onnxfold

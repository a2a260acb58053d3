// One float weight's quantization for quantize-weights, computed when the writer first reads
// it. The parts (quantized data, scales, zero points) are Sources over one shared
// QuantizedWeight, which reads the float weight once, in contiguous bands of about band_bytes,
// and holds the packed parts (a quarter of the float bytes or less) until each is read to the
// end; the float weight is never resident. Per-channel weights of several bands read their
// weight twice (the range of each column first), and so does a weight whose scales are read
// before its data (the data is not held for a later read).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ir/tensor.h"
#include "passes/quantize_weights.h"

namespace onnxfold::wq {

// How one weight is grouped and laid out. The weight is viewed as `channels` channels of
// `length` values each: channel c at [c * length, (c + 1) * length) when `contiguous` (a
// Gather table's rows, Conv filters, Gemm with transB), else at i * channels + c (W [length,
// channels] of MatMul / Gemm). A group is `block` consecutive values of one channel.
struct Plan {
  enum class Layout {
    kOrt,         // MatMulNBits / GatherBlockQuantized: channel-major data [C, blocks, block/2]
                  // (unsigned nibbles, + 8 when symmetric), scales [C, blocks], zero points
                  // [C, ceil(blocks / 2)]
    kBlockedQdq,  // DequantizeLinear(axis 0, block_size) of W [L, C]: packed INT4/UINT4 in W's
                  // order, scales and zero points [blocks, C]
    kPerChannel,  // DequantizeLinear per channel: int8/uint8 in the weight's order, [C] params
  };
  Layout layout = Layout::kPerChannel;
  Grid grid;
  int64_t channels = 1;
  int64_t length = 1;
  bool contiguous = false;
  int64_t block = 1;         // kPerChannel: length
  bool zero_points = false;  // write the zero-point part

  int64_t blocks() const { return (length + block - 1) / block; }
};

enum class Part { kData, kScale, kZeroPoint };

// The bytes of a part as the plan lays it out.
uint64_t partBytes(const Plan& plan, Part part);

class QuantizedWeight {
 public:
  static constexpr uint64_t kBandBytes = 8u << 20;

  QuantizedWeight(Tensor weight, Plan plan, uint64_t band_bytes = kBandBytes);

  // A Source of one part's bytes (it keeps this object alive).
  static std::shared_ptr<const Source> source(const std::shared_ptr<QuantizedWeight>& w, Part part);
  // Copies [offset, offset + n) of a part, computing the parts first if that one is not held;
  // a part read to its end is dropped.
  void read(Part part, uint64_t offset, size_t n, uint8_t* dst);
  // sqrt(sum (w - dequant(q))^2 / sum w^2) once the parts have been computed.
  std::optional<double> relativeRmsError() const;
  const std::string& name() const { return weight_.name; }

 private:
  void compute();
  void readBand(uint64_t first_value, uint64_t values, std::vector<float>& dst) const;

  Tensor weight_;
  Plan plan_;
  uint64_t band_bytes_;
  mutable std::mutex mu_;
  std::vector<uint8_t> parts_[3];
  bool held_[3] = {false, false, false};
  std::optional<double> error_;
};

}  // namespace onnxfold::wq

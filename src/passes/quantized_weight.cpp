// The write-time quantization of one weight (quantized_weight.h): one pass over the float
// weight in bands, through the row kernels of kernels/weight_quant.h, into the packed parts.
#include "passes/quantized_weight.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ir/error.h"
#include "kernels/weight_quant.h"

namespace onnxfold::wq {

namespace kq = kernels::wquant;
using Layout = Plan::Layout;

uint64_t partBytes(const Plan& p, Part part) {
  const auto c = static_cast<uint64_t>(p.channels);
  const auto l = static_cast<uint64_t>(p.length);
  const auto nb = static_cast<uint64_t>(p.blocks());
  switch (part) {
    case Part::kData:
      if (p.layout == Layout::kOrt) return c * nb * static_cast<uint64_t>(p.block) / 2;
      if (p.layout == Layout::kBlockedQdq) return (l * c + 1) / 2;
      return l * c;
    case Part::kScale:
      return c * nb * sizeof(float);
    case Part::kZeroPoint:
      if (p.layout == Layout::kOrt) return c * ((nb + 1) / 2);
      if (p.layout == Layout::kBlockedQdq) return (nb * c + 1) / 2;
      return c;
  }
  return 0;
}

namespace {

class PartSource : public Source {
 public:
  PartSource(std::shared_ptr<QuantizedWeight> w, Part part, uint64_t bytes)
      : w_(std::move(w)), part_(part), bytes_(bytes) {}
  uint64_t size() const override { return bytes_; }
  std::string describe() const override { return "quantized weight '" + w_->name() + "'"; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    w_->read(part_, offset, n, dst);
  }

 private:
  std::shared_ptr<QuantizedWeight> w_;
  Part part_;
  uint64_t bytes_;
};

inline void putNibble(std::vector<uint8_t>& out, uint64_t index, int32_t v) {
  out[index / 2] |= static_cast<uint8_t>((v & 0x0F) << (index % 2 == 0 ? 0 : 4));
}

}  // namespace

QuantizedWeight::QuantizedWeight(Tensor weight, Plan plan, uint64_t band_bytes)
    : weight_(std::move(weight)), plan_(plan), band_bytes_(band_bytes) {}

std::shared_ptr<const Source> QuantizedWeight::source(const std::shared_ptr<QuantizedWeight>& w,
                                                      Part part) {
  return std::make_shared<PartSource>(w, part, partBytes(w->plan_, part));
}

std::optional<double> QuantizedWeight::relativeRmsError() const {
  const std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void QuantizedWeight::read(Part part, uint64_t offset, size_t n, uint8_t* dst) {
  const std::lock_guard<std::mutex> lock(mu_);
  const auto i = static_cast<size_t>(part);
  if (!held_[i]) {
    compute();
    // Asked for scales first (convert-float16 checks their range at pass time): the data,
    // the large part, is computed again when it is read rather than held until then.
    if (part != Part::kData) {
      std::vector<uint8_t>().swap(parts_[0]);
      held_[0] = false;
    }
  }
  std::vector<uint8_t>& bytes = parts_[i];
  if (offset + n > bytes.size())
    throw Error("quantized weight '" + weight_.name + "': read past the end of a part");
  std::memcpy(dst, bytes.data() + offset, n);
  if (offset + n == bytes.size()) {  // read to the end: drop it (`= {}` would keep capacity)
    std::vector<uint8_t>().swap(bytes);
    held_[i] = false;
  }
}

void QuantizedWeight::readBand(uint64_t first_value, uint64_t values,
                               std::vector<float>& dst) const {
  dst.resize(static_cast<size_t>(values));
  weight_.buffer().copyTo(first_value * sizeof(float), values * sizeof(float),
                          reinterpret_cast<uint8_t*>(dst.data()));
}

void QuantizedWeight::compute() {
  const Plan& p = plan_;
  const int64_t cn = p.channels;
  const int64_t len = p.length;
  const int64_t bl = p.block;
  const int64_t nb = p.blocks();
  const auto qmin = static_cast<float>(p.grid.qmin());
  const auto qmax = static_cast<float>(p.grid.qmax());
  const int32_t offset = p.layout == Layout::kOrt && p.grid.symmetric ? 8 : 0;
  std::vector<float> scale(static_cast<size_t>(cn * nb), 1.0F);
  std::vector<float> zero(static_cast<size_t>(cn * nb), 0.0F);
  std::vector<uint8_t> data(static_cast<size_t>(partBytes(p, Part::kData)), 0);
  double err = 0;
  double ref = 0;
  auto notFinite = [this] {
    return Error("weight '" + weight_.name +
                 "' holds a value that is not finite (NaN or infinity); it cannot be quantized");
  };
  auto setGroup = [&](int64_t c, int64_t b, float lo, float hi) {
    const GroupParams g = paramsFromRange(lo, hi, p.grid);
    scale[static_cast<size_t>(c * nb + b)] = g.scale;
    zero[static_cast<size_t>(c * nb + b)] = static_cast<float>(g.zero_point);
  };
  // Value i of channel c into the data part.
  auto put = [&](int64_t c, int64_t i, int16_t q) {
    switch (p.layout) {
      case Layout::kOrt:  // block i / bl, row i % bl: nibble c * nb * bl + i
        putNibble(data, static_cast<uint64_t>(c * nb * bl + i), q + offset);
        break;
      case Layout::kBlockedQdq:  // W [L, C]
        putNibble(data, static_cast<uint64_t>(i * cn + c), q);
        break;
      case Layout::kPerChannel:
        data[static_cast<size_t>(p.contiguous ? c * len + i : i * cn + c)] =
            static_cast<uint8_t>(q);
        break;
    }
  };
  std::vector<float> x;
  std::vector<int16_t> q;
  if (p.contiguous) {
    const int64_t per = std::max<int64_t>(1, static_cast<int64_t>(band_bytes_) / (len * 4));
    for (int64_t c0 = 0; c0 < cn; c0 += per) {
      const int64_t cb = std::min(per, cn - c0);
      readBand(static_cast<uint64_t>(c0 * len), static_cast<uint64_t>(cb * len), x);
      q.resize(x.size());
      for (int64_t ci = 0; ci < cb; ++ci) {
        for (int64_t b = 0; b < nb; ++b) {
          const int64_t i0 = ci * len + b * bl;
          const int64_t n = std::min(bl, len - b * bl);
          float lo = 0;
          float hi = 0;
          if (!kq::minMaxRun(&x[i0], n, &lo, &hi)) throw notFinite();
          setGroup(c0 + ci, b, lo, hi);
          const float s = scale[static_cast<size_t>((c0 + ci) * nb + b)];
          const float z = zero[static_cast<size_t>((c0 + ci) * nb + b)];
          kq::quantizeRun(&x[i0], s, z, qmin, qmax, n, &q[i0]);
          kq::errorRun(&x[i0], &q[i0], s, z, n, &err, &ref);
        }
        for (int64_t i = 0; i < len; ++i)
          put(c0 + ci, i, q[static_cast<size_t>(ci * len + i)]);
      }
    }
  } else {
    // W [L, C] in bands of whole rows (of whole blocks when blocked).
    const bool per_channel = p.layout == Layout::kPerChannel;
    int64_t rows = std::max<int64_t>(1, static_cast<int64_t>(band_bytes_) / (cn * 4));
    if (!per_channel) rows = std::max<int64_t>(1, rows / bl) * bl;
    const bool one_band = rows >= len;
    std::vector<float> lo(static_cast<size_t>(cn));
    std::vector<float> hi(static_cast<size_t>(cn));
    std::vector<float> cs(static_cast<size_t>(cn));
    std::vector<float> cz(static_cast<size_t>(cn));
    auto range = [&](int64_t r0, int64_t n) {  // rows [r0, r0 + n) of the band in x
      std::fill(lo.begin(), lo.end(), 0.0F);
      std::fill(hi.begin(), hi.end(), 0.0F);
      for (int64_t r = r0; r < r0 + n; ++r)
        if (!kq::minMaxColumns(&x[static_cast<size_t>(r * cn)], cn, lo.data(), hi.data()))
          throw notFinite();
    };
    if (per_channel && !one_band) {  // a column's group spans every band: its range first
      std::vector<float> all_lo(static_cast<size_t>(cn), 0.0F);
      std::vector<float> all_hi(static_cast<size_t>(cn), 0.0F);
      for (int64_t r0 = 0; r0 < len; r0 += rows) {
        const int64_t rb = std::min(rows, len - r0);
        readBand(static_cast<uint64_t>(r0 * cn), static_cast<uint64_t>(rb * cn), x);
        range(0, rb);
        for (int64_t c = 0; c < cn; ++c) {
          all_lo[c] = std::min(all_lo[c], lo[c]);
          all_hi[c] = std::max(all_hi[c], hi[c]);
        }
      }
      for (int64_t c = 0; c < cn; ++c)
        setGroup(c, 0, all_lo[c], all_hi[c]);
    }
    for (int64_t r0 = 0; r0 < len; r0 += rows) {
      const int64_t rb = std::min(rows, len - r0);
      readBand(static_cast<uint64_t>(r0 * cn), static_cast<uint64_t>(rb * cn), x);
      q.resize(x.size());
      for (int64_t g0 = 0; g0 < rb;) {
        const int64_t gn = per_channel ? rb : std::min(bl, rb - g0);
        const int64_t b = per_channel ? 0 : (r0 + g0) / bl;
        if (!per_channel || one_band) {
          range(g0, gn);
          for (int64_t c = 0; c < cn; ++c)
            setGroup(c, b, lo[c], hi[c]);
        }
        for (int64_t c = 0; c < cn; ++c) {
          cs[c] = scale[static_cast<size_t>(c * nb + b)];
          cz[c] = zero[static_cast<size_t>(c * nb + b)];
        }
        for (int64_t r = g0; r < g0 + gn; ++r) {
          const size_t at = static_cast<size_t>(r * cn);
          kq::quantizeColumns(&x[at], cs.data(), cz.data(), qmin, qmax, cn, &q[at]);
          kq::errorColumns(&x[at], &q[at], cs.data(), cz.data(), cn, &err, &ref);
        }
        g0 += gn;
      }
      for (int64_t r = 0; r < rb; ++r)
        for (int64_t c = 0; c < cn; ++c)
          put(c, r0 + r, q[static_cast<size_t>(r * cn + c)]);
    }
  }
  if (p.layout == Layout::kOrt) {  // rows past L in the last block hold the zero point
    for (int64_t c = 0; c < cn; ++c)
      for (int64_t i = len; i < nb * bl; ++i)
        putNibble(data, static_cast<uint64_t>(c * nb * bl + i),
                  static_cast<int32_t>(zero[static_cast<size_t>(c * nb + nb - 1)]) + offset);
  }

  std::vector<uint8_t> scales(static_cast<size_t>(partBytes(p, Part::kScale)));
  if (p.layout == Layout::kBlockedQdq) {  // [blocks, C]
    std::vector<float> t(scale.size());
    for (int64_t c = 0; c < cn; ++c)
      for (int64_t b = 0; b < nb; ++b)
        t[static_cast<size_t>(b * cn + c)] = scale[static_cast<size_t>(c * nb + b)];
    std::memcpy(scales.data(), t.data(), scales.size());
  } else {  // [C, blocks]
    std::memcpy(scales.data(), scale.data(), scales.size());
  }
  std::vector<uint8_t> zps;
  if (p.zero_points) {
    zps.assign(static_cast<size_t>(partBytes(p, Part::kZeroPoint)), 0);
    for (int64_t c = 0; c < cn; ++c) {
      for (int64_t b = 0; b < nb; ++b) {
        const auto z = static_cast<int32_t>(zero[static_cast<size_t>(c * nb + b)]);
        if (p.layout == Layout::kOrt)
          putNibble(zps, static_cast<uint64_t>(c * ((nb + 1) / 2) * 2 + b), z);
        else if (p.layout == Layout::kBlockedQdq)
          putNibble(zps, static_cast<uint64_t>(b * cn + c), z);
        else
          zps[static_cast<size_t>(c)] = static_cast<uint8_t>(z);
      }
    }
  }
  parts_[0] = std::move(data);
  parts_[1] = std::move(scales);
  parts_[2] = std::move(zps);
  held_[0] = held_[1] = true;
  held_[2] = p.zero_points;
  error_ = ref > 0 ? std::sqrt(err / ref) : 0.0;
}

}  // namespace onnxfold::wq

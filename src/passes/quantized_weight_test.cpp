// The write-time quantizer (quantized_weight.h) against the reference math of
// quantize_weights.h: every layout, with bands small enough that a weight takes several, gives
// the reference's bytes, reads its float weight once (per-channel weights of several bands:
// twice), and its Highway kernels agree with the scalar ones, ties included.
#include "passes/quantized_weight.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ir/error.h"
#include "kernels/weight_quant.h"

namespace onnxfold::wq {
namespace {

// Float weights served from a Source that counts the bytes read (the weight as a range of an
// external-data file).
class CountingSource : public Source {
 public:
  explicit CountingSource(std::vector<float> v) : v_(std::move(v)) {}
  uint64_t size() const override { return v_.size() * sizeof(float); }
  std::string describe() const override { return "test weights"; }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    std::memcpy(dst, reinterpret_cast<const uint8_t*>(v_.data()) + offset, n);
    read_ += n;
  }
  mutable uint64_t read_ = 0;

 private:
  std::vector<float> v_;
};

std::vector<float> randomWeights(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0F, 0.5F);
  std::vector<float> w(n);
  for (float& v : w)
    v = d(g);
  if (n > 3) w[n / 3] = 0.25F;  // values on a grid point's half (ties) appear with scale 0.5
  return w;
}

std::vector<uint8_t> readAll(const std::shared_ptr<QuantizedWeight>& w, Part part) {
  const std::shared_ptr<const Source> s = QuantizedWeight::source(w, part);
  std::vector<uint8_t> out(static_cast<size_t>(s->size()));
  // In pieces, as a writer reads.
  for (uint64_t at = 0; at < out.size(); at += 1000)
    s->read(at, std::min<uint64_t>(1000, out.size() - at), out.data() + at);
  return out;
}

std::vector<uint8_t> floatBytes(const std::vector<float>& f) {
  std::vector<uint8_t> b(f.size() * sizeof(float));
  std::memcpy(b.data(), f.data(), b.size());
  return b;
}

struct Case {
  Plan::Layout layout;
  bool contiguous;
  int bits;
  bool symmetric;
  int64_t channels, length, block;
};

Plan planOf(const Case& c) {
  Plan p;
  p.layout = c.layout;
  p.grid = {c.bits, c.symmetric};
  p.channels = c.channels;
  p.length = c.length;
  p.contiguous = c.contiguous;
  p.block = c.block;
  p.zero_points = true;
  return p;
}

// The reference bytes of each part (data, scales, zero points).
std::vector<std::vector<uint8_t>> reference(const Case& c, const std::vector<float>& w) {
  const Grid g{c.bits, c.symmetric};
  std::vector<std::vector<uint8_t>> out(3);
  if (c.layout == Plan::Layout::kPerChannel) {
    const std::vector<int64_t> dims = c.contiguous ? std::vector<int64_t>{c.channels, c.length}
                                                   : std::vector<int64_t>{c.length, c.channels};
    const Quantized q = quantizePerChannel(w.data(), dims, c.contiguous ? 0 : 1, g);
    for (int16_t v : q.q)
      out[0].push_back(static_cast<uint8_t>(v));
    std::vector<float> s;
    for (const GroupParams& p : q.params) {
      s.push_back(p.scale);
      out[2].push_back(static_cast<uint8_t>(p.zero_point));
    }
    out[1] = floatBytes(s);
    return out;
  }
  // Blockwise along the length of W [L, C] (a contiguous table [C, L] transposed first).
  std::vector<float> wt = w;
  if (c.contiguous)
    for (int64_t ch = 0; ch < c.channels; ++ch)
      for (int64_t i = 0; i < c.length; ++i)
        wt[static_cast<size_t>(i * c.channels + ch)] = w[static_cast<size_t>(ch * c.length + i)];
  const Quantized q = quantizeBlockwiseK(wt.data(), c.length, c.channels, c.block, g);
  const int64_t nb = (c.length + c.block - 1) / c.block;
  if (c.layout == Plan::Layout::kOrt) {
    out[0] = packMatMulNBits(q, c.length, c.channels, c.block, g);
    std::vector<float> s(q.params.size());
    for (int64_t ch = 0; ch < c.channels; ++ch)
      for (int64_t b = 0; b < nb; ++b)
        s[static_cast<size_t>(ch * nb + b)] =
            q.params[static_cast<size_t>(b * c.channels + ch)].scale;
    out[1] = floatBytes(s);
    out[2] = packMatMulNBitsZeroPoints(q, c.length, c.channels, c.block);
    return out;
  }
  out[0] = packNibbles(q.q);
  std::vector<float> s;
  std::vector<int16_t> z;
  for (const GroupParams& p : q.params) {
    s.push_back(p.scale);
    z.push_back(static_cast<int16_t>(p.zero_point));
  }
  out[1] = floatBytes(s);
  out[2] = packNibbles(z);
  return out;
}

TEST(QuantizedWeight, EveryLayoutGivesTheReferenceBytesInBands) {
  using L = Plan::Layout;
  const std::vector<Case> cases = {
      {L::kOrt, false, 4, true, 37, 80, 16},   // MatMulNBits, short last block (80 = 5 x 16)
      {L::kOrt, false, 4, false, 37, 70, 32},  // asymmetric, K not a multiple of the block
      {L::kOrt, true, 4, true, 29, 64, 16},    // GatherBlockQuantized rows
      {L::kOrt, true, 4, false, 29, 64, 32},
      {L::kBlockedQdq, false, 4, true, 33, 96, 16},
      {L::kBlockedQdq, false, 4, false, 33, 72, 16},
      {L::kPerChannel, false, 8, true, 41, 50, 50},   // MatMul int8
      {L::kPerChannel, false, 8, false, 41, 50, 50},  // q8 (uint8)
      {L::kPerChannel, true, 8, true, 12, 75, 75},    // Conv / Gemm transB
  };
  for (const Case& c : cases) {
    for (const uint64_t band : {uint64_t{1} << 20, uint64_t{600}}) {  // one band, many bands
      SCOPED_TRACE(testing::Message()
                   << "layout " << static_cast<int>(c.layout) << " contiguous " << c.contiguous
                   << " bits " << c.bits << " symmetric " << c.symmetric << " band " << band);
      const std::vector<float> w = randomWeights(static_cast<size_t>(c.channels * c.length),
                                                 static_cast<uint32_t>(c.channels));
      auto src = std::make_shared<CountingSource>(w);
      const Tensor t(DataType::kFloat,
                     c.contiguous ? std::vector<int64_t>{c.channels, c.length}
                                  : std::vector<int64_t>{c.length, c.channels},
                     Buffer::fromSource(src, 0, w.size() * sizeof(float)));
      auto qw = std::make_shared<QuantizedWeight>(t, planOf(c), band);
      EXPECT_FALSE(qw->relativeRmsError().has_value());
      const auto want = reference(c, w);
      EXPECT_EQ(readAll(qw, Part::kData), want[0]);
      EXPECT_EQ(readAll(qw, Part::kScale), want[1]);
      EXPECT_EQ(readAll(qw, Part::kZeroPoint), want[2]);
      // Once, or for per-channel columns over several bands twice (their ranges first).
      const bool twice = c.layout == L::kPerChannel && !c.contiguous && band < w.size() * 4;
      EXPECT_EQ(src->read_, (twice ? 2 : 1) * w.size() * sizeof(float));
      ASSERT_TRUE(qw->relativeRmsError().has_value());
      EXPECT_GT(*qw->relativeRmsError(), 0.0);
      EXPECT_LT(*qw->relativeRmsError(), c.bits == 4 ? 0.2 : 0.02);
      // A part read to its end is dropped; read again, the parts are computed again.
      EXPECT_EQ(readAll(qw, Part::kData), want[0]);
      EXPECT_EQ(src->read_, (twice ? 4 : 2) * w.size() * sizeof(float));
    }
  }
}

// Scales read first (convert-float16 checks their range before the writer runs): the data is
// not held until its own read, which computes the parts again.
TEST(QuantizedWeight, ScalesReadFirstDoNotHoldTheData) {
  const std::vector<float> w = randomWeights(64 * 48, 7);
  auto src = std::make_shared<CountingSource>(w);
  const Tensor t(DataType::kFloat, {64, 48}, Buffer::fromSource(src, 0, w.size() * 4));
  auto qw = std::make_shared<QuantizedWeight>(
      t, planOf({Plan::Layout::kOrt, false, 4, true, 48, 64, 32}));
  const std::vector<uint8_t> scales = readAll(qw, Part::kScale);
  EXPECT_EQ(src->read_, w.size() * 4);
  const std::vector<uint8_t> data = readAll(qw, Part::kData);
  EXPECT_EQ(src->read_, 2 * w.size() * 4);
  EXPECT_EQ(scales, readAll(qw, Part::kScale));  // held from the data's computation
  EXPECT_EQ(src->read_, 2 * w.size() * 4);
}

TEST(QuantizedWeight, RefusesANonFiniteWeightNamingIt) {
  std::vector<float> w = randomWeights(64, 1);
  w[40] = std::numeric_limits<float>::infinity();
  Tensor t(DataType::kFloat, {8, 8},
           Buffer::fromSource(std::make_shared<CountingSource>(w), 0, 256));
  t.name = "layer.0.w";
  auto qw = std::make_shared<QuantizedWeight>(
      t, planOf({Plan::Layout::kPerChannel, false, 8, true, 8, 8, 8}));
  try {
    readAll(qw, Part::kData);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'layer.0.w'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not finite"), std::string::npos) << e.what();
  }
}

// The vector kernels against the scalar reference quantizeValue, on lengths with tails and
// values exactly halfway between grid points (round half to even).
TEST(QuantizedWeight, KernelsEqualTheScalarMath) {
  for (const Grid g : {Grid{4, true}, Grid{4, false}, Grid{8, true}, Grid{8, false}}) {
    for (const int64_t n : {1, 3, 4, 7, 8, 15, 16, 33}) {
      std::vector<float> x = randomWeights(static_cast<size_t>(n), static_cast<uint32_t>(n));
      std::vector<float> scale(static_cast<size_t>(n));
      std::vector<float> zero(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        scale[j] = 0.5F;  // x = k + 0.5 halves land on ties
        zero[j] = g.symmetric ? 0.0F : static_cast<float>(j % (g.qmax() + 1));
        if (j % 2 == 0)
          x[j] = 0.25F * static_cast<float>(j - 3);  // 2x is a half-integer or integer
      }
      std::vector<int16_t> q(static_cast<size_t>(n));
      kernels::wquant::quantizeColumns(x.data(), scale.data(), zero.data(),
                                       static_cast<float>(g.qmin()), static_cast<float>(g.qmax()),
                                       n, q.data());
      std::vector<int16_t> qr(static_cast<size_t>(n));
      kernels::wquant::quantizeRun(x.data(), 0.5F, zero[0], static_cast<float>(g.qmin()),
                                   static_cast<float>(g.qmax()), n, qr.data());
      for (int64_t j = 0; j < n; ++j) {
        const GroupParams p{scale[j], static_cast<int32_t>(zero[j])};
        EXPECT_EQ(q[j], quantizeValue(x[j], p, g)) << "n " << n << " j " << j << " x " << x[j];
        EXPECT_EQ(qr[j], quantizeValue(x[j], GroupParams{0.5F, static_cast<int32_t>(zero[0])}, g));
      }
      float lo = 0;
      float hi = 0;
      std::vector<float> clo(static_cast<size_t>(n), 0.0F);
      std::vector<float> chi(static_cast<size_t>(n), 0.0F);
      ASSERT_TRUE(kernels::wquant::minMaxRun(x.data(), n, &lo, &hi));
      ASSERT_TRUE(kernels::wquant::minMaxColumns(x.data(), n, clo.data(), chi.data()));
      EXPECT_EQ(lo, std::min(0.0F, *std::min_element(x.begin(), x.end())));
      EXPECT_EQ(hi, std::max(0.0F, *std::max_element(x.begin(), x.end())));
      for (int64_t j = 0; j < n; ++j) {
        EXPECT_EQ(clo[j], std::min(0.0F, x[j]));
        EXPECT_EQ(chi[j], std::max(0.0F, x[j]));
      }
      x[static_cast<size_t>(n - 1)] = std::nanf("");
      EXPECT_FALSE(kernels::wquant::minMaxRun(x.data(), n, &lo, &hi));
      EXPECT_FALSE(kernels::wquant::minMaxColumns(x.data(), n, clo.data(), chi.data()));
    }
  }
}

}  // namespace
}  // namespace onnxfold::wq

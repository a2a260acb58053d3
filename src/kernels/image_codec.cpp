// image_codec op family: ImageDecoder. See op_registry.h for the
// infer()/compute() contract. The decoded shape depends on the bytes, so a
// known input is decoded inside infer() and handed over with setOutputValue().
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// Only the uncompressed formats are decoded (BMP 24/32-bit BI_RGB, binary PNM
// P5/P6): the others need codecs we do not ship, so those nodes stay unfolded.
struct Image {
  int64_t h = 0, w = 0;
  std::vector<uint8_t> rgb;  // h * w * 3
};

uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

bool decodeBmp(const uint8_t* d, size_t n, Image& img) {
  if (n < 54 || d[0] != 'B' || d[1] != 'M') return false;
  const uint32_t offset = le32(d + 10);
  const auto width = static_cast<int32_t>(le32(d + 18));
  const auto height = static_cast<int32_t>(le32(d + 22));
  const int bpp = d[28] | d[29] << 8;
  const uint32_t compression = le32(d + 30);
  if ((bpp != 24 && bpp != 32) || compression != 0 || width <= 0 || height == 0) return false;
  img.w = width;
  img.h = height < 0 ? -static_cast<int64_t>(height) : height;
  const size_t row = (static_cast<size_t>(width) * static_cast<size_t>(bpp / 8) + 3) & ~size_t{3};
  if (offset + row * static_cast<size_t>(img.h) > n) return false;
  img.rgb.resize(static_cast<size_t>(img.h * img.w * 3));
  for (int64_t y = 0; y < img.h; ++y) {
    // Positive height: rows are stored bottom-up.
    const int64_t src_row = height > 0 ? img.h - 1 - y : y;
    const uint8_t* p = d + offset + static_cast<size_t>(src_row) * row;
    for (int64_t x = 0; x < img.w; ++x) {
      const uint8_t* px = p + x * (bpp / 8);
      uint8_t* o = &img.rgb[static_cast<size_t>((y * img.w + x) * 3)];
      o[0] = px[2];
      o[1] = px[1];
      o[2] = px[0];
    }
  }
  return true;
}

bool decodePnm(const uint8_t* d, size_t n, Image& img) {
  if (n < 3 || d[0] != 'P' || (d[1] != '5' && d[1] != '6')) return false;
  const bool color = d[1] == '6';
  size_t i = 2;
  int64_t vals[3];
  for (int64_t& v : vals) {
    // Skip whitespace and comments, then read a decimal number.
    while (i < n && (isSpaceCharRaw(d[i]) || d[i] == '#')) {
      if (d[i] == '#') {
        while (i < n && d[i] != '\n')
          ++i;
      } else {
        ++i;
      }
    }
    if (i >= n || d[i] < '0' || d[i] > '9') return false;
    v = 0;
    while (i < n && d[i] >= '0' && d[i] <= '9' && v < (int64_t{1} << 30))
      v = v * 10 + (d[i++] - '0');
  }
  ++i;  // the single whitespace byte before the raster
  if (vals[2] != 255 || vals[0] <= 0 || vals[1] <= 0) return false;
  img.w = vals[0];
  img.h = vals[1];
  const size_t ch = color ? 3 : 1;
  if (i + static_cast<size_t>(img.w * img.h) * ch > n) return false;
  img.rgb.resize(static_cast<size_t>(img.h * img.w * 3));
  for (size_t p = 0; p < static_cast<size_t>(img.w * img.h); ++p)
    for (size_t c = 0; c < 3; ++c)
      img.rgb[p * 3 + c] = d[i + p * ch + (color ? c : 0)];
  return true;
}

int64_t imageChannels(const OpContext& ctx) {
  const std::string fmt = ctx.attrString("pixel_format");
  if (fmt == "RGB" || fmt == "BGR") return 3;
  if (fmt == "Grayscale") return 1;
  ctx.fail("invalid pixel_format '" + fmt + "'");
}

Tensor decodeImage(const OpContext& ctx, const Tensor& data) {
  Image img;
  const uint8_t* d = data.bytes();
  const auto n = static_cast<size_t>(data.numElements());
  if (!decodeBmp(d, n, img) && !decodePnm(d, n, img)) {
    ctx.unsupported(
        "unsupported or invalid image (only uncompressed BMP and binary PNM are decoded)");
  }
  const std::string fmt = ctx.attrString("pixel_format");
  const int64_t ch = imageChannels(ctx);
  Tensor out(DataType::kUint8, {img.h, img.w, ch});
  uint8_t* o = out.mutableBytes();
  for (size_t p = 0; p < static_cast<size_t>(img.h * img.w); ++p) {
    const uint8_t* px = &img.rgb[p * 3];
    if (fmt == "RGB") {
      std::copy(px, px + 3, o + p * 3);
    } else if (fmt == "BGR") {
      o[p * 3] = px[2], o[p * 3 + 1] = px[1], o[p * 3 + 2] = px[0];
    } else {
      // ITU-R 601-2 luma as PIL's convert("L") computes it.
      o[p] = static_cast<uint8_t>((px[0] * 19595 + px[1] * 38470 + px[2] * 7471 + 0x8000) >> 16);
    }
  }
  return out;
}

void inferImageDecoder(InferContext& ctx) {
  if (ctx.inputDtype(0) != DataType::kUndefined && ctx.inputDtype(0) != DataType::kUint8) {
    ctx.fail("encoded_stream must be uint8");
  }
  const int64_t ch = imageChannels(ctx);
  if (const Tensor* v = ctx.inputValue(0)) {
    ctx.setOutputValue(0, decodeImage(ctx, *v));
    return;
  }
  Shape s;
  s.dims = {ctx.newSymbol(), ctx.newSymbol(), Dim::known(ch)};
  ctx.setOutput(0, DataType::kUint8, std::move(s));
}

void computeImageDecoder(ComputeContext& ctx) {
  const Tensor img = decodeImage(ctx, ctx.input(0));
  Tensor& out = ctx.output(0);
  if (out.dims() != img.dims()) ctx.fail("output shape mismatch");
  std::memcpy(out.mutableBytes(), img.bytes(), img.byteSize());
}

}  // namespace
}  // namespace kernels

void registerImageCodecOps(OpRegistry& r) {
  using namespace kernels;
  r.add({"", "ImageDecoder", 20, inferImageDecoder, computeImageDecoder});
}

}  // namespace onnxfold

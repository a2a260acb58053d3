// Object-detection ops on boxes: RoiAlign (opsets 10, 16, 22), MaxRoiPool (1, 22)
// and NonMaxSuppression (10, 11). See op_registry.h for the infer()/compute()
// contract.
//
// The numerics follow the ONNX reference implementation (the node tests are
// generated from it): coordinates and values are computed in double and
// converted to the element type at the end.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

// ================================================================= RoiAlign

void inferRoiAlign(InferContext& ctx) {
  requireFloatInput(ctx, 0, "X");
  const DataType t = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Shape* rs = ctx.inputShape(1);
  const Shape* bs = ctx.inputShape(2);
  if (xs != nullptr && xs->rank() != 4) ctx.fail("X must be 4-D");
  if (rs != nullptr && (rs->rank() != 2 || (rs->dims[1].isKnown() && rs->dims[1].value != 4))) {
    ctx.fail("rois must have shape [num_rois, 4]");
  }
  if (bs != nullptr && bs->rank() != 1) ctx.fail("batch_indices must be 1-D");
  const std::string mode = ctx.attrString("mode");
  if (mode != "avg" && mode != "max") ctx.unsupported("unsupported mode '" + mode + "'");
  if (ctx.opset() >= 16) {
    const std::string c = ctx.attrString("coordinate_transformation_mode");
    if (c != "half_pixel" && c != "output_half_pixel") {
      ctx.unsupported("unsupported coordinate_transformation_mode '" + c + "'");
    }
  }
  Shape out;
  Dim n = dimOr(ctx, rs, 0);
  if (!n.isKnown() && bs != nullptr && bs->dims[0].isKnown()) n = bs->dims[0];
  out.dims.push_back(n);
  out.dims.push_back(dimOr(ctx, xs, 1));
  out.dims.push_back(Dim::known(ctx.attrInt("output_height")));
  out.dims.push_back(Dim::known(ctx.attrInt("output_width")));
  ctx.setOutput(0, t, std::move(out));
}

void computeRoiAlign(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::vector<double> x = toDoubles(ctx, X);
  const std::vector<double> rois = toDoubles(ctx, ctx.input(1));
  const std::vector<int64_t> bidx = toInt64Vector(ctx, ctx.input(2));
  Tensor& Y = ctx.output(0);
  const bool max_mode = ctx.attrString("mode") == "max";
  const bool half_pixel =
      ctx.opset() >= 16 && ctx.attrString("coordinate_transformation_mode") == "half_pixel";
  const int64_t ph_n = ctx.attrInt("output_height"), pw_n = ctx.attrInt("output_width");
  const int64_t sampling = ctx.attrInt("sampling_ratio");
  const double scale = ctx.attrFloat("spatial_scale");
  const int64_t N = X.dims()[0], C = X.dims()[1], H = X.dims()[2], W = X.dims()[3];
  const auto R = static_cast<int64_t>(bidx.size());
  if (static_cast<int64_t>(rois.size()) != R * 4) ctx.fail("rois and batch_indices disagree");
  std::vector<double> y(static_cast<size_t>(Y.numElements()), 0.0);
  struct Pre {
    int64_t pos[4];
    double w[4];
  };
  for (int64_t n = 0; n < R; ++n) {
    const int64_t b = bidx[static_cast<size_t>(n)];
    if (b < 0 || b >= N) ctx.fail("batch index out of range");
    const double off = half_pixel ? 0.5 : 0.0;
    const double* rp = rois.data() + n * 4;
    const double sw = rp[0] * scale - off, sh = rp[1] * scale - off;
    const double ew = rp[2] * scale - off, eh = rp[3] * scale - off;
    double rw = ew - sw, rh = eh - sh;
    if (!half_pixel) {  // malformed ROIs become 1x1
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    const double bh = rh / static_cast<double>(ph_n), bw = rw / static_cast<double>(pw_n);
    // The adaptive grid of a hostile ROI (NaN, huge) must neither convert nor multiply out of
    // int64.
    auto gridSize = [&](double r, int64_t p) {
      if (sampling > 0) return sampling;
      const double g = std::ceil(r / static_cast<double>(p));
      if (!(std::fabs(g) < 9.2e18)) ctx.fail("the ROI's sampling grid is too large");
      return static_cast<int64_t>(g);
    };
    const int64_t gh = gridSize(rh, ph_n), gw = gridSize(rw, pw_n);
    const int64_t grid = ctx.sizeMul(gh, gw);
    const double count = static_cast<double>(std::max<int64_t>(grid, 1));
    // Sample positions and bilinear weights, shared by every channel.
    std::vector<Pre> pre(
        static_cast<size_t>(std::max<int64_t>(ctx.sizeMul(ctx.sizeMul(ph_n, pw_n), grid), 0)));
    size_t k = 0;
    for (int64_t ph = 0; ph < ph_n; ++ph) {
      for (int64_t pw = 0; pw < pw_n; ++pw) {
        for (int64_t iy = 0; iy < gh; ++iy) {
          const double yy = sh + static_cast<double>(ph) * bh +
                            (static_cast<double>(iy) + 0.5) * bh / static_cast<double>(gh);
          for (int64_t ix = 0; ix < gw; ++ix, ++k) {
            double xx = sw + static_cast<double>(pw) * bw +
                        (static_cast<double>(ix) + 0.5) * bw / static_cast<double>(gw);
            double yv = yy;
            Pre& pc = pre[k];
            // Negated so NaN is outside too (it would not convert to int64 below).
            if (!(yv >= -1.0 && yv <= static_cast<double>(H) && xx >= -1.0 &&
                  xx <= static_cast<double>(W))) {
              pc = Pre{{0, 0, 0, 0}, {0, 0, 0, 0}};
              continue;
            }
            yv = std::max(yv, 0.0);
            xx = std::max(xx, 0.0);
            auto yl = static_cast<int64_t>(yv), xl = static_cast<int64_t>(xx);
            int64_t yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              yv = static_cast<double>(yl);
            } else {
              yh = yl + 1;
            }
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xx = static_cast<double>(xl);
            } else {
              xh = xl + 1;
            }
            const double ly = yv - static_cast<double>(yl), lx = xx - static_cast<double>(xl);
            const double hy = 1 - ly, hx = 1 - lx;
            pc = Pre{{yl * W + xl, yl * W + xh, yh * W + xl, yh * W + xh},
                     {hy * hx, hy * lx, ly * hx, ly * lx}};
          }
        }
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const double* xp = x.data() + (b * C + c) * H * W;
      double* yp = y.data() + (n * C + c) * ph_n * pw_n;
      size_t q = 0;
      for (int64_t i = 0; i < ph_n * pw_n; ++i) {
        double v = 0;
        bool first = true;
        for (int64_t s = 0; s < gh * gw; ++s, ++q) {
          const Pre& pc = pre[q];
          if (!max_mode) {
            v += pc.w[0] * xp[pc.pos[0]] + pc.w[1] * xp[pc.pos[1]] + pc.w[2] * xp[pc.pos[2]] +
                 pc.w[3] * xp[pc.pos[3]];
          } else {
            // As the reference: the max of the weighted corner values.
            const double m = std::max(std::max(pc.w[0] * xp[pc.pos[0]], pc.w[1] * xp[pc.pos[1]]),
                                      std::max(pc.w[2] * xp[pc.pos[2]], pc.w[3] * xp[pc.pos[3]]));
            v = first ? m : std::max(v, m);
            first = false;
          }
        }
        yp[i] = max_mode ? v : v / count;
      }
    }
  }
  fromDoubles(ctx, Y, y);
}

// ================================================================= MaxRoiPool

void inferMaxRoiPool(InferContext& ctx) {
  requireFloatInput(ctx, 0, "X");
  const DataType t = ctx.inputDtype(0);
  const Shape* xs = ctx.inputShape(0);
  const Shape* rs = ctx.inputShape(1);
  if (xs != nullptr && xs->rank() != 4) ctx.fail("X must be 4-D");
  if (rs != nullptr && (rs->rank() != 2 || (rs->dims[1].isKnown() && rs->dims[1].value != 5))) {
    ctx.fail("rois must have shape [num_rois, 5]");
  }
  const std::vector<int64_t> pooled = ctx.attrInts("pooled_shape");
  if (pooled.size() != 2) ctx.fail("pooled_shape must have 2 values");
  Shape out;
  out.dims.push_back(dimOr(ctx, rs, 0));
  out.dims.push_back(dimOr(ctx, xs, 1));
  out.dims.push_back(Dim::known(pooled[0]));
  out.dims.push_back(Dim::known(pooled[1]));
  ctx.setOutput(0, t, std::move(out));
}

void computeMaxRoiPool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const std::vector<double> x = toDoubles(ctx, X);
  const std::vector<double> rois = toDoubles(ctx, ctx.input(1));
  Tensor& Y = ctx.output(0);
  const std::vector<int64_t> pooled = ctx.attrInts("pooled_shape");
  const double scale = ctx.attrFloat("spatial_scale");
  const int64_t N = X.dims()[0], C = X.dims()[1], H = X.dims()[2], W = X.dims()[3];
  const int64_t PH = pooled[0], PW = pooled[1];
  const int64_t R = ctx.input(1).dims()[0];
  std::vector<double> y(static_cast<size_t>(Y.numElements()), 0.0);
  for (int64_t n = 0; n < R; ++n) {
    const double* rp = rois.data() + n * 5;
    // Checked before the conversion, which NaN or a huge index would make UB (truncates as it).
    if (!(rp[0] > -1.0 && rp[0] < static_cast<double>(N))) ctx.fail("roi batch index out of range");
    const auto b = static_cast<int64_t>(rp[0]);
    // Caffe RoIPool: corners are rounded to whole cells. Bounded by 2^61 so they convert and
    // the cell arithmetic below cannot overflow.
    auto corner = [&](double v) {
      const double r = std::round(v * scale);
      if (!(std::fabs(r) < 2305843009213693952.0)) ctx.fail("roi coordinates are too large");
      return static_cast<int64_t>(r);
    };
    const int64_t sw = corner(rp[1]), sh = corner(rp[2]), ew = corner(rp[3]), eh = corner(rp[4]);
    const int64_t rh = std::max<int64_t>(eh - sh + 1, 1), rw = std::max<int64_t>(ew - sw + 1, 1);
    const double bh = static_cast<double>(rh) / static_cast<double>(PH);
    const double bw = static_cast<double>(rw) / static_cast<double>(PW);
    for (int64_t c = 0; c < C; ++c) {
      const double* xp = x.data() + (b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ++ph) {
        for (int64_t pw = 0; pw < PW; ++pw) {
          int64_t hs = static_cast<int64_t>(std::floor(static_cast<double>(ph) * bh)) + sh;
          int64_t ws = static_cast<int64_t>(std::floor(static_cast<double>(pw) * bw)) + sw;
          int64_t he = static_cast<int64_t>(std::ceil(static_cast<double>(ph + 1) * bh)) + sh;
          int64_t we = static_cast<int64_t>(std::ceil(static_cast<double>(pw + 1) * bw)) + sw;
          hs = std::min(std::max<int64_t>(hs, 0), H);
          he = std::min(std::max<int64_t>(he, 0), H);
          ws = std::min(std::max<int64_t>(ws, 0), W);
          we = std::min(std::max<int64_t>(we, 0), W);
          double m = 0;
          if (he > hs && we > ws) {
            m = -std::numeric_limits<double>::infinity();
            for (int64_t h = hs; h < he; ++h)
              for (int64_t w = ws; w < we; ++w)
                m = std::max(m, xp[h * W + w]);
          }
          y[static_cast<size_t>(((n * C + c) * PH + ph) * PW + pw)] = m;
        }
      }
    }
  }
  fromDoubles(ctx, Y, y);
}

// ================================================================= NonMaxSuppression

// Selected [batch, class, box] triples, in the reference order.
template <class GetTensor>
std::vector<std::array<int64_t, 3>> runNms(const OpContext& ctx, GetTensor&& get) {
  const Tensor* boxes_t = get(0);
  const Tensor* scores_t = get(1);
  if (boxes_t->rank() != 3 || boxes_t->dims()[2] != 4) ctx.fail("boxes must be [B, N, 4]");
  if (scores_t->rank() != 3) ctx.fail("scores must be [B, C, N]");
  const int64_t B = boxes_t->dims()[0], NB = boxes_t->dims()[1], NC = scores_t->dims()[1];
  if (scores_t->dims()[0] != B || scores_t->dims()[2] != NB) {
    ctx.fail("boxes and scores disagree on batches or boxes");
  }
  const std::vector<double> boxes = toDoubles(ctx, *boxes_t);
  const std::vector<double> scores = toDoubles(ctx, *scores_t);
  int64_t max_out = 0;
  double iou_th = 0;
  bool has_score_th = false;
  double score_th = 0;
  if (const Tensor* t = get(2); t != nullptr && t->numElements() > 0) {
    max_out = std::max<int64_t>(toInt64Vector(ctx, *t)[0], 0);
  }
  if (const Tensor* t = get(3); t != nullptr && t->numElements() > 0) {
    iou_th = toDoubles(ctx, *t)[0];
  }
  if (const Tensor* t = get(4); t != nullptr && t->numElements() > 0) {
    has_score_th = true;
    score_th = toDoubles(ctx, *t)[0];
  }
  const bool center = ctx.attrInt("center_point_box") != 0;
  // Corner form [ymin, xmin, ymax, xmax] of every box.
  std::vector<std::array<double, 4>> corners(static_cast<size_t>(B * NB));
  for (size_t i = 0; i < corners.size(); ++i) {
    const double* b = boxes.data() + i * 4;
    if (center) {
      corners[i] = {b[1] - b[3] / 2, b[0] - b[2] / 2, b[1] + b[3] / 2, b[0] + b[2] / 2};
    } else {
      corners[i] = {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]),
                    std::max(b[1], b[3])};
    }
  }
  auto suppress = [&](const std::array<double, 4>& a, const std::array<double, 4>& b) {
    const double ix0 = std::max(a[1], b[1]), ix1 = std::min(a[3], b[3]);
    if (ix1 <= ix0) return false;
    const double iy0 = std::max(a[0], b[0]), iy1 = std::min(a[2], b[2]);
    if (iy1 <= iy0) return false;
    const double inter = (ix1 - ix0) * (iy1 - iy0);
    const double a1 = (a[3] - a[1]) * (a[2] - a[0]);
    const double a2 = (b[3] - b[1]) * (b[2] - b[0]);
    const double uni = a1 + a2 - inter;
    if (inter <= 0 || a1 <= 0 || a2 <= 0 || uni <= 0) return false;
    return inter / uni > iou_th;
  };
  std::vector<std::array<int64_t, 3>> out;
  if (max_out == 0) return out;
  std::vector<int64_t> cand, sel;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t c = 0; c < NC; ++c) {
      const double* sc = scores.data() + (b * NC + c) * NB;
      cand.clear();
      for (int64_t i = 0; i < NB; ++i)
        if (!has_score_th || sc[i] > score_th) cand.push_back(i);
      // Highest score first; ties keep the lower box index first.
      std::stable_sort(cand.begin(), cand.end(),
                       [&](int64_t u, int64_t v) { return sc[u] > sc[v]; });
      sel.clear();
      for (int64_t i : cand) {
        if (static_cast<int64_t>(sel.size()) >= max_out) break;
        bool keep = true;
        for (int64_t s : sel) {
          if (suppress(corners[static_cast<size_t>(b * NB + i)],
                       corners[static_cast<size_t>(b * NB + s)])) {
            keep = false;
            break;
          }
        }
        if (keep) {
          sel.push_back(i);
          out.push_back({b, c, i});
        }
      }
    }
  }
  return out;
}

void inferNms(InferContext& ctx) {
  const Shape* bs = ctx.inputShape(0);
  const Shape* ss = ctx.inputShape(1);
  if (bs != nullptr && bs->rank() != 3) ctx.fail("boxes must be 3-D");
  if (ss != nullptr && ss->rank() != 3) ctx.fail("scores must be 3-D");
  if (ctx.allInputValuesKnown() && ctx.hasInput(0) && ctx.hasInput(1)) {
    // The count depends on the values: run the selection now.
    const auto sel = runNms(ctx, [&](size_t i) { return ctx.inputValue(i); });
    ctx.setOutput(0, DataType::kInt64, std::vector<int64_t>{static_cast<int64_t>(sel.size()), 3});
    return;
  }
  Shape out;
  out.dims.push_back(ctx.newSymbol());
  out.dims.push_back(Dim::known(3));
  ctx.setOutput(0, DataType::kInt64, std::move(out));
}

void computeNms(ComputeContext& ctx) {
  const auto sel = runNms(ctx, [&](size_t i) { return ctx.hasInput(i) ? &ctx.input(i) : nullptr; });
  Tensor& Y = ctx.output(0);
  if (Y.numElements() != static_cast<int64_t>(sel.size() * 3)) {
    ctx.fail("selected count does not match the inferred shape");
  }
  auto* p = mutableDataAs<int64_t>(Y);
  for (size_t i = 0; i < sel.size(); ++i)
    for (size_t j = 0; j < 3; ++j)
      p[i * 3 + j] = sel[i][j];
}

}  // namespace
}  // namespace kernels

void registerDetectionOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {10, 16, 22})
    r.add({"", "RoiAlign", v, inferRoiAlign, computeRoiAlign});
  for (int v : {1, 22})
    r.add({"", "MaxRoiPool", v, inferMaxRoiPool, computeMaxRoiPool});
  for (int v : {10, 11})
    r.add({"", "NonMaxSuppression", v, inferNms, computeNms});
}

}  // namespace onnxfold

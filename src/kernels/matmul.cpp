// matmul op family: MatMul, Gemm, MatMulInteger, QLinearMatMul, Conv,
// ConvInteger, QLinearConv, ConvTranspose, the pools (Average/Max/Lp/Global*),
// MaxUnpool, Einsum and Col2Im. See op_registry.h for the infer()/compute()
// contract.
//
// Float32 GEMM and 2-D convolution go through XNNPACK natively (xnnpack.h);
// everywhere else (and always in wasm) they use the portable blocked GEMM
// below, written with Highway so one source gives SSE/AVX natively and SIMD128
// in wasm. Convolutions of every rank are im2col + GEMM; other types use a
// generic templated GEMM. Half and bfloat16 are computed in float.
#include <hwy/highway.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/xnnpack.h"

namespace onnxfold {
namespace kernels {

namespace hn = hwy::HWY_NAMESPACE;

// ================================================================= portable GEMM

// Reference: C[M,N] = A[M,K] * B[K,N] (row-major with leading dims), i-k-j order.
void gemmF32Scalar(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                   int64_t ldb, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      crow[j] = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
      const float av = a[i * lda + p];
      const float* brow = b + p * ldb;
      for (int64_t j = 0; j < n; ++j)
        crow[j] += av * brow[j];
    }
  }
}

namespace {

// Register tile of R rows x V vectors of C over one K block: each B row
// segment is loaded once per k and reused for R rows (broadcast A elements).
// `bp` points at B(k0, j) and `bstride` is the distance between B rows (ldb,
// or V * lanes for a packed panel).
template <int R, int V>
inline void gemmTile(int64_t i, int64_t j, int64_t k0, int64_t kc, bool first, const float* a,
                     int64_t lda, const float* bp, int64_t bstride, float* c, int64_t ldc) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  using VF = hn::Vec<decltype(d)>;
  VF acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = first ? hn::Zero(d) : hn::LoadU(d, c + (i + r) * ldc + j + v * lanes);
  const float* ap = a + i * lda + k0;
  for (int64_t p = 0; p < kc; ++p, bp += bstride) {
    VF bv[V];
    for (int v = 0; v < V; ++v)
      bv[v] = hn::LoadU(d, bp + v * lanes);
    for (int r = 0; r < R; ++r) {
      const VF av = hn::Set(d, ap[r * lda + p]);
      for (int v = 0; v < V; ++v)
        acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      hn::StoreU(acc[r][v], d, c + (i + r) * ldc + j + v * lanes);
}

constexpr int kPanelVecs = 3;  // columns per packed panel, in vectors

// Columns [j0, n) that do not fill a packed panel: unpacked 1-vector tiles,
// then a scalar tail narrower than a vector.
template <int R>
inline void gemmEdge(int64_t i, int64_t j0, int64_t n, int64_t k0, int64_t kc, bool first,
                     const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                     int64_t ldc) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t j = j0;
  for (; j + lanes <= n; j += lanes)
    gemmTile<R, 1>(i, j, k0, kc, first, a, lda, b + k0 * ldb + j, ldb, c, ldc);
  for (; j < n; ++j) {
    for (int r = 0; r < R; ++r) {
      float s = first ? 0.0f : c[(i + r) * ldc + j];
      for (int64_t p = k0; p < k0 + kc; ++p)
        s += a[(i + r) * lda + p] * b[p * ldb + j];
      c[(i + r) * ldc + j] = s;
    }
  }
}

}  // namespace

// Blocked Highway GEMM, same contract as gemmF32Scalar. K is blocked and each
// K block of B is packed into contiguous panels of 3 vectors' width, so a
// panel (kc x 3 vectors) stays in L1 while 4-row tiles of A stream by; packing
// also avoids cache-set conflicts of power-of-two leading dimensions.
void gemmF32(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
             int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i)
      std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    return;
  }
  const hn::ScalableTag<float> d;
  const auto width = static_cast<int64_t>(hn::Lanes(d)) * kPanelVecs;
  const int64_t panels = n / width;
  constexpr int64_t kBlockK = 256;
  std::vector<float> packed(static_cast<size_t>(std::min(kBlockK, k) * panels * width));
  for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
    const int64_t kc = std::min(kBlockK, k - k0);
    const bool first = k0 == 0;
    for (int64_t jp = 0; jp < panels; ++jp) {
      float* dst = packed.data() + jp * kc * width;
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(dst + p * width, b + (k0 + p) * ldb + jp * width, width * sizeof(float));
    }
    for (int64_t jp = 0; jp < panels; ++jp) {
      const float* panel = packed.data() + jp * kc * width;
      int64_t i = 0;
      for (; i + 4 <= m; i += 4)
        gemmTile<4, kPanelVecs>(i, jp * width, k0, kc, first, a, lda, panel, width, c, ldc);
      for (; i < m; ++i)
        gemmTile<1, kPanelVecs>(i, jp * width, k0, kc, first, a, lda, panel, width, c, ldc);
    }
    if (panels * width < n) {
      int64_t i = 0;
      for (; i + 4 <= m; i += 4)
        gemmEdge<4>(i, panels * width, n, k0, kc, first, a, lda, b, ldb, c, ldc);
      for (; i < m; ++i)
        gemmEdge<1>(i, panels * width, n, k0, kc, first, a, lda, b, ldb, c, ldc);
    }
  }
}

namespace {

// Generic GEMM for double and integers (overwrites C).
template <class T>
void gemmGeneric(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* crow = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      crow[j] = T(0);
    for (int64_t p = 0; p < k; ++p) {
      const T av = a[i * lda + p];
      const T* brow = b + p * ldb;
      for (int64_t j = 0; j < n; ++j)
        crow[j] = static_cast<T>(crow[j] + av * brow[j]);
    }
  }
}

template <class T>
void gemmAny(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
             T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    gemmF32(m, n, k, a, lda, b, ldb, c, ldc);
  } else {
    gemmGeneric<T>(m, n, k, a, lda, b, ldb, c, ldc);
  }
}

// ================================================================= small helpers

template <class T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

template <class T>
std::vector<float> toFloatVec(const T* p, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<float>(toDouble(p[i]));
  return v;
}
template <class T>
void fromFloatVec(const std::vector<float>& v, T* p) {
  for (size_t i = 0; i < v.size(); ++i)
    p[i] = fromDouble<T>(v[i]);
}

std::vector<float> transposed(const float* src, int64_t rows, int64_t cols) {
  std::vector<float> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t[c * rows + r] = src[r * cols + c];
  return t;
}

Dim unknownDim() {
  return Dim();
}

void requireType(const InferContext& ctx, size_t i, bool ok, const char* what) {
  if (!ok) {
    ctx.unsupported("input " + std::to_string(i) + " has unsupported type " +
                    std::string(dataTypeName(ctx.inputDtype(i))) + " (expected " + what + ")");
  }
}

// Dims of a Shape with -1 for unknown dims.
std::vector<int64_t> dimsOrUnknown(const Shape& s) {
  std::vector<int64_t> v;
  for (const Dim& d : s.dims)
    v.push_back(d.isKnown() ? d.value : -1);
  return v;
}

// Float value of a scale input (float, float16, bfloat16) at element i.
double elemAsDouble(const Tensor& t, int64_t i) {
  double out = 0;
  dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    out = toDouble(dataAs<T>(t)[i]);
  });
  return out;
}

// Rounds half to even and saturates into the range of T (QLinear* outputs).
template <class T>
T saturateRound(double v) {
  double r = std::nearbyint(v);  // default rounding mode: half to even
  r = std::min<double>(std::max<double>(r, std::numeric_limits<T>::min()),
                       std::numeric_limits<T>::max());
  return static_cast<T>(r);
}

// ================================================================= MatMul

struct MatmulPlan {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> out_batch;
  std::vector<std::pair<int64_t, int64_t>> pairs;  // per output batch: (a matrix, b matrix)
  int64_t a_batches = 1, b_batches = 1;
};

MatmulPlan planMatmul(const OpContext& ctx, const std::vector<int64_t>& ad,
                      const std::vector<int64_t>& bd) {
  if (ad.empty() || bd.empty()) ctx.fail("MatMul inputs must have rank >= 1");
  MatmulPlan p;
  std::vector<int64_t> ab, bb;
  if (ad.size() == 1) {
    p.k = ad[0];
  } else {
    p.m = ad[ad.size() - 2];
    p.k = ad.back();
    ab.assign(ad.begin(), ad.end() - 2);
  }
  int64_t kb;
  if (bd.size() == 1) {
    kb = bd[0];
  } else {
    kb = bd[bd.size() - 2];
    p.n = bd.back();
    bb.assign(bd.begin(), bd.end() - 2);
  }
  if (kb != p.k) {
    ctx.fail("inner dimensions differ: " + std::to_string(p.k) + " vs " + std::to_string(kb));
  }
  auto ob = broadcastDims(ab, bb);
  if (!ob) ctx.fail("batch dimensions do not broadcast");
  p.out_batch = *ob;
  p.a_batches = product(ab, 0, ab.size());
  p.b_batches = product(bb, 0, bb.size());
  const auto sa = broadcastStrides(ab, p.out_batch);
  const auto sb = broadcastStrides(bb, p.out_batch);
  if (p.out_batch.empty()) {
    p.pairs.push_back({0, 0});
  } else {
    forEachBroadcast(p.out_batch, {sa, sb}, [&](int64_t, const std::vector<int64_t>& off) {
      p.pairs.push_back({off[0], off[1]});
    });
  }
  return p;
}

void inferMatmulShape(InferContext& ctx, DataType out_type, size_t ia, size_t ib) {
  const Shape* a = ctx.inputShape(ia);
  const Shape* b = ctx.inputShape(ib);
  if (a == nullptr || b == nullptr) {
    ctx.setOutputUnknownRank(0, out_type);
    return;
  }
  if (a->rank() == 0 || b->rank() == 0) ctx.fail("inputs must have rank >= 1");
  Shape ab, bb;
  if (a->rank() > 1) ab.dims.assign(a->dims.begin(), a->dims.end() - 2);
  if (b->rank() > 1) bb.dims.assign(b->dims.begin(), b->dims.end() - 2);
  const Dim& ka = a->dims.back();
  const Dim& kb = b->rank() == 1 ? b->dims[0] : b->dims[b->rank() - 2];
  if (ka.isKnown() && kb.isKnown() && ka.value != kb.value) {
    ctx.fail("inner dimensions differ: " + std::to_string(ka.value) + " vs " +
             std::to_string(kb.value));
  }
  auto ob = broadcastShapes(ab, bb);
  if (!ob) ctx.fail("batch dimensions do not broadcast");
  Shape out = *ob;
  if (a->rank() > 1) out.dims.push_back(a->dims[a->rank() - 2]);
  if (b->rank() > 1) out.dims.push_back(b->dims.back());
  ctx.setOutput(0, out_type, out);
}

void inferMatMul(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  if (ctx.inputDtype(1) != DataType::kUndefined && t != DataType::kUndefined &&
      ctx.inputDtype(1) != t) {
    ctx.fail("A and B must have the same type");
  }
  requireType(ctx, 0,
              t == DataType::kUndefined || (t != DataType::kBool && t != DataType::kString &&
                                            dispatchNumeric(t, [](auto) {})),
              "a numeric type");
  inferMatmulShape(ctx, t, 0, 1);
}

// Float32 batched MatMul: XNNPACK when compiled in, else the Highway GEMM.
void matmulF32(const MatmulPlan& p, const float* a, const float* b, float* y) {
  const int64_t a_stride = p.m * p.k, b_stride = p.k * p.n, y_stride = p.m * p.n;
  if (xnn::available()) {
    // One weight matrix for all batches: fold the batch into M (one packing).
    if (p.b_batches == 1 && p.a_batches == static_cast<int64_t>(p.pairs.size())) {
      if (xnn::fullyConnectedF32(p.a_batches * p.m, p.k, p.n, a, b, true, nullptr, y)) return;
    }
    for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
      xnn::fullyConnectedF32(p.m, p.k, p.n, a + p.pairs[bi].first * a_stride,
                             b + p.pairs[bi].second * b_stride, true, nullptr, y + bi * y_stride);
    }
    return;
  }
  for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
    gemmF32(p.m, p.n, p.k, a + p.pairs[bi].first * a_stride, p.k, b + p.pairs[bi].second * b_stride,
            p.n, y + bi * y_stride, p.n);
  }
}

void computeMatMul(ComputeContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  Tensor& Y = ctx.output(0);
  const MatmulPlan p = planMatmul(ctx, A.dims(), B.dims());
  dispatchNumeric(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      matmulF32(p, dataAs<float>(A), dataAs<float>(B), mutableDataAs<float>(Y));
    } else if constexpr (kIsHalfLike<T>) {
      const auto af = toFloatVec(dataAs<T>(A), A.numElements());
      const auto bf = toFloatVec(dataAs<T>(B), B.numElements());
      std::vector<float> yf(static_cast<size_t>(Y.numElements()));
      matmulF32(p, af.data(), bf.data(), yf.data());
      fromFloatVec(yf, mutableDataAs<T>(Y));
    } else if constexpr (std::is_same_v<T, bool>) {
      ctx.unsupported("bool is not supported");
    } else {
      const T* a = dataAs<T>(A);
      const T* b = dataAs<T>(B);
      T* y = mutableDataAs<T>(Y);
      for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
        gemmGeneric<T>(p.m, p.n, p.k, a + p.pairs[bi].first * p.m * p.k, p.k,
                       b + p.pairs[bi].second * p.k * p.n, p.n, y + bi * p.m * p.n, p.n);
      }
    }
  });
}

// ================================================================= Gemm

void inferGemm(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  const Shape* a = ctx.inputShape(0);
  const Shape* b = ctx.inputShape(1);
  if (a == nullptr || b == nullptr) {
    Shape s;
    s.dims.assign(2, unknownDim());
    if (a != nullptr && a->rank() == 2) s.dims[0] = a->dims[ctx.attrInt("transA", 0) ? 1 : 0];
    if (b != nullptr && b->rank() == 2) s.dims[1] = b->dims[ctx.attrInt("transB", 0) ? 0 : 1];
    ctx.setOutput(0, t, s);
    return;
  }
  if (a->rank() != 2 || b->rank() != 2) ctx.fail("A and B must be 2-D");
  const bool ta = ctx.attrInt("transA", 0) != 0, tb = ctx.attrInt("transB", 0) != 0;
  const Dim& m = a->dims[ta ? 1 : 0];
  const Dim& ka = a->dims[ta ? 0 : 1];
  const Dim& kb = b->dims[tb ? 1 : 0];
  const Dim& n = b->dims[tb ? 0 : 1];
  if (ka.isKnown() && kb.isKnown() && ka.value != kb.value) {
    ctx.fail("inner dimensions differ: " + std::to_string(ka.value) + " vs " +
             std::to_string(kb.value));
  }
  Shape s;
  s.dims = {m, n};
  if (const Shape* c = ctx.inputShape(2)) {
    if (c->rank() > 2) ctx.fail("C must have rank <= 2");
    auto bs = broadcastShapes(s, *c);
    if (!bs) ctx.fail("C is not unidirectionally broadcastable to (M, N)");
  }
  ctx.setOutput(0, t, s);
}

// Y = alpha * A' B' + beta * C with float math (float, half, bfloat16).
void gemmFloatPath(ComputeContext& ctx, const float* a, const float* b, const float* c,
                   const std::vector<int64_t>& cdims, float* y, int64_t m, int64_t n, int64_t k,
                   bool ta, bool tb, float alpha, float beta) {
  std::vector<float> at;
  if (ta) {
    at = transposed(a, k, m);
    a = at.data();
  }
  bool done = false;
  if (xnn::available()) {
    // XNNPACK's default weight layout [N,K] is exactly B with transB=1.
    done = xnn::fullyConnectedF32(m, k, n, a, b, !tb, nullptr, y);
  }
  if (!done) {
    std::vector<float> bt;
    if (tb) {
      bt = transposed(b, n, k);
      b = bt.data();
    }
    gemmF32(m, n, k, a, k, b, n, y, n);
  }
  if (alpha != 1.0f) {
    for (int64_t i = 0; i < m * n; ++i)
      y[i] *= alpha;
  }
  if (c != nullptr && beta != 0.0f) {
    const auto strides = broadcastStrides(cdims, {m, n});
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        y[i * n + j] += beta * c[i * strides[0] + j * strides[1]];
  }
  (void)ctx;
}

void computeGemm(ComputeContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const Tensor* C = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& Y = ctx.output(0);
  const bool ta = ctx.attrInt("transA", 0) != 0, tb = ctx.attrInt("transB", 0) != 0;
  const float alpha = ctx.attrFloat("alpha", 1.0f), beta = ctx.attrFloat("beta", 1.0f);
  const int64_t m = Y.dims()[0], n = Y.dims()[1];
  const int64_t k = A.dims()[ta ? 0 : 1];
  std::vector<int64_t> cdims = C ? C->dims() : std::vector<int64_t>{};
  dispatchNumeric(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      gemmFloatPath(ctx, dataAs<float>(A), dataAs<float>(B), C ? dataAs<float>(*C) : nullptr, cdims,
                    mutableDataAs<float>(Y), m, n, k, ta, tb, alpha, beta);
    } else if constexpr (kIsHalfLike<T>) {
      const auto af = toFloatVec(dataAs<T>(A), A.numElements());
      const auto bf = toFloatVec(dataAs<T>(B), B.numElements());
      std::vector<float> cf;
      if (C) cf = toFloatVec(dataAs<T>(*C), C->numElements());
      std::vector<float> yf(static_cast<size_t>(m * n));
      gemmFloatPath(ctx, af.data(), bf.data(), C ? cf.data() : nullptr, cdims, yf.data(), m, n, k,
                    ta, tb, alpha, beta);
      fromFloatVec(yf, mutableDataAs<T>(Y));
    } else if constexpr (std::is_same_v<T, bool>) {
      ctx.unsupported("bool is not supported");
    } else {
      // double and integers: element access through the transposition flags.
      const T* a = dataAs<T>(A);
      const T* b = dataAs<T>(B);
      T* y = mutableDataAs<T>(Y);
      std::vector<int64_t> cs;
      if (C) cs = broadcastStrides(cdims, {m, n});
      const T* c = C ? dataAs<T>(*C) : nullptr;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          T s = T(0);
          for (int64_t p = 0; p < k; ++p) {
            const T av = ta ? a[p * m + i] : a[i * k + p];
            const T bv = tb ? b[j * k + p] : b[p * n + j];
            s = static_cast<T>(s + av * bv);
          }
          T out;
          if constexpr (std::is_integral_v<T>) {
            out = alpha == 1.0f ? s : static_cast<T>(alpha * static_cast<double>(s));
            if (c != nullptr) {
              const T cv = c[i * cs[0] + j * cs[1]];
              out = static_cast<T>(out + (beta == 1.0f ? cv : static_cast<T>(beta * cv)));
            }
          } else {
            out = static_cast<T>(alpha) * s;
            if (c != nullptr) out += static_cast<T>(beta) * c[i * cs[0] + j * cs[1]];
          }
          y[i * n + j] = out;
        }
      }
    }
  });
}

// ================================================================= MatMulInteger / QLinearMatMul

// Integer inputs minus their zero points, as int32, plus the batched plan.
// Zero points: scalar, per row of A ([M] or [..., M, 1]) / per column of B
// ([N] or [..., 1, N]).
std::vector<int32_t> dequantZeroPointA(const Tensor& a, const Tensor* zp, int64_t m, int64_t k) {
  const int64_t total = a.numElements();
  std::vector<int32_t> out(static_cast<size_t>(total));
  const int64_t rows = k > 0 ? total / k : 0;
  const int64_t zn = zp ? zp->numElements() : 0;
  for (int64_t r = 0; r < rows; ++r) {
    int32_t z = 0;
    if (zn == 1) {
      z = static_cast<int32_t>(elemAsDouble(*zp, 0));
    } else if (zn > 1) {
      z = static_cast<int32_t>(elemAsDouble(*zp, zn == rows ? r : r % m));
    }
    for (int64_t p = 0; p < k; ++p) {
      const int64_t i = r * k + p;
      out[i] = static_cast<int32_t>(elemAsDouble(a, i)) - z;
    }
  }
  return out;
}

std::vector<int32_t> dequantZeroPointB(const Tensor& b, const Tensor* zp, int64_t k, int64_t n) {
  const int64_t total = b.numElements();
  std::vector<int32_t> out(static_cast<size_t>(total));
  const int64_t zn = zp ? zp->numElements() : 0;
  for (int64_t i = 0; i < total; ++i) {
    int32_t z = 0;
    if (zn == 1) {
      z = static_cast<int32_t>(elemAsDouble(*zp, 0));
    } else if (zn > 1) {
      const int64_t col = i % n;
      const int64_t mat = i / (k * n);
      z = static_cast<int32_t>(elemAsDouble(*zp, zn == n ? col : (mat * n + col) % zn));
    }
    out[i] = static_cast<int32_t>(elemAsDouble(b, i)) - z;
  }
  return out;
}

std::vector<int32_t> integerMatmul(const ComputeContext& ctx, const Tensor& A, const Tensor* azp,
                                   const Tensor& B, const Tensor* bzp, MatmulPlan& p) {
  p = planMatmul(ctx, A.dims(), B.dims());
  const auto a = dequantZeroPointA(A, azp, p.m, p.k);
  const auto b = dequantZeroPointB(B, bzp, p.k, p.n);
  std::vector<int32_t> y(p.pairs.size() * p.m * p.n);
  for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
    gemmGeneric<int32_t>(p.m, p.n, p.k, a.data() + p.pairs[bi].first * p.m * p.k, p.k,
                         b.data() + p.pairs[bi].second * p.k * p.n, p.n, y.data() + bi * p.m * p.n,
                         p.n);
  }
  return y;
}

bool isInt8Like(DataType t) {
  return t == DataType::kInt8 || t == DataType::kUint8;
}

void inferMatMulInteger(InferContext& ctx) {
  requireType(ctx, 0, isInt8Like(ctx.inputDtype(0)), "int8 or uint8");
  requireType(ctx, 1, isInt8Like(ctx.inputDtype(1)), "int8 or uint8");
  inferMatmulShape(ctx, DataType::kInt32, 0, 1);
}

void computeMatMulInteger(ComputeContext& ctx) {
  MatmulPlan p;
  const auto y = integerMatmul(ctx, ctx.input(0), ctx.hasInput(2) ? &ctx.input(2) : nullptr,
                               ctx.input(1), ctx.hasInput(3) ? &ctx.input(3) : nullptr, p);
  std::memcpy(mutableDataAs<int32_t>(ctx.output(0)), y.data(), y.size() * sizeof(int32_t));
}

void inferQLinearMatMul(InferContext& ctx) {
  requireType(ctx, 0, isInt8Like(ctx.inputDtype(0)), "int8 or uint8");
  requireType(ctx, 3, isInt8Like(ctx.inputDtype(3)), "int8 or uint8");
  DataType out = ctx.inputDtype(7);
  if (out == DataType::kUndefined) out = ctx.inputDtype(0);
  inferMatmulShape(ctx, out, 0, 3);
}

void computeQLinearMatMul(ComputeContext& ctx) {
  MatmulPlan p;
  const Tensor& as = ctx.input(1);
  const Tensor& bs = ctx.input(4);
  const Tensor& ys = ctx.input(6);
  const Tensor& yzp = ctx.input(7);
  const auto acc = integerMatmul(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), p);
  Tensor& Y = ctx.output(0);
  const double y_scale = elemAsDouble(ys, 0);
  const double y_zero = elemAsDouble(yzp, 0);
  const int64_t an = as.numElements(), bn = bs.numElements();
  const bool half_scales = as.dtype() != DataType::kFloat;
  for (size_t bi = 0; bi < p.pairs.size(); ++bi) {
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        const int64_t yi = (static_cast<int64_t>(bi) * p.m + i) * p.n + j;
        const double sa = elemAsDouble(as, an == 1 ? 0 : (p.pairs[bi].first * p.m + i) % an);
        const double sb = elemAsDouble(bs, bn == 1 ? 0 : (p.pairs[bi].second * p.n + j) % bn);
        // Scales are applied in float32 like the reference (and in float for
        // float16 scales, whose products are computed before rounding).
        float scale = static_cast<float>(sa) * static_cast<float>(sb) / static_cast<float>(y_scale);
        if (half_scales) scale = static_cast<float>(sa * sb / y_scale);
        const double v = static_cast<double>(static_cast<float>(acc[yi]) * scale) + y_zero;
        if (Y.dtype() == DataType::kUint8) {
          mutableDataAs<uint8_t>(Y)[yi] = saturateRound<uint8_t>(v);
        } else {
          mutableDataAs<int8_t>(Y)[yi] = saturateRound<int8_t>(v);
        }
      }
    }
  }
}

// ================================================================= conv / pool geometry

// Spatial geometry shared by Conv and the pools. Unknown sizes are -1.
struct Geom {
  std::vector<int64_t> in, kernel, strides, dilations, pad_b, pad_e, out;
  size_t rank() const { return in.size(); }
};

// Geometry arithmetic: hostile attributes (huge kernel_shape, strides, dilations, pads,
// output_shape) must fail the node, not wrap a size (fuzzed models did).
int64_t geomMul(const OpContext& ctx, int64_t a, int64_t b) {
  int64_t v = 0;
  if (!checkedMul(a, b, &v)) ctx.fail("a size overflows int64");
  return v;
}
int64_t geomAdd(const OpContext& ctx, int64_t a, int64_t b) {
  int64_t v = 0;
  if (!checkedAdd(a, b, &v)) ctx.fail("a size overflows int64");
  return v;
}

// Reads strides/dilations/pads/auto_pad and computes the output spatial size
// (ONNX semantics; ceil_mode drops a last window that would start in the end padding).
Geom makeGeom(const OpContext& ctx, const std::vector<int64_t>& in,
              const std::vector<int64_t>& kernel, bool ceil_mode, bool use_dilations = true) {
  const size_t n = in.size();
  Geom g;
  g.in = in;
  g.kernel = kernel;
  g.strides = ctx.attrInts("strides", std::vector<int64_t>(n, 1));
  g.dilations = use_dilations ? ctx.attrInts("dilations", std::vector<int64_t>(n, 1))
                              : std::vector<int64_t>(n, 1);
  if (g.strides.empty()) g.strides.assign(n, 1);
  if (g.dilations.empty()) g.dilations.assign(n, 1);
  if (kernel.size() != n) ctx.fail("kernel_shape must have one value per spatial axis");
  if (g.strides.size() != n) ctx.fail("strides must have one value per spatial axis");
  if (g.dilations.size() != n) ctx.fail("dilations must have one value per spatial axis");
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.empty()) pads.assign(2 * n, 0);
  if (pads.size() != 2 * n) ctx.fail("pads must have two values per spatial axis");
  std::string auto_pad = ctx.attrString("auto_pad", "NOTSET");
  g.pad_b.assign(pads.begin(), pads.begin() + n);
  g.pad_e.assign(pads.begin() + n, pads.end());
  g.out.assign(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0) ctx.fail("strides must be positive");
    if (g.dilations[i] <= 0) ctx.fail("dilations must be positive");
    if (g.kernel[i] <= 0) ctx.fail("kernel_shape must be positive");
    const int64_t dk = geomAdd(ctx, geomMul(ctx, g.kernel[i] - 1, g.dilations[i]), 1);
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      if (in[i] < 0) continue;
      // ceil(in / stride), and (out - 1) * stride <= in: neither can overflow.
      const int64_t out = in[i] / g.strides[i] + (in[i] % g.strides[i] != 0 ? 1 : 0);
      const int64_t total = std::max<int64_t>(0, ((out - 1) * g.strides[i] - in[i]) + dk);
      const int64_t small = total / 2, large = total - total / 2;
      g.pad_b[i] = auto_pad == "SAME_UPPER" ? small : large;
      g.pad_e[i] = auto_pad == "SAME_UPPER" ? large : small;
      g.out[i] = out;
      continue;
    }
    if (auto_pad == "VALID") {
      g.pad_b[i] = g.pad_e[i] = 0;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      ctx.fail("unknown auto_pad '" + auto_pad + "'");
    }
    if (in[i] < 0) continue;
    const int64_t span =
        geomAdd(ctx, geomAdd(ctx, geomAdd(ctx, in[i], g.pad_b[i]), g.pad_e[i]), -dk);
    if (span < 0) ctx.fail("the kernel is larger than the padded input");
    int64_t out = span / g.strides[i] + 1;
    if (ceil_mode) {
      out = span / g.strides[i] + (span % g.strides[i] != 0 ? 1 : 0) + 1;
      // The last window must start inside the input or the begin padding.
      if (geomMul(ctx, out - 1, g.strides[i]) >= geomAdd(ctx, in[i], g.pad_b[i])) --out;
    }
    g.out[i] = out;
  }
  return g;
}

Shape spatialOutputShape(const Dim& n, const Dim& c, const Geom& g) {
  Shape s;
  s.dims = {n, c};
  for (int64_t o : g.out)
    s.dims.push_back(o >= 0 ? Dim::known(o) : unknownDim());
  return s;
}

// im2col for one image and group: col[(c*K + kidx) * O + o] with zeros for padding.
template <class T>
void im2col(const T* x, int64_t channels, const Geom& g, T* col) {
  const size_t nd = g.rank();
  const int64_t ksize = product(g.kernel, 0, nd);
  const int64_t osize = product(g.out, 0, nd);
  const int64_t isize = product(g.in, 0, nd);
  const int64_t olast = g.out[nd - 1];
  const int64_t outer_count = olast > 0 ? osize / olast : 0;
  std::vector<int64_t> istride(nd, 1);
  for (size_t d = nd - 1; d-- > 0;)
    istride[d] = istride[d + 1] * g.in[d + 1];
  std::vector<int64_t> kk(nd), oi(nd);
  const int64_t L = nd - 1;
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(kk.begin(), kk.end(), 0);
    for (int64_t kidx = 0; kidx < ksize; ++kidx) {
      T* row = col + (c * ksize + kidx) * osize;
      std::fill(oi.begin(), oi.end(), 0);
      const int64_t koff = kk[L] * g.dilations[L] - g.pad_b[L];
      for (int64_t outer = 0; outer < outer_count; ++outer) {
        bool valid = true;
        int64_t base = c * isize;
        for (int64_t d = 0; d < L; ++d) {
          const int64_t id = oi[d] * g.strides[d] - g.pad_b[d] + kk[d] * g.dilations[d];
          if (id < 0 || id >= g.in[d]) {
            valid = false;
            break;
          }
          base += id * istride[d];
        }
        T* dst = row + outer * olast;
        if (!valid) {
          std::fill(dst, dst + olast, T(0));
        } else {
          const T* src = x + base;
          const int64_t s = g.strides[L], in_last = g.in[L];
          for (int64_t o = 0; o < olast; ++o) {
            const int64_t id = o * s + koff;
            dst[o] = (id >= 0 && id < in_last) ? src[id] : T(0);
          }
        }
        for (int64_t d = L - 1; d >= 0; --d) {
          if (++oi[d] < g.out[d]) break;
          oi[d] = 0;
        }
      }
      for (int64_t d = L; d >= 0; --d) {
        if (++kk[d] < g.kernel[d]) break;
        kk[d] = 0;
      }
    }
  }
}

// col2im (accumulating): the adjoint of im2col, used by ConvTranspose where
// `g.in` is the transposed conv's input and `out_dims` its output.
template <class T>
void col2imAdd(const T* col, int64_t channels, const std::vector<int64_t>& in_dims,
               const std::vector<int64_t>& out_dims, const Geom& g, T* y) {
  const size_t nd = in_dims.size();
  const int64_t ksize = product(g.kernel, 0, nd);
  const int64_t isize = product(in_dims, 0, nd);
  const int64_t osize = product(out_dims, 0, nd);
  std::vector<int64_t> ostride(nd, 1);
  for (size_t d = nd - 1; d-- > 0;)
    ostride[d] = ostride[d + 1] * out_dims[d + 1];
  std::vector<int64_t> kk(nd), ii(nd);
  for (int64_t c = 0; c < channels; ++c) {
    std::fill(kk.begin(), kk.end(), 0);
    for (int64_t kidx = 0; kidx < ksize; ++kidx) {
      const T* row = col + (c * ksize + kidx) * isize;
      std::fill(ii.begin(), ii.end(), 0);
      for (int64_t i = 0; i < isize; ++i) {
        int64_t off = c * osize;
        bool valid = true;
        for (size_t d = 0; d < nd; ++d) {
          const int64_t od = ii[d] * g.strides[d] - g.pad_b[d] + kk[d] * g.dilations[d];
          if (od < 0 || od >= out_dims[d]) {
            valid = false;
            break;
          }
          off += od * ostride[d];
        }
        if (valid) y[off] += row[i];
        for (size_t d = nd; d-- > 0;) {
          if (++ii[d] < in_dims[d]) break;
          ii[d] = 0;
        }
      }
      for (size_t d = nd; d-- > 0;) {
        if (++kk[d] < g.kernel[d]) break;
        kk[d] = 0;
      }
    }
  }
}

// ================================================================= Conv

// Kernel spatial shape: the attribute, else W's dims after the first two. An attribute that
// disagrees with W's known dims is an error (the kernels index W by it).
std::vector<int64_t> kernelShapeFrom(const OpContext& ctx, const Shape* w, size_t nsp) {
  std::vector<int64_t> k = ctx.attrInts("kernel_shape");
  if (!k.empty()) {
    if (w == nullptr || w->rank() != nsp + 2) return k;
    for (size_t i = 0; i < nsp && i < k.size(); ++i) {
      const Dim& d = w->dims[i + 2];
      if (d.isKnown() && d.value != k[i]) {
        ctx.fail("kernel_shape[" + std::to_string(i) + "] = " + std::to_string(k[i]) +
                 " but W's spatial dim is " + std::to_string(d.value));
      }
    }
    return k;
  }
  if (w == nullptr || w->rank() != nsp + 2) return {};
  for (size_t i = 2; i < w->rank(); ++i) {
    if (!w->dims[i].isKnown()) return {};
    k.push_back(w->dims[i].value);
  }
  return k;
}

// Shape rule of Conv/ConvInteger/QLinearConv: x and w are input indices.
void inferConvLike(InferContext& ctx, size_t xi, size_t wi, DataType out_type) {
  const Shape* x = ctx.inputShape(xi);
  const Shape* w = ctx.inputShape(wi);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, out_type);
    return;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...)");
  const size_t nsp = x->rank() - 2;
  if (w != nullptr && w->rank() != x->rank()) ctx.fail("W must have the rank of X");
  const int64_t group = ctx.attrInt("group", 1);
  if (group <= 0) ctx.fail("group must be positive");
  if (w != nullptr && x->dims[1].isKnown() && w->dims[1].isKnown() &&
      x->dims[1].value != ctx.sizeMul(w->dims[1].value, group)) {
    ctx.fail("X has " + std::to_string(x->dims[1].value) + " channels but W expects " +
             std::to_string(w->dims[1].value * group));
  }
  const Dim m = w != nullptr ? w->dims[0] : unknownDim();
  if (m.isKnown() && m.value % group != 0) {
    ctx.fail("W has " + std::to_string(m.value) + " feature maps, not divisible by group " +
             std::to_string(group));
  }
  const std::vector<int64_t> kernel = kernelShapeFrom(ctx, w, nsp);
  if (kernel.empty()) {
    Shape s;
    s.dims = {x->dims[0], m};
    s.dims.resize(x->rank());
    ctx.setOutput(0, out_type, s);
    return;
  }
  std::vector<int64_t> in(x->dims.size() - 2);
  for (size_t i = 0; i < nsp; ++i)
    in[i] = x->dims[i + 2].isKnown() ? x->dims[i + 2].value : -1;
  const Geom g = makeGeom(ctx, in, kernel, false);
  ctx.setOutput(0, out_type, spatialOutputShape(x->dims[0], m, g));
}

void inferConv(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  // B is [M]: a shorter bias would be read past its end.
  const Shape* w = ctx.inputShape(1);
  const Shape* b = ctx.hasInput(2) ? ctx.inputShape(2) : nullptr;
  if (b != nullptr) {
    if (b->rank() != 1) ctx.fail("B must be 1-D, it has rank " + std::to_string(b->rank()));
    if (w != nullptr && w->rank() > 0 && w->dims[0].isKnown() && b->dims[0].isKnown() &&
        b->dims[0].value != w->dims[0].value) {
      ctx.fail("B has " + std::to_string(b->dims[0].value) + " values for " +
               std::to_string(w->dims[0].value) + " output channels");
    }
  }
  inferConvLike(ctx, 0, 1, t);
}

// Float32 2-D (and 1-D as 2-D with height 1) conv through XNNPACK in NHWC.
bool convXnnpackF32(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t channels, int64_t out_channels, int64_t group, const Geom& g) {
  if (!xnn::available() || (g.rank() != 2 && g.rank() != 1)) return false;
  const bool one_d = g.rank() == 1;
  const int64_t ih = one_d ? 1 : g.in[0], iw = g.in[g.rank() - 1];
  const int64_t oh = one_d ? 1 : g.out[0], ow = g.out[g.rank() - 1];
  const int64_t kh = one_d ? 1 : g.kernel[0], kw = g.kernel[g.rank() - 1];
  for (size_t i = 0; i < g.rank(); ++i) {
    if (g.pad_b[i] < 0 || g.pad_e[i] < 0) return false;
  }
  const int64_t cg = channels / group, mg = out_channels / group;
  // NCHW -> NHWC, padded for XNNPACK's over-reads.
  std::vector<float> xin(static_cast<size_t>(batch * ih * iw * channels) +
                         xnn::kExtraBytes / sizeof(float));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < ih * iw; ++p)
        xin[(n * ih * iw + p) * channels + c] = x[(n * channels + c) * ih * iw + p];
  // W [M, Cg, kh, kw] -> [M, kh, kw, Cg] (= [groups][Mg][kh][kw][Cg]).
  std::vector<float> wk(static_cast<size_t>(out_channels * kh * kw * cg));
  for (int64_t m = 0; m < out_channels; ++m)
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t p = 0; p < kh * kw; ++p)
        wk[(m * kh * kw + p) * cg + c] = w[(m * cg + c) * kh * kw + p];
  std::vector<float> yout(static_cast<size_t>(batch * oh * ow * out_channels));
  xnn::Conv2dParams p;
  p.batch = batch;
  p.in_h = ih;
  p.in_w = iw;
  p.out_h = oh;
  p.out_w = ow;
  p.kernel_h = kh;
  p.kernel_w = kw;
  p.stride_h = one_d ? 1 : g.strides[0];
  p.stride_w = g.strides[g.rank() - 1];
  p.dilation_h = one_d ? 1 : g.dilations[0];
  p.dilation_w = g.dilations[g.rank() - 1];
  p.pad_top = one_d ? 0 : g.pad_b[0];
  p.pad_bottom = one_d ? 0 : g.pad_e[0];
  p.pad_left = g.pad_b[g.rank() - 1];
  p.pad_right = g.pad_e[g.rank() - 1];
  p.groups = group;
  p.group_in = cg;
  p.group_out = mg;
  if (!xnn::conv2dNhwcF32(p, xin.data(), wk.data(), bias, yout.data())) return false;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t q = 0; q < oh * ow; ++q)
      for (int64_t m = 0; m < out_channels; ++m)
        y[(n * out_channels + m) * oh * ow + q] = yout[(n * oh * ow + q) * out_channels + m];
  return true;
}

// Portable conv: per image and group, im2col then Y_g = W_g * col (+ bias).
template <class T>
void convIm2col(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t channels,
                int64_t out_channels, int64_t group, const Geom& g) {
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t ksize = product(g.kernel, 0, g.rank());
  const int64_t osize = product(g.out, 0, g.rank());
  const int64_t isize = product(g.in, 0, g.rank());
  std::vector<T> col(static_cast<size_t>(cg * ksize * osize));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      im2col(x + (n * channels + gi * cg) * isize, cg, g, col.data());
      T* yg = y + (n * out_channels + gi * mg) * osize;
      gemmAny<T>(mg, osize, cg * ksize, w + gi * mg * cg * ksize, cg * ksize, col.data(), osize, yg,
                 osize);
    }
    if (bias != nullptr) {
      for (int64_t m = 0; m < out_channels; ++m) {
        T* row = y + (n * out_channels + m) * osize;
        for (int64_t o = 0; o < osize; ++o)
          row[o] = static_cast<T>(row[o] + bias[m]);
      }
    }
  }
}

// Geometry of a computed conv from the (known) tensor dims.
Geom convGeom(const OpContext& ctx, const std::vector<int64_t>& xd,
              const std::vector<int64_t>& wd) {
  const size_t nsp = xd.size() - 2;
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.empty()) kernel.assign(wd.begin() + 2, wd.end());
  return makeGeom(ctx, std::vector<int64_t>(xd.begin() + 2, xd.end()), kernel, false);
  (void)nsp;
}

void computeConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& Y = ctx.output(0);
  const int64_t group = ctx.attrInt("group", 1);
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[0];
  if (m % group != 0) ctx.fail("the number of feature maps is not divisible by group");
  if (Y.numElements() == 0) return;
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float>) {
      const float* bias = B ? dataAs<float>(*B) : nullptr;
      if (!convXnnpackF32(dataAs<float>(X), dataAs<float>(W), bias, mutableDataAs<float>(Y), batch,
                          channels, m, group, g)) {
        convIm2col<float>(dataAs<float>(X), dataAs<float>(W), bias, mutableDataAs<float>(Y), batch,
                          channels, m, group, g);
      }
    } else if constexpr (std::is_same_v<T, double>) {
      convIm2col<double>(dataAs<double>(X), dataAs<double>(W), B ? dataAs<double>(*B) : nullptr,
                         mutableDataAs<double>(Y), batch, channels, m, group, g);
    } else if constexpr (kIsHalfLike<T>) {
      const auto xf = toFloatVec(dataAs<T>(X), X.numElements());
      const auto wf = toFloatVec(dataAs<T>(W), W.numElements());
      std::vector<float> bf;
      if (B) bf = toFloatVec(dataAs<T>(*B), B->numElements());
      std::vector<float> yf(static_cast<size_t>(Y.numElements()));
      const float* bias = B ? bf.data() : nullptr;
      if (!convXnnpackF32(xf.data(), wf.data(), bias, yf.data(), batch, channels, m, group, g)) {
        convIm2col<float>(xf.data(), wf.data(), bias, yf.data(), batch, channels, m, group, g);
      }
      fromFloatVec(yf, mutableDataAs<T>(Y));
    } else {
      ctx.unsupported("unsupported type");
    }
  });
}

// ConvInteger and QLinearConv: int32 conv of zero-point-shifted inputs.
// x_zero_point is per tensor; w_zero_point per tensor or per output channel.
std::vector<int32_t> integerConv(const ComputeContext& ctx, const Tensor& X, const Tensor* xzp,
                                 const Tensor& W, const Tensor* wzp, const Tensor* bias,
                                 const Geom& g) {
  const int64_t group = ctx.attrInt("group", 1);
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[0];
  std::vector<int32_t> x(static_cast<size_t>(X.numElements()));
  const int32_t xz = xzp ? static_cast<int32_t>(elemAsDouble(*xzp, 0)) : 0;
  for (int64_t i = 0; i < X.numElements(); ++i)
    x[i] = static_cast<int32_t>(elemAsDouble(X, i)) - xz;
  std::vector<int32_t> w(static_cast<size_t>(W.numElements()));
  const int64_t per_m = m > 0 ? W.numElements() / m : 0;
  const int64_t wzn = wzp ? wzp->numElements() : 0;
  for (int64_t i = 0; i < W.numElements(); ++i) {
    const int32_t z =
        wzn == 0 ? 0 : static_cast<int32_t>(elemAsDouble(*wzp, wzn == 1 ? 0 : (i / per_m) % wzn));
    w[i] = static_cast<int32_t>(elemAsDouble(W, i)) - z;
  }
  std::vector<int32_t> b;
  if (bias) {
    b.resize(static_cast<size_t>(bias->numElements()));
    for (int64_t i = 0; i < bias->numElements(); ++i)
      b[i] = dataAs<int32_t>(*bias)[i];
  }
  std::vector<int32_t> y(static_cast<size_t>(batch * m * product(g.out, 0, g.rank())));
  convIm2col<int32_t>(x.data(), w.data(), bias ? b.data() : nullptr, y.data(), batch, channels, m,
                      group, g);
  return y;
}

void inferConvInteger(InferContext& ctx) {
  requireType(ctx, 0, isInt8Like(ctx.inputDtype(0)), "int8 or uint8");
  requireType(ctx, 1, isInt8Like(ctx.inputDtype(1)), "int8 or uint8");
  inferConvLike(ctx, 0, 1, DataType::kInt32);
}

void computeConvInteger(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const auto y = integerConv(ctx, X, ctx.hasInput(2) ? &ctx.input(2) : nullptr, W,
                             ctx.hasInput(3) ? &ctx.input(3) : nullptr, nullptr, g);
  std::memcpy(mutableDataAs<int32_t>(ctx.output(0)), y.data(), y.size() * sizeof(int32_t));
}

void inferQLinearConv(InferContext& ctx) {
  requireType(ctx, 0, isInt8Like(ctx.inputDtype(0)), "int8 or uint8");
  requireType(ctx, 3, isInt8Like(ctx.inputDtype(3)), "int8 or uint8");
  DataType out = ctx.inputDtype(7);
  if (out == DataType::kUndefined) out = ctx.inputDtype(0);
  inferConvLike(ctx, 0, 3, out);
}

void computeQLinearConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(3);
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const auto acc = integerConv(ctx, X, &ctx.input(2), W, &ctx.input(5),
                               ctx.hasInput(8) ? &ctx.input(8) : nullptr, g);
  const double xs = elemAsDouble(ctx.input(1), 0);
  const Tensor& ws = ctx.input(4);
  const double ys = elemAsDouble(ctx.input(6), 0);
  const double yz = elemAsDouble(ctx.input(7), 0);
  Tensor& Y = ctx.output(0);
  const int64_t m = W.dims()[0];
  const int64_t osize = product(g.out, 0, g.rank());
  const int64_t wsn = ws.numElements();
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t ch = (static_cast<int64_t>(i) / osize) % m;
    const float scale = static_cast<float>(xs) *
                        static_cast<float>(elemAsDouble(ws, wsn == 1 ? 0 : ch % wsn)) /
                        static_cast<float>(ys);
    const double v = static_cast<double>(static_cast<float>(acc[i]) * scale) + yz;
    if (Y.dtype() == DataType::kUint8) {
      mutableDataAs<uint8_t>(Y)[i] = saturateRound<uint8_t>(v);
    } else {
      mutableDataAs<int8_t>(Y)[i] = saturateRound<int8_t>(v);
    }
  }
}

// ================================================================= DeformConv (2-D)

void inferDeformConv(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  if (x != nullptr && x->rank() != 4)
    ctx.unsupported("only 2-D deformable convolution is supported");
  inferConvLike(ctx, 0, 1, t);
}

// Bilinear sample of one H x W plane; locations outside (-1, H) x (-1, W) give 0
// and corners outside the plane contribute 0.
template <class T>
T bilinear(const T* plane, int64_t h_size, int64_t w_size, T h, T w) {
  if (h <= T(-1) || h >= T(h_size) || w <= T(-1) || w >= T(w_size)) return T(0);
  const auto h0 = static_cast<int64_t>(std::floor(h)), w0 = static_cast<int64_t>(std::floor(w));
  const int64_t h1 = h0 + 1, w1 = w0 + 1;
  const T lh = h - T(h0), lw = w - T(w0), hh = T(1) - lh, hw = T(1) - lw;
  auto at = [&](int64_t y, int64_t x) {
    return (y >= 0 && y < h_size && x >= 0 && x < w_size) ? plane[y * w_size + x] : T(0);
  };
  return hh * hw * at(h0, w0) + hh * lw * at(h0, w1) + lh * hw * at(h1, w0) + lh * lw * at(h1, w1);
}

// Deformable im2col (sampled, masked) per image and group, then Y_g = W_g * col.
template <class T>
void deformConvImpl(const T* x, const T* w, const T* offset, const T* bias, const T* mask, T* y,
                    int64_t batch, int64_t channels, int64_t out_channels, int64_t group,
                    int64_t offset_group, const Geom& g) {
  const int64_t H = g.in[0], W = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], ks = kh * kw, os = oh * ow;
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t c_per_og = channels / offset_group;
  std::vector<T> col(static_cast<size_t>(cg * ks * os));
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t gi = 0; gi < group; ++gi) {
      for (int64_t cl = 0; cl < cg; ++cl) {
        const int64_t c = gi * cg + cl;
        const int64_t og = c / c_per_og;
        const T* plane = x + (n * channels + c) * H * W;
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t kidx = i * kw + j;
            const T* off_h = offset + ((n * offset_group + og) * ks * 2 + kidx * 2) * os;
            const T* off_w = off_h + os;
            const T* m = mask ? mask + ((n * offset_group + og) * ks + kidx) * os : nullptr;
            T* row = col.data() + (cl * ks + kidx) * os;
            for (int64_t a = 0; a < oh; ++a)
              for (int64_t b = 0; b < ow; ++b) {
                const int64_t q = a * ow + b;
                const T ph = T(a * g.strides[0] - g.pad_b[0] + i * g.dilations[0]) + off_h[q];
                const T pw = T(b * g.strides[1] - g.pad_b[1] + j * g.dilations[1]) + off_w[q];
                T v = bilinear(plane, H, W, ph, pw);
                if (m != nullptr) v *= m[q];
                row[q] = v;
              }
          }
      }
      gemmAny<T>(mg, os, cg * ks, w + gi * mg * cg * ks, cg * ks, col.data(), os,
                 y + (n * out_channels + gi * mg) * os, os);
    }
    if (bias != nullptr) {
      for (int64_t m = 0; m < out_channels; ++m)
        for (int64_t q = 0; q < os; ++q)
          y[(n * out_channels + m) * os + q] += bias[m];
    }
  }
}

void computeDeformConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor& O = ctx.input(2);
  const Tensor* B = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  const Tensor* M = ctx.hasInput(4) ? &ctx.input(4) : nullptr;
  Tensor& Y = ctx.output(0);
  if (X.rank() != 4) ctx.unsupported("only 2-D deformable convolution is supported");
  const Geom g = convGeom(ctx, X.dims(), W.dims());
  const int64_t group = ctx.attrInt("group", 1), offset_group = ctx.attrInt("offset_group", 1);
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[0];
  if (group <= 0 || offset_group <= 0 || channels % group != 0 || m % group != 0 ||
      channels % offset_group != 0) {
    ctx.fail("channels must be divisible by group and offset_group");
  }
  const int64_t ks = g.kernel[0] * g.kernel[1], os = g.out[0] * g.out[1];
  if (O.numElements() != batch * offset_group * ks * 2 * os) ctx.fail("offset has the wrong shape");
  if (M != nullptr && M->numElements() != batch * offset_group * ks * os) {
    ctx.fail("mask has the wrong shape");
  }
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      deformConvImpl<T>(dataAs<T>(X), dataAs<T>(W), dataAs<T>(O), B ? dataAs<T>(*B) : nullptr,
                        M ? dataAs<T>(*M) : nullptr, mutableDataAs<T>(Y), batch, channels, m, group,
                        offset_group, g);
    } else if constexpr (kIsHalfLike<T>) {
      const auto xf = toFloatVec(dataAs<T>(X), X.numElements());
      const auto wf = toFloatVec(dataAs<T>(W), W.numElements());
      const auto of = toFloatVec(dataAs<T>(O), O.numElements());
      std::vector<float> bf, mf, yf(static_cast<size_t>(Y.numElements()));
      if (B) bf = toFloatVec(dataAs<T>(*B), B->numElements());
      if (M) mf = toFloatVec(dataAs<T>(*M), M->numElements());
      deformConvImpl<float>(xf.data(), wf.data(), of.data(), B ? bf.data() : nullptr,
                            M ? mf.data() : nullptr, yf.data(), batch, channels, m, group,
                            offset_group, g);
      fromFloatVec(yf, mutableDataAs<T>(Y));
    } else {
      ctx.unsupported("unsupported type");
    }
  });
}

// ================================================================= CausalConvWithState

// Depthwise causal 1-D conv over concat(past_state or zeros, input); the last
// k-1 positions of that sequence become present_state.
void inferCausalConv(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  const Shape* w = ctx.inputShape(1);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
  } else {
    if (x->rank() != 3) ctx.fail("input must be rank 3 (batch, channels, length)");
    ctx.setOutput(0, t, *x);
  }
  if (ctx.numOutputs() > 1) {
    Shape s;
    s.dims.assign(3, unknownDim());
    if (x != nullptr) {
      s.dims[0] = x->dims[0];
      s.dims[1] = x->dims[1];
    }
    if (w != nullptr && w->rank() == 3 && w->dims[2].isKnown()) {
      s.dims[2] = Dim::known(w->dims[2].value - 1);
    }
    ctx.setOutput(1, t, s);
  }
}

void computeCausalConv(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  const Tensor* P = ctx.hasInput(3) ? &ctx.input(3) : nullptr;
  if (X.rank() != 3 || W.rank() != 3) ctx.fail("input and weight must be rank 3");
  const int64_t batch = X.dims()[0], channels = X.dims()[1], len = X.dims()[2];
  const int64_t k = W.dims()[2];
  if (W.dims()[0] != channels || W.dims()[1] != 1) ctx.fail("weight must be (channels, 1, k)");
  if (P != nullptr && P->dims() != std::vector<int64_t>{batch, channels, k - 1}) {
    ctx.fail("past_state must be (batch, channels, k - 1)");
  }
  const std::string act = ctx.attrString("activation", "none");
  const bool silu = act == "silu" || act == "swish";
  if (!silu && act != "none") ctx.fail("unknown activation '" + act + "'");
  auto read = [](const Tensor& t) {
    std::vector<double> v(static_cast<size_t>(t.numElements()));
    dispatchNumeric(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = toDouble(dataAs<T>(t)[i]);
    });
    return v;
  };
  const auto x = read(X), w = read(W);
  const std::vector<double> b = B ? read(*B) : std::vector<double>();
  const std::vector<double> past = P ? read(*P) : std::vector<double>();
  const int64_t plen = len + k - 1;
  std::vector<double> seq(static_cast<size_t>(plen)), y(x.size());
  std::vector<double> state(static_cast<size_t>(batch * channels * (k - 1)));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t nc = n * channels + c;
      for (int64_t i = 0; i < k - 1; ++i)
        seq[i] = P ? past[nc * (k - 1) + i] : 0.0;
      for (int64_t i = 0; i < len; ++i)
        seq[k - 1 + i] = x[nc * len + i];
      for (int64_t t = 0; t < len; ++t) {
        double acc = B ? b[c] : 0.0;
        for (int64_t j = 0; j < k; ++j)
          acc += w[c * k + j] * seq[t + j];
        if (silu) acc = acc / (1.0 + std::exp(-acc));
        y[nc * len + t] = acc;
      }
      for (int64_t i = 0; i < k - 1; ++i)
        state[nc * (k - 1) + i] = seq[len + i];
    }
  auto write = [](Tensor& t, const std::vector<double>& v) {
    dispatchNumeric(t.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      for (size_t i = 0; i < v.size(); ++i)
        mutableDataAs<T>(t)[i] = fromDouble<T>(v[i]);
    });
  };
  write(ctx.output(0), y);
  if (ctx.hasOutput(1)) write(ctx.output(1), state);
}

// ================================================================= ConvTranspose

struct ConvTransposeGeom {
  Geom g;  // g.in: input spatial dims, g.out: output spatial dims
  bool ok = true;
};

ConvTransposeGeom convTransposeGeom(const OpContext& ctx, const std::vector<int64_t>& in,
                                    const std::vector<int64_t>& kernel) {
  const size_t n = in.size();
  ConvTransposeGeom r;
  Geom& g = r.g;
  g.in = in;
  g.kernel = kernel;
  g.strides = ctx.attrInts("strides", std::vector<int64_t>(n, 1));
  g.dilations = ctx.attrInts("dilations", std::vector<int64_t>(n, 1));
  if (g.strides.empty()) g.strides.assign(n, 1);
  if (g.dilations.empty()) g.dilations.assign(n, 1);
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * n, 0));
  if (pads.empty()) pads.assign(2 * n, 0);
  std::vector<int64_t> out_pad = ctx.attrInts("output_padding", std::vector<int64_t>(n, 0));
  if (out_pad.empty()) out_pad.assign(n, 0);
  std::vector<int64_t> out_shape = ctx.attrInts("output_shape");
  if (out_shape.size() == n + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  if (kernel.size() != n || g.strides.size() != n || g.dilations.size() != n ||
      pads.size() != 2 * n || out_pad.size() != n ||
      (!out_shape.empty() && out_shape.size() != n)) {
    ctx.fail(
        "kernel_shape/strides/dilations/pads/output_padding/output_shape sizes do not match "
        "the spatial rank");
  }
  const std::string auto_pad = ctx.attrString("auto_pad", "NOTSET");
  g.pad_b.assign(pads.begin(), pads.begin() + n);
  g.pad_e.assign(pads.begin() + n, pads.end());
  g.out.assign(n, -1);
  // stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1, before padding.
  const auto natural = [&](size_t k) {
    const int64_t dk = geomAdd(ctx, geomMul(ctx, kernel[k] - 1, g.dilations[k]), 1);
    return geomAdd(ctx, geomAdd(ctx, geomMul(ctx, g.strides[k], in[k] - 1), out_pad[k]), dk);
  };
  for (size_t i = 0; i < n; ++i) {
    if (g.strides[i] <= 0) ctx.fail("strides must be positive");
    if (g.dilations[i] <= 0) ctx.fail("dilations must be positive");
    if (kernel[i] <= 0) ctx.fail("kernel_shape must be positive");
    if (!out_shape.empty() && out_shape[i] < 0) ctx.fail("output_shape must not be negative");
    if (pads[i] == std::numeric_limits<int64_t>::min() ||
        pads[i + n] == std::numeric_limits<int64_t>::min())
      ctx.fail("a size overflows int64");  // negated below
    const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
    if (!out_shape.empty() || same) {
      if (in[i] < 0) {
        if (!out_shape.empty()) g.out[i] = out_shape[i];
        r.ok = false;
        continue;
      }
      const int64_t out = !out_shape.empty() ? out_shape[i] : geomMul(ctx, in[i], g.strides[i]);
      const int64_t total = geomAdd(ctx, natural(i), -out);
      // Floor division as in the reference: a negative total (output_shape
      // larger than the natural size) extends the end.
      const int64_t half = total / 2 - (total % 2 < 0 ? 1 : 0);
      if (auto_pad == "SAME_UPPER") {
        g.pad_b[i] = half;
        g.pad_e[i] = total - half;
      } else {
        g.pad_b[i] = total - half;
        g.pad_e[i] = half;
      }
      g.out[i] = out;
      continue;
    }
    if (auto_pad == "VALID") g.pad_b[i] = g.pad_e[i] = 0;
    if (in[i] < 0) {
      r.ok = false;
      continue;
    }
    g.out[i] = geomAdd(ctx, geomAdd(ctx, natural(i), -g.pad_b[i]), -g.pad_e[i]);
    if (g.out[i] < 0) ctx.fail("the output size would be negative");
  }
  return r;
}

void inferConvTranspose(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  const Shape* w = ctx.inputShape(1);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3");
  const size_t nsp = x->rank() - 2;
  // W's dims[1] is read below, and compute divides by group: a fuzzed model crashed on both.
  if (w != nullptr && w->rank() != x->rank()) ctx.fail("W must have the rank of X");
  const int64_t group = ctx.attrInt("group", 1);
  if (group <= 0) ctx.fail("group must be positive");
  Dim m = unknownDim();
  int64_t mv = 0;
  if (w != nullptr && w->dims[1].isKnown()) {
    if (!checkedMul(w->dims[1].value, group, &mv)) ctx.fail("W's dims[1] * group overflows");
    m = Dim::known(mv);
  }
  const std::vector<int64_t> kernel = kernelShapeFrom(ctx, w, nsp);
  if (kernel.empty()) {
    Shape s;
    s.dims = {x->dims[0], m};
    s.dims.resize(x->rank());
    ctx.setOutput(0, t, s);
    return;
  }
  std::vector<int64_t> in(nsp);
  for (size_t i = 0; i < nsp; ++i)
    in[i] = x->dims[i + 2].isKnown() ? x->dims[i + 2].value : -1;
  const ConvTransposeGeom cg = convTransposeGeom(ctx, in, kernel);
  ctx.setOutput(0, t, spatialOutputShape(x->dims[0], m, cg.g));
}

template <class T>
void convTransposeImpl(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t channels,
                       int64_t out_channels, int64_t group, const Geom& g) {
  const size_t nd = g.rank();
  const int64_t cg = channels / group, mg = out_channels / group;
  const int64_t ksize = product(g.kernel, 0, nd);
  const int64_t isize = product(g.in, 0, nd);
  const int64_t osize = product(g.out, 0, nd);
  std::vector<T> col(static_cast<size_t>(mg * ksize * isize));
  // W_g is [Cg, Mg*K]; col = W_g^T [Mg*K, Cg] * X_g [Cg, I].
  std::vector<T> wt(static_cast<size_t>(mg * ksize * cg));
  std::fill(y, y + batch * out_channels * osize, T(0));
  for (int64_t gi = 0; gi < group; ++gi) {
    const T* wg = w + gi * cg * mg * ksize;
    for (int64_t c = 0; c < cg; ++c)
      for (int64_t r = 0; r < mg * ksize; ++r)
        wt[r * cg + c] = wg[c * mg * ksize + r];
    for (int64_t n = 0; n < batch; ++n) {
      gemmAny<T>(mg * ksize, isize, cg, wt.data(), cg, x + (n * channels + gi * cg) * isize, isize,
                 col.data(), isize);
      col2imAdd(col.data(), mg, g.in, g.out, g, y + (n * out_channels + gi * mg) * osize);
    }
  }
  if (bias != nullptr) {
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t m = 0; m < out_channels; ++m)
        for (int64_t o = 0; o < osize; ++o)
          y[(n * out_channels + m) * osize + o] += bias[m];
  }
}

void computeConvTranspose(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& W = ctx.input(1);
  const Tensor* B = ctx.hasInput(2) ? &ctx.input(2) : nullptr;
  Tensor& Y = ctx.output(0);
  const int64_t group = ctx.attrInt("group", 1);
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.empty()) kernel.assign(W.dims().begin() + 2, W.dims().end());
  const ConvTransposeGeom cg =
      convTransposeGeom(ctx, std::vector<int64_t>(X.dims().begin() + 2, X.dims().end()), kernel);
  const int64_t batch = X.dims()[0], channels = X.dims()[1], m = W.dims()[1] * group;
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      convTransposeImpl<T>(dataAs<T>(X), dataAs<T>(W), B ? dataAs<T>(*B) : nullptr,
                           mutableDataAs<T>(Y), batch, channels, m, group, cg.g);
    } else if constexpr (kIsHalfLike<T>) {
      const auto xf = toFloatVec(dataAs<T>(X), X.numElements());
      const auto wf = toFloatVec(dataAs<T>(W), W.numElements());
      std::vector<float> bf;
      if (B) bf = toFloatVec(dataAs<T>(*B), B->numElements());
      std::vector<float> yf(static_cast<size_t>(Y.numElements()));
      convTransposeImpl<float>(xf.data(), wf.data(), B ? bf.data() : nullptr, yf.data(), batch,
                               channels, m, group, cg.g);
      fromFloatVec(yf, mutableDataAs<T>(Y));
    } else {
      ctx.unsupported("unsupported type");
    }
  });
}

// ================================================================= pools

enum class PoolKind { kAverage, kMax, kLp };

void inferPool(InferContext& ctx, PoolKind kind) {
  const DataType t = ctx.inputDtype(0);
  if (kind == PoolKind::kMax) {
    requireType(ctx, 0,
                t == DataType::kUndefined || isFloatType(t) || t == DataType::kInt8 ||
                    t == DataType::kUint8,
                "a float type, int8 or uint8");
  } else {
    requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  }
  const Shape* x = ctx.inputShape(0);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    if (ctx.numOutputs() > 1) ctx.setOutputUnknownRank(1, DataType::kInt64);
    return;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3 (N, C, spatial...)");
  const std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.size() != x->rank() - 2) ctx.fail("kernel_shape must have one value per spatial axis");
  std::vector<int64_t> in;
  for (size_t i = 2; i < x->rank(); ++i)
    in.push_back(x->dims[i].isKnown() ? x->dims[i].value : -1);
  // AveragePool has dilations from opset 19, MaxPool from 10, LpPool from 18.
  const Geom g = makeGeom(ctx, in, kernel, ctx.attrInt("ceil_mode", 0) != 0);
  const Shape s = spatialOutputShape(x->dims[0], x->dims[1], g);
  ctx.setOutput(0, t, s);
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DataType::kInt64, s);
}

template <class T>
void poolImpl(ComputeContext& ctx, PoolKind kind, const Geom& g) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  Tensor* I = ctx.hasOutput(1) ? &ctx.output(1) : nullptr;
  const T* x = dataAs<T>(X);
  T* y = mutableDataAs<T>(Y);
  const size_t nd = g.rank();
  const int64_t planes = X.dims()[0] * X.dims()[1];
  const int64_t isize = product(g.in, 0, nd), osize = product(g.out, 0, nd);
  const int64_t ksize = product(g.kernel, 0, nd);
  const bool include_pad = ctx.attrInt("count_include_pad", 0) != 0;
  const bool col_major = ctx.attrInt("storage_order", 0) != 0;
  double p = 2.0;
  if (kind == PoolKind::kLp) {
    const Attribute* pa = ctx.attr("p");
    if (pa != nullptr) p = pa->type == AttrType::kFloat ? pa->f : static_cast<double>(pa->i);
  }
  std::vector<int64_t> rstride(nd, 1), cstride(nd, 1);
  for (size_t d = nd - 1; d-- > 0;)
    rstride[d] = rstride[d + 1] * g.in[d + 1];
  for (size_t d = 1; d < nd; ++d)
    cstride[d] = cstride[d - 1] * g.in[d - 1];
  std::vector<int64_t> oi(nd), kk(nd), start(nd);
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T* xp = x + plane * isize;
    std::fill(oi.begin(), oi.end(), 0);
    for (int64_t o = 0; o < osize; ++o) {
      for (size_t d = 0; d < nd; ++d)
        start[d] = oi[d] * g.strides[d] - g.pad_b[d];
      double acc = kind == PoolKind::kMax ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t best = -1, count = 0, padded_count = 0;
      std::fill(kk.begin(), kk.end(), 0);
      for (int64_t k = 0; k < ksize; ++k) {
        bool inside = true, in_padded = true;
        int64_t off = 0, coff = 0;
        for (size_t d = 0; d < nd; ++d) {
          const int64_t id = start[d] + kk[d] * g.dilations[d];
          if (id < 0 || id >= g.in[d]) inside = false;
          if (id < -g.pad_b[d] || id >= g.in[d] + g.pad_e[d]) in_padded = false;
          off += id * rstride[d];
          coff += id * cstride[d];
        }
        if (in_padded) ++padded_count;
        if (inside) {
          const double v = toDouble(xp[off]);
          ++count;
          if (kind == PoolKind::kMax) {
            if (v > acc || best < 0) {
              if (!(std::isnan(v) && best >= 0)) {
                acc = v;
                best = col_major ? coff : off;
              }
            }
          } else if (kind == PoolKind::kAverage) {
            acc += v;
          } else {
            acc += std::pow(std::fabs(v), p);
          }
        }
        for (size_t d = nd; d-- > 0;) {
          if (++kk[d] < g.kernel[d]) break;
          kk[d] = 0;
        }
      }
      double out = acc;
      if (kind == PoolKind::kAverage) {
        const int64_t div = include_pad ? padded_count : count;
        out = div > 0 ? acc / static_cast<double>(div) : std::nan("");
      } else if (kind == PoolKind::kLp) {
        out = std::pow(acc, 1.0 / p);
      }
      y[plane * osize + o] = fromDouble<T>(out);
      if (I != nullptr) mutableDataAs<int64_t>(*I)[plane * osize + o] = plane * isize + best;
      for (size_t d = nd; d-- > 0;) {
        if (++oi[d] < g.out[d]) break;
        oi[d] = 0;
      }
    }
  }
}

void computePool(ComputeContext& ctx, PoolKind kind) {
  const Tensor& X = ctx.input(0);
  const std::vector<int64_t> in(X.dims().begin() + 2, X.dims().end());
  const Geom g = makeGeom(ctx, in, ctx.attrInts("kernel_shape"), ctx.attrInt("ceil_mode", 0) != 0);
  if (!dispatchNumeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) {
          ctx.unsupported("bool is not supported");
        } else {
          poolImpl<T>(ctx, kind, g);
        }
      })) {
    ctx.unsupported("unsupported type");
  }
}

void inferAveragePool(InferContext& ctx) {
  inferPool(ctx, PoolKind::kAverage);
}
void inferMaxPool(InferContext& ctx) {
  inferPool(ctx, PoolKind::kMax);
}
void inferLpPool(InferContext& ctx) {
  inferPool(ctx, PoolKind::kLp);
}
void computeAveragePool(ComputeContext& ctx) {
  computePool(ctx, PoolKind::kAverage);
}
void computeMaxPool(ComputeContext& ctx) {
  computePool(ctx, PoolKind::kMax);
}
void computeLpPool(ComputeContext& ctx) {
  computePool(ctx, PoolKind::kLp);
}

void inferGlobalPool(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (x->rank() < 2) ctx.fail("X must have rank >= 2");
  Shape s = *x;
  for (size_t i = 2; i < s.rank(); ++i)
    s.dims[i] = Dim::known(1);
  ctx.setOutput(0, t, s);
}

void computeGlobalPool(ComputeContext& ctx, bool is_max) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const int64_t planes = X.dims()[0] * X.dims()[1];
  const int64_t size = product(X.dims(), 2, X.rank());
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = dataAs<T>(X);
      T* y = mutableDataAs<T>(Y);
      for (int64_t pl = 0; pl < planes; ++pl) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t i = 0; i < size; ++i) {
          const double v = toDouble(x[pl * size + i]);
          if (is_max) {
            acc = (v > acc || std::isnan(v)) ? v : acc;
          } else {
            acc += v;
          }
        }
        y[pl] = fromDouble<T>(is_max ? acc : acc / static_cast<double>(size));
      }
    }
  });
}

void computeGlobalAveragePool(ComputeContext& ctx) {
  computeGlobalPool(ctx, false);
}
void computeGlobalMaxPool(ComputeContext& ctx) {
  computeGlobalPool(ctx, true);
}

// GlobalLpPool (opset 2): (sum |x|^p)^(1/p) over the spatial axes.
void computeGlobalLpPool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const int64_t planes = X.dims()[0] * X.dims()[1];
  const int64_t size = product(X.dims(), 2, X.rank());
  const Attribute* pa = ctx.attr("p");
  const double p = pa == nullptr ? 2.0 : (pa->type == AttrType::kFloat ? pa->f : double(pa->i));
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* x = dataAs<T>(X);
      T* y = mutableDataAs<T>(Y);
      for (int64_t pl = 0; pl < planes; ++pl) {
        double acc = 0;
        for (int64_t i = 0; i < size; ++i)
          acc += std::pow(std::fabs(toDouble(x[pl * size + i])), p);
        y[pl] = fromDouble<T>(std::pow(acc, 1.0 / p));
      }
    }
  });
}

// ================================================================= MaxUnpool

void inferMaxUnpool(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  requireType(ctx, 0, t == DataType::kUndefined || isFloatType(t), "a float type");
  const Shape* x = ctx.inputShape(0);
  if (ctx.hasInput(2)) {
    if (const Tensor* os = ctx.inputValue(2)) {
      ctx.setOutput(0, t, toInt64Vector(ctx, *os));
      return;
    }
    if (auto sym = ctx.inputSymbolic(2)) {
      Shape s;
      s.dims = *sym;
      ctx.setOutput(0, t, s);
      return;
    }
    const Shape* os = ctx.inputShape(2);
    if (os != nullptr && os->rank() == 1 && os->dims[0].isKnown()) {
      Shape s;
      s.dims.assign(os->dims[0].value, unknownDim());
      ctx.setOutput(0, t, s);
    } else {
      ctx.setOutputUnknownRank(0, t);
    }
    return;
  }
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (x->rank() < 3) ctx.fail("X must have rank >= 3");
  const size_t nsp = x->rank() - 2;
  const std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  if (kernel.size() != nsp) ctx.fail("kernel_shape must have one value per spatial axis");
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (strides.size() != nsp || pads.size() != 2 * nsp) ctx.fail("strides/pads size mismatch");
  Shape s;
  s.dims = {x->dims[0], x->dims[1]};
  for (size_t i = 0; i < nsp; ++i) {
    const Dim& d = x->dims[i + 2];
    s.dims.push_back(
        d.isKnown() ? Dim::known((d.value - 1) * strides[i] - pads[i] - pads[i + nsp] + kernel[i])
                    : unknownDim());
  }
  ctx.setOutput(0, t, s);
}

void computeMaxUnpool(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const Tensor& I = ctx.input(1);
  Tensor& Y = ctx.output(0);
  const std::vector<int64_t> idx = toInt64Vector(ctx, I);
  // Indices address the default unpooled shape (from kernel/strides/pads);
  // with an explicit output_shape the values keep their coordinates.
  const size_t nsp = X.rank() - 2;
  const std::vector<int64_t> kernel = ctx.attrInts("kernel_shape");
  std::vector<int64_t> strides = ctx.attrInts("strides", std::vector<int64_t>(nsp, 1));
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * nsp, 0));
  if (kernel.size() != nsp || strides.size() != nsp || pads.size() != 2 * nsp) {
    ctx.fail("kernel_shape/strides/pads sizes do not match the spatial rank");
  }
  std::vector<int64_t> dflt = {X.dims()[0], X.dims()[1]};
  for (size_t i = 0; i < nsp; ++i)
    dflt.push_back((X.dims()[i + 2] - 1) * strides[i] - pads[i] - pads[i + nsp] + kernel[i]);
  const std::vector<int64_t>& od = Y.dims();
  if (od.size() != dflt.size()) ctx.fail("output_shape has the wrong rank");
  const int64_t total = product(dflt, 0, dflt.size());
  auto target = [&](int64_t flat) {
    int64_t out = 0, mul = 1;
    for (size_t d = dflt.size(); d-- > 0;) {
      const int64_t c = flat % dflt[d];
      flat /= dflt[d];
      if (c >= od[d]) return int64_t{-1};
      out += c * mul;
      mul *= od[d];
    }
    return out;
  };
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = dataAs<T>(X);
    T* y = mutableDataAs<T>(Y);
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= total) ctx.fail("index out of range");
      const int64_t t = od == dflt ? idx[i] : target(idx[i]);
      if (t >= 0) y[t] = x[i];
    }
  });
}

// ================================================================= Einsum

struct EinsumSpec {
  std::vector<std::vector<int>> terms;  // labels per input axis
  std::vector<int> output;              // labels of the output axes
  std::map<int, int64_t> sizes;         // label -> size
  std::vector<int> labels;              // output labels first, then summed ones
};

// Labels: letters are their char codes; ellipsis dims are 1000 + k (right-aligned).
EinsumSpec parseEinsum(const OpContext& ctx, const std::vector<std::vector<int64_t>>& shapes) {
  std::string eq;
  for (char ch : ctx.attrString("equation"))
    if (ch != ' ') eq += ch;
  std::string lhs = eq, rhs;
  const size_t arrow = eq.find("->");
  const bool explicit_out = arrow != std::string::npos;
  if (explicit_out) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
  }
  std::vector<std::string> terms;
  size_t start = 0;
  while (true) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != shapes.size()) {
    ctx.fail("the equation has " + std::to_string(terms.size()) + " terms for " +
             std::to_string(shapes.size()) + " inputs");
  }
  EinsumSpec s;
  int64_t ell_rank = 0;
  std::map<int, int> counts;
  for (size_t t = 0; t < terms.size(); ++t) {
    const std::string& term = terms[t];
    const size_t dots = term.find("...");
    int64_t letters = 0;
    for (char ch : term)
      if (std::isalpha(static_cast<unsigned char>(ch))) ++letters;
    const auto rank = static_cast<int64_t>(shapes[t].size());
    const int64_t er = dots == std::string::npos ? 0 : rank - letters;
    if (er < 0 || (dots == std::string::npos && letters != rank)) {
      ctx.fail("term '" + term + "' does not match the rank of input " + std::to_string(t));
    }
    ell_rank = std::max(ell_rank, er);
    std::vector<int> labels;
    for (size_t i = 0; i < term.size();) {
      if (term.compare(i, 3, "...") == 0) {
        for (int64_t k = 0; k < er; ++k)
          labels.push_back(-static_cast<int>(er - k));  // resolved below
        i += 3;
        continue;
      }
      if (!std::isalpha(static_cast<unsigned char>(term[i]))) {
        ctx.fail(std::string("invalid character '") + term[i] + "' in the equation");
      }
      labels.push_back(term[i]);
      ++i;
    }
    s.terms.push_back(labels);
  }
  // Ellipsis labels, right-aligned: -j (j-th from the end) -> 1000 + ell_rank - j.
  for (auto& labels : s.terms)
    for (int& l : labels)
      if (l < 0) l = 1000 + static_cast<int>(ell_rank) + l;
  for (size_t t = 0; t < s.terms.size(); ++t) {
    std::map<int, bool> seen;
    for (size_t a = 0; a < s.terms[t].size(); ++a) {
      const int l = s.terms[t][a];
      const int64_t d = shapes[t][a];
      auto it = s.sizes.find(l);
      if (it == s.sizes.end() || it->second == 1) {
        s.sizes[l] = d;
      } else if (d != 1 && d != it->second) {
        ctx.fail("dimension mismatch for label '" + std::string(1, static_cast<char>(l)) + "'");
      }
      if (l < 1000) ++counts[l];
    }
  }
  if (explicit_out) {
    for (size_t i = 0; i < rhs.size();) {
      if (rhs.compare(i, 3, "...") == 0) {
        for (int64_t k = 0; k < ell_rank; ++k)
          s.output.push_back(1000 + static_cast<int>(k));
        i += 3;
        continue;
      }
      if (!counts.count(rhs[i])) {
        ctx.fail(std::string("output label '") + rhs[i] + "' is not in the inputs");
      }
      s.output.push_back(rhs[i]);
      ++i;
    }
  } else {
    for (int64_t k = 0; k < ell_rank; ++k)
      s.output.push_back(1000 + static_cast<int>(k));
    for (const auto& [l, c] : counts)
      if (c == 1) s.output.push_back(l);
  }
  s.labels = s.output;
  for (const auto& [l, size] : s.sizes) {
    (void)size;
    if (std::find(s.output.begin(), s.output.end(), l) == s.output.end()) s.labels.push_back(l);
  }
  return s;
}

void inferEinsum(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  std::vector<std::vector<int64_t>> shapes;
  bool known = true;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    const Shape* s = ctx.inputShape(i);
    if (s == nullptr) {
      known = false;
      break;
    }
    shapes.push_back(dimsOrUnknown(*s));
  }
  if (!known) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  // Unknown dims: parse with 1 (broadcast-neutral) and mark the result unknown.
  std::vector<std::vector<int64_t>> probe = shapes;
  for (auto& s : probe)
    for (int64_t& d : s)
      if (d < 0) d = 1;
  const EinsumSpec spec = parseEinsum(ctx, probe);
  Shape out;
  for (int l : spec.output) {
    bool unknown = false;
    for (size_t t2 = 0; t2 < spec.terms.size(); ++t2)
      for (size_t a = 0; a < spec.terms[t2].size(); ++a)
        if (spec.terms[t2][a] == l && shapes[t2][a] < 0) unknown = true;
    const int64_t sz = spec.sizes.at(l);
    out.dims.push_back(unknown && sz == 1 ? unknownDim() : Dim::known(sz));
  }
  // Keep symbolic dims when an output axis comes straight from a symbolic input axis.
  for (size_t o = 0; o < spec.output.size(); ++o) {
    if (out.dims[o].isKnown()) continue;
    for (size_t t2 = 0; t2 < spec.terms.size() && !out.dims[o].isKnown(); ++t2)
      for (size_t a = 0; a < spec.terms[t2].size(); ++a)
        if (spec.terms[t2][a] == spec.output[o]) {
          out.dims[o] = ctx.inputShape(t2)->dims[a];
          break;
        }
  }
  ctx.setOutput(0, t, out);
}

void computeEinsum(ComputeContext& ctx) {
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    shapes.push_back(ctx.input(i).dims());
  const EinsumSpec spec = parseEinsum(ctx, shapes);
  const size_t nl = spec.labels.size(), no = spec.output.size();
  std::vector<int64_t> sizes(nl);
  for (size_t i = 0; i < nl; ++i)
    sizes[i] = spec.sizes.at(spec.labels[i]);
  // Per input: stride of each label (sum over repeated axes = diagonal; 0 when broadcast).
  std::vector<std::vector<int64_t>> strides(shapes.size(), std::vector<int64_t>(nl, 0));
  for (size_t t = 0; t < shapes.size(); ++t) {
    int64_t st = 1;
    for (size_t a = shapes[t].size(); a-- > 0;) {
      const size_t li =
          std::find(spec.labels.begin(), spec.labels.end(), spec.terms[t][a]) - spec.labels.begin();
      if (shapes[t][a] != 1) strides[t][li] += st;
      st *= shapes[t][a];
    }
  }
  Tensor& Y = ctx.output(0);
  const int64_t out_total = Y.numElements();
  int64_t sum_total = 1;
  for (size_t i = no; i < nl; ++i)
    sum_total *= sizes[i];
  dispatchNumeric(Y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, T, double>;
    T* y = mutableDataAs<T>(Y);
    std::vector<const T*> in;
    for (size_t t = 0; t < shapes.size(); ++t)
      in.push_back(dataAs<T>(ctx.input(t)));
    std::vector<int64_t> idx(nl, 0), off(shapes.size(), 0);
    for (int64_t o = 0; o < out_total; ++o) {
      Acc acc = Acc(0);
      for (int64_t s = 0; s < sum_total; ++s) {
        Acc prod = Acc(1);
        for (size_t t = 0; t < in.size(); ++t) {
          if constexpr (std::is_same_v<Acc, double>) {
            prod *= toDouble(in[t][off[t]]);
          } else {
            prod = static_cast<Acc>(prod * in[t][off[t]]);
          }
        }
        acc = static_cast<Acc>(acc + prod);
        // Advance the summed labels.
        for (size_t l = nl; l-- > no;) {
          if (++idx[l] < sizes[l]) {
            for (size_t t = 0; t < in.size(); ++t)
              off[t] += strides[t][l];
            break;
          }
          for (size_t t = 0; t < in.size(); ++t)
            off[t] -= strides[t][l] * (sizes[l] - 1);
          idx[l] = 0;
        }
      }
      if constexpr (std::is_same_v<Acc, double>) {
        y[o] = fromDouble<T>(acc);
      } else {
        y[o] = acc;
      }
      for (size_t l = no; l-- > 0;) {
        if (++idx[l] < sizes[l]) {
          for (size_t t = 0; t < in.size(); ++t)
            off[t] += strides[t][l];
          break;
        }
        for (size_t t = 0; t < in.size(); ++t)
          off[t] -= strides[t][l] * (sizes[l] - 1);
        idx[l] = 0;
      }
    }
  });
}

// ================================================================= Col2Im

void inferCol2Im(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  const Shape* x = ctx.inputShape(0);
  const Tensor* image = ctx.inputValue(1);
  const Tensor* block = ctx.inputValue(2);
  Dim n = x != nullptr && x->rank() == 3 ? x->dims[0] : unknownDim();
  Dim c = unknownDim();
  if (x != nullptr && x->rank() != 3) ctx.fail("input must be 3-D [N, C*prod(block), L]");
  if (block != nullptr && x != nullptr && x->dims[1].isKnown()) {
    const auto b = toInt64Vector(ctx, *block);
    const int64_t bp = product(b, 0, b.size());
    if (bp <= 0 || x->dims[1].value % bp != 0) ctx.fail("block_shape does not divide dim 1");
    c = Dim::known(x->dims[1].value / bp);
  }
  Shape s;
  s.dims = {n, c};
  if (image != nullptr) {
    for (int64_t d : toInt64Vector(ctx, *image))
      s.dims.push_back(Dim::known(d));
    ctx.setOutput(0, t, s);
  } else if (const Shape* is = ctx.inputShape(1);
             is != nullptr && is->rank() == 1 && is->dims[0].isKnown()) {
    s.dims.resize(2 + is->dims[0].value);
    ctx.setOutput(0, t, s);
  } else {
    ctx.setOutputUnknownRank(0, t);
  }
}

void computeCol2Im(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  Tensor& Y = ctx.output(0);
  const std::vector<int64_t> image = toInt64Vector(ctx, ctx.input(1));
  const std::vector<int64_t> block = toInt64Vector(ctx, ctx.input(2));
  const size_t nd = image.size();
  Geom g = makeGeom(ctx, image, block, false);
  // The columns are laid out like im2col of the image: col2im is its adjoint.
  const int64_t batch = Y.dims()[0], channels = Y.dims()[1];
  const int64_t L = product(g.out, 0, nd);
  if (X.dims()[2] != L) ctx.fail("the number of blocks does not match image_shape");
  const int64_t isize = product(image, 0, nd), ksize = product(block, 0, nd);
  dispatchNumeric(X.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      std::vector<double> col(static_cast<size_t>(channels * ksize * L));
      std::vector<double> y(static_cast<size_t>(channels * isize));
      Geom cg = g;  // transposed roles: "input" = output grid, "output" = image
      for (int64_t n = 0; n < batch; ++n) {
        const T* x = dataAs<T>(X) + n * channels * ksize * L;
        for (size_t i = 0; i < col.size(); ++i)
          col[i] = toDouble(x[i]);
        std::fill(y.begin(), y.end(), 0.0);
        col2imAdd(col.data(), channels, g.out, image, cg, y.data());
        T* yo = mutableDataAs<T>(Y) + n * channels * isize;
        for (size_t i = 0; i < y.size(); ++i)
          yo[i] = fromDouble<T>(y[i]);
      }
    }
  });
}

}  // namespace

// Float32 conv on NCHW data for the differential test (matmul_test.cpp):
// through XNNPACK (returns false when it is unavailable or the shape is not
// 1-D/2-D) or through the portable im2col + GEMM path.
bool convF32ForTest(const float* x, const float* w, const float* bias, float* y, int64_t batch,
                    int64_t channels, int64_t out_channels, int64_t group,
                    const std::vector<int64_t>& in, const std::vector<int64_t>& kernel,
                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations,
                    const std::vector<int64_t>& pad_b, const std::vector<int64_t>& pad_e,
                    bool use_xnnpack) {
  Geom g;
  g.in = in;
  g.kernel = kernel;
  g.strides = strides;
  g.dilations = dilations;
  g.pad_b = pad_b;
  g.pad_e = pad_e;
  for (size_t i = 0; i < in.size(); ++i) {
    g.out.push_back(
        (in[i] + pad_b[i] + pad_e[i] - (kernel[i] - 1) * dilations[i] - 1) / strides[i] + 1);
  }
  if (use_xnnpack) {
    return convXnnpackF32(x, w, bias, y, batch, channels, out_channels, group, g);
  }
  convIm2col<float>(x, w, bias, y, batch, channels, out_channels, group, g);
  return true;
}

}  // namespace kernels

void registerMatmulOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 9, 13})
    r.add({"", "MatMul", v, inferMatMul, computeMatMul});
  for (int v : {1, 6, 7, 9, 11, 13})
    r.add({"", "Gemm", v, inferGemm, computeGemm});
  r.add({"", "MatMulInteger", 10, inferMatMulInteger, computeMatMulInteger});
  for (int v : {10, 21})
    r.add({"", "QLinearMatMul", v, inferQLinearMatMul, computeQLinearMatMul});
  for (int v : {1, 11, 22})
    r.add({"", "Conv", v, inferConv, computeConv});
  r.add({"", "ConvInteger", 10, inferConvInteger, computeConvInteger});
  r.add({"", "QLinearConv", 10, inferQLinearConv, computeQLinearConv});
  for (int v : {1, 11, 22})
    r.add({"", "ConvTranspose", v, inferConvTranspose, computeConvTranspose});
  for (int v : {1, 7, 10, 11, 19, 22})
    r.add({"", "AveragePool", v, inferAveragePool, computeAveragePool});
  for (int v : {1, 8, 10, 11, 12, 22})
    r.add({"", "MaxPool", v, inferMaxPool, computeMaxPool});
  for (int v : {1, 2, 11, 18, 22})
    r.add({"", "LpPool", v, inferLpPool, computeLpPool});
  for (int v : {1, 22}) {
    r.add({"", "GlobalAveragePool", v, inferGlobalPool, computeGlobalAveragePool});
    r.add({"", "GlobalMaxPool", v, inferGlobalPool, computeGlobalMaxPool});
  }
  for (int v : {1, 2, 22})
    r.add({"", "GlobalLpPool", v, inferGlobalPool, computeGlobalLpPool});
  for (int v : {9, 11, 22})
    r.add({"", "MaxUnpool", v, inferMaxUnpool, computeMaxUnpool});
  for (int v : {19, 22})
    r.add({"", "DeformConv", v, inferDeformConv, computeDeformConv});
  r.add({"", "CausalConvWithState", 27, inferCausalConv, computeCausalConv});
  r.add({"", "Einsum", 12, inferEinsum, computeEinsum});
  r.add({"", "Col2Im", 18, inferCol2Im, computeCol2Im});
}

}  // namespace onnxfold

// The portable float32 GEMM (see gemm.h): a blocked Highway kernel and its
// scalar reference, written with Highway so one source gives SSE/AVX natively
// and SIMD128 in wasm.
#include "kernels/gemm.h"

#include <hwy/highway.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace onnxfold {
namespace kernels {

namespace hn = hwy::HWY_NAMESPACE;

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

}  // namespace kernels
}  // namespace onnxfold

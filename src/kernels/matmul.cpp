// matmul op family: MatMul and Gemm. See op_registry.h for the infer()/compute()
// contract.
//
// Float32 goes through XNNPACK's fully-connected operator natively
// (xnnpack.h), else through the portable GEMM of gemm.h (always in wasm);
// other types use the generic templated GEMM. Half and bfloat16 are computed
// in float.
#include "kernels/matmul.h"

#include <string>
#include <vector>

#include "kernels/common.h"
#include "kernels/gemm.h"
#include "kernels/op_helpers.h"
#include "kernels/xnnpack.h"

namespace onnxfold {
namespace kernels {

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

namespace {

std::vector<float> transposed(const float* src, int64_t rows, int64_t cols) {
  std::vector<float> t(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      t[c * rows + r] = src[r * cols + c];
  return t;
}

// ================================================================= MatMul

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
    if constexpr (std::is_same_v<T, float> || kIsHalfLike<T>) {
      runInFloat<T>({&A, &B}, Y,
                    [&](const float* const* in, float* y) { matmulF32(p, in[0], in[1], y); });
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
    if (a != nullptr && a->rank() == 2) s.dims[0] = a->dims[ctx.attrInt("transA") ? 1 : 0];
    if (b != nullptr && b->rank() == 2) s.dims[1] = b->dims[ctx.attrInt("transB") ? 0 : 1];
    ctx.setOutput(0, t, s);
    return;
  }
  if (a->rank() != 2 || b->rank() != 2) ctx.fail("A and B must be 2-D");
  const bool ta = ctx.attrInt("transA") != 0, tb = ctx.attrInt("transB") != 0;
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
  const bool ta = ctx.attrInt("transA") != 0, tb = ctx.attrInt("transB") != 0;
  const float alpha = ctx.attrFloat("alpha"), beta = ctx.attrFloat("beta");
  const int64_t m = Y.dims()[0], n = Y.dims()[1];
  const int64_t k = A.dims()[ta ? 0 : 1];
  std::vector<int64_t> cdims = C ? C->dims() : std::vector<int64_t>{};
  dispatchNumeric(A.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, float> || kIsHalfLike<T>) {
      runInFloat<T>({&A, &B, C}, Y, [&](const float* const* in, float* y) {
        gemmFloatPath(ctx, in[0], in[1], in[2], cdims, y, m, n, k, ta, tb, alpha, beta);
      });
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
            s = elementwise::wrapAdd(s, elementwise::wrapMul(av, bv));
          }
          T out;
          if constexpr (std::is_integral_v<T>) {
            // Integers wrap; scaled values saturate (out-of-range casts are UB).
            out = alpha == 1.0f ? s : fromDouble<T>(alpha * static_cast<double>(s));
            if (c != nullptr) {
              const T cv = c[i * cs[0] + j * cs[1]];
              out = elementwise::wrapAdd(out, beta == 1.0f ? cv : fromDouble<T>(beta * cv));
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

}  // namespace
}  // namespace kernels

void registerMatmulOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {1, 9, 13})
    r.add({"", "MatMul", v, inferMatMul, computeMatMul});
  for (int v : {1, 6, 7, 9, 11, 13})
    r.add({"", "Gemm", v, inferGemm, computeGemm});
}

}  // namespace onnxfold

// Kernel benchmark: the CPU kernels reached through the op registry
// (evaluateNode = infer() + output allocation + compute()), timed with
// std::chrono so the same source builds natively and for wasm (node).
//
//   native: build/native/onnxfold_kernel_bench [--filter=SUB] [--min-time=SEC] [--reps=N]
//   wasm:   node build/wasm/onnxfold_kernel_bench.cjs [same flags]
//
// Each case: one warm-up call, then at least --reps timed calls (default 5) and
// more until --min-time seconds (default 1) are spent, at most --max-reps (50).
// The median time per call is reported (the minimum too; the machine may be
// loaded), with GB/s over the bytes read + written, or GFLOP/s (2*M*N*K for
// MatMul/Gemm/Conv). Next to it: a memcpy moving the same number of bytes
// (half read, half written) between preallocated, already-touched buffers,
// measured right after the case in the same run, as the machine's bandwidth
// reference at that moment. A second timing calls the kernel's compute()
// alone into a reused output, which separates the kernel from evaluateNode's
// per-call cost of allocating a zeroed output (large on VMs where fresh
// pages fault slowly). Each case's output is spot-checked against a scalar
// reference, so a broken kernel is not timed as a fast one.
//
// Built only as the onnxfold_kernel_bench target (which defines
// ONNXFOLD_KERNEL_BENCH); the Google-Benchmark target onnxfold_bench globs
// bench/*_bench.cpp too and sees an empty translation unit.
#ifdef ONNXFOLD_KERNEL_BENCH

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/graph_builder.h"
#include "ir/tensor.h"
#include "kernels/common.h"
#include "kernels/op_registry.h"
#include "kernels/xnnpack.h"

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
// CPU time of the node process (user + system, all of node's threads), in ms.
EM_JS(double, onnxfoldBenchCpuMs, (), {
  var u = process.cpuUsage();
  return (u.user + u.system) / 1000;
});
#else
#include <time.h>
#endif

namespace onnxfold {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kOpset = 21;

struct Options {
  double min_time = 1.0;
  int min_reps = 5;
  int max_reps = 50;
};

// Medians (and minima) of wall-clock and CPU time per call. On a loaded machine the
// process may get a fraction of a core, so wall time overstates the kernel's cost;
// CPU time (this thread natively, the node process in wasm) does not count the
// time spent waiting for a core.
struct Stats {
  double median_ms = 0, min_ms = 0;          // wall clock (std::chrono::steady_clock)
  double cpu_median_ms = 0, cpu_min_ms = 0;  // CPU time
  int reps = 0;
};

double cpuNowMs() {
#ifdef __EMSCRIPTEN__
  return onnxfoldBenchCpuMs();
#else
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
#endif
}

double median(std::vector<double>& v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

volatile uint64_t g_sink = 0;  // keeps results observable
std::string g_filter;          // --filter: substring of the case name or op type

// True when the case is selected; cases are built (inputs allocated) only then.
bool want(const std::string& name, const std::string& op) {
  return g_filter.empty() || name.find(g_filter) != std::string::npos ||
         op.find(g_filter) != std::string::npos;
}

template <class F>
Stats timeIt(const Options& o, F&& f) {
  f();  // warm-up (first touch of the output pages, XNNPACK init, caches)
  std::vector<double> ms, cpu;
  const auto start = Clock::now();
  for (;;) {
    const double spent = std::chrono::duration<double>(Clock::now() - start).count();
    if (static_cast<int>(ms.size()) >= o.min_reps &&
        (spent >= o.min_time || static_cast<int>(ms.size()) >= o.max_reps))
      break;
    const double c0 = cpuNowMs();
    const auto t0 = Clock::now();
    f();
    const auto t1 = Clock::now();
    const double c1 = cpuNowMs();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    cpu.push_back(c1 - c0);
  }
  Stats s;
  s.reps = static_cast<int>(ms.size());
  s.median_ms = median(ms);
  s.min_ms = ms.front();
  s.cpu_median_ms = median(cpu);
  s.cpu_min_ms = cpu.front();
  return s;
}

// --- memcpy reference -------------------------------------------------------------------------

class MemcpyRef {
 public:
  // GB/s of a memcpy moving `moved` bytes in total (moved/2 read + moved/2 written).
  double gbps(const Options& o, double moved) {
    const size_t n = static_cast<size_t>(moved / 2) / 64 * 64 + 64;
    if (n > cap_) {
      src_.reset();
      dst_.reset();
      src_.reset(new uint8_t[n]);
      dst_.reset(new uint8_t[n]);
      std::memset(src_.get(), 0x5a, n);
      std::memset(dst_.get(), 0, n);
      cap_ = n;
    }
    uint8_t* d = dst_.get();
    const uint8_t* s = src_.get();
    const Stats st = timeIt(o, [&] {
      std::memcpy(d, s, n);
      g_sink = g_sink + d[n / 3];
    });
    return 2.0 * static_cast<double>(n) / (st.cpu_median_ms * 1e-3) / 1e9;
  }

 private:
  std::unique_ptr<uint8_t[]> src_, dst_;
  size_t cap_ = 0;
};

// --- inputs -----------------------------------------------------------------------------------

uint32_t g_rng = 12345;
uint32_t nextRand() {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 17;
  g_rng ^= g_rng << 5;
  return g_rng;
}

Tensor randomFloats(std::vector<int64_t> dims, float lo = -1.f, float hi = 1.f) {
  Tensor t(DataType::kFloat, std::move(dims));
  float* p = reinterpret_cast<float*>(t.mutableBytes());
  const int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i)
    p[i] = lo + (hi - lo) * static_cast<float>(nextRand() >> 8) * (1.0f / 16777216.0f);
  return t;
}

Tensor randomInt8(std::vector<int64_t> dims) {
  Tensor t(DataType::kInt8, std::move(dims));
  uint8_t* p = t.mutableBytes();
  const int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i)
    p[i] = static_cast<uint8_t>(nextRand() >> 24);
  return t;
}

Tensor scalarFloat(float v) {
  Tensor t(DataType::kFloat, {});
  std::memcpy(t.mutableBytes(), &v, sizeof v);
  return t;
}

Tensor scalarInt8(int8_t v) {
  Tensor t(DataType::kInt8, {});
  std::memcpy(t.mutableBytes(), &v, sizeof v);
  return t;
}

template <class T>
const T* dataOf(const Tensor& t) {
  return reinterpret_cast<const T*>(t.bytes());
}

int64_t bytesOf(const Tensor& t) {
  return static_cast<int64_t>(t.byteSize());
}

std::string dimsStr(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

bool near(double got, double want, double rel = 1e-3, double abs = 1e-4) {
  return std::fabs(got - want) <= abs + rel * std::fabs(want);
}

// --- cases ------------------------------------------------------------------------------------

struct Case {
  std::string name;
  std::string shape;
  std::string op;
  std::vector<Attribute> attrs;
  std::vector<Tensor> inputs;
  double flops = 0;  // 0: a bandwidth case (GB/s)
  // Spot check of the first output; returns "" when fine, else a description.
  std::function<std::string(const std::vector<Tensor>& ins, const Tensor& out)> check;
};

struct Row {
  std::string name, shape;
  Stats st;          // evaluateNode
  Stats compute_st;  // the kernel's compute() alone, into a preallocated output
  double moved = 0, flops = 0, memcpy_gbps = 0;
  std::string check;
};

Row runCase(const Options& o, MemcpyRef& ref, Case c) {
  Graph g;
  std::vector<Value*> vals;
  std::vector<const Tensor*> ptrs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    vals.push_back(g.addInput(GraphBuilder::key(), "in" + std::to_string(i),
                              Type::tensor(c.inputs[i].dtype())));
    ptrs.push_back(&c.inputs[i]);
  }
  Node* n = g.addNode(GraphBuilder::key(), c.op, vals, 1);
  for (Attribute& a : c.attrs)
    n->setAttr(std::move(a));

  Row r;
  r.name = c.name;
  r.shape = c.shape;
  r.flops = c.flops;
  {
    std::vector<Tensor> out = evaluateNode(*n, kOpset, ptrs);
    r.check = c.check ? c.check(c.inputs, out.at(0)) : "";
    if (r.check.empty()) r.check = "ok";
    r.moved = static_cast<double>(bytesOf(out.at(0)));
  }
  for (const Tensor& t : c.inputs)
    r.moved += static_cast<double>(bytesOf(t));
  r.st = timeIt(o, [&] {
    std::vector<Tensor> out = evaluateNode(*n, kOpset, ptrs);
    g_sink = g_sink + out[0].bytes()[out[0].byteSize() / 2];
  });
  {
    // compute() alone: no infer(), no output allocation (the output is reused; inputs are
    // already 64-byte aligned, so evaluateNode's aligned() copies are no-ops here too).
    const OpEntry* e = OpRegistry::instance().find("", c.op, kOpset);
    std::vector<Tensor> first = evaluateNode(*n, kOpset, ptrs);
    Tensor out(first[0].dtype(), first[0].dims());
    first.clear();
    ComputeContext cc(*n, kOpset);
    cc.inputs = ptrs;
    cc.outputs = {&out};
    r.compute_st = timeIt(o, [&] {
      e->compute(cc);
      g_sink = g_sink + out.bytes()[out.byteSize() / 2];
    });
  }
  r.memcpy_gbps = ref.gbps(o, r.moved);
  return r;
}

std::string fail(const char* what, size_t at, double got, double want) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "MISMATCH %s @%zu: %g vs %g", what, at, got, want);
  return buf;
}

// A few element indices spread over [0, n).
std::vector<size_t> probes(size_t n) {
  std::vector<size_t> p{0, n - 1, n / 2, n / 3, 7 * n / 11};
  for (int i = 0; i < 16; ++i)
    p.push_back(nextRand() % n);
  return p;
}

std::vector<Case> transposeCases() {
  std::vector<Case> cs;
  if (want("Transpose 2-D", "Transpose")) {
    Case c;
    c.name = "Transpose 2-D";
    c.shape = "[2048,3000] perm [1,0]";
    c.op = "Transpose";
    c.attrs.push_back(Attribute::makeInts("perm", {1, 0}));
    c.inputs.push_back(randomFloats({2048, 3000}));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      const int64_t R = 2048, C = 3000;
      if (out.dims() != std::vector<int64_t>{C, R}) return "MISMATCH shape " + dimsStr(out.dims());
      const float* x = dataOf<float>(in[0]);
      const float* y = dataOf<float>(out);
      for (size_t k : probes(R * C)) {
        const size_t i = k / C, j = k % C;
        if (y[j * R + i] != x[k]) return fail("transpose", k, y[j * R + i], x[k]);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  if (want("Transpose NCHW->NHWC", "Transpose")) {
    Case c;
    c.name = "Transpose NCHW->NHWC";
    c.shape = "[8,64,56,56] perm [0,2,3,1]";
    c.op = "Transpose";
    c.attrs.push_back(Attribute::makeInts("perm", {0, 2, 3, 1}));
    c.inputs.push_back(randomFloats({8, 64, 56, 56}));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      const size_t N = 8, C = 64, H = 56, W = 56;
      if (out.dims() != std::vector<int64_t>{8, 56, 56, 64}) return "MISMATCH shape";
      const float* x = dataOf<float>(in[0]);
      const float* y = dataOf<float>(out);
      for (size_t k : probes(N * C * H * W)) {
        const size_t w = k % W, h = k / W % H, c2 = k / (W * H) % C, n = k / (W * H * C);
        const size_t o = ((n * H + h) * W + w) * C + c2;
        if (y[o] != x[k]) return fail("nhwc", k, y[o], x[k]);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  return cs;
}

std::vector<Case> addCases() {
  std::vector<Case> cs;
  if (want("Add broadcast", "Add")) {
    Case c;
    c.name = "Add broadcast";
    c.shape = "[64,256,56] + [256,1]";
    c.op = "Add";
    c.inputs.push_back(randomFloats({64, 256, 56}));
    c.inputs.push_back(randomFloats({256, 1}));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      if (out.dims() != std::vector<int64_t>{64, 256, 56}) return "MISMATCH shape";
      const float* a = dataOf<float>(in[0]);
      const float* b = dataOf<float>(in[1]);
      const float* y = dataOf<float>(out);
      for (size_t k : probes(64 * 256 * 56)) {
        const float want = a[k] + b[k / 56 % 256];
        if (y[k] != want) return fail("add", k, y[k], want);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  if (want("Add same shape", "Add")) {
    Case c;
    c.name = "Add same shape";
    c.shape = "[16M] + [16M]";
    c.op = "Add";
    c.inputs.push_back(randomFloats({16 << 20}));
    c.inputs.push_back(randomFloats({16 << 20}));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      const float* a = dataOf<float>(in[0]);
      const float* b = dataOf<float>(in[1]);
      const float* y = dataOf<float>(out);
      for (size_t k : probes(16 << 20))
        if (y[k] != a[k] + b[k]) return fail("add", k, y[k], a[k] + b[k]);
      return "";
    };
    cs.push_back(std::move(c));
  }
  return cs;
}

std::vector<Case> castCases() {
  std::vector<Case> cs;
  static constexpr int64_t n = 16 << 20;
  if (want("Cast f32->f16", "Cast")) {
    Case c;
    c.name = "Cast f32->f16";
    c.shape = "[16M]";
    c.op = "Cast";
    c.attrs.push_back(Attribute::makeInt("to", static_cast<int64_t>(DataType::kFloat16)));
    c.inputs.push_back(randomFloats({n}, -100.f, 100.f));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      if (out.dtype() != DataType::kFloat16) return "MISMATCH dtype";
      const float* x = dataOf<float>(in[0]);
      const uint16_t* y = dataOf<uint16_t>(out);
      for (size_t k : probes(n)) {
        const float got = kernels::halfToFloat(y[k]);
        if (!near(got, x[k], 1e-3, 1e-4)) return fail("f16", k, got, x[k]);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  if (want("Cast f16->f32", "Cast")) {
    // Input: float16 bits of random values (made with the scalar helper).
    Tensor h(DataType::kFloat16, {n});
    auto* hp = reinterpret_cast<uint16_t*>(h.mutableBytes());
    for (int64_t i = 0; i < n; ++i)
      hp[i] = kernels::floatToHalf(
          static_cast<float>(static_cast<int32_t>(nextRand() % 20001) - 10000) * 0.01f);
    Case c;
    c.name = "Cast f16->f32";
    c.shape = "[16M]";
    c.op = "Cast";
    c.attrs.push_back(Attribute::makeInt("to", static_cast<int64_t>(DataType::kFloat)));
    c.inputs.push_back(std::move(h));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      const uint16_t* x = dataOf<uint16_t>(in[0]);
      const float* y = dataOf<float>(out);
      for (size_t k : probes(n)) {
        const float want = kernels::halfToFloat(x[k]);
        if (y[k] != want) return fail("f32", k, y[k], want);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  if (want("QuantizeLinear f32->i8", "QuantizeLinear")) {
    Case c;
    c.name = "QuantizeLinear f32->i8";
    c.shape = "[16M], scale 0.05, zp -3";
    c.op = "QuantizeLinear";
    c.inputs.push_back(randomFloats({n}, -8.f, 8.f));
    c.inputs.push_back(scalarFloat(0.05f));
    c.inputs.push_back(scalarInt8(-3));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      if (out.dtype() != DataType::kInt8) return "MISMATCH dtype";
      const float* x = dataOf<float>(in[0]);
      const int8_t* y = dataOf<int8_t>(out);
      for (size_t k : probes(n)) {
        const float q = std::nearbyint(x[k] / 0.05f) - 3.f;
        const int want = static_cast<int>(std::min(127.f, std::max(-128.f, q)));
        // Allow 1 for x exactly at a rounding boundary (x/scale vs x*(1/scale)).
        if (std::abs(y[k] - want) > 1) return fail("q", k, y[k], want);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  if (want("DequantizeLinear i8->f32 per-axis", "DequantizeLinear")) {
    Case c;
    c.name = "DequantizeLinear i8->f32 per-axis";
    c.shape = "[64,512,512] axis 1, scale/zp [512]";
    c.op = "DequantizeLinear";
    c.attrs.push_back(Attribute::makeInt("axis", 1));
    c.inputs.push_back(randomInt8({64, 512, 512}));
    c.inputs.push_back(randomFloats({512}, 0.01f, 0.1f));
    c.inputs.push_back(randomInt8({512}));
    c.check = [](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      const int8_t* x = dataOf<int8_t>(in[0]);
      const float* s = dataOf<float>(in[1]);
      const int8_t* zp = dataOf<int8_t>(in[2]);
      const float* y = dataOf<float>(out);
      for (size_t k : probes(64 * 512 * 512)) {
        const size_t ch = k / 512 % 512;
        const float want = static_cast<float>(x[k] - zp[ch]) * s[ch];
        if (!near(y[k], want, 1e-6, 0)) return fail("dq", k, y[k], want);
      }
      return "";
    };
    cs.push_back(std::move(c));
  }
  return cs;
}

// C[M,N] = A[M,K] * B (B is [K,N], or [N,K] when b_nk) (+ bias[N]); checks sampled entries.
std::string checkGemm(const float* a, const float* b, const float* bias, const float* y, size_t m,
                      size_t k, size_t n, bool b_nk) {
  for (size_t p : probes(m * n)) {
    const size_t i = p / n, j = p % n;
    double want = bias ? bias[j] : 0.0;
    for (size_t t = 0; t < k; ++t)
      want += static_cast<double>(a[i * k + t]) * (b_nk ? b[j * k + t] : b[t * n + j]);
    if (!near(y[p], want, 1e-3, 1e-3)) return fail("gemm", p, y[p], want);
  }
  return "";
}

std::vector<Case> matmulCases() {
  std::vector<Case> cs;
  struct Mm {
    int64_t m, k, n;
  };
  for (const Mm s : {Mm{512, 512, 512}, Mm{64, 1024, 1024}}) {
    if (!want("MatMul", "MatMul")) break;
    Case c;
    c.name = "MatMul";
    c.shape = dimsStr({s.m, s.k}) + " @ " + dimsStr({s.k, s.n});
    c.op = "MatMul";
    c.inputs.push_back(randomFloats({s.m, s.k}));
    c.inputs.push_back(randomFloats({s.k, s.n}));
    c.flops = 2.0 * s.m * s.n * s.k;
    c.check = [s](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      if (out.dims() != std::vector<int64_t>{s.m, s.n}) return "MISMATCH shape";
      return checkGemm(dataOf<float>(in[0]), dataOf<float>(in[1]), nullptr, dataOf<float>(out), s.m,
                       s.k, s.n, false);
    };
    cs.push_back(std::move(c));
  }
  if (want("Gemm transB + bias", "Gemm")) {
    const int64_t m = 64, k = 1024, n = 1024;
    Case c;
    c.name = "Gemm transB + bias";
    c.shape = "[64,1024] @ [1024,1024]^T + [1024]";
    c.op = "Gemm";
    c.attrs.push_back(Attribute::makeInt("transB", 1));
    c.inputs.push_back(randomFloats({m, k}));
    c.inputs.push_back(randomFloats({n, k}));
    c.inputs.push_back(randomFloats({n}));
    c.flops = 2.0 * m * n * k;
    c.check = [=](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
      if (out.dims() != std::vector<int64_t>{m, n}) return "MISMATCH shape";
      return checkGemm(dataOf<float>(in[0]), dataOf<float>(in[1]), dataOf<float>(in[2]),
                       dataOf<float>(out), m, k, n, true);
    };
    cs.push_back(std::move(c));
  }
  return cs;
}

// NCHW conv, stride 1, symmetric pad, no bias.
Case convCase(std::string name, int64_t cin, int64_t hw, int64_t cout, int64_t ksz, int64_t pad,
              int64_t group) {
  Case c;
  c.name = std::move(name);
  const int64_t cin_g = cin / group;
  c.shape = dimsStr({1, cin, hw, hw}) + " * " + dimsStr({cout, cin_g, ksz, ksz}) +
            (pad ? " pad " + std::to_string(pad) : "") +
            (group > 1 ? " group " + std::to_string(group) : "");
  c.op = "Conv";
  c.attrs.push_back(Attribute::makeInts("kernel_shape", {ksz, ksz}));
  c.attrs.push_back(Attribute::makeInts("pads", {pad, pad, pad, pad}));
  if (group > 1) c.attrs.push_back(Attribute::makeInt("group", group));
  c.inputs.push_back(randomFloats({1, cin, hw, hw}));
  c.inputs.push_back(randomFloats({cout, cin_g, ksz, ksz}));
  const int64_t ohw = hw + 2 * pad - ksz + 1;
  c.flops = 2.0 * cout * ohw * ohw * cin_g * ksz * ksz;
  c.check = [=](const std::vector<Tensor>& in, const Tensor& out) -> std::string {
    if (out.dims() != std::vector<int64_t>{1, cout, ohw, ohw})
      return "MISMATCH shape " + dimsStr(out.dims());
    const float* x = dataOf<float>(in[0]);
    const float* w = dataOf<float>(in[1]);
    const float* y = dataOf<float>(out);
    const int64_t cout_g = cout / group;
    for (size_t p : probes(static_cast<size_t>(cout * ohw * ohw))) {
      const int64_t oc = static_cast<int64_t>(p) / (ohw * ohw),
                    oy = static_cast<int64_t>(p) / ohw % ohw, ox = static_cast<int64_t>(p) % ohw,
                    gi = oc / cout_g;
      double want = 0;
      for (int64_t ic = 0; ic < cin_g; ++ic)
        for (int64_t ky = 0; ky < ksz; ++ky)
          for (int64_t kx = 0; kx < ksz; ++kx) {
            const int64_t iy = oy + ky - pad, ix = ox + kx - pad;
            if (iy < 0 || iy >= hw || ix < 0 || ix >= hw) continue;
            want += static_cast<double>(x[((gi * cin_g + ic) * hw + iy) * hw + ix]) *
                    w[((oc * cin_g + ic) * ksz + ky) * ksz + kx];
          }
      if (!near(y[p], want, 1e-3, 1e-3)) return fail("conv", p, y[p], want);
    }
    return "";
  };
  return c;
}

std::vector<Case> convCases() {
  std::vector<Case> cs;
  if (want("Conv 3x3", "Conv")) cs.push_back(convCase("Conv 3x3", 64, 56, 64, 3, 1, 1));
  if (want("Conv 3x3 depthwise", "Conv"))
    cs.push_back(convCase("Conv 3x3 depthwise", 64, 56, 64, 3, 1, 64));
  if (want("Conv 1x1", "Conv")) cs.push_back(convCase("Conv 1x1", 256, 28, 512, 1, 0, 1));
  return cs;
}

std::string platform() {
  std::string s;
#ifdef __EMSCRIPTEN__
  s = "wasm32 (emscripten " + std::to_string(__EMSCRIPTEN_major__) + "." +
      std::to_string(__EMSCRIPTEN_minor__) + "." + std::to_string(__EMSCRIPTEN_tiny__) + ")";
#ifdef __wasm_simd128__
  s += ", simd128";
#endif
#else
  s = "native";
#if defined(__AVX2__)
  s += ", AVX2";
#elif defined(__SSE4_2__)
  s += ", SSE4.2";
#elif defined(__SSSE3__)
  s += ", SSSE3";
#endif
#endif
#if defined(__clang__)
  s += ", clang " __clang_version__;
#elif defined(__GNUC__)
  s += ", gcc " __VERSION__;
#endif
  while (!s.empty() && s.back() == ' ')
    s.pop_back();  // __clang_version__ ends with a space
  s += xnn::available() ? ", XNNPACK on" : ", XNNPACK off";
  return s;
}

int run(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&](const char* key) -> const char* {
      const size_t len = std::strlen(key);
      return a.compare(0, len, key) == 0 ? a.c_str() + len : nullptr;
    };
    if (const char* v = val("--filter=")) {
      g_filter = v;
    } else if (const char* v = val("--min-time=")) {
      o.min_time = std::atof(v);
    } else if (const char* v = val("--reps=")) {
      o.min_reps = std::max(1, std::atoi(v));
    } else if (const char* v = val("--max-reps=")) {
      o.max_reps = std::max(1, std::atoi(v));
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--filter=SUBSTRING] [--min-time=SEC] [--reps=MIN_REPS] [--max-reps=N]\n",
          argv[0]);
      return a == "--help" || a == "-h" ? 0 : 2;
    }
  }
  o.max_reps = std::max(o.max_reps, o.min_reps);

  std::printf("onnxfold kernel benchmark: %s\n", platform().c_str());
  std::printf(
      "evaluateNode (infer + output allocation + compute), opset %lld, single thread; "
      "median of >= %d runs after a warm-up (>= %.1f s of runs per timing)\n\n",
      static_cast<long long>(kOpset), o.min_reps, o.min_time);
  std::printf(
      "| case | shape | ms | wall ms | GB/s or GFLOP/s | compute() ms | compute() GB/s or "
      "GFLOP/s | memcpy GB/s | check |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  std::fflush(stdout);

  MemcpyRef ref;
  bool all_ok = true;
  using Maker = std::vector<Case> (*)();
  for (Maker make : {transposeCases, addCases, castCases, matmulCases, convCases}) {
    // Build a family's inputs only when one of its cases is selected.
    std::vector<Case> cs = make();
    for (Case& c : cs) {
      const std::string name = c.name, shape = c.shape;
      Row r;
      try {
        r = runCase(o, ref, std::move(c));
      } catch (const std::exception& e) {
        std::printf("| %s | %s | error: %s | | | | | | |\n", name.c_str(), shape.c_str(), e.what());
        all_ok = false;
        continue;
      }
      auto throughput = [&](double ms) {
        char tp[64];
        if (r.flops > 0)
          std::snprintf(tp, sizeof tp, "%.2f GFLOP/s", r.flops / (ms * 1e-3) / 1e9);
        else
          std::snprintf(tp, sizeof tp, "%.2f GB/s", r.moved / (ms * 1e-3) / 1e9);
        return std::string(tp);
      };
      std::printf("| %s | %s | %.3f | %.3f | %s | %.3f | %s | %.2f | %s |\n", r.name.c_str(),
                  r.shape.c_str(), r.st.cpu_median_ms, r.st.median_ms,
                  throughput(r.st.cpu_median_ms).c_str(), r.compute_st.cpu_median_ms,
                  throughput(r.compute_st.cpu_median_ms).c_str(), r.memcpy_gbps, r.check.c_str());
      std::fflush(stdout);
      if (r.check != "ok") all_ok = false;
    }
  }
  std::printf(
      "\nms = median CPU time of one evaluateNode call (infer + zeroed output allocation + "
      "compute); wall ms = its median wall-clock time; compute() = the kernel alone into a "
      "reused output (median CPU time). GB/s = (input + output bytes) / time; GFLOP/s = "
      "2*M*N*K / time. memcpy GB/s = memcpy moving the same number of bytes (half read, half "
      "written, warm buffers), median CPU time, measured right after each case.\n");
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace onnxfold

int main(int argc, char** argv) {
  try {
    return onnxfold::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnxfold_kernel_bench: %s\n", e.what());
    return 1;
  }
}

#endif  // ONNXFOLD_KERNEL_BENCH

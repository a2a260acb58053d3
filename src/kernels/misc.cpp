// misc op family: the losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss),
// Det, the random generators (inference only: they are never folded), the
// string ops (StringNormalizer, StringConcat, StringSplit, RegexFullMatch),
// TfIdfVectorizer, the ai.onnx.ml ops used by the node tests (LabelEncoder,
// ArrayFeatureExtractor, Binarizer, TreeEnsemble) and the training optimizers
// of ai.onnx.preview.training (Adagrad, Adam, Momentum).
// See op_registry.h for the infer()/compute() contract.
//
// Ops whose output shape depends on input contents (StringNormalizer,
// StringSplit) compute their result inside infer() when the input is known
// and hand it over with setOutputValue(), so shapes are static exactly when
// the values are. Float math is done in double and rounded once.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/common.h"

namespace onnxfold {
namespace kernels {
namespace {

void requireType(const InferContext& ctx, size_t i, bool (*ok)(DataType), const char* what) {
  const DataType t = ctx.inputDtype(i);
  if (t != DataType::kUndefined && !ok(t)) {
    ctx.unsupported("input " + std::to_string(i) + " has unsupported type " +
                    std::string(dataTypeName(t)) + " (expected " + what + ")");
  }
}

bool isStringType(DataType t) {
  return t == DataType::kString;
}

// Elements of any numeric tensor as double (reads through memcpy: attribute

// Integer elements (any integer storage) as int64.
std::vector<int64_t> readInts(const OpContext& ctx, const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numElements()));
  const bool ok = dispatchNumeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<int64_t>(t.at<T>(i));
    } else {
      ctx.fail("expected an integer tensor, got " + std::string(dataTypeName(t.dtype())));
    }
  });
  if (!ok) ctx.fail("expected an integer tensor, got " + std::string(dataTypeName(t.dtype())));
  return v;
}

std::vector<std::string> attrStrings(const OpContext& ctx, std::string_view name) {
  const Attribute* a = ctx.attr(name);
  return a != nullptr ? a->strings : std::vector<std::string>{};
}

const Tensor* attrTensor(const OpContext& ctx, std::string_view name) {
  const Attribute* a = ctx.attr(name);
  return a != nullptr && a->type == AttrType::kTensor ? &a->t : nullptr;
}

void setSameShape(InferContext& ctx, size_t out, DataType t, size_t in) {
  if (const Shape* s = ctx.inputShape(in)) {
    ctx.setOutput(out, t, *s);
  } else {
    ctx.setOutputUnknownRank(out, t);
  }
}

DataType dtypeAttr(const OpContext& ctx, const char* name, DataType dflt) {
  if (!ctx.hasAttr(name)) return dflt;
  const int64_t v = ctx.attrInt(name, 0);
  if (!isKnownDataType(static_cast<int32_t>(v))) ctx.fail(std::string("invalid ") + name);
  return static_cast<DataType>(v);
}

// ================================================================= losses

// Shared by NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: input
// [N, C, d1..dk], target [N, d1..dk]; the loss is [N, d1..dk] or a scalar.
void inferLoss(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = ctx.inputDtype(0);
  const std::string reduction = ctx.attrString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    ctx.fail("invalid reduction '" + reduction + "'");
  }
  const Shape* x = ctx.inputShape(0);
  const Shape* target = ctx.inputShape(1);
  if (x != nullptr && x->rank() < 2) ctx.fail("input must have rank >= 2 ([N, C, ...])");
  if (x != nullptr && target != nullptr && target->rank() + 1 != x->rank()) {
    ctx.fail("target must have rank one less than input");
  }
  if (reduction == "none") {
    if (target != nullptr) {
      ctx.setOutput(0, t, *target);
    } else if (x != nullptr) {
      Shape s = *x;
      s.dims.erase(s.dims.begin() + 1);
      ctx.setOutput(0, t, std::move(s));
    } else {
      ctx.setOutputUnknownRank(0, t);
    }
  } else {
    ctx.setOutput(0, t, Shape{});
  }
  // SoftmaxCrossEntropyLoss's optional log_prob: the input's shape.
  if (ctx.numOutputs() > 1) setSameShape(ctx, 1, t, 0);
}

// Loss from log-probabilities `logp` laid out [N, C, D].
std::vector<double> nllLoss(const OpContext& ctx, const std::vector<double>& logp,
                            const std::vector<int64_t>& target, const Tensor* weight_t, int64_t N,
                            int64_t C, int64_t D, const std::string& reduction) {
  const bool has_ii = ctx.hasAttr("ignore_index");
  const int64_t ii = ctx.attrInt("ignore_index", 0);
  std::vector<double> weight;
  if (weight_t != nullptr) {
    weight = readAll(*weight_t);
    if (static_cast<int64_t>(weight.size()) != C) ctx.fail("weight must have C elements");
  }
  std::vector<double> loss(static_cast<size_t>(N * D));
  double wsum = 0, lsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const auto i = static_cast<size_t>(n * D + d);
      const int64_t c = target[i];
      if (has_ii && c == ii) {
        loss[i] = 0;
        continue;
      }
      if (c < 0 || c >= C) {
        ctx.fail("target " + std::to_string(c) + " is out of range [0, " + std::to_string(C) + ")");
      }
      const double w = weight.empty() ? 1.0 : weight[static_cast<size_t>(c)];
      loss[i] = -logp[static_cast<size_t>((n * C + c) * D + d)] * w;
      wsum += w;
      lsum += loss[i];
    }
  }
  if (reduction == "none") return loss;
  if (reduction == "sum") return {lsum};
  // mean: weighted by the gathered weights (ignored entries count 0).
  return {lsum / wsum};
}

void computeNll(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t N = x.dims()[0], C = x.dims()[1];
  const int64_t D = product(x.dims(), 2, x.rank());
  const std::vector<int64_t> target = readInts(ctx, ctx.input(1));
  if (static_cast<int64_t>(target.size()) != N * D) ctx.fail("target shape mismatch");
  writeAll(ctx.output(0),
           nllLoss(ctx, readAll(x), target, ctx.hasInput(2) ? &ctx.input(2) : nullptr, N, C, D,
                   ctx.attrString("reduction", "mean")));
}

void computeSce(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t N = x.dims()[0], C = x.dims()[1];
  const int64_t D = product(x.dims(), 2, x.rank());
  const std::vector<int64_t> target = readInts(ctx, ctx.input(1));
  if (static_cast<int64_t>(target.size()) != N * D) ctx.fail("target shape mismatch");
  // log_softmax over the class axis.
  std::vector<double> v = readAll(x);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t c = 0; c < C; ++c)
        mx = std::max(mx, v[static_cast<size_t>((n * C + c) * D + d)]);
      double s = 0;
      for (int64_t c = 0; c < C; ++c)
        s += std::exp(v[static_cast<size_t>((n * C + c) * D + d)] - mx);
      const double ls = std::log(s);
      for (int64_t c = 0; c < C; ++c) {
        double& e = v[static_cast<size_t>((n * C + c) * D + d)];
        e = e - mx - ls;
      }
    }
  }
  writeAll(ctx.output(0), nllLoss(ctx, v, target, ctx.hasInput(2) ? &ctx.input(2) : nullptr, N, C,
                                  D, ctx.attrString("reduction", "mean")));
  if (ctx.hasOutput(1)) writeAll(ctx.output(1), v);
}

// ================================================================= Det

void inferDet(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = ctx.inputDtype(0);
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  if (s->rank() < 2) ctx.fail("input must have rank >= 2");
  const Dim& a = s->dims[s->rank() - 2];
  const Dim& b = s->dims[s->rank() - 1];
  if (a.isKnown() && b.isKnown() && a.value != b.value) ctx.fail("input matrices must be square");
  Shape out = *s;
  out.dims.resize(s->rank() - 2);
  ctx.setOutput(0, t, std::move(out));
}

void computeDet(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t M = x.dims().back();
  const int64_t batch = product(x.dims(), 0, x.rank() - 2);
  const std::vector<double> v = readAll(x);
  std::vector<double> out(static_cast<size_t>(batch));
  std::vector<double> a(static_cast<size_t>(M * M));
  for (int64_t b = 0; b < batch; ++b) {
    std::copy(v.begin() + b * M * M, v.begin() + (b + 1) * M * M, a.begin());
    // LU decomposition with partial pivoting.
    double det = 1;
    for (int64_t k = 0; k < M; ++k) {
      int64_t p = k;
      for (int64_t i = k + 1; i < M; ++i) {
        if (std::fabs(a[static_cast<size_t>(i * M + k)]) >
            std::fabs(a[static_cast<size_t>(p * M + k)]))
          p = i;
      }
      const double piv = a[static_cast<size_t>(p * M + k)];
      if (piv == 0) {
        det = 0;
        break;
      }
      if (p != k) {
        for (int64_t j = 0; j < M; ++j)
          std::swap(a[static_cast<size_t>(p * M + j)], a[static_cast<size_t>(k * M + j)]);
        det = -det;
      }
      det *= piv;
      for (int64_t i = k + 1; i < M; ++i) {
        const double f = a[static_cast<size_t>(i * M + k)] / piv;
        for (int64_t j = k + 1; j < M; ++j)
          a[static_cast<size_t>(i * M + j)] -= f * a[static_cast<size_t>(k * M + j)];
      }
    }
    out[static_cast<size_t>(b)] = det;
  }
  writeAll(ctx.output(0), out);
}

// ================================================================= random (inference only)

void inferRandomShape(InferContext& ctx) {
  const DataType t = dtypeAttr(ctx, "dtype", DataType::kFloat);
  if (!ctx.hasAttr("shape")) ctx.fail("the shape attribute is required");
  const std::vector<int64_t> dims = ctx.attrInts("shape");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("shape entries must be non-negative");
  }
  ctx.setOutput(0, t, dims);
}

void inferRandomLike(InferContext& ctx) {
  const DataType in = ctx.inputDtype(0);
  setSameShape(ctx, 0, dtypeAttr(ctx, "dtype", in), 0);
}

void inferMultinomial(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = dtypeAttr(ctx, "dtype", DataType::kInt32);
  if (t != DataType::kInt32 && t != DataType::kInt64) ctx.fail("dtype must be int32 or int64");
  const int64_t samples = ctx.attrInt("sample_size", 1);
  Shape s;
  const Shape* x = ctx.inputShape(0);
  if (x != nullptr && x->rank() != 2) ctx.fail("input must be [batch_size, class_size]");
  s.dims.push_back(x != nullptr ? x->dims[0] : ctx.newSymbol());
  s.dims.push_back(Dim::known(samples));
  ctx.setOutput(0, t, std::move(s));
}

// ================================================================= strings

// Decodes one UTF-8 code point at s[i], advancing i (invalid bytes pass through).
uint32_t decodeUtf8(const std::string& s, size_t& i) {
  const auto c = static_cast<unsigned char>(s[i]);
  auto cont = [&](size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  if (c < 0x80) {
    ++i;
    return c;
  }
  if ((c & 0xE0) == 0xC0 && cont(1)) {
    const uint32_t cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    i += 2;
    return cp;
  }
  if ((c & 0xF0) == 0xE0 && cont(1) && cont(2)) {
    const uint32_t cp = ((c & 0x0Fu) << 12) |
                        ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                        (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    i += 3;
    return cp;
  }
  if ((c & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
    const uint32_t cp = ((c & 0x07u) << 18) |
                        ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
                        ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) |
                        (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
    i += 4;
    return cp;
  }
  ++i;
  return 0xFFFD0000u | c;  // marker: raw byte c
}

void encodeUtf8(uint32_t cp, std::string& out) {
  if ((cp & 0xFFFF0000u) == 0xFFFD0000u) {
    out.push_back(static_cast<char>(cp & 0xFF));
  } else if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Simple case mapping for ASCII, Latin-1, Greek and Cyrillic: enough for the
// locales StringNormalizer is used with, without depending on the C locale
// (which differs between glibc and the wasm libc).
uint32_t toUpperCp(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}
uint32_t toLowerCp(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

std::string mapCase(const std::string& s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const uint32_t cp = decodeUtf8(s, i);
    encodeUtf8(upper ? toUpperCp(cp) : toLowerCp(cp), out);
  }
  return out;
}

// StringNormalizer's result (values and dims) for a known input.
Tensor normalizeStrings(const OpContext& ctx, const Tensor& x) {
  const std::string action = ctx.attrString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    ctx.fail("invalid case_change_action '" + action + "'");
  }
  const bool sensitive = ctx.attrInt("is_case_sensitive", 0) != 0;
  std::set<std::string> stop;
  for (const std::string& w : attrStrings(ctx, "stopwords"))
    stop.insert(sensitive ? w : mapCase(w, false));
  std::vector<std::string> kept;
  for (const std::string& s : x.strings()) {
    if (stop.count(sensitive ? s : mapCase(s, false))) continue;
    if (action == "LOWER") {
      kept.push_back(mapCase(s, false));
    } else if (action == "UPPER") {
      kept.push_back(mapCase(s, true));
    } else {
      kept.push_back(s);
    }
  }
  // Everything filtered out: a single empty string, as onnxruntime.
  if (kept.empty()) kept.emplace_back();
  const auto n = static_cast<int64_t>(kept.size());
  Tensor out(DataType::kString,
             x.rank() == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{1, n});
  out.mutableStrings() = std::move(kept);
  return out;
}

void inferStringNormalizer(InferContext& ctx) {
  requireType(ctx, 0, isStringType, "string");
  const Shape* s = ctx.inputShape(0);
  if (s != nullptr && s->rank() != 1 &&
      !(s->rank() == 2 && s->dims[0].isKnown() && s->dims[0].value == 1)) {
    if (!(s->rank() == 2 && !s->dims[0].isKnown())) ctx.fail("input must be [C] or [1, C]");
  }
  if (const Tensor* v = ctx.inputValue(0)) {
    ctx.setOutputValue(0, normalizeStrings(ctx, *v));
    return;
  }
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, DataType::kString);
    return;
  }
  Shape out;
  if (s->rank() == 2) out.dims.push_back(Dim::known(1));
  // Without stopwords the count is kept (an empty input still gives one "").
  const Dim& c = s->dims.back();
  const bool same = attrStrings(ctx, "stopwords").empty() && c.isKnown() && c.value > 0;
  out.dims.push_back(same ? c : ctx.newSymbol());
  ctx.setOutput(0, DataType::kString, std::move(out));
}

void computeStringNormalizer(ComputeContext& ctx) {
  Tensor r = normalizeStrings(ctx, ctx.input(0));
  Tensor& out = ctx.output(0);
  if (out.dims() != r.dims()) ctx.fail("output shape mismatch");
  out.mutableStrings() = std::move(r.mutableStrings());
}

void inferStringConcat(InferContext& ctx) {
  requireType(ctx, 0, isStringType, "string");
  requireType(ctx, 1, isStringType, "string");
  const Shape* a = ctx.inputShape(0);
  const Shape* b = ctx.inputShape(1);
  if (a == nullptr || b == nullptr) {
    ctx.setOutputUnknownRank(0, DataType::kString);
    return;
  }
  std::optional<Shape> s = broadcastShapes(*a, *b);
  if (!s) ctx.fail("inputs cannot be broadcast together");
  ctx.setOutput(0, DataType::kString, std::move(*s));
}

void computeStringConcat(ComputeContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  std::vector<std::string>& o = out.mutableStrings();
  o.assign(static_cast<size_t>(out.numElements()), std::string());
  forEachBroadcast(out.dims(),
                   {broadcastStrides(a.dims(), out.dims()), broadcastStrides(b.dims(), out.dims())},
                   [&](int64_t i, const std::vector<int64_t>& off) {
                     o[static_cast<size_t>(i)] = a.strings()[static_cast<size_t>(off[0])] +
                                                 b.strings()[static_cast<size_t>(off[1])];
                   });
}

bool isSpaceCharRaw(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool isSpaceChar(char c) {
  return isSpaceCharRaw(static_cast<uint8_t>(c));
}

// Python's str.split(delimiter, maxsplit) / str.split(None, maxsplit).
std::vector<std::string> splitOne(const std::string& s, const std::string& delim,
                                  int64_t maxsplit) {
  std::vector<std::string> parts;
  int64_t splits = 0;
  if (delim.empty()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && isSpaceChar(s[i]))
        ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && splits >= maxsplit) {
        parts.push_back(s.substr(i));  // the rest, trailing whitespace included
        break;
      }
      size_t j = i;
      while (j < s.size() && !isSpaceChar(s[j]))
        ++j;
      parts.push_back(s.substr(i, j - i));
      ++splits;
      i = j;
    }
    return parts;
  }
  size_t start = 0;
  while (maxsplit < 0 || splits < maxsplit) {
    const size_t pos = s.find(delim, start);
    if (pos == std::string::npos) break;
    parts.push_back(s.substr(start, pos - start));
    start = pos + delim.size();
    ++splits;
  }
  parts.push_back(s.substr(start));
  return parts;
}

// StringSplit's two results for a known input.
std::pair<Tensor, Tensor> splitStrings(const OpContext& ctx, const Tensor& x) {
  const std::string delim = ctx.attrString("delimiter", "");
  const int64_t maxsplit = ctx.hasAttr("maxsplit") ? ctx.attrInt("maxsplit", -1) : -1;
  std::vector<std::vector<std::string>> parts;
  size_t widest = 0;
  for (const std::string& s : x.strings()) {
    parts.push_back(splitOne(s, delim, maxsplit));
    widest = std::max(widest, parts.back().size());
  }
  std::vector<int64_t> dims = x.dims();
  dims.push_back(static_cast<int64_t>(widest));
  Tensor y(DataType::kString, dims);
  Tensor z(DataType::kInt64, x.dims());
  std::vector<std::string>& ys = y.mutableStrings();
  ys.assign(parts.size() * widest, std::string());
  auto* zp = mutableDataAs<int64_t>(z);
  for (size_t i = 0; i < parts.size(); ++i) {
    zp[i] = static_cast<int64_t>(parts[i].size());
    for (size_t k = 0; k < parts[i].size(); ++k)
      ys[i * widest + k] = std::move(parts[i][k]);
  }
  return {std::move(y), std::move(z)};
}

void inferStringSplit(InferContext& ctx) {
  requireType(ctx, 0, isStringType, "string");
  if (const Tensor* v = ctx.inputValue(0)) {
    auto [y, z] = splitStrings(ctx, *v);
    ctx.setOutputValue(0, std::move(y));
    if (ctx.numOutputs() > 1) ctx.setOutputValue(1, std::move(z));
    return;
  }
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, DataType::kString);
    if (ctx.numOutputs() > 1) ctx.setOutputUnknownRank(1, DataType::kInt64);
    return;
  }
  Shape y = *s;
  y.dims.push_back(ctx.newSymbol());
  ctx.setOutput(0, DataType::kString, std::move(y));
  if (ctx.numOutputs() > 1) ctx.setOutput(1, DataType::kInt64, *s);
}

void computeStringSplit(ComputeContext& ctx) {
  auto [y, z] = splitStrings(ctx, ctx.input(0));
  if (ctx.hasOutput(0)) {
    if (ctx.output(0).dims() != y.dims()) ctx.fail("output shape mismatch");
    ctx.output(0).mutableStrings() = std::move(y.mutableStrings());
  }
  if (ctx.hasOutput(1)) {
    std::memcpy(ctx.output(1).mutableBytes(), z.bytes(), z.byteSize());
  }
}

void inferRegexFullMatch(InferContext& ctx) {
  requireType(ctx, 0, isStringType, "string");
  if (!ctx.hasAttr("pattern")) ctx.fail("the pattern attribute is required");
  setSameShape(ctx, 0, DataType::kBool, 0);
}

void computeRegexFullMatch(ComputeContext& ctx) {
  std::regex re;
  try {
    re = std::regex(ctx.attrString("pattern"), std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    ctx.fail(std::string("invalid pattern: ") + e.what());
  }
  const Tensor& x = ctx.input(0);
  bool* out = mutableDataAs<bool>(ctx.output(0));
  for (size_t i = 0; i < x.strings().size(); ++i)
    out[i] = std::regex_match(x.strings()[i], re);
}

// ================================================================= TfIdfVectorizer

int64_t tfidfOutputSize(const OpContext& ctx) {
  const std::vector<int64_t> idx = ctx.attrInts("ngram_indexes");
  int64_t mx = -1;
  for (int64_t i : idx) {
    if (i < 0) ctx.fail("ngram_indexes must be non-negative");
    mx = std::max(mx, i);
  }
  return mx + 1;
}

void inferTfIdf(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  if (t != DataType::kUndefined && t != DataType::kString && t != DataType::kInt32 &&
      t != DataType::kInt64) {
    ctx.fail("input must be string, int32 or int64");
  }
  const int64_t n = tfidfOutputSize(ctx);
  const Shape* s = ctx.inputShape(0);
  if (s == nullptr) {
    ctx.setOutputUnknownRank(0, DataType::kFloat);
    return;
  }
  Shape out;
  if (s->rank() == 2) {
    out.dims.push_back(s->dims[0]);
  } else if (s->rank() != 1) {
    ctx.fail("input must be [C] or [N, C]");
  }
  out.dims.push_back(Dim::known(n));
  ctx.setOutput(0, DataType::kFloat, std::move(out));
}

void computeTfIdf(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t min_n = ctx.attrInt("min_gram_length", 1);
  const int64_t max_n = ctx.attrInt("max_gram_length", 1);
  const int64_t max_skip = ctx.attrInt("max_skip_count", 0);
  const std::string mode = ctx.attrString("mode", "TF");
  const std::vector<int64_t> counts = ctx.attrInts("ngram_counts");
  const std::vector<int64_t> indexes = ctx.attrInts("ngram_indexes");
  const std::vector<float> weights = ctx.attrFloats("weights");
  if (min_n < 1 || max_n < min_n) ctx.fail("invalid gram lengths");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") ctx.fail("invalid mode '" + mode + "'");
  const bool strings = x.dtype() == DataType::kString;
  // Tokens as strings (ints printed) so one table serves both pool kinds.
  std::vector<std::string> tokens;
  if (strings) {
    tokens = x.strings();
  } else {
    for (int64_t v : readInts(ctx, x))
      tokens.push_back(std::to_string(v));
  }
  std::vector<std::string> pool = attrStrings(ctx, "pool_strings");
  if (pool.empty()) {
    for (int64_t v : ctx.attrInts("pool_int64s"))
      pool.push_back(std::to_string(v));
  }
  // n-gram (tokens joined by '\0') -> output index, per n.
  std::map<int64_t, std::unordered_map<std::string, int64_t>> table;
  size_t ordinal = 0;
  for (size_t level = 0; level < counts.size(); ++level) {
    const int64_t n = static_cast<int64_t>(level) + 1;
    const auto begin = static_cast<size_t>(counts[level]);
    const size_t end =
        level + 1 < counts.size() ? static_cast<size_t>(counts[level + 1]) : pool.size();
    if (begin > end || end > pool.size()) ctx.fail("invalid ngram_counts");
    if ((end - begin) % static_cast<size_t>(n) != 0)
      ctx.fail("pool size does not match ngram_counts");
    for (size_t p = begin; p < end; p += static_cast<size_t>(n)) {
      std::string key;
      for (int64_t k = 0; k < n; ++k) {
        if (k) key.push_back('\0');
        key += pool[p + static_cast<size_t>(k)];
      }
      if (ordinal >= indexes.size()) ctx.fail("ngram_indexes is shorter than the pool");
      table[n][key] = indexes[ordinal++];
    }
  }
  Tensor& out = ctx.output(0);
  const int64_t width = out.dims().back();
  const int64_t rows = x.rank() == 2 ? x.dims()[0] : 1;
  const int64_t cols = x.rank() == 2 ? x.dims()[1] : x.numElements();
  std::vector<double> cnt(static_cast<size_t>(rows * width), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const std::string* row = tokens.data() + r * cols;
    for (int64_t n = min_n; n <= max_n; ++n) {
      auto it = table.find(n);
      if (it == table.end() || it->second.empty()) continue;
      // Unigrams have no gaps: one pass, else one per skip distance.
      const int64_t skips = n == 1 ? 0 : max_skip;
      for (int64_t skip = 0; skip <= skips; ++skip) {
        const int64_t stride = skip + 1;
        for (int64_t start = 0; start + (n - 1) * stride < cols; ++start) {
          std::string key;
          for (int64_t k = 0; k < n; ++k) {
            if (k) key.push_back('\0');
            key += row[start + k * stride];
          }
          auto hit = it->second.find(key);
          if (hit != it->second.end()) cnt[static_cast<size_t>(r * width + hit->second)] += 1;
        }
      }
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < width; ++j) {
      double& c = cnt[static_cast<size_t>(r * width + j)];
      const double w =
          static_cast<size_t>(j) < weights.size() ? weights[static_cast<size_t>(j)] : 1.0;
      if (mode == "IDF") {
        c = c > 0 ? w : 0;
      } else if (mode == "TFIDF") {
        c *= w;
      }
    }
  }
  writeAll(out, cnt);
}

// ================================================================= ai.onnx.ml

// LabelEncoder keys are compared through a canonical string form of the
// element: exact for strings and integers, bitwise for floats (NaN equals NaN).
std::string keyOf(DataType t, const Tensor& src, size_t i) {
  switch (t) {
    case DataType::kString:
      return "s" + src.strings()[i];
    case DataType::kFloat:
    case DataType::kDouble: {
      double d = t == DataType::kFloat ? src.at<float>(i) : src.at<double>(i);
      if (std::isnan(d)) return "fnan";
      if (d == 0) d = 0;  // -0 == 0
      std::string k = "f";
      k.append(reinterpret_cast<const char*>(&d), sizeof d);
      return k;
    }
    default: {
      int64_t v = 0;
      dispatchNumeric(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) v = static_cast<int64_t>(src.at<T>(i));
      });
      return "i" + std::to_string(v);
    }
  }
}

struct LabelEncoderSpec {
  Tensor keys;    // any supported dtype
  Tensor values;  // output dtype
  Tensor dflt;    // one element of the output dtype
};

template <class T>
Tensor vectorTensor(DataType t, const std::vector<T>& v) {
  Tensor out(t, {static_cast<int64_t>(v.size())});
  if constexpr (std::is_same_v<T, std::string>) {
    out.mutableStrings() = v;
  } else {
    if (!v.empty()) std::memcpy(out.mutableBytes(), v.data(), v.size() * sizeof(T));
  }
  return out;
}

LabelEncoderSpec labelEncoderSpec(const OpContext& ctx, DataType input_type) {
  LabelEncoderSpec s;
  const int64_t v = ctx.opset();
  if (v < 2) {
    // Opset 1: classes_strings maps string <-> index.
    const std::vector<std::string> classes = attrStrings(ctx, "classes_strings");
    std::vector<int64_t> idx(classes.size());
    for (size_t i = 0; i < idx.size(); ++i)
      idx[i] = static_cast<int64_t>(i);
    const Tensor ct = vectorTensor(DataType::kString, classes);
    const Tensor it = vectorTensor(DataType::kInt64, idx);
    if (input_type == DataType::kInt64) {
      s.keys = it;
      s.values = ct;
      s.dflt = vectorTensor(DataType::kString,
                            std::vector<std::string>{ctx.attrString("default_string", "_Unused")});
    } else {
      s.keys = ct;
      s.values = it;
      s.dflt =
          vectorTensor(DataType::kInt64, std::vector<int64_t>{ctx.attrInt("default_int64", -1)});
    }
    return s;
  }
  if (const Tensor* t = attrTensor(ctx, "keys_tensor")) {
    s.keys = *t;
  } else if (ctx.hasAttr("keys_strings")) {
    s.keys = vectorTensor(DataType::kString, attrStrings(ctx, "keys_strings"));
  } else if (ctx.hasAttr("keys_int64s")) {
    s.keys = vectorTensor(DataType::kInt64, ctx.attrInts("keys_int64s"));
  } else if (ctx.hasAttr("keys_floats")) {
    s.keys = vectorTensor(DataType::kFloat, ctx.attrFloats("keys_floats"));
  } else {
    ctx.fail("one of keys_strings, keys_int64s, keys_floats, keys_tensor is required");
  }
  if (const Tensor* t = attrTensor(ctx, "values_tensor")) {
    s.values = *t;
  } else if (ctx.hasAttr("values_strings")) {
    s.values = vectorTensor(DataType::kString, attrStrings(ctx, "values_strings"));
  } else if (ctx.hasAttr("values_int64s")) {
    s.values = vectorTensor(DataType::kInt64, ctx.attrInts("values_int64s"));
  } else if (ctx.hasAttr("values_floats")) {
    s.values = vectorTensor(DataType::kFloat, ctx.attrFloats("values_floats"));
  } else {
    ctx.fail("one of values_strings, values_int64s, values_floats, values_tensor is required");
  }
  if (s.keys.numElements() != s.values.numElements()) {
    ctx.fail("keys and values must have the same number of elements");
  }
  const DataType vt = s.values.dtype();
  if (const Tensor* t = attrTensor(ctx, "default_tensor")) {
    if (t->dtype() != vt || t->numElements() != 1) {
      ctx.fail("default_tensor must hold one element of the values' type");
    }
    s.dflt = *t;
  } else if (vt == DataType::kString) {
    s.dflt =
        vectorTensor(vt, std::vector<std::string>{ctx.attrString("default_string", "_Unused")});
  } else {
    Tensor d(vt, {1});
    if (vt == DataType::kFloat || vt == DataType::kDouble) {
      writeAll(d, {static_cast<double>(ctx.attrFloat("default_float", -0.0f))});
    } else {
      writeAll(d, {static_cast<double>(ctx.attrInt("default_int64", -1))});
    }
    s.dflt = d;
  }
  return s;
}

void inferLabelEncoder(InferContext& ctx) {
  const LabelEncoderSpec s = labelEncoderSpec(ctx, ctx.inputDtype(0));
  setSameShape(ctx, 0, s.values.dtype(), 0);
}

void computeLabelEncoder(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LabelEncoderSpec s = labelEncoderSpec(ctx, x.dtype());
  std::unordered_map<std::string, size_t> map;
  for (size_t i = 0; i < static_cast<size_t>(s.keys.numElements()); ++i)
    map.emplace(keyOf(s.keys.dtype(), s.keys, i), i);
  Tensor& out = ctx.output(0);
  const DataType vt = s.values.dtype();
  const size_t n = static_cast<size_t>(x.numElements());
  const size_t esz = static_cast<size_t>(bitsPerElement(vt) / 8);
  for (size_t i = 0; i < n; ++i) {
    auto it = map.find(keyOf(x.dtype(), x, i));
    const Tensor& src = it == map.end() ? s.dflt : s.values;
    const size_t j = it == map.end() ? 0 : it->second;
    if (vt == DataType::kString) {
      out.mutableStrings()[i] = src.strings()[j];
    } else {
      std::memcpy(out.mutableBytes() + i * esz, src.bytes() + j * esz, esz);
    }
  }
}

void inferArrayFeatureExtractor(InferContext& ctx) {
  const DataType t = ctx.inputDtype(0);
  const Shape* x = ctx.inputShape(0);
  const Shape* y = ctx.inputShape(1);
  if (x == nullptr) {
    ctx.setOutputUnknownRank(0, t);
    return;
  }
  Dim count = ctx.newSymbol();
  if (y != nullptr) {
    int64_t n = 1;
    bool known = true;
    for (const Dim& d : y->dims) {
      known &= d.isKnown();
      if (d.isKnown()) n *= d.value;
    }
    if (known) count = Dim::known(n);
  }
  Shape out;
  if (x->rank() <= 1) {
    out.dims = {Dim::known(1), count};
  } else {
    out = *x;
    out.dims.back() = count;
  }
  ctx.setOutput(0, t, std::move(out));
}

void computeArrayFeatureExtractor(ComputeContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> idx = readInts(ctx, ctx.input(1));
  const int64_t stride = x.rank() == 0 ? 1 : x.dims().back();
  const int64_t rows = stride == 0 ? 0 : x.numElements() / stride;
  for (int64_t i : idx) {
    if (i < 0 || i >= stride) ctx.fail("index " + std::to_string(i) + " is out of range");
  }
  Tensor& out = ctx.output(0);
  const size_t k = idx.size();
  if (x.dtype() == DataType::kString) {
    for (int64_t r = 0; r < rows; ++r)
      for (size_t j = 0; j < k; ++j)
        out.mutableStrings()[static_cast<size_t>(r) * k + j] =
            x.strings()[static_cast<size_t>(r * stride + idx[j])];
    return;
  }
  const size_t esz = static_cast<size_t>(bitsPerElement(x.dtype()) / 8);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < k; ++j)
      std::memcpy(out.mutableBytes() + (static_cast<size_t>(r) * k + j) * esz,
                  x.bytes() + static_cast<size_t>(r * stride + idx[j]) * esz, esz);
}

void inferSame(InferContext& ctx) {
  setSameShape(ctx, 0, ctx.inputDtype(0), 0);
}

void computeBinarizer(ComputeContext& ctx) {
  const double th = ctx.attrFloat("threshold", 0.0f);
  const std::vector<double> x = readAll(ctx.input(0));
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] > th ? 1.0 : 0.0;
  writeAll(ctx.output(0), y);
}

// TreeEnsemble (ai.onnx.ml 5): every tree from tree_roots walks its nodes to a
// leaf; leaf weights are aggregated per target, then post-transformed.
std::vector<int64_t> requiredInts(const OpContext& ctx, const char* name) {
  if (!ctx.hasAttr(name)) ctx.fail(std::string("attribute ") + name + " is required");
  return ctx.attrInts(name);
}

std::vector<double> tensorAttr(const OpContext& ctx, const char* name, bool required) {
  const Tensor* t = attrTensor(ctx, name);
  if (t == nullptr) {
    if (required) ctx.fail(std::string("attribute ") + name + " is required");
    return {};
  }
  return readAll(*t);
}

void inferTreeEnsemble(InferContext& ctx) {
  requireType(ctx, 0, isFloatType, "a float type");
  const DataType t = ctx.inputDtype(0);
  const int64_t targets = ctx.attrInt("n_targets", -1);
  if (targets < 1) ctx.fail("n_targets must be positive");
  const Shape* x = ctx.inputShape(0);
  Shape out;
  out.dims.push_back(x != nullptr && x->rank() >= 1 ? x->dims[0] : ctx.newSymbol());
  out.dims.push_back(Dim::known(targets));
  ctx.setOutput(0, t, std::move(out));
}

double erfInv(double y) {
  // Initial guess (Giles) refined by Newton steps on erf.
  if (y <= -1) return -std::numeric_limits<double>::infinity();
  if (y >= 1) return std::numeric_limits<double>::infinity();
  double w = -std::log((1.0 - y) * (1.0 + y));
  double x;
  if (w < 5) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3;
    x = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; ++i)
    x -= (std::erf(x) - y) / (2 / std::sqrt(3.14159265358979323846) * std::exp(-x * x));
  return x;
}

void computeTreeEnsemble(ComputeContext& ctx) {
  const Tensor& X = ctx.input(0);
  const int64_t rows = X.rank() >= 1 ? X.dims()[0] : 1;
  const int64_t feats = X.rank() >= 2 ? product(X.dims(), 1, X.rank()) : 1;
  const std::vector<double> x = readAll(X);
  const int64_t targets = ctx.attrInt("n_targets", 1);
  const int64_t agg = ctx.attrInt("aggregate_function", 1);
  const int64_t post = ctx.attrInt("post_transform", 0);
  const std::vector<int64_t> roots = requiredInts(ctx, "tree_roots");
  const std::vector<int64_t> feature = requiredInts(ctx, "nodes_featureids");
  const std::vector<int64_t> true_id = requiredInts(ctx, "nodes_truenodeids");
  const std::vector<int64_t> false_id = requiredInts(ctx, "nodes_falsenodeids");
  const std::vector<int64_t> true_leaf = ctx.attrInts("nodes_trueleafs");
  const std::vector<int64_t> false_leaf = ctx.attrInts("nodes_falseleafs");
  const std::vector<int64_t> missing = ctx.attrInts("nodes_missing_value_tracks_true");
  const std::vector<double> splits = tensorAttr(ctx, "nodes_splits", true);
  const std::vector<double> membership = tensorAttr(ctx, "membership_values", false);
  const std::vector<int64_t> leaf_target = requiredInts(ctx, "leaf_targetids");
  const std::vector<double> leaf_weight = tensorAttr(ctx, "leaf_weights", true);
  std::vector<int64_t> modes(feature.size(), 0);
  if (const Tensor* m = attrTensor(ctx, "nodes_modes")) modes = readInts(ctx, *m);
  const size_t nn = feature.size();
  if (true_id.size() != nn || false_id.size() != nn || splits.size() != nn || modes.size() != nn ||
      (!true_leaf.empty() && true_leaf.size() != nn) ||
      (!false_leaf.empty() && false_leaf.size() != nn)) {
    ctx.fail("the nodes_* attributes must have the same length");
  }
  if (leaf_target.size() != leaf_weight.size()) ctx.fail("leaf_targetids and leaf_weights differ");
  // The BRANCH_MEMBER nodes take the NaN-separated sets of membership_values in order.
  std::vector<std::vector<double>> sets(nn);
  size_t mpos = 0;
  for (size_t i = 0; i < nn; ++i) {
    if (modes[i] != 6) continue;
    while (mpos < membership.size() && !std::isnan(membership[mpos]))
      sets[i].push_back(membership[mpos++]);
    ++mpos;  // the NaN separator
  }
  Tensor& out = ctx.output(0);
  std::vector<double> y(static_cast<size_t>(rows * targets), 0.0);
  const double init = agg == 2   ? std::numeric_limits<double>::infinity()
                      : agg == 3 ? -std::numeric_limits<double>::infinity()
                                 : 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> acc(static_cast<size_t>(targets), init);
    std::vector<bool> hit(static_cast<size_t>(targets), false);
    for (int64_t root : roots) {
      int64_t node = root;
      bool is_leaf = false;
      for (size_t guard = 0; !is_leaf; ++guard) {
        if (node < 0 || static_cast<size_t>(node) >= nn || guard > nn) ctx.fail("invalid tree");
        const auto n = static_cast<size_t>(node);
        if (feature[n] < 0 || feature[n] >= feats) ctx.fail("feature id out of range");
        const double v = x[static_cast<size_t>(r * feats + feature[n])];
        const double s = splits[n];
        bool go;
        if (std::isnan(v) && !missing.empty() && missing[n] != 0) {
          go = true;
        } else {
          switch (modes[n]) {
            case 0:
              go = v <= s;
              break;
            case 1:
              go = v < s;
              break;
            case 2:
              go = v >= s;
              break;
            case 3:
              go = v > s;
              break;
            case 4:
              go = v == s;
              break;
            case 5:
              go = v != s;
              break;
            case 6:
              go = std::find(sets[n].begin(), sets[n].end(), v) != sets[n].end();
              break;
            default:
              ctx.fail("invalid node mode " + std::to_string(modes[n]));
          }
        }
        node = go ? true_id[n] : false_id[n];
        is_leaf = go ? (!true_leaf.empty() && true_leaf[n] != 0)
                     : (!false_leaf.empty() && false_leaf[n] != 0);
      }
      if (node < 0 || static_cast<size_t>(node) >= leaf_weight.size()) ctx.fail("invalid leaf id");
      const int64_t tg = leaf_target[static_cast<size_t>(node)];
      if (tg < 0 || tg >= targets) ctx.fail("leaf target out of range");
      const double w = leaf_weight[static_cast<size_t>(node)];
      double& a = acc[static_cast<size_t>(tg)];
      hit[static_cast<size_t>(tg)] = true;
      if (agg == 2) {
        a = std::min(a, w);
      } else if (agg == 3) {
        a = std::max(a, w);
      } else {
        a += w;
      }
    }
    for (int64_t t = 0; t < targets; ++t) {
      double a = hit[static_cast<size_t>(t)] ? acc[static_cast<size_t>(t)] : 0.0;
      if (agg == 0 && !roots.empty()) a /= static_cast<double>(roots.size());
      acc[static_cast<size_t>(t)] = a;
    }
    if (post == 1 || post == 3) {
      double mx = -std::numeric_limits<double>::infinity();
      for (double a : acc)
        if (post == 1 || a != 0) mx = std::max(mx, a);
      double sum = 0;
      for (double& a : acc) {
        a = post == 3 && a == 0 ? 0.0 : std::exp(a - mx);
        sum += a;
      }
      for (double& a : acc)
        a = sum > 0 ? a / sum : 0.0;
    } else if (post == 2) {
      for (double& a : acc)
        a = 1.0 / (1.0 + std::exp(-a));
    } else if (post == 4) {
      for (double& a : acc)
        a = std::sqrt(2.0) * erfInv(2 * a - 1);
    } else if (post != 0) {
      ctx.fail("invalid post_transform");
    }
    std::copy(acc.begin(), acc.end(), y.begin() + r * targets);
  }
  writeAll(out, y);
}

// ================================================================= ImageDecoder

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
  const std::string fmt = ctx.attrString("pixel_format", "RGB");
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
  const std::string fmt = ctx.attrString("pixel_format", "RGB");
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

// ================================================================= ai.onnx.preview.training

// Inputs R, T, then `groups` lists of n tensors; outputs are the updated lists
// after the first (X, [V,] [H]), each shaped like X.
void inferOptimizer(InferContext& ctx, int groups) {
  const size_t n_in = ctx.numInputs();
  if (n_in < 2 || (n_in - 2) % static_cast<size_t>(groups) != 0) {
    ctx.fail("expected R, T and " + std::to_string(groups) + " lists of equal length");
  }
  const size_t n = (n_in - 2) / static_cast<size_t>(groups);
  if (ctx.numOutputs() > n * static_cast<size_t>(groups - 1)) ctx.fail("too many outputs");
  for (size_t o = 0; o < ctx.numOutputs(); ++o) {
    const size_t k = o % n;
    // Output list j (X_new, then V_new/H_new) mirrors input list 0, 2, 3.
    const size_t list = o / n == 0 ? 0 : o / n + 1;
    const size_t src = 2 + list * n + k;
    setSameShape(ctx, o, ctx.inputDtype(2 + k), src);
  }
}

void inferAdagrad(InferContext& ctx) {
  inferOptimizer(ctx, 3);
}
void inferMomentum(InferContext& ctx) {
  inferOptimizer(ctx, 3);
}
void inferAdam(InferContext& ctx) {
  inferOptimizer(ctx, 4);
}

void computeOptimizer(ComputeContext& ctx, int groups) {
  const double R = scalarAsDouble(ctx, ctx.input(0));
  const double T = scalarAsDouble(ctx, ctx.input(1));
  const size_t n = (ctx.numInputs() - 2) / static_cast<size_t>(groups);
  const std::string op(ctx.opType());
  const double norm = ctx.attrFloat("norm_coefficient", 0.0f);
  for (size_t k = 0; k < n; ++k) {
    const std::vector<double> x = readAll(ctx.input(2 + k));
    const std::vector<double> g = readAll(ctx.input(2 + n + k));
    std::vector<double> a = readAll(ctx.input(2 + 2 * n + k));
    if (g.size() != x.size() || a.size() != x.size()) ctx.fail("X, G and states must match");
    std::vector<double> xn(x.size());
    std::vector<double> b;
    if (op == "Adagrad") {
      const double decay = ctx.attrFloat("decay_factor", 0.0f);
      const double eps = ctx.attrFloat("epsilon", 0.0f);
      const double r = R / (1 + T * decay);
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = norm * x[i] + g[i];
        a[i] += gr * gr;
        xn[i] = x[i] - r * gr / (std::sqrt(a[i]) + eps);
      }
    } else if (op == "Momentum") {
      const double alpha = ctx.attrFloat("alpha", 0.0f);
      const double beta = ctx.attrFloat("beta", 0.0f);
      const std::string mode = ctx.attrString("mode", "standard");
      if (mode != "standard" && mode != "nesterov") ctx.fail("invalid mode '" + mode + "'");
      const double beta_adj = T > 0 ? beta : 1.0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = norm * x[i] + g[i];
        a[i] = alpha * a[i] + beta_adj * gr;
        xn[i] = mode == "standard" ? x[i] - R * a[i] : x[i] - R * (gr + alpha * a[i]);
      }
    } else {
      const double alpha = ctx.attrFloat("alpha", 0.9f);
      const double beta = ctx.attrFloat("beta", 0.999f);
      const double eps = ctx.attrFloat("epsilon", 0.0f);
      const double post = ctx.attrFloat("norm_coefficient_post", 0.0f);
      b = readAll(ctx.input(2 + 3 * n + k));
      if (b.size() != x.size()) ctx.fail("X and H must match");
      const double r = T > 0 ? R * std::sqrt(1 - std::pow(beta, T)) / (1 - std::pow(alpha, T)) : R;
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = norm * x[i] + g[i];
        a[i] = alpha * a[i] + (1 - alpha) * gr;
        b[i] = beta * b[i] + (1 - beta) * gr * gr;
        xn[i] = (1 - post) * (x[i] - r * a[i] / (std::sqrt(b[i]) + eps));
      }
    }
    if (ctx.hasOutput(k)) writeAll(ctx.output(k), xn);
    if (ctx.hasOutput(n + k)) writeAll(ctx.output(n + k), a);
    if (!b.empty() && ctx.hasOutput(2 * n + k)) writeAll(ctx.output(2 * n + k), b);
  }
}

void computeAdagrad(ComputeContext& ctx) {
  computeOptimizer(ctx, 3);
}
void computeMomentum(ComputeContext& ctx) {
  computeOptimizer(ctx, 3);
}
void computeAdam(ComputeContext& ctx) {
  computeOptimizer(ctx, 4);
}

}  // namespace
}  // namespace kernels

void registerMiscOps(OpRegistry& r) {
  using namespace kernels;
  for (int v : {12, 13, 22})
    r.add({"", "NegativeLogLikelihoodLoss", v, inferLoss, computeNll});
  for (int v : {12, 13})
    r.add({"", "SoftmaxCrossEntropyLoss", v, inferLoss, computeSce});
  for (int v : {11, 22})
    r.add({"", "Det", v, inferDet, computeDet});

  // Random generators: typed and shaped, never evaluated.
  for (int v : {1, 22}) {
    r.add({"", "RandomNormal", v, inferRandomShape, nullptr, kOpNondeterministic});
    r.add({"", "RandomUniform", v, inferRandomShape, nullptr, kOpNondeterministic});
    r.add({"", "RandomNormalLike", v, inferRandomLike, nullptr, kOpNondeterministic});
    r.add({"", "RandomUniformLike", v, inferRandomLike, nullptr, kOpNondeterministic});
  }
  for (int v : {15, 22})
    r.add({"", "Bernoulli", v, inferRandomLike, nullptr, kOpNondeterministic});
  for (int v : {7, 22})
    r.add({"", "Multinomial", v, inferMultinomial, nullptr, kOpNondeterministic});

  r.add({"", "StringNormalizer", 10, inferStringNormalizer, computeStringNormalizer});
  r.add({"", "StringConcat", 20, inferStringConcat, computeStringConcat});
  r.add({"", "StringSplit", 20, inferStringSplit, computeStringSplit});
  r.add({"", "RegexFullMatch", 20, inferRegexFullMatch, computeRegexFullMatch});
  r.add({"", "TfIdfVectorizer", 9, inferTfIdf, computeTfIdf});
  r.add({"", "ImageDecoder", 20, inferImageDecoder, computeImageDecoder});

  for (int v : {1, 2, 4})
    r.add({"ai.onnx.ml", "LabelEncoder", v, inferLabelEncoder, computeLabelEncoder});
  r.add({"ai.onnx.ml", "ArrayFeatureExtractor", 1, inferArrayFeatureExtractor,
         computeArrayFeatureExtractor});
  r.add({"ai.onnx.ml", "Binarizer", 1, inferSame, computeBinarizer});
  r.add({"ai.onnx.ml", "TreeEnsemble", 5, inferTreeEnsemble, computeTreeEnsemble});

  r.add({"ai.onnx.preview.training", "Adagrad", 1, inferAdagrad, computeAdagrad});
  r.add({"ai.onnx.preview.training", "Momentum", 1, inferMomentum, computeMomentum});
  r.add({"ai.onnx.preview.training", "Adam", 1, inferAdam, computeAdam});
}

}  // namespace onnxfold

// strings op family: StringNormalizer, StringConcat, StringSplit,
// RegexFullMatch and TfIdfVectorizer. See op_registry.h for the
// infer()/compute() contract.
//
// Ops whose output shape depends on input contents (StringNormalizer,
// StringSplit) compute their result inside infer() when the input is known
// and hand it over with setOutputValue(), so shapes are static exactly when
// the values are.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kernels/common.h"
#include "kernels/op_helpers.h"

namespace onnxfold {
namespace kernels {
namespace {

bool isStringType(DataType t) {
  return t == DataType::kString;
}

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
  const std::string action = ctx.attrString("case_change_action");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    ctx.fail("invalid case_change_action '" + action + "'");
  }
  const bool sensitive = ctx.attrInt("is_case_sensitive") != 0;
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
    re = std::regex(ctx.attrString("pattern", ""), std::regex::ECMAScript);
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
  return ctx.sizeAdd(mx, 1);  // ngram_indexes may hold INT64_MAX
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
    // n-grams longer than the pool's are never found; the bound also keeps a hostile
    // max_gram_length (INT64_MAX) from overflowing ++n.
    const int64_t top_n = std::min<int64_t>(max_n, static_cast<int64_t>(counts.size()));
    for (int64_t n = min_n; n <= top_n; ++n) {
      auto it = table.find(n);
      if (it == table.end() || it->second.empty()) continue;
      // Unigrams have no gaps: one pass, else one per skip distance.
      const int64_t skips = n == 1 ? 0 : max_skip;
      for (int64_t skip = 0; skip <= skips; ++skip) {
        const int64_t stride = skip + 1;
        // No n-gram fits once (n - 1) * stride >= cols: stop there, before a hostile
        // max_skip_count overflows the product or ++skip.
        if (n - 1 > (cols - 1) / stride) break;
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

}  // namespace
}  // namespace kernels

void registerStringOps(OpRegistry& r) {
  using namespace kernels;
  r.add({"", "StringNormalizer", 10, inferStringNormalizer, computeStringNormalizer});
  r.add({"", "StringConcat", 20, inferStringConcat, computeStringConcat});
  r.add({"", "StringSplit", 20, inferStringSplit, computeStringSplit});
  r.add({"", "RegexFullMatch", 20, inferRegexFullMatch, computeRegexFullMatch});
  r.add({"", "TfIdfVectorizer", 9, inferTfIdf, computeTfIdf});
}

}  // namespace onnxfold

// Corrupted models never crash the reader: every input is either read (and
// then verifies, writes, and reads back to the same bytes) or rejected with an
// onnxfold::Error carrying a message. Any other exception, a crash or a
// sanitizer report fails the test.
//
// Inputs: the shared sample models and a few small ONNX test models, cut short
// at many offsets, with random bit flips, with field keys given other wire
// types, with lengths changed; plus hand-made cases (negative / overflowing /
// huge dims, deep nesting).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <protozero/pbf_writer.hpp>
#include <protozero/varint.hpp>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/skeleton.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using protozero::pbf_writer;

// Accepted inputs up to this size are also written, re-read and written again.
constexpr size_t kFullCheckBytes = size_t{2} << 20;

// Sanitizer builds read a large model some 20x slower, so models over 64 KB get
// fewer random mutations there (tiny models keep the full counts).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// How many mutations of one kind a model of `size` bytes gets: `full` natively
// and for tiny models; under sanitizers `medium` up to 2 MB, else `big`.
size_t mutationCount(size_t size, size_t full, size_t medium, size_t big) {
  if (!kSanitized || size < (64 << 10)) return full;
  return size <= kFullCheckBytes ? medium : big;
}

class CountingSink : public Sink {
 public:
  void write(const uint8_t*, size_t size) override { bytes += size; }
  uint64_t bytes = 0;
};

struct Tally {
  const char* what;
  size_t tried = 0;
  size_t rejected = 0;
  std::vector<std::string> failures;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  explicit Tally(const char* w) : what(w) {}
  ~Tally() { report(); }

  void fail(const std::string& label, const std::string& problem) {
    failures.push_back(label + ": " + problem);
  }

  void report() {
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "[ malformed ] " << what << ": tried " << tried << " inputs, rejected " << rejected
              << ", read " << tried - rejected << " (" << secs << " s"
              << (kSanitized ? ", sanitizer build: fewer mutations of models over 64 KB" : "")
              << ")\n";
    std::string list;
    for (size_t i = 0; i < failures.size() && i < 20; ++i)
      list += "  " + failures[i] + "\n";
    EXPECT_TRUE(failures.empty()) << failures.size() << " of " << tried
                                  << " corrupted inputs were mishandled (first 20):\n"
                                  << list;
    failures.clear();
  }
};

// Reads one input and checks the outcome.
// The bytes as a file-like Source (not a MemorySource, whose ranges would be plain views).
class BytesSource : public Source {
 public:
  explicit BytesSource(Buffer b) : b_(std::move(b)) {}
  uint64_t size() const override { return b_.size(); }
  void read(uint64_t offset, size_t n, uint8_t* dst) const override {
    if (offset > b_.size() || n > b_.size() - offset) throw ResourceError("read past the end");
    b_.copyTo(offset, n, dst);
  }
  std::string describe() const override { return "test bytes"; }

 private:
  Buffer b_;
};

// The same bytes read through a skeleton (weights left in the "file"): the result must be
// the direct read's, byte for byte once written, or both must reject.
std::string throughSkeleton(const Buffer& in, bool* rejected) {
  *rejected = false;
  try {
    const Skeleton sk = readSkeleton(std::make_shared<BytesSource>(in), 64);
    ReadOptions ro;
    ro.skeleton = &sk;
    std::unique_ptr<Model> m = readModel(sk.bytes, ro);
    return writeModelToString(*m);
  } catch (const Error&) {
    *rejected = true;
    return "";
  }
}

void feed(const Buffer& in, const std::string& label, Tally& tally) {
  ++tally.tried;
  std::unique_ptr<Model> m;
  const bool small = in.size() <= kFullCheckBytes;
  bool skeleton_rejected = false;
  std::string via_skeleton;
  if (small) {
    try {
      via_skeleton = throughSkeleton(in, &skeleton_rejected);
    } catch (const std::exception& e) {
      tally.fail(label, std::string("skeleton read threw ") + typeid(e).name() + ": " + e.what());
      return;
    }
  }
  try {
    m = readModel(in);
  } catch (const Error& e) {
    ++tally.rejected;
    if (std::string(e.what()).empty()) tally.fail(label, "rejected with an empty message");
    if (small && !skeleton_rejected)
      tally.fail(label, "the skeleton read accepts what readModel rejects");
    return;
  } catch (const std::exception& e) {
    tally.fail(label, std::string("read threw ") + typeid(e).name() + ": " + e.what());
    return;
  } catch (...) {
    tally.fail(label, "read threw a non-standard exception");
    return;
  }
  try {
    if (VerifyResult r = verify(*m); !r.ok) {
      tally.fail(label, "read, but verify() fails: " + r.message);
      return;
    }
    if (in.size() > kFullCheckBytes) {
      CountingSink sink;
      writeModel(*m, sink);
      return;
    }
    std::string w1 = writeModelToString(*m);
    if (skeleton_rejected) {
      tally.fail(label, "the skeleton read rejects what readModel accepts");
    } else if (via_skeleton != w1) {
      tally.fail(label, "read through a skeleton, the model writes different bytes");
    }
    std::unique_ptr<Model> m2 = readModel(test::bufferOf(w1));
    if (VerifyResult r = verify(*m2); !r.ok) {
      tally.fail(label, "written model fails verify() after re-reading: " + r.message);
    } else if (writeModelToString(*m2) != w1) {
      tally.fail(label, "a second write differs from the first");
    }
  } catch (const std::exception& e) {
    tally.fail(label, std::string("write / re-read threw ") + typeid(e).name() + ": " + e.what());
  }
}

// A Buffer holding exactly these bytes in its own allocation, so that any read
// past its end is a heap overflow the sanitizers see.
Buffer exactCopy(const uint8_t* data, size_t size) {
  auto v = std::make_shared<std::vector<uint8_t>>(data, data + size);
  return Buffer(v->data(), v->size(), v);
}
Buffer exactCopy(const std::string& s) {
  return exactCopy(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

struct Sample {
  std::string path;
  std::string label;
  std::vector<uint8_t> bytes;
};

// shared/models plus a few small ONNX test models (subgraphs, sequences,
// optionals, strings, a CNN).
std::vector<Sample> samples() {
  std::vector<std::string> paths = test::sharedModelsUnder("models");
  for (const char* rel :
       {"onnx-tests/node/test_if/model.onnx", "onnx-tests/node/test_loop11/model.onnx",
        "onnx-tests/node/test_scan9_sum/model.onnx",
        "onnx-tests/node/test_sequence_map_add_2_sequences/model.onnx",
        "onnx-tests/node/test_optional_get_element_optional_sequence/model.onnx",
        "onnx-tests/node/test_string_concat/model.onnx", "onnx-tests/node/test_constant/model.onnx",
        "onnx-tests/light/light_bvlc_alexnet.onnx"}) {
    std::string p = test::sharedPath(rel);
    if (!p.empty()) paths.push_back(p);
  }
  std::vector<Sample> out;
  for (const std::string& p : paths) {
    Buffer b = test::readFileBuffer(p);
    out.push_back({p, test::shortPath(p), std::vector<uint8_t>(b.data(), b.data() + b.size())});
  }
  return out;
}

#define ONNXFOLD_REQUIRE_SAMPLES(var)                                      \
  ONNXFOLD_REQUIRE_SHARED();                                               \
  const std::vector<Sample> var = samples();                               \
  if (var.empty()) GTEST_SKIP() << "no sample models under shared/models"; \
  do {                                                                     \
  } while (0)

// ------------------------------------------------------------------ truncation

TEST(Malformed, Truncations) {
  ONNXFOLD_REQUIRE_SAMPLES(models);
  Tally tally("truncations");
  for (const Sample& s : models) {
    const size_t n = s.bytes.size();
    std::vector<size_t> cuts;
    for (size_t k = 0; k < 64 && k < n; ++k)
      cuts.push_back(k);
    for (size_t i = 0; i < 200; ++i)
      cuts.push_back(64 + (n > 64 ? (n - 64) * i / 200 : 0));
    cuts.push_back(n - 1);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    auto whole = std::make_shared<std::vector<uint8_t>>(s.bytes);
    for (size_t cut : cuts) {
      if (cut >= n) continue;
      // Small prefixes get their own allocation (over-reads are then visible);
      // prefixes of big models are views, to keep the run short.
      Buffer in = cut <= kFullCheckBytes ? exactCopy(s.bytes.data(), cut)
                                         : Buffer(whole->data(), cut, whole);
      feed(in, s.label + " cut at " + std::to_string(cut), tally);
    }
  }
  EXPECT_GT(tally.rejected, 0u);
}

// ------------------------------------------------------------------ random corruption

TEST(Malformed, RandomBitFlips) {
  ONNXFOLD_REQUIRE_SAMPLES(models);
  Tally tally("random bit flips");
  for (size_t mi = 0; mi < models.size(); ++mi) {
    const Sample& s = models[mi];
    const size_t n = s.bytes.size();
    if (n == 0) continue;
    const size_t count = mutationCount(n, 300, 25, 8);
    // One mutable copy: corrupt, feed, restore (the model is gone by then).
    auto work = std::make_shared<std::vector<uint8_t>>(s.bytes);
    const Buffer in(work->data(), n, work);
    std::mt19937_64 rng(0x5eed0000 + mi);
    auto pos = [&](int which) -> size_t {
      // Structure sits at both ends (nodes first, inputs/outputs/opsets last);
      // the middle of a big model is mostly weights.
      const size_t head = std::min<size_t>(n, 64 << 10), tail = std::min<size_t>(n, 16 << 10);
      if (which == 0) return rng() % n;
      if (which == 1) return rng() % head;
      return n - 1 - rng() % tail;
    };
    for (size_t i = 0; i < count; ++i) {
      const size_t p = pos(static_cast<int>(i % 3));
      const int kind = static_cast<int>(rng() % 4);
      const size_t span = std::min<size_t>(4, n - p);
      uint8_t saved[4];
      std::memcpy(saved, work->data() + p, span);
      std::string what;
      if (kind == 0) {
        (*work)[p] ^= static_cast<uint8_t>(1u << (rng() % 8));
        what = "bit flip";
      } else if (kind == 1) {
        (*work)[p] = static_cast<uint8_t>(rng());
        what = "random byte";
      } else if (kind == 2) {
        for (size_t k = 0; k < span; ++k)
          (*work)[p + k] = static_cast<uint8_t>(rng());
        what = "random bytes";
      } else {
        (*work)[p] = static_cast<uint8_t>((*work)[p] | 0x80);  // a varint that goes on
        what = "continuation bit";
      }
      feed(in, s.label + " " + what + " at " + std::to_string(p), tally);
      std::memcpy(work->data() + p, saved, span);
    }
  }
  EXPECT_GT(tally.rejected, 0u);
}

// ------------------------------------------------------------------ structural mutations

// Where a field's key and (for length-delimited fields) its length sit.
struct FieldPos {
  size_t key;      // offset of the key varint
  size_t len = 0;  // offset of the length varint (length-delimited only)
  size_t len_size = 0;
  uint64_t length = 0;
  size_t parent_end;  // end of the enclosing message
  int wire;
};

// Collects fields of the message in [begin, end), descending into
// length-delimited payloads that parse as messages themselves.
void scanFields(const uint8_t* base, size_t begin, size_t end, int depth,
                std::vector<FieldPos>& out) {
  if (depth > 12 || out.size() > 200000) return;
  std::vector<FieldPos> local;
  size_t p = begin;
  while (p < end) {
    const char* cur = reinterpret_cast<const char*>(base + p);
    const char* stop = reinterpret_cast<const char*>(base + end);
    FieldPos f{};
    f.key = p;
    f.parent_end = end;
    uint64_t key = 0;
    try {
      key = protozero::decode_varint(&cur, stop);
    } catch (const protozero::exception&) {
      return;  // not a message
    }
    if ((key >> 3) == 0 || (key >> 3) > (uint64_t{1} << 29)) return;
    f.wire = static_cast<int>(key & 7);
    p = static_cast<size_t>(reinterpret_cast<const uint8_t*>(cur) - base);
    if (f.wire == 0) {
      try {
        protozero::decode_varint(&cur, stop);
      } catch (const protozero::exception&) {
        return;
      }
      p = static_cast<size_t>(reinterpret_cast<const uint8_t*>(cur) - base);
    } else if (f.wire == 1 || f.wire == 5) {
      p += f.wire == 1 ? 8 : 4;
      if (p > end) return;
    } else if (f.wire == 2) {
      f.len = p;
      try {
        f.length = protozero::decode_varint(&cur, stop);
      } catch (const protozero::exception&) {
        return;
      }
      p = static_cast<size_t>(reinterpret_cast<const uint8_t*>(cur) - base);
      f.len_size = p - f.len;
      if (f.length > end - p) return;
      p += static_cast<size_t>(f.length);
    } else {
      return;
    }
    local.push_back(f);
  }
  for (const FieldPos& f : local) {
    out.push_back(f);
    if (f.wire == 2 && f.length > 0) {
      scanFields(base, f.len + f.len_size, f.len + f.len_size + static_cast<size_t>(f.length),
                 depth + 1, out);
    }
  }
}

std::string encodeVarint(uint64_t v) {
  std::string s;
  protozero::add_varint_to_buffer(&s, v);
  return s;
}

// `v` in exactly `width` varint bytes (overlong encodings are valid), if it fits.
bool encodeVarintWidth(uint64_t v, size_t width, uint8_t* out) {
  for (size_t i = 0; i < width; ++i) {
    out[i] = static_cast<uint8_t>((v & 0x7f) | (i + 1 < width ? 0x80 : 0));
    v >>= 7;
  }
  return v == 0;
}

TEST(Malformed, WireTypesAndLengths) {
  ONNXFOLD_REQUIRE_SAMPLES(models);
  Tally tally("wire types and lengths");
  for (size_t mi = 0; mi < models.size(); ++mi) {
    const Sample& s = models[mi];
    const size_t n = s.bytes.size();
    auto work = std::make_shared<std::vector<uint8_t>>(s.bytes);
    const Buffer in(work->data(), n, work);
    std::vector<FieldPos> fields;
    scanFields(work->data(), 0, n, 0, fields);
    std::mt19937_64 rng(0xf1e1d000 + mi);
    std::shuffle(fields.begin(), fields.end(), rng);
    fields.resize(std::min(fields.size(), mutationCount(n, 40, 6, 3)));
    for (const FieldPos& f : fields) {
      const std::string at = s.label + " field at " + std::to_string(f.key);
      // Every other wire type on the key (the low 3 bits of its first byte).
      const uint8_t key0 = (*work)[f.key];
      for (int w = 0; w < 8; ++w) {
        if (w == f.wire) continue;
        (*work)[f.key] = static_cast<uint8_t>((key0 & ~7u) | static_cast<unsigned>(w));
        feed(in, at + " wire type " + std::to_string(f.wire) + "->" + std::to_string(w), tally);
      }
      (*work)[f.key] = key0;
      if (f.wire != 2) continue;
      // Other lengths in the same number of bytes: +1, -1, 0, the largest that fits.
      const size_t payload = f.len + f.len_size;
      const uint64_t room = f.parent_end - payload;  // largest valid length here
      std::vector<uint64_t> lengths = {f.length + 1, room + 1, 0,
                                       (uint64_t{1} << (7 * std::min<size_t>(f.len_size, 9))) - 1};
      if (f.length > 0) lengths.push_back(f.length - 1);
      std::vector<uint8_t> saved(work->begin() + static_cast<std::ptrdiff_t>(f.len),
                                 work->begin() + static_cast<std::ptrdiff_t>(payload));
      for (uint64_t len : lengths) {
        if (!encodeVarintWidth(len, f.len_size, work->data() + f.len)) continue;
        feed(in, at + " length " + std::to_string(f.length) + "->" + std::to_string(len), tally);
      }
      std::copy(saved.begin(), saved.end(), work->begin() + static_cast<std::ptrdiff_t>(f.len));
      // Lengths that need more bytes (past the end, 2^31, 2^63, 2^64-1): spliced copies,
      // for small models only.
      if (n > kFullCheckBytes) continue;
      for (uint64_t len : {room + 1, uint64_t{1} << 31, uint64_t{1} << 63, ~uint64_t{0}}) {
        std::string b(reinterpret_cast<const char*>(s.bytes.data()), f.len);
        b += encodeVarint(len);
        b.append(reinterpret_cast<const char*>(s.bytes.data()) + payload, n - payload);
        feed(exactCopy(b), at + " spliced length " + std::to_string(len), tally);
      }
    }
  }
  EXPECT_GT(tally.rejected, 0u);
}

// ------------------------------------------------------------------ hand-made cases

template <class F>
std::string msg(F&& f) {
  std::string s;
  {
    pbf_writer w(s);
    f(w);
  }
  return s;
}

std::string valueInfo(const std::string& name, const std::string& type) {
  return msg([&](pbf_writer& w) {
    w.add_string(1, name);
    w.add_message(2, type);
  });
}

std::string floatType(const std::vector<int64_t>& dims) {
  return msg([&](pbf_writer& w) {
    w.add_message(1, msg([&](pbf_writer& t) {
                    t.add_int32(1, 1);
                    t.add_message(2, msg([&](pbf_writer& s) {
                                    for (int64_t d : dims) {
                                      s.add_message(
                                          1, msg([&](pbf_writer& dm) { dm.add_int64(1, d); }));
                                    }
                                  }));
                  }));
  });
}

std::string modelOf(const std::string& graph) {
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_message(7, graph);
    w.add_message(8, msg([](pbf_writer& o) { o.add_int64(2, 17); }));
  });
}

// A graph with one initializer "t" (as encoded) that is also the output.
std::string initializerModel(const std::string& tensor) {
  return modelOf(msg([&](pbf_writer& g) {
    g.add_string(2, "g");
    g.add_message(5, tensor);
    g.add_message(12, msg([](pbf_writer& v) { v.add_string(1, "t"); }));
  }));
}

std::string tensorProto(int32_t dtype, const std::vector<int64_t>& dims,
                        const std::function<void(pbf_writer&)>& data) {
  return msg([&](pbf_writer& w) {
    for (int64_t d : dims)
      w.add_int64(1, d);
    w.add_int32(2, dtype);
    w.add_string(8, "t");
    data(w);
  });
}

// main: y = Relu(x), with x's type given.
std::string typedInputModel(const std::string& type) {
  return modelOf(msg([&](pbf_writer& g) {
    g.add_message(1, msg([](pbf_writer& n) {
                    n.add_string(1, "x");
                    n.add_string(2, "y");
                    n.add_string(4, "Identity");
                  }));
    g.add_string(2, "g");
    g.add_message(11, valueInfo("x", type));
    g.add_message(12, valueInfo("y", type));
  }));
}

// Deeply nested messages, built in linear time: layer k's content is
// `before` + layer k+1 (or `core` for the last layer) + `after`; each layer is
// written as its field key, its length and its content.
struct Layer {
  uint32_t field;
  std::string before;
  std::string after;
};

std::string onion(const std::vector<Layer>& layers, const std::string& core) {
  std::vector<uint64_t> size(layers.size() + 1);
  size[layers.size()] = core.size();
  for (size_t k = layers.size(); k-- > 0;) {
    const uint64_t inner = k + 1 < layers.size()
                               ? protozero::length_of_varint(uint64_t{layers[k + 1].field} << 3) +
                                     protozero::length_of_varint(size[k + 1]) + size[k + 1]
                               : size[k + 1];
    size[k] = layers[k].before.size() + inner + layers[k].after.size();
  }
  std::string out;
  for (size_t k = 0; k < layers.size(); ++k) {
    protozero::add_varint_to_buffer(&out, (uint64_t{layers[k].field} << 3) | 2);
    protozero::add_varint_to_buffer(&out, size[k]);
    out += layers[k].before;
  }
  out += core;
  for (size_t k = layers.size(); k-- > 0;)
    out += layers[k].after;
  return out;
}

// `levels` If nodes, each holding the next in its then_branch.
std::string nestedIfModel(int levels) {
  auto nodeFields = [](const std::string& out) {
    return msg([&](pbf_writer& n) {
      n.add_string(1, "c");
      n.add_string(2, out);
      n.add_string(4, "If");
    });
  };
  auto outputInfo = [](const std::string& out) {
    return msg([&](pbf_writer& g) {
      g.add_message(12, msg([&](pbf_writer& v) { v.add_string(1, out); }));
    });
  };
  const std::string inputs = msg([](pbf_writer& g) {
    g.add_message(11, valueInfo("x", floatType({1})));
    g.add_message(11, valueInfo("c", msg([](pbf_writer& t) {
                                  t.add_message(1, msg([](pbf_writer& tt) { tt.add_int32(1, 9); }));
                                })));
  });
  // Outermost first, per level: the graph (ModelProto.graph or AttributeProto.g),
  // its If node (GraphProto.node), the node's attribute (NodeProto.attribute).
  std::vector<Layer> layers;
  for (int i = levels; i >= 1; --i) {
    const std::string out = "y" + std::to_string(i);
    layers.push_back({i == levels ? 7u : 6u, "", outputInfo(out) + (i == levels ? inputs : "")});
    layers.push_back({1, nodeFields(out), ""});
    layers.push_back({5, msg([](pbf_writer& a) { a.add_string(1, "then_branch"); }),
                      msg([](pbf_writer& a) { a.add_int32(20, 5); })});
  }
  layers.push_back({6, "", outputInfo("y0")});
  const std::string core = msg([](pbf_writer& g) {
    g.add_message(1, msg([](pbf_writer& n) {
                    n.add_string(1, "x");
                    n.add_string(2, "y0");
                    n.add_string(4, "Identity");
                  }));
  });
  return msg([](pbf_writer& m) { m.add_int64(1, 8); }) + onion(layers, core) +
         msg([](pbf_writer& m) {
           m.add_message(8, msg([](pbf_writer& o) { o.add_int64(2, 17); }));
         });
}

// A TypeProto nesting `levels` sequence types around a float tensor type.
std::string nestedSequenceType(int levels) {
  std::vector<Layer> layers;
  for (int i = 0; i < levels; ++i) {
    layers.push_back({4, "", ""});  // TypeProto.sequence_type
    layers.push_back({1, "", ""});  // TypeProto.Sequence.elem_type
  }
  return onion(layers, floatType({2}));
}

// Unknown length-delimited fields nested `levels` deep inside a node.
std::string nestedUnknownModel(int levels) {
  const std::vector<Layer> layers(static_cast<size_t>(levels), Layer{99, "", ""});
  const std::string u = onion(layers, "x");
  return modelOf(msg([&](pbf_writer& g) {
    g.add_message(1, msg([&](pbf_writer& n) {
                    n.add_string(1, "x");
                    n.add_string(2, "y");
                    n.add_string(4, "Identity");
                    n.add_string(99, u);  // field 99, holding more field-99 messages
                  }));
    g.add_message(11, valueInfo("x", floatType({1})));
    g.add_message(12, valueInfo("y", floatType({1})));
  }));
}

TEST(Malformed, HandMadeCases) {
  Tally tally("hand-made cases");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    std::string label;
    std::string bytes;
    bool must_reject;
    std::string mention;  // expected in the error message
  };
  std::vector<Case> cases;
  auto add = [&](std::string label, std::string bytes, bool must_reject, std::string mention = "") {
    cases.push_back({std::move(label), std::move(bytes), must_reject, std::move(mention)});
  };
  auto raw = [](size_t n) {
    return [n](pbf_writer& w) { w.add_string(9, std::string(n, '\x01')); };
  };
  auto floats = [](size_t n) {
    return [n](pbf_writer& w) {
      std::vector<float> v(n, 1.0f);
      w.add_packed_float(4, v.begin(), v.end());
    };
  };
  // Dims.
  add("negative dim", initializerModel(tensorProto(1, {-1}, raw(4))), true);
  add("negative dim (min)",
      initializerModel(tensorProto(1, {std::numeric_limits<int64_t>::min(), -1}, raw(0))), true);
  add("dims overflow int64", initializerModel(tensorProto(1, {kMax, 2}, raw(4))), true);
  add("dims 2^32 x 2^32", initializerModel(tensorProto(1, {1ll << 32, 1ll << 32}, raw(4))), true);
  add("2^61 floats, 0 bytes", initializerModel(tensorProto(1, {1ll << 61}, raw(0))), true);
  add("2^62 int4, 0 bytes", initializerModel(tensorProto(22, {1ll << 62}, raw(0))), true);
  add("2^60 complex128, 0 bytes", initializerModel(tensorProto(15, {1ll << 60}, raw(0))), true);
  add("huge dims, small raw_data", initializerModel(tensorProto(1, {1ll << 40}, raw(16))), true);
  // 4 TB of floats: a count mismatch on 64-bit targets, unaddressable on wasm32.
  add("huge dims, one float", initializerModel(tensorProto(1, {1ll << 40}, floats(1))), true,
      sizeof(size_t) == 8 ? "float_data has 1 values" : "too many to address");
  add("huge dims, one int64",
      initializerModel(tensorProto(7, {1ll << 45}, [](pbf_writer& w) { w.add_int64(7, 1); })),
      true);
  add("huge dims, int32_data",
      initializerModel(tensorProto(3, {1ll << 50}, [](pbf_writer& w) { w.add_int32(5, 1); })),
      true);
  add("huge dims, uint64_data",
      initializerModel(tensorProto(12, {1ll << 50}, [](pbf_writer& w) { w.add_uint64(11, 1); })),
      true);
  add("huge dims, strings",
      initializerModel(tensorProto(8, {1ll << 50}, [](pbf_writer& w) { w.add_string(6, "s"); })),
      true);
  add("huge dims, no data", initializerModel(tensorProto(1, {1ll << 40}, [](pbf_writer&) {})),
      true);
  add("huge dims, external without a file",
      initializerModel(tensorProto(1, {1ll << 61},
                                   [](pbf_writer& w) {
                                     w.add_message(13, msg([](pbf_writer& p) {
                                                     p.add_string(1, "location");
                                                     p.add_string(2, "w.bin");
                                                   }));
                                     w.add_int32(14, 1);
                                   })),
      true);
  add("negative shape dim", typedInputModel(floatType({-5})), true);
  add("huge shape dim (a type, not data)", typedInputModel(floatType({kMax})), false);
  // Wire types.
  add("graph as a varint", msg([](pbf_writer& w) { w.add_int64(7, 1); }), true);
  add("graph as fixed32", msg([](pbf_writer& w) { w.add_fixed32(7, 1); }), true);
  add("op_type as a varint", modelOf(msg([](pbf_writer& g) {
        g.add_message(1, msg([](pbf_writer& n) { n.add_int64(4, 3); }));
      })),
      true);
  add("dims as fixed64", initializerModel(msg([](pbf_writer& w) {
        w.add_fixed64(1, 2);
        w.add_int32(2, 1);
        w.add_string(8, "t");
      })),
      true);
  add("raw_data as a varint", initializerModel(msg([](pbf_writer& w) {
        w.add_int64(1, 1);
        w.add_int32(2, 1);
        w.add_string(8, "t");
        w.add_int64(9, 5);
      })),
      true);
  add("float_data packed, length not a multiple of 4", initializerModel(msg([](pbf_writer& w) {
        w.add_int64(1, 1);
        w.add_int32(2, 1);
        w.add_string(8, "t");
        w.add_string(4, std::string(5, '\0'));
      })),
      true);
  add("elem_type as bytes", typedInputModel(msg([](pbf_writer& w) {
        w.add_message(1, msg([](pbf_writer& t) { t.add_string(1, "float"); }));
      })),
      true);
  add("varint of 11 bytes", std::string("\x08") + std::string(10, '\xff') + "\x01", true);
  add("wire type 3 (start group)", std::string("\x0b", 1), true);
  add("wire type 7", std::string("\x0f", 1), true);
  add("field number 0", std::string("\x02\x00", 2), true);
  add("length past the end", std::string("\x3a\x7f\x00", 3), true);
  add("length 2^64-1", std::string("\x3a") + std::string(9, '\xff') + "\x01", true);
  add("empty input", std::string(), true);
  // Deep nesting.
  add("sequence in sequence x10000", typedInputModel(nestedSequenceType(10000)), true,
      "nested too deeply");
  add("sequence in sequence x60", typedInputModel(nestedSequenceType(60)), false);
  add("If in If x10000", nestedIfModel(10000), true, "nested too deeply");
  add("If in If x40", nestedIfModel(40), false);
  add("unknown fields nested x10000", nestedUnknownModel(10000), false);

  for (const Case& c : cases) {
    const size_t before = tally.rejected;
    feed(exactCopy(c.bytes), c.label, tally);
    if (c.must_reject && tally.rejected == before) {
      tally.fail(c.label, "was read, but must be rejected");
    }
    if (tally.rejected == before) continue;
    try {
      readModel(test::bufferOf(c.bytes));
    } catch (const Error& e) {
      const std::string what = e.what();
      if (!c.must_reject) tally.fail(c.label, "must be read, was rejected: " + what);
      if (what.find(c.mention) == std::string::npos) {
        tally.fail(c.label, "the message does not say '" + c.mention + "': " + what);
      }
    }
  }
}

}  // namespace
}  // namespace onnxfold

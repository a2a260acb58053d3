// The ONNX reader and writer: round trips of every shared model, zero-copy
// tensors, typed data fields, external data, unknown fields, node order and
// subgraphs. Small models are encoded by hand with protozero's pbf_writer, so
// each case shows exactly the bytes it feeds the reader.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <protozero/pbf_writer.hpp>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/writer.h"
#include "test_util.h"

namespace onnxfold {
namespace {

using protozero::pbf_writer;
using test::takeBuffer;

// ------------------------------------------------------------------ hand encoding

namespace pb {

template <class F>
std::string msg(F&& f) {
  std::string s;
  {
    pbf_writer w(s);
    f(w);
  }
  return s;
}

// TypeProto { tensor_type { elem_type, shape { dim { dim_value }... } } }
std::string tensorType(int32_t elem, const std::vector<int64_t>& dims) {
  return msg([&](pbf_writer& w) {
    w.add_message(1, msg([&](pbf_writer& t) {
                    t.add_int64(1, elem);
                    t.add_message(2, msg([&](pbf_writer& s) {
                                    for (int64_t d : dims) {
                                      s.add_message(
                                          1, msg([&](pbf_writer& dm) { dm.add_int64(1, d); }));
                                    }
                                  }));
                  }));
  });
}

std::string valueInfo(const std::string& name, int32_t elem = 1,
                      const std::vector<int64_t>& dims = {2}) {
  return msg([&](pbf_writer& w) {
    w.add_string(1, name);
    w.add_message(2, tensorType(elem, dims));
  });
}

std::string node(const std::vector<std::string>& ins, const std::vector<std::string>& outs,
                 const std::string& op, const std::string& name = "",
                 const std::vector<std::string>& attrs = {}) {
  return msg([&](pbf_writer& w) {
    for (const auto& i : ins)
      w.add_string(1, i);
    for (const auto& o : outs)
      w.add_string(2, o);
    if (!name.empty()) w.add_string(3, name);
    w.add_string(4, op);
    for (const auto& a : attrs)
      w.add_message(5, a);
  });
}

std::string attrGraph(const std::string& name, const std::string& graph) {
  return msg([&](pbf_writer& w) {
    w.add_string(1, name);
    w.add_message(6, graph);
    w.add_int64(20, 5);  // GRAPH
  });
}

struct GraphSpec {
  std::string name = "g";
  std::vector<std::string> nodes;
  std::vector<std::string> initializers;
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
};

std::string graph(const GraphSpec& g) {
  return msg([&](pbf_writer& w) {
    for (const auto& n : g.nodes)
      w.add_message(1, n);
    w.add_string(2, g.name);
    for (const auto& t : g.initializers)
      w.add_message(5, t);
    for (const auto& i : g.inputs)
      w.add_message(11, i);
    for (const auto& o : g.outputs)
      w.add_message(12, o);
  });
}

std::string model(const std::string& graph, int64_t opset = 17) {
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_message(7, graph);
    w.add_message(8, msg([&](pbf_writer& o) { o.add_int64(2, opset); }));
  });
}

// A model whose graph has `tensor` as its only initializer and output "t".
std::string modelWithInitializer(const std::string& tensor, const std::string& name = "t") {
  GraphSpec g;
  g.initializers = {tensor};
  g.outputs = {msg([&](pbf_writer& w) { w.add_string(1, name); })};
  return model(graph(g));
}

std::string stringPair(const std::string& k, const std::string& v) {
  return msg([&](pbf_writer& w) {
    w.add_string(1, k);
    w.add_string(2, v);
  });
}

// TensorProto stored externally: location/offset/length entries as given (absent if nullptr).
std::string externalTensor(const std::string& name, int32_t dtype, const std::vector<int64_t>& dims,
                           const char* location, const char* offset, const char* length) {
  return msg([&](pbf_writer& w) {
    for (int64_t d : dims)
      w.add_int64(1, d);
    w.add_int32(2, dtype);
    w.add_string(8, name);
    if (location) w.add_message(13, stringPair("location", location));
    if (offset) w.add_message(13, stringPair("offset", offset));
    if (length) w.add_message(13, stringPair("length", length));
    w.add_int32(14, 1);  // EXTERNAL
  });
}

}  // namespace pb

// ------------------------------------------------------------------ helpers

std::unique_ptr<Model> readBytes(const std::string& bytes, const ReadOptions& o = {}) {
  return readModel(test::bufferOf(bytes), o);
}

std::string bytesOf(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.bytes()), t.byteSize());
}

template <class T>
std::string le(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  size_t i = 0;
  for (T v : values)
    std::memcpy(&s[sizeof(T) * i++], &v, sizeof(T));
  return s;
}

// The first line where two printouts differ, for messages.
std::string firstDifference(const std::string& a, const std::string& b) {
  size_t line = 1, start = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (a[i] != b[i]) {
      auto lineAt = [&](const std::string& s) {
        const size_t e = s.find('\n', start);
        return s.substr(start, e == std::string::npos ? std::string::npos : e - start);
      };
      return "line " + std::to_string(line) + ":\n  - " + lineAt(a) + "\n  + " + lineAt(b);
    }
    if (a[i] == '\n') {
      ++line;
      start = i + 1;
    }
  }
  return "one printout is a prefix of the other (" + std::to_string(a.size()) + " vs " +
         std::to_string(b.size()) + " chars)";
}

// Read -> verify -> write -> read -> verify, then compare printouts and a
// second write. Returns "" on success, else what went wrong.
std::string roundTripProblem(const std::string& path) {
  try {
    std::unique_ptr<Model> m1 = readModel(test::readFileBuffer(path));
    if (VerifyResult r = verify(*m1); !r.ok) return "verify after read: " + r.message;
    std::string w1 = writeModelToString(*m1);
    std::unique_ptr<Model> m2 = readModel(test::bufferOf(w1));
    if (VerifyResult r = verify(*m2); !r.ok) return "verify after re-read: " + r.message;
    const std::string p1 = toString(*m1), p2 = toString(*m2);
    if (p1 != p2) return "printouts differ after a round trip at " + firstDifference(p1, p2);
    const std::string w2 = writeModelToString(*m2);
    if (w1 != w2) {
      size_t k = 0;
      while (k < std::min(w1.size(), w2.size()) && w1[k] == w2[k])
        ++k;
      return "second write differs at byte " + std::to_string(k) + " (" +
             std::to_string(w1.size()) + " vs " + std::to_string(w2.size()) + " bytes)";
    }
    return {};
  } catch (const std::exception& e) {
    return std::string("exception: ") + e.what();
  }
}

void roundTripAll(const std::vector<std::string>& files) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> failures;
  for (const std::string& f : files) {
    std::string p = roundTripProblem(f);
    if (!p.empty()) failures.push_back(test::shortPath(f) + ": " + p);
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ round trip ] " << files.size() - failures.size() << "/" << files.size()
            << " models round-tripped in " << secs << " s\n";
  ::testing::Test::RecordProperty("models", static_cast<int>(files.size()));
  std::string report;
  for (size_t i = 0; i < failures.size() && i < 20; ++i)
    report += "  " + failures[i] + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " of " << files.size()
                                << " models failed the round trip (first 20):\n"
                                << report;
}

// ------------------------------------------------------------------ (a) every shared model

TEST(RoundTrip, SharedModels) {
  ONNXFOLD_REQUIRE_SHARED();
  const std::vector<std::string> files = test::sharedModelsUnder("models");
  if (files.empty()) GTEST_SKIP() << "no models under " << test::sharedDir() << "/models";
  roundTripAll(files);
}

TEST(RoundTrip, OnnxTests) {
  ONNXFOLD_REQUIRE_SHARED();
  const std::vector<std::string> files = test::sharedModelsUnder("onnx-tests");
  if (files.empty()) GTEST_SKIP() << "no models under " << test::sharedDir() << "/onnx-tests";
  EXPECT_GT(files.size(), 1000u) << "the ONNX backend tests should be ~1,950 models";
  roundTripAll(files);
}

TEST(RoundTrip, BuiltModelWithEveryKindOfField) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1, 3});
  Value* w = b.initializer("w", {3}, {1, 2, 3});
  Node* n = b.node(
      "Mul", {x, w}, 1,
      test::attrs(Attribute::makeFloat("f", 0.5f), Attribute::makeString("s", "str"),
                  Attribute::makeInts("ints", {1, -2, 3}), Attribute::makeFloats("floats", {1.5f}),
                  Attribute::makeTensor("t", test::int64Tensor({2}, {7, 8}))),
      "mul");
  n->doc_string = "node doc";
  n->metadata_props.push_back({"a", "b"});
  b.output(n->output(0));
  b.model().doc_string = "model doc";
  b.model().producer_version = "1.0";
  b.model().domain = "test.domain";
  b.model().model_version = 3;
  std::unique_ptr<Model> m = b.build();
  ASSERT_TRUE(verify(*m).ok);
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
}

// ------------------------------------------------------------------ (b) zero copy

TEST(ZeroCopy, RawDataIsAViewOfTheInput) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {1024});
  std::vector<float> big(1 << 20);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i % 1000);
  Value* w = b.initializer("w", {1024, 1024}, big);
  b.output(b.op("MatMul", {x, w}));
  std::string bytes = writeModelToString(*b.build());

  std::unique_ptr<Model> m;
  const uint8_t* lo = nullptr;
  size_t size = 0;
  {
    Buffer in = takeBuffer(std::move(bytes));
    lo = in.data();
    size = in.size();
    m = readModel(in);
  }  // the model keeps the input alive
  const Tensor& t = *m->graph->lookup("w")->initializer();
  EXPECT_GE(t.bytes(), lo);
  EXPECT_LE(t.bytes() + t.byteSize(), lo + size);
  EXPECT_EQ(t.byteSize(), big.size() * 4);
  EXPECT_EQ(t.at<float>(999), 999.0f);
  EXPECT_EQ(t.at<float>(1000), 0.0f);
}

// Records where each chunk the writer emits comes from.
class RecordingSink : public Sink {
 public:
  void write(const uint8_t* data, size_t size) override {
    chunks.emplace_back(data, size);
    out.append(reinterpret_cast<const char*>(data), size);
  }
  std::vector<std::pair<const uint8_t*, size_t>> chunks;
  std::string out;
};

TEST(ZeroCopy, WriterStreamsTensorBytesFromTheirStorage) {
  test::ModelBuilder b;
  std::vector<float> big(50000, 1.25f);
  Value* w = b.initializer("w", {50000}, big);
  b.output(w);
  std::unique_ptr<Model> m = b.build();
  const Tensor& t = *m->graph->lookup("w")->initializer();
  RecordingSink sink;
  WriteStats stats = writeModel(*m, sink);
  EXPECT_EQ(stats.model_bytes, sink.out.size());
  bool found = false;
  for (const auto& [p, n] : sink.chunks)
    found |= (p == t.bytes() && n == t.byteSize());
  EXPECT_TRUE(found) << "a large tensor is written from its own bytes, not copied first";
  EXPECT_EQ(inlineModelSize(*m), sink.out.size());
}

TEST(ZeroCopy, MisalignedInputReadsTheSame) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kDouble, {3});
  Tensor d(DataType::kDouble, {3});
  const double v[3] = {1.5, -2.5, 1e300};
  std::memcpy(d.mutableBytes(), v, sizeof v);
  d.name = "d";
  b.output(b.op("Add", {x, b.initializer(std::move(d))}));
  const std::string bytes = writeModelToString(*b.build());
  for (size_t shift = 0; shift < 8; ++shift) {
    uint8_t* p = nullptr;
    Buffer whole = Buffer::allocate(bytes.size() + shift, &p);
    std::memcpy(p + shift, bytes.data(), bytes.size());
    std::unique_ptr<Model> m = readModel(whole.slice(shift, bytes.size()));
    const Tensor& t = *m->graph->lookup("d")->initializer();
    EXPECT_EQ(t.at<double>(2), 1e300) << "shift " << shift;
    EXPECT_TRUE(t.aligned().buffer().isAligned(16));
    EXPECT_EQ(writeModelToString(*m), bytes) << "shift " << shift;
  }
}

// ------------------------------------------------------------------ (c) typed data fields

Tensor readInitializer(const std::string& tensor) {
  std::unique_ptr<Model> m = readBytes(pb::modelWithInitializer(tensor));
  EXPECT_TRUE(verify(*m).ok);
  const Value* v = m->graph->lookup("t");
  if (v == nullptr || !v->isInitializer()) throw std::runtime_error("no initializer 't'");
  return *v->initializer();
}

// A TensorProto named "t" with the given dims and data type; `data` adds the data fields.
std::string typedTensor(int32_t dtype, const std::vector<int64_t>& dims,
                        const std::function<void(pbf_writer&)>& data) {
  return pb::msg([&](pbf_writer& w) {
    for (int64_t d : dims)
      w.add_int64(1, d);
    w.add_int32(2, dtype);
    w.add_string(8, "t");
    data(w);
  });
}

template <class T>
void packed(pbf_writer& w, uint32_t field, std::initializer_list<T> v);
template <>
void packed<float>(pbf_writer& w, uint32_t field, std::initializer_list<float> v) {
  w.add_packed_float(field, v.begin(), v.end());
}
template <>
void packed<int32_t>(pbf_writer& w, uint32_t field, std::initializer_list<int32_t> v) {
  w.add_packed_int32(field, v.begin(), v.end());
}
template <>
void packed<int64_t>(pbf_writer& w, uint32_t field, std::initializer_list<int64_t> v) {
  w.add_packed_int64(field, v.begin(), v.end());
}
template <>
void packed<double>(pbf_writer& w, uint32_t field, std::initializer_list<double> v) {
  w.add_packed_double(field, v.begin(), v.end());
}
template <>
void packed<uint64_t>(pbf_writer& w, uint32_t field, std::initializer_list<uint64_t> v) {
  w.add_packed_uint64(field, v.begin(), v.end());
}

struct TypedCase {
  const char* what;
  int32_t dtype;
  std::vector<int64_t> dims;
  std::function<void(pbf_writer&)> data;
  std::string expected;  // raw little-endian bytes
};

TEST(TypedFields, DecodeToRawBytes) {
  constexpr uint64_t kBig = (uint64_t{1} << 63) + 1;
  const std::vector<TypedCase> cases = {
      {"float_data packed",
       1,
       {3},
       [](pbf_writer& w) {
         packed<float>(w, 4, {1.5f, -2.0f, 3.0f});
       },
       le<float>({1.5f, -2.0f, 3.0f})},
      {"float_data unpacked",
       1,
       {2},
       [](pbf_writer& w) {
         w.add_float(4, 0.25f);
         w.add_float(4, -8.0f);
       },
       le<float>({0.25f, -8.0f})},
      {"float scalar",
       1,
       {},
       [](pbf_writer& w) { packed<float>(w, 4, {4.5f}); },
       le<float>({4.5f})},
      {"complex64 float_data",
       14,
       {1},
       [](pbf_writer& w) {
         packed<float>(w, 4, {1.0f, 2.0f});
       },
       le<float>({1.0f, 2.0f})},
      {"int8 int32_data",
       3,
       {3},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {-1, 5, 127});
       },
       std::string("\xff\x05\x7f", 3)},
      {"uint8 int32_data",
       2,
       {3},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {0, 200, 255});
       },
       std::string("\x00\xc8\xff", 3)},
      {"bool int32_data",
       9,
       {3},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {1, 0, 1});
       },
       std::string("\x01\x00\x01", 3)},
      {"int16 int32_data",
       5,
       {2},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {-2, 300});
       },
       le<int16_t>({-2, 300})},
      {"uint16 int32_data",
       4,
       {1},
       [](pbf_writer& w) { packed<int32_t>(w, 5, {65535}); },
       le<uint16_t>({65535})},
      {"float16 int32_data (bit patterns)",
       10,
       {2},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {0x3C00, 0xC000});
       },
       le<uint16_t>({0x3C00, 0xC000})},
      {"bfloat16 int32_data",
       16,
       {1},
       [](pbf_writer& w) { packed<int32_t>(w, 5, {0x3F80}); },
       le<uint16_t>({0x3F80})},
      {"float8e4m3fn int32_data",
       17,
       {2},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {0x38, 0xB8});
       },
       std::string("\x38\xb8", 2)},
      {"int32 int32_data unpacked",
       6,
       {3},
       [](pbf_writer& w) {
         w.add_int32(5, -5);
         w.add_int32(5, 7);
         w.add_int32(5, std::numeric_limits<int32_t>::min());
       },
       le<int32_t>({-5, 7, std::numeric_limits<int32_t>::min()})},
      {"int4 int32_data (packed pairs)",
       22,
       {3},
       [](pbf_writer& w) {
         packed<int32_t>(w, 5, {0x21, 0x03});
       },
       std::string("\x21\x03", 2)},
      {"int64_data",
       7,
       {2},
       [](pbf_writer& w) {
         packed<int64_t>(w, 7, {-1, int64_t{1} << 40});
       },
       le<int64_t>({-1, int64_t{1} << 40})},
      {"double_data",
       11,
       {2},
       [](pbf_writer& w) {
         packed<double>(w, 10, {1.25, -3.0});
       },
       le<double>({1.25, -3.0})},
      {"complex128 double_data",
       15,
       {1},
       [](pbf_writer& w) {
         packed<double>(w, 10, {1.0, 2.0});
       },
       le<double>({1.0, 2.0})},
      {"uint64_data",
       13,
       {2},
       [](pbf_writer& w) {
         packed<uint64_t>(w, 11, {kBig, 5});
       },
       le<uint64_t>({kBig, 5})},
      {"uint32 uint64_data",
       12,
       {2},
       [](pbf_writer& w) {
         packed<uint64_t>(w, 11, {0xFFFFFFFFu, 7});
       },
       le<uint32_t>({0xFFFFFFFFu, 7})},
      {"empty tensor without data", 1, {0, 4}, [](pbf_writer&) {}, std::string()},
  };
  for (const TypedCase& c : cases) {
    SCOPED_TRACE(c.what);
    Tensor t;
    ASSERT_NO_THROW(t = readInitializer(typedTensor(c.dtype, c.dims, c.data)));
    EXPECT_EQ(static_cast<int32_t>(t.dtype()), c.dtype);
    EXPECT_EQ(t.dims(), c.dims);
    EXPECT_EQ(bytesOf(t), c.expected);
    // Written back as raw_data; the content survives.
    test::ModelBuilder b;
    t.name = "t";
    b.output(b.initializer(t));
    std::unique_ptr<Model> back = readBytes(writeModelToString(*b.build()));
    EXPECT_TRUE(back->graph->lookup("t")->initializer()->sameContent(t));
  }
}

TEST(TypedFields, StringData) {
  Tensor t = readInitializer(typedTensor(8, {3}, [](pbf_writer& w) {
    w.add_string(6, "ab");
    w.add_string(6, "");
    w.add_string(6, std::string("c\0d", 3));
  }));
  EXPECT_EQ(t.dtype(), DataType::kString);
  EXPECT_EQ(t.strings(), (std::vector<std::string>{"ab", "", std::string("c\0d", 3)}));
  test::ModelBuilder b;
  b.output(b.initializer(t));
  std::unique_ptr<Model> back = readBytes(writeModelToString(*b.build()));
  EXPECT_TRUE(back->graph->lookup("t")->initializer()->sameContent(t));
}

void expectParseError(const std::string& bytes, const std::vector<std::string>& mentions,
                      const ReadOptions& o = {}) {
  try {
    readBytes(bytes, o);
    ADD_FAILURE() << "expected a ParseError mentioning " << ::testing::PrintToString(mentions);
  } catch (const ParseError& e) {
    const std::string what = e.what();
    for (const std::string& m : mentions) {
      EXPECT_NE(what.find(m), std::string::npos) << "'" << m << "' not in: " << what;
    }
  }
}

TEST(TypedFields, CountAndTypeErrors) {
  auto model = [](int32_t dtype, const std::vector<int64_t>& dims,
                  const std::function<void(pbf_writer&)>& data) {
    return pb::modelWithInitializer(typedTensor(dtype, dims, data));
  };
  expectParseError(model(1, {3},
                         [](pbf_writer& w) {
                           packed<float>(w, 4, {1, 2});
                         }),
                   {"tensor 't'", "float_data has 2 values", "need 3"});
  expectParseError(model(7, {2},
                         [](pbf_writer& w) {
                           packed<int32_t>(w, 5, {1, 2});
                         }),
                   {"tensor 't'", "int64_data has 0 values"});
  expectParseError(model(1, {2}, [](pbf_writer& w) { w.add_string(9, std::string(7, 'x')); }),
                   {"tensor 't'", "raw_data has 7 bytes", "need 8"});
  expectParseError(model(1, {2}, [](pbf_writer&) {}), {"tensor 't'", "no data"});
  expectParseError(model(99, {1}, [](pbf_writer& w) { packed<int32_t>(w, 5, {1}); }),
                   {"tensor 't'", "data_type 99"});
  expectParseError(model(0, {1}, [](pbf_writer& w) { packed<int32_t>(w, 5, {1}); }),
                   {"tensor 't'", "data_type 0"});
  expectParseError(model(1, {-1}, [](pbf_writer&) {}), {"tensor 't'", "negative dimension"});
  expectParseError(model(8, {2}, [](pbf_writer& w) { w.add_string(6, "only one"); }),
                   {"tensor 't'", "string_data has 1"});
  expectParseError(model(1, {int64_t{1} << 32, int64_t{1} << 32}, [](pbf_writer&) {}),
                   {"tensor 't'", "overflow"});
}

// Huge declared dims with little data must be rejected before anything is
// allocated for them, and byte counts must not wrap around.
TEST(TypedFields, HugeDimsAreRejectedWithoutAllocating) {
  auto model = [](int32_t dtype, const std::vector<int64_t>& dims,
                  const std::function<void(pbf_writer&)>& data) {
    return pb::modelWithInitializer(typedTensor(dtype, dims, data));
  };
  // 2^40 floats (4 TiB) declared, one given.
  expectParseError(model(1, {int64_t{1} << 40}, [](pbf_writer& w) { packed<float>(w, 4, {1}); }),
                   {"tensor 't'"});
  expectParseError(model(7, {int64_t{1} << 50}, [](pbf_writer& w) { packed<int64_t>(w, 7, {1}); }),
                   {"tensor 't'"});
  // 2^61 floats: 2^66 bits wraps to 0 bytes in 64-bit arithmetic.
  expectParseError(model(1, {int64_t{1} << 61}, [](pbf_writer& w) { w.add_string(9, ""); }),
                   {"tensor 't'"});
  expectParseError(model(15, {int64_t{1} << 57},
                         [](pbf_writer& w) {
                           packed<double>(w, 10, {1, 2});
                         }),
                   {"tensor 't'"});
  expectParseError(model(8, {int64_t{1} << 60}, [](pbf_writer& w) { w.add_string(6, "s"); }),
                   {"tensor 't'"});
}

// ------------------------------------------------------------------ (d) external data

struct ExternalFiles {
  std::map<std::string, Buffer> files;
  std::vector<std::string> opened;
  ReadOptions options() {
    ReadOptions o;
    o.open_external = [this](const std::string& location) {
      opened.push_back(location);
      auto it = files.find(location);
      if (it == files.end()) throw Error("no such file: " + location);
      return std::make_shared<MemorySource>(it->second);
    };
    return o;
  }
};

TEST(ExternalData, ReadsASliceOfTheFile) {
  ExternalFiles ext;
  std::string file(32, '\0');
  const float v[4] = {1, 2, 3, 4};
  std::memcpy(&file[8], v, sizeof v);
  ext.files["weights.bin"] = test::bufferOf(file);
  const std::string bytes =
      pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, "weights.bin", "8", "16"));
  std::unique_ptr<Model> m = readBytes(bytes, ext.options());
  EXPECT_EQ(ext.opened, std::vector<std::string>{"weights.bin"});
  const Tensor& t = *m->graph->lookup("t")->initializer();
  EXPECT_TRUE(t.isLoaded());
  EXPECT_EQ(t.bytes(), ext.files["weights.bin"].data() + 8) << "a view of the file";
  EXPECT_EQ(t.at<float>(3), 4.0f);
  ASSERT_TRUE(t.external.has_value());
  EXPECT_EQ(t.external->location, "weights.bin");
  EXPECT_EQ(t.external->offset, 8);
  EXPECT_EQ(t.external->length, 16);
  EXPECT_TRUE(verify(*m).ok);

  // Without a length: the dims decide; without an offset: 0.
  m = readBytes(
      pb::modelWithInitializer(pb::externalTensor("t", 1, {2}, "weights.bin", nullptr, nullptr)),
      ext.options());
  EXPECT_EQ(m->graph->lookup("t")->initializer()->bytes(), ext.files["weights.bin"].data());
}

TEST(ExternalData, UnresolvedReferencesRoundTrip) {
  const std::string bytes =
      pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, "sub/weights.bin", "4096", "16"));
  std::unique_ptr<Model> m = readBytes(bytes);  // no open_external
  const Tensor& t = *m->graph->lookup("t")->initializer();
  EXPECT_FALSE(t.isLoaded());
  EXPECT_EQ(t.dims(), std::vector<int64_t>{4});
  EXPECT_TRUE(verify(*m).ok);
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  const Tensor& bt = *back->graph->lookup("t")->initializer();
  ASSERT_TRUE(bt.external.has_value());
  EXPECT_EQ(bt.external->location, "sub/weights.bin");
  EXPECT_EQ(bt.external->offset, 4096);
  EXPECT_EQ(bt.external->length, 16);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
}

TEST(ExternalData, UnsafeLocationsAreRejected) {
  ExternalFiles ext;
  ext.files["w.bin"] = test::bufferOf(std::string(64, '\0'));
  for (const char* loc : {"/etc/passwd", "../w.bin", "a/../../w.bin", "sub/..", "..", "", "C:w.bin",
                          "a\\b.bin", "\\\\server\\share"}) {
    SCOPED_TRACE(loc);
    const std::string bytes =
        pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, loc, "0", "16"));
    expectParseError(bytes, {"tensor 't'", "location '" + std::string(loc) + "'"}, ext.options());
    expectParseError(bytes, {"location '" + std::string(loc) + "'"});  // unresolved too
  }
  EXPECT_TRUE(ext.opened.empty()) << "no unsafe location may reach the file callback";
  // Names that merely contain dots are fine.
  for (const char* loc : {"w.bin", "./w.bin", "a/..b/w.bin"}) {
    SCOPED_TRACE(loc);
    std::unique_ptr<Model> m =
        readBytes(pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, loc, "0", "16")));
    EXPECT_EQ(m->graph->lookup("t")->initializer()->external->location, loc);
  }
}

TEST(ExternalData, RangeAndEntryErrors) {
  ExternalFiles ext;
  ext.files["w.bin"] = test::bufferOf(std::string(32, '\0'));
  auto model = [](const char* offset, const char* length, const char* location = "w.bin") {
    return pb::modelWithInitializer(pb::externalTensor("t", 1, {4}, location, offset, length));
  };
  expectParseError(model("100", "16"), {"tensor 't'", "outside 'w.bin'"}, ext.options());
  expectParseError(model("24", "16"), {"tensor 't'", "outside 'w.bin'"}, ext.options());
  expectParseError(model("17", nullptr), {"tensor 't'", "outside 'w.bin'"}, ext.options());
  expectParseError(model("99999999999999999999", "16"), {"tensor 't'"}, ext.options());
  expectParseError(model("0", "12"), {"tensor 't'", "length 12"}, ext.options());
  expectParseError(model("-8", "16"), {"tensor 't'", "offset '-8'"}, ext.options());
  expectParseError(model("8x", "16"), {"tensor 't'", "offset '8x'"}, ext.options());
  expectParseError(model("", "16"), {"tensor 't'", "offset ''"}, ext.options());
  expectParseError(model("0", "sixteen"), {"tensor 't'", "length 'sixteen'"}, ext.options());
  expectParseError(model("0", "16", nullptr), {"tensor 't'", "without a 'location'"},
                   ext.options());
  // 16 bytes at offset 16 is exactly the end of the file: fine.
  std::unique_ptr<Model> m = readBytes(model("16", "16"), ext.options());
  EXPECT_TRUE(m->graph->lookup("t")->initializer()->isLoaded());
  // The callback's own error reaches the caller.
  EXPECT_THROW(readBytes(model("0", "16", "missing.bin"), ext.options()), Error);
}

// A sink appending to a string owned by the test.
class StringRefSink : public Sink {
 public:
  explicit StringRefSink(std::string& out) : out_(out) {}
  void write(const uint8_t* data, size_t size) override {
    out_.append(reinterpret_cast<const char*>(data), size);
  }

 private:
  std::string& out_;
};

TEST(ExternalData, WriterMovesBigTensorsToAlignedOffsets) {
  test::ModelBuilder b;
  Value* x = b.input("x", DataType::kFloat, {-1});
  std::vector<float> v1(3000), v2(1500);
  for (size_t i = 0; i < v1.size(); ++i)
    v1[i] = static_cast<float>(i);
  for (size_t i = 0; i < v2.size(); ++i)
    v2[i] = -static_cast<float>(i);
  Value* small = b.initializer("small", {4}, {1, 2, 3, 4});
  Value* big1 = b.initializer("big1", {3000}, v1);
  Value* big2 = b.initializer("big2", {1500}, v2);
  Value* ints = b.initializer(test::int64Tensor({2}, {5, 6}, "ints"));
  b.output(b.op("Sum", {x, small, big1, big2}));
  b.output(ints);
  std::unique_ptr<Model> m = b.build();

  std::string model_bytes, ext_bytes;
  std::vector<std::string> opened;
  WriteOptions wo;
  wo.external_threshold = 1024;
  wo.external_location = "model.onnx.data";
  wo.open_external = [&](const std::string& location) -> std::unique_ptr<Sink> {
    opened.push_back(location);
    return std::make_unique<StringRefSink>(ext_bytes);
  };
  StringSink sink;
  WriteStats stats = writeModel(*m, sink, wo);
  EXPECT_EQ(opened, std::vector<std::string>{"model.onnx.data"});
  EXPECT_EQ(stats.external_tensors, 2u);
  EXPECT_EQ(stats.external_bytes, ext_bytes.size());
  EXPECT_EQ(stats.model_bytes, sink.out.size());
  EXPECT_LT(sink.out.size(), 1024u) << "the weights are not inline";

  ExternalFiles files;
  files.files["model.onnx.data"] = test::bufferOf(ext_bytes);  // 64-byte aligned, like a mapping
  std::unique_ptr<Model> back = readBytes(sink.out, files.options());
  ASSERT_TRUE(verify(*back).ok);
  for (const char* name : {"small", "big1", "big2", "ints"}) {
    SCOPED_TRACE(name);
    const Tensor& orig = *m->graph->lookup(name)->initializer();
    const Tensor& t = *back->graph->lookup(name)->initializer();
    EXPECT_TRUE(t.sameContent(orig));
    const bool external = orig.byteSize() >= 1024;
    ASSERT_EQ(t.external.has_value(), external);
    if (external) {
      EXPECT_EQ(t.external->location, "model.onnx.data");
      EXPECT_EQ(t.external->offset % 4096, 0);
      EXPECT_EQ(t.external->length, static_cast<int64_t>(orig.byteSize()));
      EXPECT_TRUE(t.buffer().isAligned(64)) << "aligned in the file, aligned in memory";
    }
  }

  // Tensors over the threshold with nowhere to put them: an error, not a silent inline write.
  WriteOptions no_sink;
  no_sink.external_threshold = 1024;
  no_sink.external_location = "x.data";
  StringSink unused;
  EXPECT_THROW(writeModel(*m, unused, no_sink), Error);
}

// ------------------------------------------------------------------ (e) unknown fields

// Bytes laid out in the writer's own order (known fields by number, unknown
// ones last), so a round trip must reproduce them exactly.
std::string modelWithUnknownFields() {
  using pb::msg;
  const std::string attr = msg([](pbf_writer& w) {
    w.add_string(1, "k");
    w.add_int64(3, 3);
    w.add_int64(20, 2);
    w.add_string(88, "attr-unknown");
  });
  const std::string node = msg([&](pbf_writer& w) {
    w.add_string(1, "x");
    w.add_string(1, "w");
    w.add_string(2, "y");
    w.add_string(3, "n");
    w.add_string(4, "Add");
    w.add_message(5, attr);
    w.add_fixed32(50, 0xdeadbeef);
    w.add_int64(51, -1);
  });
  const std::string tensor = msg([](pbf_writer& w) {
    w.add_int64(1, 2);
    w.add_int32(2, 1);
    w.add_string(8, "w");
    w.add_string(9, le<float>({1.0f, 2.0f}));
    w.add_fixed64(77, 0x0123456789abcdefULL);
    w.add_string(78, "tensor-unknown");
  });
  const std::string graph = msg([&](pbf_writer& w) {
    w.add_message(1, node);
    w.add_string(2, "g");
    w.add_message(5, tensor);
    w.add_message(11, pb::valueInfo("x"));
    w.add_message(12, pb::valueInfo("y"));
    w.add_int32(40, 40);  // unknown in GraphProto
  });
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_string(2, "producer");
    w.add_message(7, graph);
    w.add_message(8, msg([](pbf_writer& o) {
                    o.add_int64(2, 17);
                    o.add_int32(3, 1);  // unknown in OperatorSetIdProto
                  }));
    w.add_int64(99, 5);
    w.add_string(100, "model-unknown");
    w.add_double(101, 2.5);
  });
}

TEST(UnknownFields, SurviveByteExactly) {
  const std::string bytes = modelWithUnknownFields();
  std::unique_ptr<Model> m = readBytes(bytes);
  ASSERT_TRUE(verify(*m).ok);
  EXPECT_EQ(writeModelToString(*m), bytes);

  // Each unknown field is kept with its key, at the level it was found.
  auto enc = [](const std::function<void(pbf_writer&)>& f) { return pb::msg(f); };
  EXPECT_EQ(m->unknown_fields, enc([](pbf_writer& w) {
              w.add_int64(99, 5);
              w.add_string(100, "model-unknown");
              w.add_double(101, 2.5);
            }));
  EXPECT_EQ(m->graph->unknown_fields, enc([](pbf_writer& w) { w.add_int32(40, 40); }));
  const Node* n = m->graph->firstNode();
  EXPECT_EQ(n->unknown_fields, enc([](pbf_writer& w) {
              w.add_fixed32(50, 0xdeadbeef);
              w.add_int64(51, -1);
            }));
  EXPECT_EQ(n->attributes.at(0).unknown_fields,
            enc([](pbf_writer& w) { w.add_string(88, "attr-unknown"); }));
  EXPECT_EQ(m->graph->lookup("w")->initializer()->unknown_fields, enc([](pbf_writer& w) {
              w.add_fixed64(77, 0x0123456789abcdefULL);
              w.add_string(78, "tensor-unknown");
            }));
  EXPECT_EQ(m->opset_import.at(0).unknown_fields, enc([](pbf_writer& w) { w.add_int32(3, 1); }));
}

TEST(UnknownFields, InterleavedUnknownFieldsMoveToTheEndAndStay) {
  using pb::msg;
  // Unknown fields before and between known ones.
  const std::string node = msg([](pbf_writer& w) {
    w.add_int64(60, 1);
    w.add_string(1, "x");
    w.add_string(61, "between");
    w.add_string(2, "y");
    w.add_string(4, "Relu");
  });
  pb::GraphSpec g;
  g.nodes = {node};
  g.inputs = {pb::valueInfo("x")};
  g.outputs = {pb::valueInfo("y")};
  std::unique_ptr<Model> m = readBytes(pb::model(pb::graph(g)));
  EXPECT_EQ(m->graph->firstNode()->unknown_fields, msg([](pbf_writer& w) {
              w.add_int64(60, 1);
              w.add_string(61, "between");
            }));
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_EQ(back->graph->firstNode()->unknown_fields, m->graph->firstNode()->unknown_fields);
  EXPECT_EQ(writeModelToString(*back), w1);
}

// ------------------------------------------------------------------ (f) order, cycles, SSA

std::string graphModel(const std::vector<std::string>& nodes,
                       const std::vector<std::string>& outputs = {"y"}) {
  pb::GraphSpec g;
  g.nodes = nodes;
  g.inputs = {pb::valueInfo("x")};
  for (const auto& o : outputs)
    g.outputs.push_back(pb::valueInfo(o));
  return pb::model(pb::graph(g));
}

std::string opOrder(const Graph& g) {
  std::string s;
  for (const Node* n : g.nodes())
    s += (s.empty() ? "" : " ") + n->op_type;
  return s;
}

TEST(NodeOrder, OutOfOrderNodesAreSorted) {
  const std::string bytes = graphModel({
      pb::node({"b"}, {"y"}, "Abs", "abs"),
      pb::node({"a"}, {"b"}, "Neg", "neg"),
      pb::node({"x"}, {"a"}, "Relu", "relu"),
      pb::node({"x"}, {"z"}, "Sigmoid", "independent"),
  });
  std::unique_ptr<Model> m = readBytes(bytes);
  EXPECT_EQ(opOrder(*m->graph), "Relu Neg Abs Sigmoid");
  EXPECT_TRUE(verify(*m).ok) << verify(*m).message;
  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_EQ(opOrder(*back->graph), "Relu Neg Abs Sigmoid");
  EXPECT_EQ(writeModelToString(*back), w1);
}

TEST(NodeOrder, CyclesAreParseErrors) {
  expectParseError(graphModel({
                       pb::node({"x", "b"}, {"a"}, "Add", "first"),
                       pb::node({"a"}, {"b"}, "Neg", "second"),
                       pb::node({"a"}, {"y"}, "Relu", "third"),
                   }),
                   {"cycle"});
  // A node using its own output.
  expectParseError(graphModel({pb::node({"y"}, {"y"}, "Relu", "self")}), {"'self'"});
}

TEST(NodeOrder, SsaViolationsNameTheNode) {
  expectParseError(graphModel({
                       pb::node({"x"}, {"y"}, "Relu", "first"),
                       pb::node({"x"}, {"y"}, "Neg", "second"),
                   }),
                   {"'second'", "'y'", "defined twice"});
  expectParseError(graphModel({pb::node({"x"}, {"x"}, "Relu", "clash")}),
                   {"'clash'", "'x'", "defined twice"});
  expectParseError(graphModel({pb::node({"x"}, {"y", "y"}, "Split", "split")}), {"'split'", "'y'"});
  expectParseError(graphModel({pb::node({"nope"}, {"y"}, "Relu", "n1")}),
                   {"'n1'", "'nope'", "not defined"});
  expectParseError(graphModel({pb::node({"x"}, {"y"}, "Relu", "n1")}, {"missing"}),
                   {"graph output 'missing'"});
  expectParseError(graphModel({pb::node({"x"}, {"y"}, "", "no_op")}), {"no_op", "op_type"});
}

// main: a = Relu(x); y = If(cond) { then: t = Neg(a) } { else: t = Abs(a) }
std::string ifModel(bool if_first) {
  auto branch = [](const char* name, const char* op) {
    pb::GraphSpec g;
    g.name = name;
    g.nodes = {pb::node({"a"}, {"t"}, op, std::string(op) + "_in_" + name)};
    g.outputs = {pb::valueInfo("t")};
    return pb::graph(g);
  };
  const std::string iff = pb::node({"cond"}, {"y"}, "If", "if",
                                   {pb::attrGraph("then_branch", branch("then", "Neg")),
                                    pb::attrGraph("else_branch", branch("else", "Abs"))});
  const std::string relu = pb::node({"x"}, {"a"}, "Relu", "relu");
  pb::GraphSpec g;
  g.nodes = if_first ? std::vector<std::string>{iff, relu} : std::vector<std::string>{relu, iff};
  g.inputs = {pb::valueInfo("x"), pb::valueInfo("cond", 9, {})};
  g.outputs = {pb::valueInfo("y")};
  return pb::model(pb::graph(g));
}

TEST(Subgraphs, BranchesReuseNamesAndCaptureOuterValues) {
  std::unique_ptr<Model> m = readBytes(ifModel(false));
  ASSERT_TRUE(verify(*m).ok) << verify(*m).message;
  Value* a = m->graph->lookup("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->uses().size(), 2u) << "one capture per branch";
  for (const Use& u : a->uses()) {
    EXPECT_EQ(u.user->graph()->parent(), m->graph.get());
    EXPECT_EQ(u.user->graph()->ownerNode()->op_type, "If");
  }
  const Node* iff = m->graph->lastNode();
  ASSERT_EQ(iff->op_type, "If");
  EXPECT_EQ(iff->attr("then_branch")->g->outputs().at(0)->name(), "t");
  EXPECT_EQ(iff->attr("else_branch")->g->outputs().at(0)->name(), "t");
  EXPECT_EQ(m->graph->lookup("t"), nullptr) << "branch values are not visible outside";

  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_TRUE(verify(*back).ok);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
  // A clone captures its own copy of the outer value.
  std::unique_ptr<Model> c = back->clone();
  EXPECT_EQ(c->graph->lookup("a")->uses().size(), 2u);
  EXPECT_EQ(back->graph->lookup("a")->uses().size(), 2u);
  EXPECT_EQ(writeModelToString(*c), w1);
}

TEST(Subgraphs, NodeBeforeTheValueItsSubgraphCapturesIsSorted) {
  std::unique_ptr<Model> m = readBytes(ifModel(true));
  EXPECT_EQ(opOrder(*m->graph), "Relu If");
  EXPECT_TRUE(verify(*m).ok) << verify(*m).message;
  EXPECT_EQ(writeModelToString(*m), writeModelToString(*readBytes(ifModel(false))));
}

TEST(Subgraphs, ErrorsInsideABranchNameThePath) {
  pb::GraphSpec then_g;
  then_g.name = "then";
  then_g.nodes = {pb::node({"undefined_thing"}, {"t"}, "Neg", "inner")};
  then_g.outputs = {pb::valueInfo("t")};
  const std::string iff =
      pb::node({"x"}, {"y"}, "If", "outer_if", {pb::attrGraph("then_branch", pb::graph(then_g))});
  expectParseError(graphModel({iff}), {"'outer_if'", "'inner'", "'undefined_thing'"});
}

// Model-local functions (with an attribute reference) and training info: no
// shared model has them, so they are encoded here.
std::string functionAndTrainingModel() {
  using pb::msg;
  pb::GraphSpec g;
  g.nodes = {msg([](pbf_writer& n) {
    n.add_string(1, "x");
    n.add_string(2, "y");
    n.add_string(4, "MyLeaky");
    n.add_message(5, msg([](pbf_writer& a) {
                    a.add_string(1, "alpha");
                    a.add_float(2, 0.25f);
                    a.add_int64(20, 1);
                  }));
    n.add_string(7, "custom");
  })};
  g.initializers = {typedTensor(1, {2}, [](pbf_writer& w) { packed<float>(w, 4, {1, 2}); })};
  g.inputs = {pb::valueInfo("x")};
  g.outputs = {pb::valueInfo("y")};
  const std::string function = msg([](pbf_writer& f) {
    f.add_string(1, "MyLeaky");
    f.add_string(4, "X");
    f.add_string(5, "Y");
    f.add_string(6, "alpha");
    f.add_message(7, msg([](pbf_writer& n) {
                    n.add_string(1, "X");
                    n.add_string(2, "Y");
                    n.add_string(4, "LeakyRelu");
                    n.add_message(5, msg([](pbf_writer& a) {
                                    a.add_string(1, "alpha");
                                    a.add_int64(20, 1);
                                    a.add_string(21, "alpha");
                                  }));
                  }));
    f.add_message(9, msg([](pbf_writer& o) { o.add_int64(2, 17); }));
    f.add_string(10, "custom");
  });
  pb::GraphSpec algo;
  algo.name = "algorithm";
  algo.nodes = {pb::node({"t", "t"}, {"t_new"}, "Add", "update")};  // t: main graph initializer
  algo.outputs = {pb::valueInfo("t_new")};
  const std::string training = msg([&](pbf_writer& t) {
    t.add_message(2, pb::graph(algo));
    t.add_message(4, pb::stringPair("t", "t_new"));
  });
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_message(7, pb::graph(g));
    w.add_message(8, msg([](pbf_writer& o) { o.add_int64(2, 17); }));
    w.add_message(8, msg([](pbf_writer& o) {
                    o.add_string(1, "custom");
                    o.add_int64(2, 1);
                  }));
    w.add_message(20, training);
    w.add_message(25, function);
  });
}

TEST(ModelLevel, FunctionsAndTrainingInfoRoundTrip) {
  std::unique_ptr<Model> m = readBytes(functionAndTrainingModel());
  ASSERT_TRUE(verify(*m).ok) << verify(*m).message;
  ASSERT_EQ(m->functions.size(), 1u);
  const Function& f = m->functions[0];
  EXPECT_EQ(f.name, "MyLeaky");
  EXPECT_EQ(f.domain, "custom");
  EXPECT_EQ(f.attribute_names, std::vector<std::string>{"alpha"});
  ASSERT_EQ(f.body->numNodes(), 1u);
  EXPECT_EQ(f.body->firstNode()->attr("alpha")->ref_attr_name, "alpha");
  ASSERT_EQ(m->training_info.size(), 1u);
  ASSERT_TRUE(m->training_info[0].algorithm);
  EXPECT_EQ(m->graph->lookup("t")->uses().size(), 2u) << "the training graph uses 't' twice";

  const std::string w1 = writeModelToString(*m);
  std::unique_ptr<Model> back = readBytes(w1);
  EXPECT_TRUE(verify(*back).ok);
  EXPECT_EQ(toString(*back), toString(*m));
  EXPECT_EQ(writeModelToString(*back), w1);
  std::unique_ptr<Model> c = m->clone();
  EXPECT_EQ(writeModelToString(*c), w1);
}

TEST(ModelLevel, MissingGraphAndDuplicates) {
  expectParseError(pb::msg([](pbf_writer& w) { w.add_int64(1, 8); }), {"no graph"});
  const std::string two_graphs = pb::msg([](pbf_writer& w) {
    w.add_message(7, pb::graph({}));
    w.add_message(7, pb::graph({}));
  });
  expectParseError(two_graphs, {"more than one graph"});
  pb::GraphSpec g;
  g.initializers = {typedTensor(1, {1}, [](pbf_writer& w) { packed<float>(w, 4, {1}); }),
                    typedTensor(1, {1}, [](pbf_writer& w) { packed<float>(w, 4, {2}); })};
  expectParseError(pb::model(pb::graph(g)), {"'t'", "defined twice"});
}

}  // namespace
}  // namespace onnxfold

// The ONNX reader and writer: round trips of every shared model, zero-copy tensors and
// typed data fields (external data, unknown fields, node order, subgraphs and model-level
// fields: reader_structure_test.cpp). Cases are encoded by hand (onnx/proto_test_util.h).
#include <gtest/gtest.h>

#include "onnx/proto_test_util.h"

namespace onnxfold {
namespace {

using namespace proto_test;
using protozero::pbf_writer;
using test::takeBuffer;

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

}  // namespace
}  // namespace onnxfold

// Hand encoding of ONNX protobuf messages for the reader and writer tests: each case
// shows exactly the bytes it feeds the reader (protozero's pbf_writer), and the
// round-trip and parse-error checks the test files share.
#pragma once

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

namespace onnxfold::proto_test {

using protozero::pbf_writer;

// ------------------------------------------------------------------ hand encoding

namespace pb {

template <class F>
inline std::string msg(F&& f) {
  std::string s;
  {
    pbf_writer w(s);
    f(w);
  }
  return s;
}

// TypeProto { tensor_type { elem_type, shape { dim { dim_value }... } } }
inline std::string tensorType(int32_t elem, const std::vector<int64_t>& dims) {
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

inline std::string valueInfo(const std::string& name, int32_t elem = 1,
                             const std::vector<int64_t>& dims = {2}) {
  return msg([&](pbf_writer& w) {
    w.add_string(1, name);
    w.add_message(2, tensorType(elem, dims));
  });
}

inline std::string node(const std::vector<std::string>& ins, const std::vector<std::string>& outs,
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

inline std::string attrGraph(const std::string& name, const std::string& graph) {
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

inline std::string graph(const GraphSpec& g) {
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

inline std::string model(const std::string& graph, int64_t opset = 17) {
  return msg([&](pbf_writer& w) {
    w.add_int64(1, 8);
    w.add_message(7, graph);
    w.add_message(8, msg([&](pbf_writer& o) { o.add_int64(2, opset); }));
  });
}

// A model whose graph has `tensor` as its only initializer and output "t".
inline std::string modelWithInitializer(const std::string& tensor, const std::string& name = "t") {
  GraphSpec g;
  g.initializers = {tensor};
  g.outputs = {msg([&](pbf_writer& w) { w.add_string(1, name); })};
  return model(graph(g));
}

inline std::string stringPair(const std::string& k, const std::string& v) {
  return msg([&](pbf_writer& w) {
    w.add_string(1, k);
    w.add_string(2, v);
  });
}

// TensorProto stored externally: location/offset/length entries as given (absent if nullptr).
inline std::string externalTensor(const std::string& name, int32_t dtype,
                                  const std::vector<int64_t>& dims, const char* location,
                                  const char* offset, const char* length) {
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

inline std::unique_ptr<Model> readBytes(const std::string& bytes, const ReadOptions& o = {}) {
  return readModel(test::bufferOf(bytes), o);
}

inline std::string bytesOf(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.bytes()), t.byteSize());
}

template <class T>
inline std::string le(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  size_t i = 0;
  for (T v : values)
    std::memcpy(&s[sizeof(T) * i++], &v, sizeof(T));
  return s;
}

// The first line where two printouts differ, for messages.
inline std::string firstDifference(const std::string& a, const std::string& b) {
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
inline std::string roundTripProblem(const std::string& path) {
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

inline void roundTripAll(const std::vector<std::string>& files) {
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

inline void expectParseError(const std::string& bytes, const std::vector<std::string>& mentions,
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

// A TensorProto named "t" with the given dims and data type; `data` adds the data fields.
inline std::string typedTensor(int32_t dtype, const std::vector<int64_t>& dims,
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
inline void packed<float>(pbf_writer& w, uint32_t field, std::initializer_list<float> v) {
  w.add_packed_float(field, v.begin(), v.end());
}
template <>
inline void packed<int32_t>(pbf_writer& w, uint32_t field, std::initializer_list<int32_t> v) {
  w.add_packed_int32(field, v.begin(), v.end());
}
template <>
inline void packed<int64_t>(pbf_writer& w, uint32_t field, std::initializer_list<int64_t> v) {
  w.add_packed_int64(field, v.begin(), v.end());
}
template <>
inline void packed<double>(pbf_writer& w, uint32_t field, std::initializer_list<double> v) {
  w.add_packed_double(field, v.begin(), v.end());
}
template <>
inline void packed<uint64_t>(pbf_writer& w, uint32_t field, std::initializer_list<uint64_t> v) {
  w.add_packed_uint64(field, v.begin(), v.end());
}

}  // namespace onnxfold::proto_test

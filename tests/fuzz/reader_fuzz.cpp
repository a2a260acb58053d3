// libFuzzer target for the ONNX reader and writer.
//
// Any input is either rejected with an onnxfold::Error, or read into a model
// that verifies, writes, reads back, and writes again to the same bytes with
// the same printout; read through a skeleton (its weights left in the input as
// ranges) it is rejected alike or writes the same bytes. Anything else aborts.
//
//   cmake --preset fuzz && cmake --build --preset fuzz
//   build/fuzz/onnxfold_reader_fuzz -max_total_time=120 -rss_limit_mb=4096 corpus/
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "onnx/reader.h"
#include "onnx/skeleton.h"
#include "onnx/writer.h"

namespace {

using onnxfold::fuzz::BytesSource;
using onnxfold::fuzz::exactCopy;

[[noreturn]] void finding(const char* what, const std::string& detail) {
  std::fprintf(stderr, "reader_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// The model read through a skeleton (weights of 32 bytes or more left in the source) and
// written: must equal the direct read's write, or be rejected when it is.
bool throughSkeleton(const onnxfold::Buffer& in, std::string* written) {
  using namespace onnxfold;
  try {
    const Skeleton sk = readSkeleton(std::make_shared<BytesSource>(in), 32);
    ReadOptions ro;
    ro.skeleton = &sk;
    *written = writeModelToString(*readModel(sk.bytes, ro));
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnxfold;
  std::unique_ptr<Model> m1;
  std::string via_skeleton;
  const bool skeleton_ok = throughSkeleton(exactCopy(data, size), &via_skeleton);
  try {
    m1 = readModel(exactCopy(data, size));
  } catch (const Error& e) {
    if (e.what()[0] == '\0') finding("rejected with an empty message", "");
    if (skeleton_ok) finding("read through a skeleton, but readModel rejects it", e.what());
    return 0;
  }
  if (VerifyResult r = verify(*m1); !r.ok) finding("read, but verify() fails", r.message);

  std::string w1, w2;
  std::unique_ptr<Model> m2;
  try {
    w1 = writeModelToString(*m1);
  } catch (const Error& e) {
    finding("read, but cannot be written", e.what());
  }
  try {
    m2 = readModel(exactCopy(reinterpret_cast<const uint8_t*>(w1.data()), w1.size()));
  } catch (const Error& e) {
    finding("the written model does not read back", e.what());
  }
  if (VerifyResult r = verify(*m2); !r.ok) finding("re-read model fails verify()", r.message);
  try {
    w2 = writeModelToString(*m2);
  } catch (const Error& e) {
    finding("the re-read model cannot be written", e.what());
  }
  if (!skeleton_ok) finding("readModel reads it, but not through a skeleton", "");
  if (via_skeleton != w1) finding("read through a skeleton, the model writes other bytes", "");
  if (w1 != w2)
    finding("a second write differs from the first",
            std::to_string(w1.size()) + " vs " + std::to_string(w2.size()) + " bytes");
  const std::string p1 = toString(*m1), p2 = toString(*m2);
  if (p1 != p2) finding("the printout changes in a round trip", "\n" + p1 + "\n---\n" + p2);
  return 0;
}

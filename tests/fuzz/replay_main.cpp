// A main() for a fuzz target where libFuzzer is not available (wasm32 under node, where
// size_t is 32-bit): runs LLVMFuzzerTestOneInput on every file named on the command line, or
// in a directory named there (sorted), and exits 0 if none of them crashed or aborted.
//
//   node build/wasm/onnxfold_pipeline_replay.cjs tests/fuzz/corpus/pipeline tests/fuzz/regressions
//   ... --mutate=N: also N variants of each file made by the target's LLVMFuzzerCustomMutator
//       (seeds 1..N; LLVMFuzzerMutate is a simple byte flipper here); each variant is written
//       to ./replay-last-input before it runs, so after a crash that file reproduces it
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed);

namespace {
uint64_t g_state = 0x2545f4914f6cdd1dull;
uint64_t nextRandom() {  // xorshift64
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}
}  // namespace

// libFuzzer's byte mutator, which the custom mutator falls back to: flips, sets or drops a
// few bytes (deterministic: the state is reset per input below).
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  if (size == 0) return 0;
  for (int k = 0, n = 1 + static_cast<int>(nextRandom() % 4); k < n; ++k) {
    const size_t at = nextRandom() % size;
    switch (nextRandom() % 3) {
      case 0:
        data[at] ^= static_cast<uint8_t>(1u << (nextRandom() % 8));
        break;
      case 1:
        data[at] = static_cast<uint8_t>(nextRandom());
        break;
      default:
        if (size > 1) {
          std::memmove(data + at, data + at + 1, size - at - 1);
          --size;
        }
        break;
    }
  }
  return std::min(size, max_size);
}

namespace {

std::vector<std::string> inputsOf(const std::string& arg) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::exists(arg, ec)) {
    std::fprintf(stderr, "replay: %s does not exist; skipped\n", arg.c_str());
  } else if (fs::is_directory(arg, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(arg)) {
      if (e.is_regular_file()) files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(arg);
  }
  return files;
}

bool readFile(const std::string& path, std::vector<uint8_t>* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  unsigned mutate = 0;
  bool verbose = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--mutate=", 9) == 0) {
      mutate = static_cast<unsigned>(std::strtoul(argv[i] + 9, nullptr, 10));
    } else if (std::strcmp(argv[i], "-v") == 0) {
      verbose = true;
    } else {
      for (std::string& f : inputsOf(argv[i]))
        files.push_back(std::move(f));
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [-v] [--mutate=N] FILE|DIR...\n", argv[0]);
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  size_t runs = 0;
  for (const std::string& path : files) {
    std::vector<uint8_t> bytes;
    if (!readFile(path, &bytes)) {
      std::fprintf(stderr, "replay: cannot read %s\n", path.c_str());
      return 1;
    }
    // Named before it runs: a crash or an abort shows which file it was.
    if (verbose) std::fprintf(stderr, "replay: %s\n", path.c_str());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++runs;
    for (unsigned seed = 1; seed <= mutate; ++seed) {
      g_state = 0x2545f4914f6cdd1dull ^ (uint64_t{seed} << 20) ^ bytes.size();
      std::vector<uint8_t> m = bytes;
      m.resize(std::max<size_t>(bytes.size() * 2, 4096));
      m.resize(LLVMFuzzerCustomMutator(m.data(), bytes.size(), m.size(), seed));
      if (verbose) std::fprintf(stderr, "replay: %s mutated with seed %u\n", path.c_str(), seed);
      std::ofstream("replay-last-input", std::ios::binary | std::ios::trunc)
          .write(reinterpret_cast<const char*>(m.data()), static_cast<std::streamsize>(m.size()));
      LLVMFuzzerTestOneInput(m.data(), m.size());
      ++runs;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("replay: %zu inputs (%zu files) ran without a finding in %.1f s\n", runs,
              files.size(), s);
  return 0;
}

#include "api/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "onnx/reader.h"

namespace onnxfold {

namespace {

std::string sysError(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

std::string dirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string realPath(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) throw Error(sysError("cannot resolve", path));
  return buf;
}

// Opens external-data files relative to the model's folder, refusing any path
// (symlinks included) that resolves outside it; each file is mapped once.
ExternalDataIO fileExternalIO(const std::string& model_path, const std::string& out_path,
                              std::vector<std::unique_ptr<AtomicFile>>* created) {
  ExternalDataIO io;
  const std::string in_dir = dirOf(model_path);
  auto cache = std::make_shared<std::vector<std::pair<std::string, Buffer>>>();
  io.open = [in_dir, cache](const std::string& location) {
    for (const auto& [loc, buf] : *cache) {
      if (loc == location) return buf;
    }
    const std::string root = realPath(in_dir);
    const std::string full = in_dir + "/" + location;
    struct stat st {};
    if (::stat(full.c_str(), &st) != 0) {
      throw Error(sysError("external data file not found:", full));
    }
    const std::string resolved = realPath(full);
    if (resolved.compare(0, root.size() + 1, root + "/") != 0) {
      throw Error("external data location '" + location + "' resolves to '" + resolved +
                  "', outside the model's folder '" + root + "'");
    }
    Buffer b = readFileBuffer(resolved);
    cache->emplace_back(location, b);
    return b;
  };
  if (created != nullptr) {
    const std::string out_dir = dirOf(out_path);
    io.create = [out_dir, created](const std::string& location) -> std::unique_ptr<Sink> {
      checkExternalLocation(location, "external data output");
      auto f = std::make_unique<AtomicFile>(out_dir + "/" + location);
      AtomicFile* raw = f.get();
      created->push_back(std::move(f));
      struct Forward : Sink {
        AtomicFile* f;
        explicit Forward(AtomicFile* file) : f(file) {}
        void write(const uint8_t* d, size_t n) override { f->write(d, n); }
      };
      return std::make_unique<Forward>(raw);
    };
  }
  return io;
}

bool sameFile(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

Buffer readFileBuffer(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error(sysError("cannot open", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(sysError("cannot stat", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error("'" + path + "' is not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return Buffer(nullptr, 0, nullptr);
  }
#ifndef __EMSCRIPTEN__
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) throw Error(sysError("cannot map", path));
  std::shared_ptr<const void> owner(
      p, [size](const void* q) { ::munmap(const_cast<void*>(q), size); });
  return Buffer(static_cast<const uint8_t*>(p), size, std::move(owner));
#else
  uint8_t* data = nullptr;
  Buffer b = Buffer::allocateUninitialized(size, &data);  // read() fills it all
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      throw Error(sysError("cannot read", path));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return b;
#endif
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::string tmpl = dirOf(path_) + "/." + baseName(path_) + ".tmp-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  fd_ = ::mkstemp(buf.data());
  if (fd_ < 0) throw Error(sysError("cannot create a temporary file for", path_));
  temp_ = buf.data();
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void AtomicFile::write(const uint8_t* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd_, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(sysError("cannot write", path_));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  // New files get the usual mode (mkstemp makes them 0600).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw Error(sysError("cannot write", path_));
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0)
    throw Error(sysError("cannot rename into", path_));
  temp_.clear();
}

Report optimizeFile(const std::string& in, const std::string& out, Options options) {
  if (sameFile(in, out)) {
    throw Error("the output '" + out + "' is the input file; onnxfold never overwrites its input");
  }
  if (options.external_data_location.empty())
    options.external_data_location = baseName(out) + ".data";
  const std::string ext_out = dirOf(out) + "/" + options.external_data_location;
  if (sameFile(in, ext_out)) {
    throw Error("the external-data output '" + ext_out + "' is the input file");
  }
  Buffer bytes = readFileBuffer(in);
  std::vector<std::unique_ptr<AtomicFile>> created;
  ExternalDataIO io = fileExternalIO(in, out, &created);
  // Refuse to replace an external-data file the input reads from.
  auto open = io.open;
  io.open = [open, ext_out, in](const std::string& location) {
    if (sameFile(dirOf(in) + "/" + location, ext_out)) {
      throw Error("the output's external-data file '" + ext_out +
                  "' is the input's; choose another output name");
    }
    return open(location);
  };
  AtomicFile model_file(out);
  Report r = optimize(bytes, model_file, options, io);
  for (auto& f : created)
    f->commit();  // data first, so the model never points at missing data
  model_file.commit();
  return r;
}

SplitReport splitConstantsFile(const std::string& in, const std::string& prep,
                               const std::string& main, const Options& options) {
  for (const std::string* out : {&prep, &main}) {
    if (sameFile(in, *out)) {
      throw Error("the output '" + *out +
                  "' is the input file; onnxfold never overwrites its input");
    }
  }
  if (prep == main || sameFile(prep, main)) {
    throw Error("--prep and --main name the same file '" + prep + "'");
  }
  Buffer bytes = readFileBuffer(in);
  AtomicFile prep_file(prep), main_file(main);
  SplitReport r =
      splitConstants(bytes, prep_file, main_file, options, fileExternalIO(in, in, nullptr));
  prep_file.commit();
  main_file.commit();
  return r;
}

ModelSummary inspectFile(const std::string& path) {
  return inspect(readFileBuffer(path), fileExternalIO(path, path, nullptr));
}

std::string modelTextFile(const std::string& path) {
  return modelText(readFileBuffer(path), fileExternalIO(path, path, nullptr));
}

}  // namespace onnxfold

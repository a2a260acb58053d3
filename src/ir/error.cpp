#include "ir/error.h"

namespace onnxfold {

namespace {

// Length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlongs, no surrogates,
// at most U+10FFFF), or 0.
size_t utf8Length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// Valid UTF-8, control characters as spaces.
std::string clean(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8Length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else if (n == 1 && (static_cast<unsigned char>(text[i]) < 0x20 || text[i] == 0x7F)) {
      out += ' ';
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

// The largest cut <= at that does not split a UTF-8 sequence of the (valid) text.
size_t boundary(const std::string& s, size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0) == 0x80)
    --at;
  return at;
}

}  // namespace

std::string errorText(std::string_view text) {
  std::string s = clean(text);
  if (s.size() <= kMaxErrorBytes) return s;
  // Head and tail: the head says where, the tail usually what.
  const size_t head = boundary(s, 600), tail_start = boundary(s, s.size() - 340);
  return s.substr(0, head) + " [... " + std::to_string(tail_start - head) + " bytes ...] " +
         s.substr(tail_start);
}

bool isValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8Length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace onnxfold

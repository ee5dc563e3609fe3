// json.cpp — see json.h.
#include "lib/base/json.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/base/error.h"

namespace sg {
namespace {

/// The deepest nesting of arrays and objects in `text`, counted outside strings; stops counting
/// once past `limit`.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

/// Appends `value` to `out` while `out` is shorter than `budget`; below `levels` nested levels
/// arrays and objects print as […] and {…}.
void excerpt_into(const nlohmann::json& value, int levels, std::size_t budget, std::string& out) {
  if (out.size() > budget) return;
  if (value.is_array() || value.is_object()) {
    const bool array = value.is_array();
    if (value.empty()) {
      out += array ? "[]" : "{}";
      return;
    }
    if (levels == 0) {
      out += array ? "[…]" : "{…}";
      return;
    }
    out += array ? '[' : '{';
    bool first = true;
    for (auto item = value.begin(); item != value.end() && out.size() <= budget; ++item) {
      if (!first) out += ", ";
      first = false;
      if (!array) out += nlohmann::json(item.key()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ": ";
      excerpt_into(*item, levels - 1, budget, out);
    }
    out += array ? ']' : '}';
  } else if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    // Only what can be shown: a long string is cut before it is escaped.
    const nlohmann::json head = text.size() > budget ? text.substr(0, budget + 1) : text;
    out += head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } else {
    out += value.dump();
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& where) {
  if (nesting_depth(text, kJsonMaxDepth) > kJsonMaxDepth)
    throw InputError(where + ": JSON nested deeper than " + std::to_string(kJsonMaxDepth) + " levels",
                     "no file sinkgate reads nests that deep: the file is damaged or not what it seems");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(where + ": not valid JSON (" + std::string(error.what()) + ")");
  }
}

nlohmann::json read_json_file(const std::string& path, std::size_t max_bytes) {
  // Opened without blocking and checked on the open file: a FIFO or a device in the file's place
  // (a path swapped after a check) never hangs or streams without end.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(path + ": cannot be read: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw InputError(path + ": not a regular file", "give the JSON file itself");
  }
  if (static_cast<std::size_t>(info.st_size) > max_bytes) {
    ::close(fd);
    throw InputError(path + ": " + std::to_string(info.st_size) + " bytes, more than the " +
                     std::to_string(max_bytes >> 20) + " MB a JSON file sinkgate reads may have");
  }
  std::string text(static_cast<std::size_t>(info.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got != text.size()) throw InputError(path + ": cannot be read in full");
  return parse_json(text, path);
}

std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars) {
  std::string out;
  excerpt_into(value, /*levels=*/3, max_chars, out);
  if (out.size() <= max_chars) return out;
  // Cut at a character boundary of UTF-8.
  std::size_t cut = max_chars;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
  return out.substr(0, cut) + "…";
}

}  // namespace sg

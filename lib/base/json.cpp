// json.cpp — see json.h.
#include "lib/base/json.h"

#include "lib/base/error.h"
#include "lib/base/input_file.h"

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
  // A regular file of bounded size, checked on the opened file (input_file.h): a FIFO or a device
  // in the file's place never hangs or streams without end.
  auto file = open_input(path);
  return parse_json(file.read_all(max_bytes, ""), path);
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

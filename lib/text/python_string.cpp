// python_string.cpp — see python_string.h.
#include "lib/text/python_string.h"

#include <unicode/locid.h>
#include <unicode/unistr.h>
#include <unicode/uchar.h>

#include "lib/text/unicode.h"

namespace sg {

char32_t next_code_point(std::string_view text, size_t& position) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(position);
  int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (length <= 1 || position + static_cast<size_t>(length) > text.size()) {
    ++position;
    return lead;
  }
  char32_t value = lead & (0x7F >> length);
  for (int i = 1; i < length; ++i) {
    const unsigned char next = byte(position + static_cast<size_t>(i));
    if ((next & 0xC0) != 0x80) {
      ++position;
      return lead;
    }
    value = (value << 6) | (next & 0x3F);
  }
  position += static_cast<size_t>(length);
  return value;
}

bool python_isspace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool python_isalnum(char32_t c) {
  const auto kind = char_class(c);
  return kind == CharClass::letter || kind == CharClass::number;
}

std::string_view python_rstrip(std::string_view text) {
  size_t end = 0, position = 0;
  while (position < text.size()) {
    const char32_t c = next_code_point(text, position);
    if (!python_isspace(c)) end = position;
  }
  return text.substr(0, end);
}

std::string_view python_strip(std::string_view text) {
  size_t position = 0;
  while (position < text.size()) {
    size_t next = position;
    if (!python_isspace(next_code_point(text, next))) break;
    position = next;
  }
  return python_rstrip(text.substr(position));
}

std::string python_capitalize(std::string_view text) {
  if (text.empty()) return {};
  size_t first_end = 0;
  next_code_point(text, first_end);
  const auto first = text.substr(0, first_end);
  // Plain ASCII needs no tables.
  bool ascii = true;
  for (const char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) {
    std::string out(text);
    if (out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
    for (size_t i = 1; i < out.size(); ++i)
      if (out[i] >= 'A' && out[i] <= 'Z') out[i] = static_cast<char>(out[i] - 'A' + 'a');
    return out;
  }
  const icu::Locale& root = icu::Locale::getRoot();
  auto head = icu::UnicodeString::fromUTF8(icu::StringPiece(first.data(), static_cast<int32_t>(first.size())));
  const int32_t head_units = head.length();
  head.toTitle(nullptr, root, U_TITLECASE_NO_LOWERCASE | U_TITLECASE_NO_BREAK_ADJUSTMENT);
  // The rest lower-cased in the context of the whole text, as CPython does (a final sigma after
  // the first letter is ς): lower the whole, then drop what the first character became.
  auto whole = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  auto first_lower = whole.tempSubString(0, head_units);
  first_lower.toLower(root);
  whole.toLower(root);
  std::string out;
  head.toUTF8String(out);
  whole.tempSubString(first_lower.length()).toUTF8String(out);
  return out;
}

std::string python_replace(std::string_view text, std::string_view old, std::string_view replacement) {
  std::string out;
  out.reserve(text.size());
  size_t position = 0;
  while (true) {
    const size_t found = text.find(old, position);
    if (found == std::string_view::npos) break;
    out.append(text.substr(position, found - position));
    out.append(replacement);
    position = found + old.size();
  }
  out.append(text.substr(position));
  return out;
}

int64_t python_length(std::string_view text) {
  int64_t count = 0;
  for (size_t position = 0; position < text.size(); ++count) next_code_point(text, position);
  return count;
}

int64_t whitespace_split_count(std::string_view text) {
  int64_t pieces = 1;
  bool in_space = false;
  for (size_t position = 0; position < text.size();) {
    const bool space = python_isspace(next_code_point(text, position));
    if (space && !in_space) ++pieces;
    in_space = space;
  }
  return pieces;
}

}  // namespace sg

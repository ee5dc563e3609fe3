// unicode.h — the Unicode facts that sinkgate's text handling depends on, each as a named engine
// defines it: the GPT-2 pattern's character classes \p{L}, \p{N} and \s (as tiktoken's regex
// engine classifies code points), Rust regex's \s and \w (what Hugging Face `tokenizers` tests
// added tokens with), UTF-8 validity and its repair as Python's bytes.decode("utf-8",
// errors="replace") does it, and NFC (ICU).
//
// The class tables are generated from tiktoken's own engine (`python tests/tokenizer_reference.py
// tables`); tests/text/test_tokenizer.cpp checks every code point against it.
//
// Not here: the pre-tokeniser and BPE (tokenizer.h), Python's str methods (python_string.h).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sg {

/// The class of a code point in the GPT-2 pattern: \p{L}, \p{N}, \s (Unicode White_Space) or
/// none of these, as tiktoken's regex engine classifies it.
enum class CharClass : uint8_t { other = 0, letter = 1, number = 2, space = 3 };

/// The class of code_point (anything above U+10FFFF is other).
CharClass char_class(char32_t code_point);

/// char_class as a table for the pre-tokeniser's inner loop: ascii[] for bytes below 0x80, and
/// operator() for any code point (two stages: 4352 blocks of 256, identical blocks shared).
class CharClassTable {
 public:
  CharClassTable();
  CharClass operator()(char32_t c) const {
    if (c >= 0x110000) return CharClass::other;
    return static_cast<CharClass>(blocks_[size_t{stage_[c >> 8]} * 256 + (c & 0xFF)]);
  }
  CharClass ascii[128];

 private:
  static constexpr size_t kBlocks = 0x110000 / 256;
  std::array<uint16_t, kBlocks> stage_{};
  std::vector<uint8_t> blocks_;
};

/// The one table of char_class, built on first use.
const CharClassTable& char_class_table();

/// text with every ill-formed UTF-8 sequence replaced by U+FFFD (EF BF BD), as Python's
/// bytes.decode("utf-8", errors="replace") does; valid text is returned unchanged.
std::string replace_invalid_utf8(std::string_view text);

/// Whether text is well-formed UTF-8 (no surrogates, no overlong forms, nothing above U+10FFFF).
bool is_valid_utf8(std::string_view text);

/// The code point of valid UTF-8 at s[i], and its byte length in *length.
inline char32_t code_point_at(const unsigned char* s, size_t i, size_t* length) {
  const unsigned char b = s[i];
  if (b < 0x80) return *length = 1, b;
  if (b < 0xE0) return *length = 2, (char32_t{b} & 0x1F) << 6 | (s[i + 1] & 0x3F);
  if (b < 0xF0) return *length = 3, (char32_t{b} & 0x0F) << 12 | (char32_t{s[i + 1]} & 0x3F) << 6 | (s[i + 2] & 0x3F);
  *length = 4;
  return (char32_t{b} & 0x07) << 18 | (char32_t{s[i + 1]} & 0x3F) << 12 | (char32_t{s[i + 2]} & 0x3F) << 6 |
         (s[i + 3] & 0x3F);
}

/// The start of the character of valid UTF-8 that ends at s[i] (i > 0).
inline size_t previous_start(const unsigned char* s, size_t i) {
  do --i;
  while (i > 0 && (s[i] & 0xC0) == 0x80);
  return i;
}

/// \s of Rust's regex crate (Unicode White_Space), which is the GPT-2 pattern's \s.
inline bool is_white_space(char32_t c) { return char_class_table()(c) == CharClass::space; }

/// \w of Rust's regex crate: Alphabetic, marks, decimal numbers, connector punctuation, Join_Control.
bool is_word_character(char32_t c);

/// Appends the NFC of valid UTF-8 text to out (ICU), in parts of about 16 MB cut where NFC never
/// joins. Throws InputError for 256 MB of text in which NFC has no boundary, Error if ICU fails.
void append_nfc(std::string_view text, std::string& out);

/// Whether valid UTF-8 text is NFC without asking ICU: below U+0300 every character is a starter
/// that nothing composes with (its UTF-8 bytes are all below 0xCC). False says "maybe not".
inline bool is_plainly_nfc(std::string_view text) {
  for (const char c : text)
    if (static_cast<unsigned char>(c) >= 0xCC) return false;
  return true;
}

}  // namespace sg

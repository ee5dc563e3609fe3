// python_string.h — the few of Python's str operations that evaluation conventions written in
// Python (lm-evaluation-harness's task preprocessing) depend on, over UTF-8 text, so that C++
// reproduces them character for character: str.isspace / re's Unicode \s, strip, rstrip,
// capitalize, replace, len and isalnum.
//
// Text must be valid UTF-8 (is_valid_utf8); ill-formed bytes are treated as single code points
// of their own value and never fail.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace sg {

/// Decodes the code point at text[position] and advances position past it.
char32_t next_code_point(std::string_view text, size_t& position);

/// Python's str.isspace for one character (also what re's \s matches in a str pattern):
/// U+0009–000D, U+001C–0020, U+0085, U+00A0, U+1680, U+2000–200A, U+2028, U+2029, U+202F,
/// U+205F, U+3000.
bool python_isspace(char32_t code_point);

/// Python's str.isalnum for one character (letters \p{L} and numbers \p{N}, as the tokenizer's
/// tables classify them).
bool python_isalnum(char32_t code_point);

/// str.strip() / str.rstrip() with no argument.
std::string_view python_strip(std::string_view text);
std::string_view python_rstrip(std::string_view text);

/// str.capitalize(): the first character title-cased, the rest lower-cased (full Unicode case
/// mappings, ICU's root locale).
std::string python_capitalize(std::string_view text);

/// str.replace(old, new): every non-overlapping occurrence, left to right. old must not be empty.
std::string python_replace(std::string_view text, std::string_view old, std::string_view replacement);

/// len(str): the number of code points.
int64_t python_length(std::string_view text);

/// len(re.split(r"\s+", text)): one more than the number of maximal runs of white space.
int64_t whitespace_split_count(std::string_view text);

}  // namespace sg

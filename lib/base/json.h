// json.h — JSON from files sinkgate does not control (config.json, safetensors headers, shard
// indexes, vocabularies, JSON Lines corpora and task files), parsed and quoted safely.
//
// nlohmann::json parses iteratively, but dumping, comparing or copying a value recurses once per
// level: a config.json of 200,000 nested brackets overflowed the stack in an error message's
// dump(). Every untrusted text goes through parse_json, which refuses nesting deeper than a
// limit no real file comes near before nlohmann sees the text, and messages quote values with
// json_excerpt, which never prints more than a few dozen characters or descends far.
//
// Not here: what the JSON means (its readers check that).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sg {

/// Nesting deeper than this (objects and arrays) is refused: Hugging Face configs and tokenizers
/// nest 5 levels or fewer.
inline constexpr int kJsonMaxDepth = 64;

/// Parses `text` as one JSON value. Throws InputError "WHERE: not valid JSON (…)" or "WHERE: JSON
/// nested deeper than 64 levels" (`where` names the file, and the line where it helps).
nlohmann::json parse_json(std::string_view text, const std::string& where);

/// The whole of a regular file at `path` (at most `max_bytes`) parsed by parse_json. Throws
/// InputError naming the file when it cannot be read, is no regular file (a FIFO, /dev/zero) or
/// is larger than max_bytes.
nlohmann::json read_json_file(const std::string& path, std::size_t max_bytes = std::size_t{256} << 20);

/// A short quotation of `value` for messages: its JSON text up to `max_chars` characters (then
/// "…"), arrays and objects below a few levels shown as […] and {…}. Never recurses deeply or
/// builds a long string, whatever the value.
std::string json_excerpt(const nlohmann::json& value, std::size_t max_chars = 60);

}  // namespace sg

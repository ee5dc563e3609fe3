// text.cpp — join, trim, lists, strict numbers, durations and near misses.
#include "lib/base/text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "lib/base/error.h"

namespace sg {

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

std::string format_duration(double seconds) {
  char buffer[32];
  const long long total = std::llround(std::max(0.0, seconds));
  std::snprintf(buffer, sizeof buffer, "%lld:%02lld:%02lld", total / 3600, total / 60 % 60, total % 60);
  return buffer;
}

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  const auto end = text.find_last_not_of(" \t\r\n");
  return text.substr(begin, end - begin + 1);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (begin <= text.size()) {
    const auto comma = text.find(',', begin);
    const auto item = trim(text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return items;
}

std::vector<std::string> split_lists(const std::vector<std::string>& texts) {
  std::vector<std::string> items;
  for (const auto& text : texts)
    for (auto& item : split_list(text)) items.push_back(std::move(item));
  return items;
}

int64_t parse_integer(const std::string& text, const std::string& what) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+' && begin + 1 != end && begin[1] != '-') ++begin;  // from_chars takes '-', not '+'
  const auto [stop, error] = std::from_chars(begin, end, value);
  if (text.empty() || error != std::errc() || stop != end)
    throw UsageError(what + ": '" + text + "' is not an integer" +
                     (error == std::errc::result_out_of_range ? " in range" : ""));
  return value;
}

double parse_number(const std::string& text, const std::string& what) {
  // strtod over the whole text: from_chars for doubles needs GCC 11's libstdc++, and strtod
  // accepts exactly the forms people type (0.2, 1e-3, .5, +2).
  char* stop = nullptr;
  errno = 0;
  const double value = text.empty() || std::isspace(static_cast<unsigned char>(text[0])) ? std::nan("")
                                                                                         : std::strtod(text.c_str(), &stop);
  if (text.empty() || stop != text.c_str() + text.size() || !std::isfinite(value) || errno == ERANGE)
    throw UsageError(what + ": '" + text + "' is not a (finite) number");
  return value;
}

std::vector<int64_t> parse_integers(const std::vector<std::string>& texts, const std::string& what) {
  std::vector<int64_t> values;
  for (const auto& item : split_lists(texts)) values.push_back(parse_integer(item, what));
  if (values.empty()) throw UsageError(what + " is empty");
  return values;
}

std::vector<double> parse_numbers(const std::vector<std::string>& texts, const std::string& what) {
  std::vector<double> values;
  for (const auto& item : split_lists(texts)) values.push_back(parse_number(item, what));
  if (values.empty()) throw UsageError(what + " is empty");
  return values;
}

namespace {

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

/// Levenshtein distance (insertions, deletions, substitutions).
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest(const std::string& word, const std::vector<std::string>& choices) {
  const std::string target = lower(word);
  for (const auto& choice : choices)
    if (lower(choice) == target) return choice;
  const size_t limit = std::min<size_t>(2, (word.size() + 2) / 3);
  std::string best;
  size_t best_distance = limit + 1;
  bool tie = false;
  for (const auto& choice : choices) {
    const size_t d = edit_distance(target, lower(choice));
    if (d < best_distance) {
      best = choice;
      best_distance = d;
      tie = false;
    } else if (d == best_distance) {
      tie = true;
    }
  }
  return best_distance <= limit && !tie ? best : "";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices) {
  const auto guess = closest(word, choices);
  return guess.empty() ? "" : "did you mean '" + guess + "'? ";
}

}  // namespace sg

// text.cpp — join, trim, durations and near misses.
#include "lib/base/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

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

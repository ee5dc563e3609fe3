// text.h — the string helpers the library shares (messages, CSV, configuration lines).
#pragma once
#include <string>
#include <vector>

namespace sg {

/// The items with `separator` between them (seed lists, column names in messages, CSV rows).
std::string join(const std::vector<std::string>& items, const std::string& separator);

/// A duration as H:MM:SS (rounded to the second; negative durations print as 0:00:00).
std::string format_duration(double seconds);

/// The text without leading and trailing spaces, tabs, carriage returns and newlines.
std::string trim(const std::string& text);

/// The choice a mistyped `word` most likely meant: one equal to it ignoring case, else the one
/// nearest by edit distance (ignoring case) if that distance is at most 2 and at most a third of
/// the word's length, rounded up, and no other choice is as near. "" when none qualifies.
std::string closest(const std::string& word, const std::vector<std::string>& choices);

/// "did you mean 'X'? " for closest(word, choices) = X, else "" (the start of a hint).
std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices);

}  // namespace sg

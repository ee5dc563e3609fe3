// text.h — the string helpers the library shares (messages, CSV, configuration lines).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sg {

/// The items with `separator` between them (seed lists, column names in messages, CSV rows).
std::string join(const std::vector<std::string>& items, const std::string& separator);

/// A duration as H:MM:SS (rounded to the second; negative durations print as 0:00:00).
std::string format_duration(double seconds);

/// Splits "a,b,c" at commas (no quoting), trimming each item; empty items are dropped, so an
/// empty text gives no items.
std::vector<std::string> split_list(const std::string& text);

/// The items of list options given as comma lists and/or repeats: {"a,b", "c"} gives a, b, c.
std::vector<std::string> split_lists(const std::vector<std::string>& texts);

/// `text` as a whole decimal integer (sign allowed, nothing else around it); UsageError
/// "WHAT: 'TEXT' is not an integer" otherwise (WHAT names the option or field: "--load").
int64_t parse_integer(const std::string& text, const std::string& what);

/// `text` as a whole finite number ("0.2", "1e-3"); UsageError "WHAT: 'TEXT' is not a number".
double parse_number(const std::string& text, const std::string& what);

/// Every item of comma lists and/or repeats as an integer / a number (parse_integer,
/// parse_number); UsageError for a bad item or for no item at all.
std::vector<int64_t> parse_integers(const std::vector<std::string>& texts, const std::string& what);
std::vector<double> parse_numbers(const std::vector<std::string>& texts, const std::string& what);

/// The text without leading and trailing spaces, tabs, carriage returns and newlines.
std::string trim(const std::string& text);

/// The choice a mistyped `word` most likely meant: one equal to it ignoring case, else the one
/// nearest by edit distance (ignoring case) if that distance is at most 2 and at most a third of
/// the word's length, rounded up, and no other choice is as near. "" when none qualifies.
std::string closest(const std::string& word, const std::vector<std::string>& choices);

/// "did you mean 'X'? " for closest(word, choices) = X, else "" (the start of a hint).
std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices);

}  // namespace sg

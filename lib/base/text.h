// text.h — the string helpers the library shares (messages, CSV, configuration lines).
#pragma once
#include <string>
#include <vector>

namespace sg {

/// The items with `separator` between them (seed lists, column names in messages, CSV rows).
std::string join(const std::vector<std::string>& items, const std::string& separator);

/// The text without leading and trailing spaces, tabs, carriage returns and newlines.
std::string trim(const std::string& text);

}  // namespace sg

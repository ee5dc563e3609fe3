// arm.cpp — names and parameter costs of the attention arms.
#include "lib/run/arm.h"

#include <utility>

#include "lib/base/error.h"
#include "lib/base/text.h"

namespace sg {
namespace {

struct NamedArm {
  const char* name;
  Arm arm;
};

const NamedArm kPaperArms[] = {
    {"baseline", {ZeroOption::none, Filter::none}},
    {"offbyone", {ZeroOption::offbyone, Filter::none}},
    {"sinklogit", {ZeroOption::sinklogit, Filter::none}},
    {"sinktoken", {ZeroOption::sinktoken, Filter::none}},
    {"normgate", {ZeroOption::none, Filter::normgate}},
    {"renorm", {ZeroOption::none, Filter::renorm}},
    {"projgate", {ZeroOption::none, Filter::projgate}},
    {"combo", {ZeroOption::sinklogit, Filter::normgate}},
    {"combo2", {ZeroOption::sinklogit, Filter::projgate}},
};

const std::pair<const char*, ZeroOption> kZeroNames[] = {
    {"none", ZeroOption::none},
    {"offbyone", ZeroOption::offbyone},
    {"sinklogit", ZeroOption::sinklogit},
    {"sinktoken", ZeroOption::sinktoken},
};

const std::pair<const char*, Filter> kFilterNames[] = {
    {"none", Filter::none},
    {"normgate", Filter::normgate},
    {"renorm", Filter::renorm},
    {"projgate", Filter::projgate},
};

std::string valid_names() {
  std::string out;
  for (const auto& named : kPaperArms) out += std::string(out.empty() ? "" : ", ") + named.name;
  return out + ", or ZERO+FILTER with ZERO in {none, offbyone, sinklogit, sinktoken} and "
               "FILTER in {none, normgate, renorm, projgate}";
}

}  // namespace

std::string to_string(ZeroOption zero) {
  for (const auto& [name, value] : kZeroNames)
    if (value == zero) return name;
  return "?";
}

std::string to_string(Filter filter) {
  for (const auto& [name, value] : kFilterNames)
    if (value == filter) return name;
  return "?";
}

std::string Arm::name() const {
  for (const auto& named : kPaperArms)
    if (named.arm == *this) return named.name;
  return to_string(zero) + "+" + to_string(filter);
}

Arm parse_arm(const std::string& name) {
  for (const auto& named : kPaperArms)
    if (name == named.name) return named.arm;
  const auto plus = name.find('+');
  if (plus != std::string::npos) {
    const std::string zero_name = name.substr(0, plus), filter_name = name.substr(plus + 1);
    Arm arm;
    bool zero_ok = false, filter_ok = false;
    for (const auto& [n, value] : kZeroNames)
      if (zero_name == n) arm.zero = value, zero_ok = true;
    for (const auto& [n, value] : kFilterNames)
      if (filter_name == n) arm.filter = value, filter_ok = true;
    if (zero_ok && filter_ok) return arm;
  }
  std::vector<std::string> known = paper_arm_names();
  for (const auto& [zero, z] : kZeroNames)
    for (const auto& [filter, f] : kFilterNames) known.push_back(std::string(zero) + "+" + filter);
  throw UsageError("unknown arm '" + name + "'", did_you_mean(name, known) + "valid arms: " + valid_names());
}

const std::vector<std::string>& paper_arm_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& named : kPaperArms) out.emplace_back(named.name);
    return out;
  }();
  return names;
}

long long arm_parameter_cost(const Arm& arm, long long heads, long long head_dim, long long d_model) {
  long long cost = 0;
  if (arm.zero == ZeroOption::sinklogit) cost += heads;
  if (arm.zero == ZeroOption::sinktoken) cost += d_model;
  if (arm.filter == Filter::normgate || arm.filter == Filter::renorm) cost += heads;
  if (arm.filter == Filter::projgate) cost += heads * (head_dim + 1);
  return cost;
}

}  // namespace sg

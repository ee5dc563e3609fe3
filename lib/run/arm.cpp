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
    {"keygate", Filter::keygate},
};

const std::pair<const char*, OutputGate> kOutputGateNames[] = {
    {"none", OutputGate::none},
    {"outgate", OutputGate::headwise},
    {"outgate-elem", OutputGate::elementwise},
};

std::string valid_names() {
  std::string out;
  for (const auto& named : kPaperArms) out += std::string(out.empty() ? "" : ", ") + named.name;
  return out + ", or options joined with '+', at most one of each: ZERO in {offbyone, sinklogit, sinktoken}, "
               "FILTER in {normgate, renorm, projgate, keygate}, OUTPUT GATE in {outgate, outgate-elem} "
               "(a paper name stands for its zero option and filter)";
}

/// The arm's zero option and filter without the output gate, named.
std::string pair_name(ZeroOption zero, Filter filter) {
  const Arm pair{zero, filter, OutputGate::none};
  for (const auto& named : kPaperArms)
    if (named.arm == pair) return named.name;
  if (zero == ZeroOption::none) return to_string(filter);
  return to_string(zero) + "+" + to_string(filter);
}

std::vector<std::string> split_parts(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t plus; (plus = name.find('+', start)) != std::string::npos; start = plus + 1)
    parts.push_back(name.substr(start, plus - start));
  parts.push_back(name.substr(start));
  return parts;
}

/// Sets one axis from a part of a name; false when the axis was already set by another part.
template <typename T>
bool set_axis(T& slot, bool& taken, T value) {
  if (taken && slot != value) return false;
  slot = value;
  taken = true;
  return true;
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

std::string to_string(OutputGate gate) {
  for (const auto& [name, value] : kOutputGateNames)
    if (value == gate) return name;
  return "?";
}

std::string Arm::name() const {
  if (output_gate == OutputGate::none) return pair_name(zero, filter);
  if (zero == ZeroOption::none && filter == Filter::none) return to_string(output_gate);
  return pair_name(zero, filter) + "+" + to_string(output_gate);
}

Arm parse_arm(const std::string& name) {
  for (const auto& named : kPaperArms)
    if (name == named.name) return named.arm;
  // Options joined with '+': each part is a zero option, a filter, an output gate, "none" or a
  // paper name (its zero option and filter); an axis named twice with different values is an error.
  Arm arm;
  bool zero_set = false, filter_set = false, gate_set = false, ok = !name.empty();
  for (const auto& part : split_parts(name)) {
    bool known = false;
    if (part == "none") continue;
    for (const auto& [n, value] : kZeroNames)
      if (part == n) known = true, ok = ok && set_axis(arm.zero, zero_set, value);
    for (const auto& [n, value] : kFilterNames)
      if (!known && part == n) known = true, ok = ok && set_axis(arm.filter, filter_set, value);
    for (const auto& [n, value] : kOutputGateNames)
      if (!known && part == n) known = true, ok = ok && set_axis(arm.output_gate, gate_set, value);
    for (const auto& named : kPaperArms)
      if (!known && part == named.name) {
        known = true;
        ok = ok && set_axis(arm.zero, zero_set, named.arm.zero) && set_axis(arm.filter, filter_set, named.arm.filter);
      }
    ok = ok && known;
  }
  if (ok) return arm;
  std::vector<std::string> known = paper_arm_names();
  for (const auto& [zero, z] : kZeroNames)
    for (const auto& [filter, f] : kFilterNames) known.push_back(std::string(zero) + "+" + filter);
  for (const auto& [gate, g] : kOutputGateNames) known.push_back(gate);
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
  if (arm.filter == Filter::projgate || arm.filter == Filter::keygate) cost += heads * (head_dim + 1);
  if (arm.output_gate == OutputGate::headwise) cost += d_model * heads;
  if (arm.output_gate == OutputGate::elementwise) cost += d_model * d_model;
  return cost;
}

}  // namespace sg

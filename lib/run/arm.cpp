// arm.cpp — the table of arm options (arm.h) and what follows from it: names, parameters, costs,
// capabilities and their messages.
#include "lib/run/arm.h"

#include <algorithm>
#include <stdexcept>
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

// Shorthands of the table's rows.
constexpr auto kH = Extent::heads;
constexpr auto kD = Extent::head_dim;
constexpr auto kC = Extent::d_model;

// The arms' own parameters (Table 4). Options that share a parameter (the norm gate and the
// routing-slot control: tau_h; the projection and key gates: w_h, b_h) list the same row.
const ArmParameter kSinkLogit{"sink_logit", true, {kH}, ArmInit::zeros, 0, false, "b_h", "attn.sink_logit"};
const ArmParameter kSinkToken{"sink_token", false, {kC}, ArmInit::normal, 0.02, false, "", "sink_token"};
const ArmParameter kGateTau{"gate_tau", true, {kH}, ArmInit::minus_4_over_beta, 0, false, "τ_h", "attn.gate_tau"};
const ArmParameter kGateW{"gate_w", true, {kH, kD}, ArmInit::zeros, 0, false, "w_h", "attn.gate_w"};
const ArmParameter kGateB{"gate_b", true, {kH}, ArmInit::constant, 4.0, false, "b_h", "attn.gate_b"};
// W_theta is, in Qiu et al.'s code, extra rows of the query projection: initialised, (not)
// biased and decayed as the query projection is.
const ArmParameter kOutGateHeads{"out_gate", true, {kH, kC}, ArmInit::normal, 0.02, true, "W_θ", "attn.out_gate"};
const ArmParameter kOutGateElements{"out_gate", true, {kC, kC}, ArmInit::normal, 0.02, true, "W_θ", "attn.out_gate"};

using C = ArmCapability;

template <typename T>
ArmOption row(ArmAxis axis, T value, const char* name, const char* meaning, std::vector<ArmParameter> parameters,
              std::vector<ArmCapability> capabilities) {
  return {axis, static_cast<int>(value), name, meaning, std::move(parameters), std::move(capabilities)};
}

int axis_value(const Arm& arm, ArmAxis axis) {
  switch (axis) {
    case ArmAxis::zero: return static_cast<int>(arm.zero);
    case ArmAxis::filter: return static_cast<int>(arm.filter);
    case ArmAxis::output_gate: return static_cast<int>(arm.output_gate);
  }
  return 0;
}

const char* option_name(ArmAxis axis, int value) {
  for (const auto& option : arm_options())
    if (option.axis == axis && option.value == value) return option.name;
  return "?";
}

/// The option names of an axis but "none", as "{a, b, c}".
std::string option_set(ArmAxis axis) {
  std::string out;
  for (const auto& name : option_names(axis))
    if (name != "none") out += (out.empty() ? "{" : ", ") + name;
  return out + "}";
}

/// Sets one axis of `arm` from an option row.
void set_option(Arm& arm, const ArmOption& option) {
  switch (option.axis) {
    case ArmAxis::zero: arm.zero = static_cast<ZeroOption>(option.value); break;
    case ArmAxis::filter: arm.filter = static_cast<Filter>(option.value); break;
    case ArmAxis::output_gate: arm.output_gate = static_cast<OutputGate>(option.value); break;
  }
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

std::string to_string(ZeroOption zero) { return option_name(ArmAxis::zero, static_cast<int>(zero)); }
std::string to_string(Filter filter) { return option_name(ArmAxis::filter, static_cast<int>(filter)); }
std::string to_string(OutputGate gate) { return option_name(ArmAxis::output_gate, static_cast<int>(gate)); }

bool Arm::has_phantom() const { return arm_has(*this, ArmCapability::phantom); }
bool Arm::gates_values() const { return arm_has(*this, ArmCapability::value_slot_gate); }
bool Arm::has_gate() const { return arm_has(*this, ArmCapability::read_gate); }
bool Arm::has_gate_direction() const {
  return arm_has(*this, ArmCapability::read_direction) || arm_has(*this, ArmCapability::key_direction);
}
bool Arm::has_output_gate() const { return arm_has(*this, ArmCapability::query_gate); }

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
    for (const auto& option : arm_options()) {
      if (known || part != option.name) continue;
      known = true;
      Arm one;
      set_option(one, option);
      if (option.axis == ArmAxis::zero) ok = ok && set_axis(arm.zero, zero_set, one.zero);
      if (option.axis == ArmAxis::filter) ok = ok && set_axis(arm.filter, filter_set, one.filter);
      if (option.axis == ArmAxis::output_gate) ok = ok && set_axis(arm.output_gate, gate_set, one.output_gate);
    }
    for (const auto& named : kPaperArms)
      if (!known && part == named.name) {
        known = true;
        ok = ok && set_axis(arm.zero, zero_set, named.arm.zero) && set_axis(arm.filter, filter_set, named.arm.filter);
      }
    ok = ok && known;
  }
  if (ok) return arm;
  std::vector<std::string> known = paper_arm_names();
  for (const auto& zero : option_names(ArmAxis::zero))
    for (const auto& filter : option_names(ArmAxis::filter)) known.push_back(zero + "+" + filter);
  for (const auto& gate : option_names(ArmAxis::output_gate)) known.push_back(gate);
  throw UsageError("unknown arm '" + name + "'", did_you_mean(name, known) + "valid arms: " + arm_choices());
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
  for (const auto& parameter : arm_parameters(arm)) {
    long long size = 1;
    for (const int64_t extent : parameter.shape_of(heads, head_dim, d_model)) size *= extent;
    cost += size;
  }
  return cost;
}

std::string arm_choices() {
  std::string out;
  for (const auto& named : kPaperArms) out += std::string(out.empty() ? "" : ", ") + named.name;
  return out + ", or options joined with '+', at most one of each: ZERO in " + option_set(ArmAxis::zero) +
         ", FILTER in " + option_set(ArmAxis::filter) + ", OUTPUT GATE in " + option_set(ArmAxis::output_gate) +
         " (a paper name stands for its zero option and filter)";
}

// --- the table ----------------------------------------------------------------------------------

const std::vector<ArmOption>& arm_options() {
  static const std::vector<ArmOption> table = {
      row(ArmAxis::zero, ZeroOption::none, "none", "standard softmax: the weights sum to one", {}, {}),
      row(ArmAxis::zero, ZeroOption::offbyone, "offbyone", "a phantom key of value zero and logit 0 (Miller 2023)", {},
          {C::phantom}),
      row(ArmAxis::zero, ZeroOption::sinklogit, "sinklogit", "a phantom key of value zero and a learned logit b_h per head: output · σ(lse − b_h)",
          {kSinkLogit}, {C::phantom}),
      row(ArmAxis::zero, ZeroOption::sinktoken, "sinktoken",
          "a learned d_model vector before every sequence, its output position removed (Xiao et al. 2024)", {kSinkToken},
          {C::sink_position}),
      row(ArmAxis::filter, Filter::none, "none", "every read enters as it is", {}, {}),
      row(ArmAxis::filter, Filter::normgate, "normgate", "v_j ← σ(β(‖v_j‖/√d − τ_h)) v_j, β = 8", {kGateTau},
          {C::read_gate, C::value_slot_gate}),
      row(ArmAxis::filter, Filter::renorm, "renorm", "s_ij ← s_ij + log g_j with the norm gate's g_j (the routing slot)",
          {kGateTau}, {C::read_gate, C::routing_slot}),
      row(ArmAxis::filter, Filter::projgate, "projgate", "v_j ← σ(w_hᵀv_j + b_h) v_j", {kGateW, kGateB},
          {C::read_gate, C::value_slot_gate, C::read_direction}),
      row(ArmAxis::filter, Filter::keygate, "keygate", "v_j ← σ(w_hᵀk_j/√d + b_h) v_j: decided on the key",
          {kGateW, kGateB}, {C::read_gate, C::value_slot_gate, C::key_direction}),
      row(ArmAxis::output_gate, OutputGate::none, "none", "each head's output enters the output projection as it is", {}, {}),
      row(ArmAxis::output_gate, OutputGate::headwise, "outgate",
          "y_i ← y_i · σ(x_i W_θᵀ), one gate per head and query (Qiu et al. 2025)", {kOutGateHeads}, {C::query_gate}),
      row(ArmAxis::output_gate, OutputGate::elementwise, "outgate-elem",
          "y_i ← y_i ⊙ σ(x_i W_θᵀ), one gate per head dimension and query: head h, dimension e is row h·d + e of W_θ", {kOutGateElements}, {C::query_gate}),
  };
  return table;
}

const ArmOption& arm_option(const Arm& arm, ArmAxis axis) {
  const int value = axis_value(arm, axis);
  for (const auto& option : arm_options())
    if (option.axis == axis && option.value == value) return option;
  throw std::logic_error("arm table: no row for option " + std::to_string(value) + " of an axis");
}

std::vector<ArmParameter> arm_parameters(const Arm& arm) {
  std::vector<ArmParameter> out;
  for (const auto axis : {ArmAxis::zero, ArmAxis::filter, ArmAxis::output_gate})
    for (const auto& parameter : arm_option(arm, axis).parameters) out.push_back(parameter);
  return out;
}

bool arm_has(const Arm& arm, ArmCapability capability) {
  for (const auto axis : {ArmAxis::zero, ArmAxis::filter, ArmAxis::output_gate})
    for (const auto c : arm_option(arm, axis).capabilities)
      if (c == capability) return true;
  return false;
}

std::string describe(ArmCapability capability) {
  switch (capability) {
    case C::phantom: return "a phantom key column";
    case C::sink_position: return "a sink token";
    case C::read_gate: return "a per-read gate";
    case C::value_slot_gate: return "a per-read gate in the value slot";
    case C::routing_slot: return "a per-read gate in the routing slot";
    case C::read_direction: return "a projection gate";  // a learned direction on the reads
    case C::key_direction: return "a key gate";          // a learned direction on the keys
    case C::query_gate: return "an output gate";
  }
  return "?";
}

std::string arms_with(ArmCapability capability) {
  std::vector<std::string> names, options;
  for (const auto& named : kPaperArms)
    if (arm_has(named.arm, capability)) names.emplace_back(named.name);
  for (const auto& option : arm_options())
    for (const auto c : option.capabilities)
      if (c == capability) {
        options.emplace_back(option.name);
        if (std::find(names.begin(), names.end(), option.name) == names.end()) names.emplace_back(option.name);
      }
  std::string joined;
  for (size_t i = 0; i < options.size(); ++i)
    joined += (i == 0 ? "" : i + 1 == options.size() ? " or " : ", ") + options[i];
  return describe(capability) + " (" + join(names, ", ") + ", or any arm joined with " + joined + ")";
}

std::string config_field(ArmAxis axis) {
  switch (axis) {
    case ArmAxis::zero: return "zero_option";
    case ArmAxis::filter: return "filter";
    case ArmAxis::output_gate: return "output_gate";
  }
  return "?";
}

std::vector<std::string> option_names(ArmAxis axis) {
  std::vector<std::string> out;
  for (const auto& option : arm_options())
    if (option.axis == axis) out.emplace_back(option.name);
  return out;
}

std::vector<Arm> all_arms() {
  std::vector<Arm> out;
  for (const auto& zero : arm_options())
    for (const auto& filter : arm_options())
      for (const auto& gate : arm_options()) {
        if (zero.axis != ArmAxis::zero || filter.axis != ArmAxis::filter || gate.axis != ArmAxis::output_gate) continue;
        Arm arm;
        set_option(arm, zero);
        set_option(arm, filter);
        set_option(arm, gate);
        out.push_back(arm);
      }
  return out;
}

namespace {

std::string axis_title(ArmAxis axis) {
  switch (axis) {
    case ArmAxis::zero: return "zero option";
    case ArmAxis::filter: return "filter";
    case ArmAxis::output_gate: return "output gate";
  }
  return "?";
}

std::string number(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

std::string describe_parameter(const ArmParameter& parameter) {
  std::string shape;
  for (const auto extent : parameter.shape)
    shape += std::string(shape.empty() ? "" : ", ") + (extent == Extent::heads ? "H" : extent == Extent::head_dim ? "d" : "d_model");
  std::string init;
  switch (parameter.init) {
    case ArmInit::zeros: init = "0"; break;
    case ArmInit::constant: init = number(parameter.value); break;
    case ArmInit::minus_4_over_beta: init = "−4/β"; break;
    case ArmInit::normal: init = "N(0, " + number(parameter.value) + ")"; break;
  }
  return "`" + std::string(parameter.name) + "` " + (*parameter.symbol ? std::string(parameter.symbol) + " " : "") + "(" + shape + ")" +
         (parameter.per_layer ? "" : " once per model") + ", init " + init + ", " +
         (parameter.decayed ? "decayed" : "not decayed") + ", exported as `" + parameter.export_name + "`";
}

}  // namespace

std::string arm_options_markdown() {
  std::string out = "| axis | option | rule | parameters | capabilities |\n| --- | --- | --- | --- | --- |\n";
  for (const auto& option : arm_options()) {
    std::vector<std::string> parameters, capabilities;
    for (const auto& parameter : option.parameters) parameters.push_back(describe_parameter(parameter));
    for (const auto capability : option.capabilities) capabilities.push_back(describe(capability));
    out += "| " + axis_title(option.axis) + " | `" + option.name + "` | " + option.meaning + " | " +
           (parameters.empty() ? "—" : join(parameters, "; ")) + " | " +
           (capabilities.empty() ? "—" : join(capabilities, ", ")) + " |\n";
  }
  return out;
}

std::vector<int64_t> ArmParameter::shape_of(int64_t heads, int64_t head_dim, int64_t d_model) const {
  std::vector<int64_t> out;
  for (const auto extent : shape)
    out.push_back(extent == Extent::heads ? heads : extent == Extent::head_dim ? head_dim : d_model);
  return out;
}

std::string ArmParameter::stored_name(int64_t layer) const {
  return per_layer ? "blocks." + std::to_string(layer) + ".attn." + name : std::string(name);
}

}  // namespace sg

// arm.h — the attention arms of Section 3.3 / Table 4 as (zero option, filter) pairs.
//
// An arm is named either by one of the paper's nine names (baseline, offbyone, sinklogit,
// sinktoken, normgate, renorm, projgate, combo, combo2) or by "ZERO+FILTER" for any other
// combination, e.g. "sinktoken+projgate" or "offbyone+renorm".
#pragma once
#include <string>
#include <vector>

namespace sg {

/// How a head can output (approximately) nothing.
enum class ZeroOption {
  none,       // standard softmax: the weights sum to one
  offbyone,   // phantom key with logit 0 and value exactly zero (Miller 2023)
  sinklogit,  // phantom key with a learnable logit b_h per head, init 0
  sinktoken,  // a learned extra token prepended to every sequence (Xiao et al. 2024)
};

/// What a head does to its reads before aggregating them.
enum class Filter {
  none,
  normgate,  // v_j <- sigma(beta (|v_j|/sqrt(d) - tau_h)) v_j, beta = 8, tau_h init -4/beta
  renorm,    // routing-slot control: s_ij <- s_ij + log g_j with the norm gate's g_j
  projgate,  // v_j <- sigma(w_h . v_j + b_h) v_j, w_h = 0 and b_h = 4 at init
};

struct Arm {
  ZeroOption zero = ZeroOption::none;
  Filter filter = Filter::none;

  /// True when the arm has a phantom key column (off-by-one or sink logit).
  bool has_phantom() const { return zero == ZeroOption::offbyone || zero == ZeroOption::sinklogit; }
  /// True when the gate multiplies the reads (value slot) rather than biasing the routing.
  bool gates_values() const { return filter == Filter::normgate || filter == Filter::projgate; }
  /// True for every arm with a gate signal g_j (value slot or routing slot).
  bool has_gate() const { return filter != Filter::none; }

  /// The paper's name where there is one ("combo2"), else "zero+filter".
  std::string name() const;
  bool operator==(const Arm& other) const { return zero == other.zero && filter == other.filter; }
};

/// Parses an arm name; throws UsageError naming the valid choices.
Arm parse_arm(const std::string& name);

/// The nine arms of Table 4, in the paper's order.
const std::vector<std::string>& paper_arm_names();

std::string to_string(ZeroOption zero);
std::string to_string(Filter filter);

/// Parameters the arm adds per layer for H heads of dimension d in a model of width d_model
/// (Table 4; the sink token's d_model is added once, at the input).
long long arm_parameter_cost(const Arm& arm, long long heads, long long head_dim, long long d_model);

}  // namespace sg

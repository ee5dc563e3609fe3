// arm.h — the attention arms of Section 3.3 / Table 4 as (zero option, filter) pairs.
//
// An arm is named either by one of the paper's nine names (baseline, offbyone, sinklogit,
// sinktoken, normgate, renorm, projgate, combo, combo2) or by its options joined with '+', at
// most one of each axis in any order: "sinktoken+projgate", "offbyone+renorm", "keygate",
// "sinklogit+outgate", "combo2+outgate-elem". Beyond the paper's two axes there is a third, the
// output gate of Qiu et al. (2025), and a fourth filter, the key-side gate (docs/arms.md).
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
  keygate,   // v_j <- sigma(w_h . k_j / sqrt(d) + b_h) v_j: decided on the key, w_h = 0, b_h = 4 at init
};

/// A gate on each head's attention output, decided on the query (Qiu et al. 2025, "Gated Attention
/// for Large Language Models", arXiv 2505.06708): y_i <- y_i * sigma(x_i W_theta) before the output
/// projection, x_i the block's input after its pre-norm.
enum class OutputGate {
  none,
  headwise,     // "outgate": one scalar per head and query, W_theta in R^{C x H}
  elementwise,  // "outgate-elem": one per head dimension, W_theta in R^{C x C}
};

struct Arm {
  ZeroOption zero = ZeroOption::none;
  Filter filter = Filter::none;
  OutputGate output_gate = OutputGate::none;

  /// True when the arm has a phantom key column (off-by-one or sink logit).
  bool has_phantom() const { return zero == ZeroOption::offbyone || zero == ZeroOption::sinklogit; }
  /// True when a per-read gate g_j multiplies the reads (value slot) rather than biasing the
  /// routing: the norm and projection gates (decided on the read) and the key gate (on the key).
  bool gates_values() const {
    return filter == Filter::normgate || filter == Filter::projgate || filter == Filter::keygate;
  }
  /// True for every arm with a per-read gate signal g_j (value slot or routing slot).
  bool has_gate() const { return filter != Filter::none; }
  /// True when the arm has a learned direction w_h that its gate projects onto (projection gate:
  /// the read; key gate: the key).
  bool has_gate_direction() const { return filter == Filter::projgate || filter == Filter::keygate; }
  bool has_output_gate() const { return output_gate != OutputGate::none; }

  /// The paper's name where there is one ("combo2"), else the options joined with '+', the
  /// zero option first, then the filter, then the output gate ("sinklogit+outgate", "keygate").
  std::string name() const;
  bool operator==(const Arm& other) const {
    return zero == other.zero && filter == other.filter && output_gate == other.output_gate;
  }
};

/// Parses an arm name; throws UsageError naming the valid choices.
Arm parse_arm(const std::string& name);

/// The nine arms of Table 4, in the paper's order.
const std::vector<std::string>& paper_arm_names();

std::string to_string(ZeroOption zero);
std::string to_string(Filter filter);
std::string to_string(OutputGate gate);

/// Parameters the arm adds per layer for H heads of dimension d in a model of width d_model
/// (Table 4; the sink token's d_model is added once, at the input; the output gate's W_theta is
/// d_model x H head-wise, d_model x d_model element-wise).
long long arm_parameter_cost(const Arm& arm, long long heads, long long head_dim, long long d_model);

}  // namespace sg

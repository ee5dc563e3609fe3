// arm.h — the attention arms of Section 3.3 / Table 4 as (zero option, filter) pairs, and the one
// table of arm options from which every per-arm list is derived.
//
// An arm is named either by one of the paper's nine names (baseline, offbyone, sinklogit,
// sinktoken, normgate, renorm, projgate, combo, combo2) or by its options joined with '+', at
// most one of each axis in any order: "sinktoken+projgate", "offbyone+renorm", "keygate",
// "sinklogit+outgate", "combo2+outgate-elem". Beyond the paper's two axes there is a third, the
// output gate of Qiu et al. (2025), and a fourth filter, the key-side gate (docs/arms.md).
//
// The table (arm_options(), arm.cpp) has one row per option of each axis: its name (as run files,
// exports and the command line spell it), the parameters it adds (stored name, shape rule in H,
// d and d_model, initialisation, weight decay, export name) and its capabilities (ArmCapability).
// Derived from it: parsing and naming, arm_parameter_cost (Table 4), ModelConfig::parameter_shapes,
// the attention module's and the toy's parameter registration, hf_layout's names, every
// "needs an arm with …" message (arms_with) and every --help list of arms (arm_choices).
//
// A new option needs: an enumerator below, its row in arm.cpp (name, meaning, parameters,
// capabilities), its maths in lib/model/attention.cpp (gate_logits / attend) and in
// pipelines/hf/modeling_sinkgate.py (both tested against the fp64 reference and transformers),
// and its tests; the registrations, costs, names, messages and help texts follow from the row.
#pragma once
#include <cstdint>
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
/// for Large Language Models", arXiv 2505.06708): y_i <- y_i * sigma(x_i W_theta^T) before the
/// output projection, x_i (a row, length C) the block's input after its pre-norm and W_theta the
/// parameter out_gate.
enum class OutputGate {
  none,
  headwise,     // "outgate": one scalar per head and query, W_theta in R^{H x C}
  elementwise,  // "outgate-elem": one per head dimension, W_theta in R^{C x C}; head h, dimension e
                // is row h*d + e of W_theta
};

struct Arm {
  ZeroOption zero = ZeroOption::none;
  Filter filter = Filter::none;
  OutputGate output_gate = OutputGate::none;

  /// True when the arm has a phantom key column (off-by-one or sink logit).
  bool has_phantom() const;
  /// True when a per-read gate g_j multiplies the reads (value slot) rather than biasing the
  /// routing: the norm and projection gates (decided on the read) and the key gate (on the key).
  bool gates_values() const;
  /// True for every arm with a per-read gate signal g_j (value slot or routing slot).
  bool has_gate() const;
  /// True when the arm has a learned direction w_h that its gate projects onto (projection gate:
  /// the read; key gate: the key).
  bool has_gate_direction() const;
  bool has_output_gate() const;

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
/// H x d_model head-wise, d_model x d_model element-wise): the sum of arm_parameters' sizes.
long long arm_parameter_cost(const Arm& arm, long long heads, long long head_dim, long long d_model);

/// "baseline, offbyone, …, combo2, or options joined with '+', at most one of each: ZERO in {…},
/// FILTER in {…}, OUTPUT GATE in {…} (…)": every --help and error hint that lists the arms.
std::string arm_choices();

// --- the table of arm options -------------------------------------------------------------------

/// The three axes of an arm.
enum class ArmAxis { zero, filter, output_gate };

/// A dimension of an arm parameter's shape.
enum class Extent {
  heads,     // H
  head_dim,  // d = d_model / H
  d_model,   // C
};

/// How an arm parameter starts.
enum class ArmInit {
  zeros,
  constant,           // every entry `value`
  minus_4_over_beta,  // every entry -4/beta (beta the norm gate's slope, gate_beta)
  normal,             // N(0, value^2)
};

/// One learned tensor an arm option adds.
struct ArmParameter {
  const char* name;         // as stored: per layer "blocks.L.attn." + name, else name once per model
  bool per_layer;           // in every layer's attention; false: once per model (the sink token)
  std::vector<Extent> shape;
  ArmInit init;
  double value;             // ArmInit::constant: the value; ArmInit::normal: the standard deviation
  bool decayed;             // in AdamW's weight-decay group
  const char* symbol;       // the paper's symbol: "w_h"
  const char* export_name;  // in an export's model.safetensors: "transformer.h.L." + it per layer,
                            // "transformer." + it once per model; the transformers attribute is its
                            // last component

  /// The shape for H heads of dimension d in a model of width d_model.
  std::vector<int64_t> shape_of(int64_t heads, int64_t head_dim, int64_t d_model) const;
  /// The stored name: "blocks.L.attn.gate_w" for layer L, or "sink_token".
  std::string stored_name(int64_t layer) const;
};

/// What an arm option does, as the instruments ask it.
enum class ArmCapability {
  phantom,          // a phantom key column of value zero (sink analysis reads its mass)
  sink_position,    // an extra sequence position: needs a sequence model (not the toy)
  read_gate,        // a per-read gate g_j: selectivity and gate-tokens probes
  value_slot_gate,  // g_j multiplies the reads: gate overrides
  routing_slot,     // log g_j is added to the logits
  read_direction,   // a learned direction w_h on the reads: own-direction junk, direction probe
  key_direction,    // a learned direction w_h on the keys, the gate decided on the key:
                    // key-own-direction junk, direction probe
  query_gate,       // a gate on each head's output decided at the query
};

/// One option of one axis: a row of the table.
struct ArmOption {
  ArmAxis axis;
  int value;          // the ZeroOption, Filter or OutputGate, as int
  const char* name;   // as arm names, run files and config.json spell it: "sinklogit"
  const char* meaning;
  std::vector<ArmParameter> parameters;  // in registration order
  std::vector<ArmCapability> capabilities;
};

/// The table: every option of every axis ("none" included), axis by axis, in the enum's order.
const std::vector<ArmOption>& arm_options();
/// The row of an arm's option on one axis.
const ArmOption& arm_option(const Arm& arm, ArmAxis axis);
/// The arm's parameters: its zero option's, then its filter's, then its output gate's (the order
/// the model registers them; a parameter two options share appears once per option).
std::vector<ArmParameter> arm_parameters(const Arm& arm);
/// True when one of the arm's options has the capability.
bool arm_has(const Arm& arm, ArmCapability capability);
/// What an arm with the capability is, and which arms have it, from the table: "a value-slot gate
/// (normgate, projgate, keygate; paper arms normgate, projgate, combo, combo2; any arm joined with
/// one of these options)".
std::string arms_with(ArmCapability capability);
/// The capability's name in messages: "a value-slot gate".
std::string describe(ArmCapability capability);
/// config.json's field of an axis: "zero_option", "filter", "output_gate".
std::string config_field(ArmAxis axis);
/// The option names of an axis, "none" first.
std::vector<std::string> option_names(ArmAxis axis);
/// Every arm: each combination of one option per axis, zero option slowest.
std::vector<Arm> all_arms();
/// The table as Markdown, one line per option (axis, option, parameters with shape, initialisation,
/// decay and export name, capabilities): docs/arms.md holds it verbatim (a test compares them).
std::string arm_options_markdown();

}  // namespace sg

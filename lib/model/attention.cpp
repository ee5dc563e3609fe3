// attention.cpp — the attention arms: gates, phantom column, explicit and fused paths.
#include "lib/model/attention.h"

#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "lib/base/error.h"

namespace sg {
namespace {

namespace F = torch::nn::functional;
using torch::indexing::Slice;

// ---------------------------------------------------------------------------------------------
// Fused attention with a phantom column (DESIGN.md "On fused kernels").
//
// The logsumexp returned by the fused ops carries no gradient, so the phantom is added by
// hand: lse' = logaddexp(lse, b), out_s = O * exp(lse - lse'). Backward hands (out_s, lse') to
// the stock fused backward, which then recomputes the sink-normalised probabilities (the
// phantom's value is zero, so it contributes nothing else), and db = -sum_i exp(b - lse'_i) D_i
// with D_i = rowsum(dO * out_s).

enum class Kernel { cpu_flash, cuda_flash, cuda_efficient };

/// Gate maths and softmax run in float32, or float64 when the inputs are float64.
torch::ScalarType math_type(const torch::Tensor& t) {
  return t.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
}

Kernel pick_kernel(const torch::Tensor& q) {
  if (!q.is_cuda()) return Kernel::cpu_flash;
  if (q.scalar_type() == torch::kHalf || q.scalar_type() == torch::kBFloat16) return Kernel::cuda_flash;
  return Kernel::cuda_efficient;
}

class SinkAttentionFunction : public torch::autograd::Function<SinkAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor q, torch::Tensor k,
                               torch::Tensor v, torch::Tensor sink, double scale, bool causal) {
    const Kernel kernel = pick_kernel(q);
    const int64_t length = q.size(2);
    torch::Tensor out, lse;
    if (kernel == Kernel::cpu_flash) {
      std::tie(out, lse) = at::_scaled_dot_product_flash_attention_for_cpu(
          q, k, v, /*dropout_p=*/0.0, causal, /*attn_mask=*/{}, scale);
    } else if (kernel == Kernel::cuda_flash) {
      auto result = at::_scaled_dot_product_flash_attention(q, k, v, /*dropout_p=*/0.0, causal,
                                                            /*return_debug_mask=*/false, scale);
      out = std::get<0>(result);
      lse = std::get<1>(result);
      ctx->saved_data["cum_seq_q"] = std::get<2>(result);
      ctx->saved_data["cum_seq_k"] = std::get<3>(result);
      ctx->saved_data["max_q"] = std::get<4>(result).expect_int();
      ctx->saved_data["max_k"] = std::get<5>(result).expect_int();
      ctx->saved_data["philox_seed"] = std::get<6>(result);
      ctx->saved_data["philox_offset"] = std::get<7>(result);
    } else {
      auto result = at::_scaled_dot_product_efficient_attention(
          q, k, v, /*attn_bias=*/{}, /*compute_log_sumexp=*/true, /*dropout_p=*/0.0, causal, scale);
      out = std::get<0>(result);
      lse = std::get<1>(result);
      ctx->saved_data["philox_seed"] = std::get<2>(result);
      ctx->saved_data["philox_offset"] = std::get<3>(result);
    }
    // The CUDA efficient kernel pads the logsumexp's length; only the first T entries are real.
    const auto math = math_type(q);
    const auto lse_real = lse.index({Slice(), Slice(), Slice(0, length)}).to(math);
    const auto lse_sink = torch::logaddexp(lse_real, sink.to(math).view({1, -1, 1}));  // (B, H, T)
    const auto out_sink = (out.to(math) * (lse_real - lse_sink).exp().unsqueeze(-1)).to(out.scalar_type());
    auto lse_saved = lse.clone();
    lse_saved.index_put_({Slice(), Slice(), Slice(0, length)}, lse_sink.to(lse.scalar_type()));
    ctx->save_for_backward({q, k, v, out_sink, lse_saved, sink});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["causal"] = causal;
    ctx->saved_data["kernel"] = static_cast<int64_t>(kernel);
    return out_sink;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &q = saved[0], &k = saved[1], &v = saved[2], &out_sink = saved[3];
    const auto &lse_sink = saved[4], &sink = saved[5];
    const double scale = ctx->saved_data["scale"].toDouble();
    const bool causal = ctx->saved_data["causal"].toBool();
    const auto kernel = static_cast<Kernel>(ctx->saved_data["kernel"].toInt());
    auto grad_out = grads[0].contiguous();
    torch::Tensor dq, dk, dv;
    if (kernel == Kernel::cpu_flash) {
      std::tie(dq, dk, dv) = at::_scaled_dot_product_flash_attention_for_cpu_backward(
          grad_out, q, k, v, out_sink, lse_sink, /*dropout_p=*/0.0, causal, /*attn_mask=*/{}, scale);
    } else if (kernel == Kernel::cuda_flash) {
      std::tie(dq, dk, dv) = at::_scaled_dot_product_flash_attention_backward(
          grad_out, q, k, v, out_sink, lse_sink, ctx->saved_data["cum_seq_q"].toTensor(),
          ctx->saved_data["cum_seq_k"].toTensor(), ctx->saved_data["max_q"].toInt(),
          ctx->saved_data["max_k"].toInt(), /*dropout_p=*/0.0, causal,
          ctx->saved_data["philox_seed"].toTensor(), ctx->saved_data["philox_offset"].toTensor(), scale);
    } else {
      auto result = at::_scaled_dot_product_efficient_attention_backward(
          grad_out, q, k, v, /*attn_bias=*/torch::Tensor(), out_sink, lse_sink,
          ctx->saved_data["philox_seed"].toTensor(), ctx->saved_data["philox_offset"].toTensor(),
          /*dropout_p=*/0.0, {true, true, true, false}, causal, scale);
      dq = std::get<0>(result);
      dk = std::get<1>(result);
      dv = std::get<2>(result);
    }
    const int64_t length = q.size(2);
    const auto math = math_type(q);
    const auto lse_real = lse_sink.index({Slice(), Slice(), Slice(0, length)}).to(math);
    const auto rowsum = (grad_out.to(math) * out_sink.to(math)).sum(-1);  // (B, H, T)
    const auto phantom = (sink.to(math).view({1, -1, 1}) - lse_real).exp();  // (B, H, T)
    const auto dsink = -(phantom * rowsum).sum(std::vector<int64_t>{0, 2}).to(sink.scalar_type());              // (H)
    return {dq, dk, dv, dsink, torch::Tensor(), torch::Tensor()};
  }
};

/// Pads the last dimension with zeros up to a multiple of 8 (what fused kernels accept).
torch::Tensor pad_to_multiple_of_8(const torch::Tensor& x, int64_t width) {
  const int64_t padded = (width + 7) / 8 * 8;
  if (padded == x.size(-1)) return x;
  return F::pad(x, F::PadFuncOptions({0, padded - x.size(-1)}));
}

}  // namespace

torch::Tensor overridden_gates(GateOverride how, const torch::Tensor& gates, const torch::Tensor& weights,
                               const torch::Tensor& allowed, int64_t seed) {
  auto per_key = gates.unsqueeze(2).expand_as(weights);  // (B, H, Tq, Tk)
  switch (how) {
    case GateOverride::row_mean: {
      const auto mass = weights.sum(-1, /*keepdim=*/true).clamp_min(1e-30);
      return ((weights * per_key).sum(-1, /*keepdim=*/true) / mass).expand_as(weights);
    }
    case GateOverride::shuffle: {
      // Allowed keys form a prefix of each row, so sorting random keys with +inf on the masked
      // entries yields, in the first n_i slots, a random permutation of the allowed keys.
      auto generator = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
      auto noise = torch::rand(weights.sizes(), generator, torch::TensorOptions().dtype(torch::kFloat))
                       .to(weights.device());
      noise = noise.masked_fill(allowed.logical_not(), std::numeric_limits<float>::infinity());
      const auto permutation = noise.argsort(/*stable=*/false, /*dim=*/-1, /*descending=*/false);
      return per_key.gather(-1, permutation);
    }
    case GateOverride::reopen:
      return torch::where(per_key < 0.5, torch::ones_like(per_key), per_key);
    case GateOverride::none:
      return per_key;
  }
  return per_key;
}

TelemetryCallback store_telemetry(std::vector<AttentionTelemetry>& slots) {
  return [&slots](int64_t layer, const AttentionTelemetry& record) {
    if (static_cast<int64_t>(slots.size()) <= layer) slots.resize(layer + 1);
    slots[layer] = record;
  };
}

bool fused_attention_supported(const torch::Tensor& q) {
  if (q.is_cuda()) return q.scalar_type() != torch::kDouble;
  return q.device().is_cpu();
}

torch::Tensor fused_sink_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                   const torch::Tensor& sink, double scale, bool causal) {
  return SinkAttentionFunction::apply(q, k, v, sink, scale, causal);
}

AttentionImpl::AttentionImpl(const AttentionOptions& options) : options_(options) {
  const int64_t c = options.n_embd, h = options.n_head, d = c / h;
  c_attn = register_module("c_attn", torch::nn::Linear(torch::nn::LinearOptions(c, 3 * c).bias(false)));
  c_proj = register_module("c_proj", torch::nn::Linear(torch::nn::LinearOptions(c, c).bias(false)));
  torch::NoGradGuard no_grad;
  c_attn->weight.normal_(0.0, 0.02);
  c_proj->weight.normal_(0.0, 0.02 / std::sqrt(2.0 * static_cast<double>(options.n_layer)));
  // The arm's parameters, from the arm table's rows, drawn after c_attn and c_proj.
  ArmParameters registered;
  for (const auto& parameter : sg::arm_parameters(options.arm)) {
    if (!parameter.per_layer) continue;  // the sink token is the model's
    auto& slot = registered.field(parameter.name);
    slot = register_parameter(parameter.name,
                              initial_arm_parameter(parameter, parameter.shape_of(h, d, c), options.gate_beta));
  }
  sink_logit = registered.sink_logit;
  gate_tau = registered.gate_tau;
  gate_w = registered.gate_w;
  gate_b = registered.gate_b;
  out_gate = registered.out_gate;
}

torch::Tensor& ArmParameters::field(const std::string& name) {
  if (name == "sink_logit") return sink_logit;
  if (name == "gate_tau") return gate_tau;
  if (name == "gate_w") return gate_w;
  if (name == "gate_b") return gate_b;
  if (name == "out_gate") return out_gate;
  throw std::logic_error("ArmParameters has no field for the arm parameter " + name +
                         " (a row of the arm table, lib/run/arm.cpp, whose maths lib/model/attention.* lacks)");
}

torch::Tensor initial_arm_parameter(const ArmParameter& parameter, at::IntArrayRef shape, double gate_beta,
                                    c10::optional<at::Generator> generator) {
  switch (parameter.init) {
    case ArmInit::zeros: return torch::zeros(shape);
    case ArmInit::constant: return torch::full(shape, parameter.value);
    case ArmInit::minus_4_over_beta: return torch::full(shape, -4.0 / gate_beta);
    case ArmInit::normal: return torch::randn(shape, generator, torch::kFloat) * parameter.value;
  }
  throw std::logic_error(std::string("no initialisation for arm parameter ") + parameter.name);
}

const std::vector<std::string>& AttentionImpl::no_decay_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& option : arm_options())
      for (const auto& parameter : option.parameters)
        if (!parameter.decayed && std::find(out.begin(), out.end(), parameter.name) == out.end())
          out.emplace_back(parameter.name);
    return out;
  }();
  return names;
}

torch::Tensor gate_logits(const torch::Tensor& keys, const torch::Tensor& reads, const Arm& arm,
                          const ArmParameters& params, double beta) {
  const auto math = math_type(reads);
  const auto reads_m = reads.to(math);
  const int64_t h = reads.size(1), d = reads.size(-1);
  switch (arm.filter) {
    case Filter::normgate:
    case Filter::renorm: {
      const auto norms = reads_m.pow(2).sum(-1).sqrt() / std::sqrt(static_cast<double>(d));  // (B, H, T)
      return beta * (norms - params.gate_tau.to(math).view({1, h, 1}));
    }
    case Filter::projgate:
      // Elementwise product and sum rather than a matmul, so autocast leaves it in float32.
      return (reads_m * params.gate_w.to(math).view({1, h, 1, d})).sum(-1) + params.gate_b.to(math).view({1, h, 1});
    case Filter::keygate:
      return (keys.to(math) * params.gate_w.to(math).view({1, h, 1, d})).sum(-1) / std::sqrt(static_cast<double>(d)) +
             params.gate_b.to(math).view({1, h, 1});
    case Filter::none:
      break;
  }
  return {};
}

torch::Tensor output_gate_values(const torch::Tensor& x, const Arm& arm, const ArmParameters& params, int64_t heads) {
  if (arm.output_gate == OutputGate::none) return {};
  const auto math = math_type(x);
  const int64_t batch = x.size(0), length = x.size(1), width = params.out_gate.size(1);
  torch::Tensor logits;  // (B, Tq, H) or (B, Tq, C)
  {
    // A product that autocast would run in bf16: the gate maths stay in float32 (App. A's rule).
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    logits = torch::matmul(x.to(math), params.out_gate.to(math).t());
  }
  if (arm.output_gate == OutputGate::headwise) return torch::sigmoid(logits).transpose(1, 2).unsqueeze(-1);
  return torch::sigmoid(logits).view({batch, length, heads, width / heads}).permute({0, 2, 1, 3});
}

namespace {

/// What attend computes before it chooses a path: the keys and values after any corruption hook,
/// the gates and gated reads, the routing slot's per-key bias, the phantom column's logit and the
/// output gate. Undefined tensors are what the arm does not have.
struct Prepared {
  torch::Tensor k, v;         // (B, H, Tk, d) after the corruption hooks
  torch::Tensor gates;        // (B, H, Tk): g_j, for arms with a per-read gate
  torch::Tensor reads;        // (B, H, Tk, d): g_j v_j for value-slot gates, else v
  torch::Tensor key_bias;     // (B, H, Tk): log g_j, the routing slot (renorm)
  torch::Tensor phantom;      // (H): the phantom column's logit (off-by-one, sink logit)
  torch::Tensor out_gates;    // (B, H, Tq, 1 or d): the output gate, decided on the query positions

  /// A head's output times the output gate, in float32 (either path).
  torch::Tensor gate_output(const torch::Tensor& y) const {
    return out_gates.defined() ? (y.to(out_gates.scalar_type()) * out_gates).to(y.scalar_type()) : y;
  }
};

Prepared prepare(const torch::Tensor& q, const torch::Tensor& k_given, const torch::Tensor& v_given,
                 const ArmParameters& params, const AttendOptions& options, const AttentionHooks* hooks) {
  const Arm& arm = options.arm;
  Prepared p;
  p.v = v_given;
  p.k = k_given;
  if (hooks && hooks->corrupt) p.v = hooks->corrupt(p.v, options.layer);
  if (hooks && hooks->corrupt_keys) p.k = hooks->corrupt_keys(p.k, options.layer);
  const auto gate_logit = gate_logits(p.k, p.v, arm, params, options.gate_beta);  // (B, H, Tk), or undefined
  if (arm.output_gate != OutputGate::none) {
    if (!options.gate_input.defined()) throw UsageError("attend: the output gate needs the query positions' hidden states");
    p.out_gates = output_gate_values(options.gate_input, arm, params, q.size(1));
  }
  p.reads = p.v;
  if (gate_logit.defined()) p.gates = torch::sigmoid(gate_logit);
  if (arm.gates_values()) p.reads = (p.v.to(p.gates.scalar_type()) * p.gates.unsqueeze(-1)).to(p.v.scalar_type());
  if (arm.filter == Filter::renorm) p.key_bias = F::logsigmoid(gate_logit);
  if (arm.zero == ZeroOption::sinklogit) p.phantom = params.sink_logit;
  if (arm.zero == ZeroOption::offbyone) p.phantom = torch::zeros({q.size(1)}, q.options().dtype(math_type(q)));
  return p;
}

/// The fused path: SDPA, or the phantom's own kernel; the routing slot by the augmented dimension.
torch::Tensor attend_fused(const torch::Tensor& q, const Prepared& p, bool causal, double scale) {
  const int64_t batch = q.size(0), h = q.size(1), length = q.size(2), d = q.size(3);
  auto q_in = q, k_in = p.k, v_pass = p.reads;
  if (p.key_bias.defined()) {
    // Augmented dimension: q gets sqrt(d), k gets log g_j, so q'.k'/sqrt(d) = s_ij + log g_j.
    q_in = torch::cat({q, torch::full({batch, h, length, 1}, std::sqrt(static_cast<double>(d)), q.options())}, -1);
    k_in = torch::cat({p.k, p.key_bias.unsqueeze(-1).to(p.k.scalar_type())}, -1);
    q_in = pad_to_multiple_of_8(q_in, d + 1);
    k_in = pad_to_multiple_of_8(k_in, d + 1);
    v_pass = pad_to_multiple_of_8(p.reads, d + 1);
  }
  torch::Tensor y;
  if (p.phantom.defined()) {
    y = fused_sink_attention(q_in, k_in, v_pass, p.phantom, scale, causal);
  } else {
    y = at::scaled_dot_product_attention(q_in, k_in, v_pass, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal, scale);
  }
  return p.gate_output(y.size(-1) == d ? y : y.index({"...", Slice(0, d)}));
}

/// The telemetry hook's record of one layer (explicit path).
void record_telemetry(const AttentionHooks& hooks, int64_t layer, const Prepared& p, const torch::Tensor& weights,
                      const torch::Tensor& phantom_mass, torch::ScalarType math) {
  const double d = static_cast<double>(p.v.size(-1));
  AttentionTelemetry record;
  record.weights = weights.detach();
  record.phantom_mass = phantom_mass.defined() ? phantom_mass.detach() : torch::Tensor();
  record.read_norms = p.v.detach().to(math).pow(2).sum(-1).sqrt() / std::sqrt(d);
  record.gates = p.gates.defined() ? p.gates.detach() : torch::Tensor();
  record.reads = p.v.detach().to(math);
  record.keys = p.k.detach().to(math);
  record.output_gates = p.out_gates.defined() ? p.out_gates.detach() : torch::Tensor();
  hooks.telemetry(layer, record);
}

/// The explicit path: the attention matrix itself, for the key-value cache, overrides and telemetry.
torch::Tensor attend_explicit(const torch::Tensor& q, Prepared& p, const AttendOptions& options,
                              const AttentionHooks* hooks, double scale) {
  const int64_t batch = q.size(0), h = q.size(1), length = q.size(2);
  const auto math = math_type(q);
  KVCache* cache = options.cache;
  torch::Tensor keys = p.k, values = p.reads;
  if (cache) {
    if (hooks && hooks->gate_override != GateOverride::none)
      throw UsageError("gate overrides are not supported with a key-value cache");
    if (cache->length() > 0) {
      keys = torch::cat({cache->keys, p.k}, 2);
      values = torch::cat({cache->reads, p.reads}, 2);
      if (p.key_bias.defined()) p.key_bias = torch::cat({cache->key_bias, p.key_bias}, 2);
    }
    cache->keys = keys;
    cache->reads = values;
    cache->key_bias = p.key_bias;
  }
  const int64_t keys_len = keys.size(2), offset = keys_len - length;
  auto logits = torch::matmul(q, keys.transpose(-2, -1)).to(math) * scale;  // (B, H, Tq, Tk)
  if (p.key_bias.defined()) logits = logits + p.key_bias.unsqueeze(2);
  auto allowed = torch::ones({length, keys_len}, torch::TensorOptions().dtype(torch::kBool).device(q.device()));
  if (options.causal) allowed = allowed.tril(offset);  // key j visible to query i iff j <= i + offset
  logits = logits.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  torch::Tensor weights, phantom_mass;
  if (p.phantom.defined()) {
    const auto column = p.phantom.to(math).view({1, h, 1, 1}).expand({batch, h, length, 1});
    const auto probs = torch::softmax(torch::cat({logits, column}, -1), -1);
    weights = probs.index({"...", Slice(0, keys_len)});
    phantom_mass = probs.index({"...", keys_len});
  } else {
    weights = torch::softmax(logits, -1);
  }

  torch::Tensor y;
  if (hooks && hooks->gate_override != GateOverride::none) {
    const Arm& arm = options.arm;
    if (!arm.gates_values())
      throw UsageError("a gate override needs " + arms_with(ArmCapability::value_slot_gate) + "; arm is " + arm.name());
    const auto mixed = static_cast<uint64_t>(hooks->override_seed) * 1000003u + static_cast<uint64_t>(options.layer);
    const auto per_query = overridden_gates(hooks->gate_override, p.gates, weights, allowed, static_cast<int64_t>(mixed));
    y = torch::matmul((weights * per_query).to(p.v.scalar_type()), p.v);
  } else {
    y = torch::matmul(weights.to(values.scalar_type()), values);
  }
  if (hooks && hooks->telemetry) record_telemetry(*hooks, options.layer, p, weights, phantom_mass, math);
  return p.gate_output(y);
}

}  // namespace

torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k_given, const torch::Tensor& v_given,
                     const ArmParameters& params, const AttendOptions& options) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  const AttentionHooks* hooks = options.hooks && options.hooks->active() ? options.hooks : nullptr;
  Prepared prepared = prepare(q, k_given, v_given, params, options, hooks);
  const bool want_fused = options.backend == AttentionBackend::fused ||
                          (options.backend == AttentionBackend::automatic && fused_attention_supported(q));
  // Corruption happens to v in prepare, so it keeps the fused path; overrides and telemetry need
  // the explicit attention matrix.
  const bool needs_matrix = hooks && (hooks->gate_override != GateOverride::none || hooks->telemetry);
  if (!needs_matrix && !options.cache && want_fused && (options.causal ? prepared.k.size(2) == q.size(2) : true))
    return attend_fused(q, prepared, options.causal, scale);
  return attend_explicit(q, prepared, options, hooks, scale);
}

ArmParameters AttentionImpl::arm_parameters() const { return {sink_logit, gate_tau, gate_w, gate_b, out_gate}; }

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, KVCache* cache, ForwardObserver* observer) {
  const int64_t batch = x.size(0), length = x.size(1), c = options_.n_embd, h = options_.n_head;
  const int64_t d = c / h;
  auto qkv = c_attn(x).view({batch, length, 3, h, d}).permute({2, 0, 3, 1, 4});  // (3, B, H, T, d)
  AttendOptions attend_options;
  attend_options.arm = options_.arm;
  attend_options.gate_beta = options_.gate_beta;
  attend_options.layer = options_.layer;
  attend_options.hooks = hooks_.get();
  attend_options.cache = cache;
  attend_options.backend = backend_;
  attend_options.gate_input = x;
  if (observer && !cache) observer->attention_inputs(options_.layer, qkv[0], qkv[1], 1.0 / std::sqrt(static_cast<double>(d)));
  const auto y = attend(qkv[0], qkv[1], qkv[2], arm_parameters(), attend_options);  // (B, H, T, d)
  return c_proj(y.transpose(1, 2).reshape({batch, length, c}));
}

}  // namespace sg

// corruption.cpp — quiet reads, junk vectors and the corruption hook.
#include "lib/instruments/corruption.h"

#include <cmath>

#include "lib/base/error.h"
#include "lib/base/text.h"
#include "lib/text/sampler.h"

namespace sg {
namespace {

using torch::indexing::Slice;

const std::vector<std::pair<JunkType, std::string>>& junk_names() {
  static const std::vector<std::pair<JunkType, std::string>> names = {
      {JunkType::structured, "structured"},
      {JunkType::same_context, "same-context"},
      {JunkType::same_context_earlier, "same-context-earlier"},
      {JunkType::gaussian, "gaussian"},
      {JunkType::random_direction, "random-direction"},
      {JunkType::own_direction, "own-direction"},
      {JunkType::key_own_direction, "key-own-direction"},
  };
  return names;
}

}  // namespace

/// What junk along a gate's own direction needs: "own-direction junk needs a projection gate (...)".
std::string needs_gate(JunkType junk) {
  return to_string(junk) + " junk needs " + arms_with(gate_direction_of(junk));
}

ArmCapability gate_direction_of(JunkType junk) {
  return junk == JunkType::key_own_direction ? ArmCapability::key_direction : ArmCapability::read_direction;
}

std::string junk_not_defined(JunkType junk, const Arm& arm) {
  if (!along_gate_direction(junk)) return "";
  if (arm_has(arm, gate_direction_of(junk))) return "";
  // The arm's own direction is the other kind's: name the junk along it.
  const JunkType other = junk == JunkType::key_own_direction ? JunkType::own_direction : JunkType::key_own_direction;
  const std::string gate = describe(gate_direction_of(other));
  return needs_gate(junk) + ", and arm " + arm.name() + " has none" +
         (arm_has(arm, gate_direction_of(other)) ? " (its " + gate.substr(gate.find(' ') + 1) + "'s own direction is " +
                                                      to_string(other) + ")"
                                                : "");
}

namespace {

/// The generator of (seed, layer, head, batch): a CPU generator, so every device draws the same.
at::Generator generator_for(int64_t seed, int64_t layer, int64_t head, int64_t batch) {
  uint64_t key = mix64(static_cast<uint64_t>(seed) ^ 0x6A756E6Bull);  // "junk"
  key = mix64(key ^ static_cast<uint64_t>(layer));
  key = mix64(key ^ static_cast<uint64_t>(head));
  key = mix64(key ^ static_cast<uint64_t>(batch));
  return at::make_generator<at::CPUGeneratorImpl>(key);
}

/// Rows of x (..., d) scaled to unit length (a zero row stays zero).
torch::Tensor unit(const torch::Tensor& x) { return x / x.norm(2, -1, /*keepdim=*/true).clamp_min(1e-30); }

/// The unit junk vectors u_j (B, Tr, d) of head `head`, from its reads `real` (B, Tr, d).
torch::Tensor junk_directions(const torch::Tensor& real, const CorruptionSpec& spec, int64_t layer, int64_t head,
                              int64_t batch, const torch::Tensor& gate_direction) {
  const int64_t b = real.size(0), length = real.size(1), d = real.size(2);
  auto generator = generator_for(spec.seed, layer, head, batch);
  const auto cpu_long = torch::TensorOptions().dtype(torch::kLong);
  const auto cpu_math = torch::TensorOptions().dtype(real.scalar_type());
  switch (spec.junk) {
    case JunkType::structured: {
      // Another sequence b' = b + 1 + r (mod B), r uniform in [0, B - 2]; a uniform position there.
      const auto shift = torch::randint(0, b - 1, {b, length}, generator, cpu_long) + 1;
      const auto other = (torch::arange(b, cpu_long).unsqueeze(1) + shift) % b;
      const auto position = torch::randint(0, length, {b, length}, generator, cpu_long);
      const auto flat = (other * length + position).view({-1}).to(real.device());
      return unit(real.reshape({b * length, d}).index_select(0, flat).view({b, length, d}));
    }
    case JunkType::same_context: {
      // A uniform position of the same sequence other than j itself.
      const auto draw = torch::randint(0, length - 1, {b, length}, generator, cpu_long);
      const auto own = torch::arange(length, cpu_long).unsqueeze(0);
      const auto position = draw + (draw >= own).to(torch::kLong);
      const auto flat = (torch::arange(b, cpu_long).unsqueeze(1) * length + position).view({-1}).to(real.device());
      return unit(real.reshape({b * length, d}).index_select(0, flat).view({b, length, d}));
    }
    case JunkType::same_context_earlier: {
      // A uniform position k < j of the same sequence (j = 0 draws itself: it is never corrupted).
      const auto own = torch::arange(length, cpu_long).unsqueeze(0).to(torch::kDouble);
      const auto draw = torch::rand({b, length}, generator, torch::TensorOptions().dtype(torch::kDouble));
      const auto position = (draw * own).floor().to(torch::kLong);
      const auto flat = (torch::arange(b, cpu_long).unsqueeze(1) * length + position).view({-1}).to(real.device());
      return unit(real.reshape({b * length, d}).index_select(0, flat).view({b, length, d}));
    }
    case JunkType::gaussian:
      return unit(torch::randn({b, length, d}, generator, cpu_math)).to(real.device());
    case JunkType::random_direction:
      return unit(torch::randn({d}, generator, cpu_math)).to(real.device()).view({1, 1, d}).expand({b, length, d});
    case JunkType::own_direction:
    case JunkType::key_own_direction: {
      const auto w = gate_direction[head].to(real.device(), real.scalar_type());
      const double norm = w.norm().item<double>();
      if (!(norm > 0))
        throw UsageError(to_string(spec.junk) + " junk: the gate of layer " + std::to_string(layer) + ", head " +
                         std::to_string(head) + " has w_h = 0 (an untrained gate has no direction)");
      return (w / norm).view({1, 1, d}).expand({b, length, d});
    }
  }
  throw Error("unknown junk type");
}

}  // namespace

std::string to_string(JunkType junk) {
  for (const auto& [value, name] : junk_names())
    if (value == junk) return name;
  return "?";
}

std::string to_string(Cutoff cutoff) { return cutoff == Cutoff::median ? "median" : "q25"; }

std::vector<std::string> junk_type_names() {
  std::vector<std::string> names;
  for (const auto& entry : junk_names()) names.push_back(entry.second);
  return names;
}

std::vector<std::string> cutoff_names() { return {to_string(Cutoff::median), to_string(Cutoff::q25)}; }

JunkType parse_junk(const std::string& name) {
  for (const auto& [value, known] : junk_names())
    if (known == name) return value;
  throw UsageError("unknown junk type '" + name + "'", "junk types: " + join(junk_type_names(), ", "));
}

Cutoff parse_cutoff(const std::string& name) {
  for (Cutoff cutoff : {Cutoff::median, Cutoff::q25})
    if (to_string(cutoff) == name) return cutoff;
  throw UsageError("unknown cutoff '" + name + "'", "cutoffs: " + join(cutoff_names(), ", "));
}

double quantile_of(Cutoff cutoff) { return cutoff == Cutoff::median ? 0.5 : 0.25; }

torch::Tensor norm_quantile(const torch::Tensor& norms, double q) {
  const int64_t length = norms.size(-1);
  if (length < 1) throw UsageError("a quantile of no reads");
  const auto sorted = std::get<0>(norms.sort(-1));
  const double position = q * static_cast<double>(length - 1);
  const auto low = static_cast<int64_t>(std::floor(position));
  const auto high = std::min<int64_t>(low + 1, length - 1);
  const double fraction = position - static_cast<double>(low);
  const auto below = sorted.select(-1, low), above = sorted.select(-1, high);
  return below + (above - below) * fraction;
}

torch::Tensor quiet_mask(const torch::Tensor& norms, Cutoff cutoff) {
  return norms < norm_quantile(norms, quantile_of(cutoff)).unsqueeze(-1);
}

torch::Tensor corrupt_reads(const torch::Tensor& reads, const CorruptionSpec& spec, int64_t layer, int64_t batch,
                            const torch::Tensor& gate_direction, torch::Tensor* corrupted) {
  if (spec.dose < 0 || !std::isfinite(spec.dose))
    throw UsageError("a dose must be a finite number >= 0, not " + std::to_string(spec.dose));
  const int64_t b = reads.size(0), h = reads.size(1), t = reads.size(2);
  const int64_t skip = std::min(spec.skip_positions, t), length = t - skip;
  if (spec.junk == JunkType::structured && b < 2)
    throw UsageError("structured junk comes from another sequence of the batch: it needs at least 2 sequences per batch");
  if ((spec.junk == JunkType::same_context || spec.junk == JunkType::same_context_earlier) && length < 2 && spec.dose > 0)
    throw UsageError("same-context junk comes from another position of the sequence: it needs at least 2 positions");
  if (along_gate_direction(spec.junk) && !gate_direction.defined()) throw UsageError(needs_gate(spec.junk));
  const auto math = reads.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
  if (length < 1) {
    if (corrupted) *corrupted = torch::zeros({b, h, t}, reads.options().dtype(torch::kBool));
    return reads;
  }
  const auto real = reads.narrow(2, skip, length).to(math);  // (B, H, Tr, d)
  const auto norms = real.norm(2, -1);                        // (B, H, Tr)
  auto quiet = quiet_mask(norms, spec.cutoff);                // (B, H, Tr)
  if (spec.junk == JunkType::same_context_earlier)            // the first read has no earlier one
    quiet.select(2, 0).fill_(false);
  if (corrupted)
    *corrupted = torch::cat({torch::zeros({b, h, skip}, quiet.options()), quiet}, 2);
  if (spec.dose == 0) return reads;  // junk of size zero: the reads exactly as they were
  const auto median = norm_quantile(norms, 0.5);              // (B, H) m_h
  std::vector<torch::Tensor> heads;
  heads.reserve(static_cast<size_t>(h));
  for (int64_t head = 0; head < h; ++head)
    heads.push_back(junk_directions(real.select(1, head), spec, layer, head, batch, gate_direction));
  const auto u = torch::stack(heads, 1);  // (B, H, Tr, d)
  const auto junk = u * (spec.dose * median).view({b, h, 1, 1}) * quiet.unsqueeze(-1).to(math);
  auto out = reads.clone();
  out.narrow(2, skip, length).copy_((real + junk).to(reads.scalar_type()));
  return out;
}

Corruptor::Corruptor(CorruptionSpec spec, std::vector<torch::Tensor> gate_directions)
    : state_(std::make_shared<State>()) {
  state_->spec = spec;
  state_->gate_directions = std::move(gate_directions);
}

std::shared_ptr<AttentionHooks> Corruptor::hooks(const AttentionHooks& base) const {
  auto hooks = std::make_shared<AttentionHooks>(base);
  auto state = state_;
  auto& slot = targets_keys(state_->spec.junk) ? hooks->corrupt_keys : hooks->corrupt;
  slot = [state](const torch::Tensor& reads, int64_t layer) {
    const torch::Tensor direction =
        layer < static_cast<int64_t>(state->gate_directions.size()) ? state->gate_directions[layer] : torch::Tensor();
    torch::Tensor mask;
    auto out = corrupt_reads(reads, state->spec, layer, state->batch, direction, &mask);
    state->corrupted += mask.sum().item<int64_t>();
    state->total += reads.size(0) * reads.size(1) * std::max<int64_t>(reads.size(2) - state->spec.skip_positions, 0);
    return out;
  };
  return hooks;
}

}  // namespace sg

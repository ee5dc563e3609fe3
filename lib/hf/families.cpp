// families.cpp — the family table, rotary frequencies and MXFP4 (see families.h).
#include "lib/hf/families.h"

#include <cmath>

#include "lib/base/error.h"

namespace sg {
namespace {

constexpr double kPi = 3.14159265358979323846;

// GPT-2 and GPT-NeoX keep their own readers; their rows name them for the list of model types.
const std::vector<FamilyRow> kFamilies = {
    // architecture, model_type, models, bias, qk norm, norm after, attention norm, feed-forward norm,
    // windows, sinks, experts, bias default, tied default, epsilon default
    {Architecture::gpt2, "gpt2", "GPT-2", AttentionBias::from_config, QkNorm::none, false, "", "", WindowLayers::none, false,
     false, true, true, 1e-5},
    {Architecture::gpt_neox, "gpt_neox", "Pythia", AttentionBias::from_config, QkNorm::none, false, "", "", WindowLayers::none,
     false, false, true, false, 1e-5},
    {Architecture::llama, "llama", "Llama 2/3, SmolLM, TinyLlama", AttentionBias::from_config, QkNorm::none, false,
     "input_layernorm", "post_attention_layernorm", WindowLayers::none, false, false, false, false, 1e-6},
    {Architecture::mistral, "mistral", "Mistral", AttentionBias::none, QkNorm::none, false, "input_layernorm",
     "post_attention_layernorm", WindowLayers::all, false, false, false, false, 1e-6},
    {Architecture::qwen2, "qwen2", "Qwen2, Qwen2.5", AttentionBias::qkv, QkNorm::none, false, "input_layernorm",
     "post_attention_layernorm", WindowLayers::from_max_window_layers, false, false, true, false, 1e-6},
    {Architecture::qwen3, "qwen3", "Qwen3", AttentionBias::from_config, QkNorm::per_head, false, "input_layernorm",
     "post_attention_layernorm", WindowLayers::from_max_window_layers, false, false, false, false, 1e-6},
    {Architecture::olmo2, "olmo2", "OLMo 2", AttentionBias::from_config, QkNorm::all_heads, true,
     "post_attention_layernorm", "post_feedforward_layernorm", WindowLayers::none, false, false, false, false, 1e-5},
    {Architecture::gpt_oss, "gpt_oss", "gpt-oss", AttentionBias::from_config, QkNorm::none, false, "input_layernorm",
     "post_attention_layernorm", WindowLayers::alternate, true, true, true, false, 1e-5},
};
// One row per architecture, in the enum's order.
static_assert(static_cast<int>(Architecture::gpt_oss) == 7, "a new Architecture needs its row in kFamilies");

}  // namespace

const std::vector<FamilyRow>& families() { return kFamilies; }

const FamilyRow& family_of(Architecture architecture) { return kFamilies.at(static_cast<size_t>(architecture)); }

const FamilyRow* find_family(const std::string& model_type) {
  for (const auto& row : kFamilies)
    if (model_type == row.model_type) return &row;
  return nullptr;
}

std::string supported_families() {
  std::string list;
  for (const auto& row : kFamilies) list += std::string(list.empty() ? "" : ", ") + row.model_type + " (" + row.models + ")";
  return list;
}

torch::Tensor rotary_inverse_frequencies(const RopeConfig& rope, int64_t dims) {
  const auto exponents = torch::arange(0, dims, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dims);
  const auto powers = torch::pow(rope.theta, exponents);  // (dims / 2)
  const auto inv_freq = 1.0 / powers;
  if (rope.type == RopeType::standard) return inv_freq;
  if (rope.type == RopeType::llama3) {
    const double old_context = static_cast<double>(rope.original_positions);
    const double low_wavelength = old_context / rope.low_freq_factor, high_wavelength = old_context / rope.high_freq_factor;
    const auto wavelength = 2 * kPi / inv_freq;
    const auto scaled = torch::where(wavelength > low_wavelength, inv_freq / rope.factor, inv_freq);
    const auto smooth = (old_context / wavelength - rope.low_freq_factor) / (rope.high_freq_factor - rope.low_freq_factor);
    const auto smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
    const auto medium = (wavelength < high_wavelength).logical_not().logical_and((wavelength > low_wavelength).logical_not());
    return torch::where(medium, smoothed, scaled);
  }
  // yarn
  auto correction = [&](double rotations) {
    return (static_cast<double>(dims) * std::log(static_cast<double>(rope.original_positions) / (rotations * 2 * kPi))) /
           (2 * std::log(rope.theta));
  };
  double low = correction(rope.beta_fast), high = correction(rope.beta_slow);
  if (rope.truncate) low = std::floor(low), high = std::ceil(high);
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dims - 1));
  if (low == high) high += 0.001;
  const auto ramp = ((torch::arange(dims / 2, torch::kFloat32) - low) / (high - low)).clamp(0, 1);
  const auto extrapolation = 1 - ramp;
  const auto interpolation = 1.0 / (rope.factor * powers);
  return interpolation * (1 - extrapolation) + inv_freq * extrapolation;
}

torch::Tensor dequantize_mxfp4(const torch::Tensor& blocks, const torch::Tensor& scales, const std::string& what) {
  if (blocks.dim() != 4 || scales.dim() != 3 || blocks.sizes().slice(0, 3) != scales.sizes())
    throw InputError(what + ": MXFP4 blocks " + std::string(c10::str(blocks.sizes())) + " and scales " +
                         std::string(c10::str(scales.sizes())) + " disagree",
                     "blocks (E, R, G, B) and scales (E, R, G) as gpt-oss checkpoints store them");
  if (blocks.scalar_type() != torch::kUInt8 || scales.scalar_type() != torch::kUInt8)
    throw InputError(what + ": MXFP4 blocks and scales must be U8");
  static const float kValues[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
                                    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
  const auto table = torch::from_blob(const_cast<float*>(kValues), {16}, torch::kFloat32).to(blocks.device());
  const auto low = table.index({blocks.bitwise_and(0x0F).to(torch::kLong)});
  const auto high = table.index({blocks.bitwise_right_shift(4).to(torch::kLong)});
  const int64_t experts = blocks.size(0), rows = blocks.size(1), groups = blocks.size(2), bytes = blocks.size(3);
  auto values = torch::stack({low, high}, -1).view({experts, rows, groups, 2 * bytes});  // (E, R, G, 2B)
  values = torch::ldexp(values, (scales.to(torch::kInt32) - 127).unsqueeze(-1));
  return values.view({experts, rows, groups * 2 * bytes}).transpose(1, 2).contiguous();  // (E, G·2B, R)
}

}  // namespace sg

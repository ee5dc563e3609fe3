// families.h — the model families the Hugging Face room reads, one row each: config.json's
// model_type, the computation's options and the names of a block's tensors. GPT-2 and GPT-NeoX
// have fused layouts with their own readers (pretrained.cpp); every other row is read by one
// generic reader driven by the row. Also the rotary inverse frequencies of rope_type default,
// llama3 and yarn, and MXFP4 dequantisation, each as transformers 5 computes them.
//
// Not here: config.json parsing and the forward pass (pretrained.h).
#pragma once
#include <torch/torch.h>

#include <string>
#include <vector>

#include "lib/hf/pretrained.h"

namespace sg {

/// Which q/k/v/o biases a family has.
enum class AttentionBias {
  none,       // no bias (a config.json asking for one is refused)
  qkv,        // q/k/v_proj always, o_proj never (qwen2)
  from_config // all four when config.json's attention_bias is true (llama, qwen3, olmo2, gpt_oss)
};
/// Which layers a sliding_window applies to where config.json has no layer_types.
enum class WindowLayers {
  none,       // no sliding windows (a sliding_window in config.json is refused)
  all,        // mistral
  from_max_window_layers,  // qwen2, qwen3: layers >= max_window_layers when use_sliding_window
  alternate   // gpt_oss: even layers (0, 2, …) slide, odd layers attend to everything
};
/// Query/key RMSNorm before the rotary embedding.
enum class QkNorm { none, per_head, all_heads };  // qwen3: over each head's d; olmo2: over H d (Hkv d)

struct FamilyRow {
  Architecture architecture;
  const char* model_type;
  const char* models;           // examples, for --help and errors
  AttentionBias bias;
  QkNorm qk_norm;
  bool norm_after;              // OLMo 2: x + norm(f(x)) instead of x + f(norm(x))
  const char* attention_norm;   // the norm around attention: "input_layernorm" (before) or "post_attention_layernorm" (after)
  const char* feed_forward_norm;  // "post_attention_layernorm" (before) or "post_feedforward_layernorm" (after)
  WindowLayers windows;         // which layers have config.json's sliding_window when it gives no layer_types
  bool sinks;                   // self_attn.sinks: learned per-head sink logits
  bool experts;                 // mlp.router + mlp.experts (gpt_oss), else mlp.gate/up/down_proj
  bool bias_default;            // attention_bias where config.json does not say (from_config only)
  bool tied_default;            // tie_word_embeddings where config.json does not say
  double epsilon_default;       // rms_norm_eps where config.json does not say
};

/// Every family, GPT-2 and GPT-NeoX first.
const std::vector<FamilyRow>& families();
/// The row of an architecture.
const FamilyRow& family_of(Architecture architecture);
/// The row of a model_type, or nullptr.
const FamilyRow* find_family(const std::string& model_type);
/// "gpt2 (GPT-2), gpt_neox (Pythia), llama (…), …": the supported model types, for errors.
std::string supported_families();

/// (dims / 2) float32 inverse frequencies of a rotary embedding over `dims` dimensions, as
/// transformers' ROPE_INIT_FUNCTIONS compute them.
torch::Tensor rotary_inverse_frequencies(const RopeConfig& rope, int64_t dims);

/// MXFP4 as gpt-oss checkpoints store expert weights: blocks (E, R, G, 16) uint8, two FP4 (E2M1)
/// values a byte (low nibble first), scales (E, R, G) uint8 exponents biased by 127, one per 32
/// values. Returns (E, G·32, R) float32: transformers' convert_moe_packed_tensors, transposed as it
/// does. Throws InputError naming `what` on shapes that disagree.
torch::Tensor dequantize_mxfp4(const torch::Tensor& blocks, const torch::Tensor& scales, const std::string& what);

}  // namespace sg

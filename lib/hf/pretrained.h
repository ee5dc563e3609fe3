// pretrained.h — GPT-2 and GPT-NeoX (Pythia) language models read from a Hugging Face checkpoint
// folder (config.json + model.safetensors, or shards with model.safetensors.index.json), with a
// forward pass in LibTorch on the CPU or CUDA that matches transformers' eager implementation
// (tests/hf/test_pretrained.cpp compares logits and attention weights with transformers 5).
//
// GPT-2 (model_type "gpt2": gpt2, gpt2-medium, gpt2-large, gpt2-xl): pre-norm blocks, Conv1D
// weights stored (in, out) and transposed here, biases everywhere, learned positions, GELU with
// the tanh approximation ("gelu_new"), head tied to the token embedding unless lm_head.weight is
// given and tie_word_embeddings is false.
// GPT-NeoX (model_type "gpt_neox": the Pythia suite): rotary embeddings on the first
// int(head_dim * rotary_pct) dimensions of each query and key (rotate-half form, base
// rotary_emb_base; transformers 5 spells these rope_parameters.partial_rotary_factor and
// rope_theta), parallel residual x + attn(ln1 x) + mlp(ln2 x) or sequential (use_parallel_residual),
// the fused query_key_value laid out per head as [q_h k_h v_h] for h = 0..H-1 (reordered to
// [Q; K; V] when loaded), exact GELU, separate unembedding embed_out (unless tied).
//
// The decoder families of today (families.h, one row each: llama, mistral, qwen2, qwen3, olmo2,
// gpt_oss): separate q/k/v projections with grouped-query attention (n_kv_head key/value heads,
// each read by n_head / n_kv_head query heads), RMSNorm, rotary embeddings on the whole head
// (rope_type default, llama3 or yarn, inv_freq as transformers computes it), SwiGLU feed-forward
// or gpt-oss's mixture of experts (MXFP4 expert weights dequantised), and per family: q/k/v or
// all attention biases, query/key RMSNorm per head (qwen3) or over all heads (olmo2), OLMo 2's
// norms after each sublayer, sliding windows per layer, gpt-oss's learned per-head sink logits.
//
// Weights are read in the checkpoint's dtype (F32, F16 or BF16) and computed in float32. Where they
// are held is the caller's choice (WeightResidence): converted to float32 once, at load, or kept as
// stored (on the CPU, viewing the files' memory maps) and converted one block at a time, when that
// block runs, so a model needs about its checkpoint's size plus one block in float32.
// Checked on load (InputError naming the file): config.json fields, every expected tensor
// present with the shape config.json implies and, when config.json declares a dtype
// ("torch_dtype" or "dtype"), with that dtype.
//
// Not here: tokenisation (tokenizer.h), the survey statistics (survey.h), training.
#pragma once
#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lib/model/attention.h"

namespace sg {

enum class Architecture { gpt2, gpt_neox, llama, mistral, qwen2, qwen3, olmo2, gpt_oss };

/// How a rotary embedding's inverse frequencies are computed (transformers' rope_type).
enum class RopeType { standard, llama3, yarn };

/// The rotary embedding of a decoder family (rope_parameters of config.json).
struct RopeConfig {
  RopeType type = RopeType::standard;
  double theta = 10000.0;
  double factor = 1.0;                  // llama3, yarn
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_positions = 0;       // original_max_position_embeddings (llama3, yarn)
  double beta_fast = 32.0, beta_slow = 1.0;  // yarn
  bool truncate = true;                 // yarn
  double attention_factor = 1.0;        // yarn: multiplies cos and sin (so the logits by its square)
};

/// The fields of config.json that define the computation.
struct PretrainedConfig {
  Architecture architecture = Architecture::gpt2;
  int64_t n_layer = 0, n_head = 0, n_embd = 0;
  int64_t n_kv_head = 0;    // key/value heads (grouped-query attention); n_head for GPT-2 and NeoX
  int64_t head_size = 0;    // d: config.json's head_dim, else n_embd / n_head
  int64_t n_inner = 0;      // MLP width (GPT-2 n_inner, default 4 n_embd; NeoX intermediate_size)
  int64_t vocab_size = 0;
  int64_t n_positions = 0;  // longest sequence (GPT-2 n_positions; NeoX max_position_embeddings)
  double layer_norm_eps = 1e-5;
  bool gelu_tanh = true;    // "gelu_new"/"gelu_pytorch_tanh"/"gelu_fast" (tanh form) or "gelu" (erf)
  bool tie_word_embeddings = true;
  std::string dtype;        // the declared weight dtype ("float32", "float16", "bfloat16"; "" if none)
  // GPT-2 only.
  bool scale_attn_weights = true;               // logits / sqrt(d)
  bool scale_attn_by_inverse_layer_idx = false;  // and / (layer + 1)
  // GPT-NeoX only.
  double rotary_pct = 1.0;
  double rotary_base = 10000.0;
  bool use_parallel_residual = true;
  bool attention_bias = true;

  // The decoder families only.
  RopeConfig rope;
  bool qkv_bias = false, out_bias = false;  // biases of q/k/v_proj and of o_proj
  std::vector<int64_t> windows;             // per layer: the sliding window W (keys j > i - W), 0 for none
  bool sinks = false;                       // learned per-head sink logits (gpt_oss)
  int64_t experts = 0, experts_per_token = 0;  // mixture of experts (gpt_oss); 0: a SwiGLU MLP
  double swiglu_alpha = 1.702, swiglu_limit = 7.0;
  bool mlp_bias = false;                    // biases of gate/up/down_proj (llama's mlp_bias)

  int64_t head_dim() const { return head_size; }
  /// True for the decoder families (families.h), false for GPT-2 and GPT-NeoX.
  bool decoder_family() const;
  /// "full", "gqa", with "+window" when a layer has a sliding window and "+sinks" for learned sinks
  /// ("mha" rather than "full" when n_kv_head = n_head).
  std::string attention_kind() const;
  /// Rotary dimensions per head: int(head_dim * rotary_pct) as transformers computes it (NeoX).
  int64_t rotary_dims() const;
  /// config.json's model_type: "gpt2", "gpt_neox", "llama", … (families.h).
  std::string model_type() const;
};

/// Reads and checks config.json. Throws InputError naming the file for a missing or malformed
/// file, an unsupported model_type, or fields this implementation does not compute (another rope
/// type or rope scaling, cross-attention, an unknown activation).
PretrainedConfig read_pretrained_config(const std::string& path);

/// read_pretrained_config on the object of a config.json already read; `path` names it in errors.
PretrainedConfig parse_pretrained_config(const nlohmann::json& object, const std::string& path);

/// A config.json as a JSON object (at most 16 MB). Throws InputError naming the file when it is
/// absent, not JSON or not an object.
nlohmann::json read_config_json(const std::string& path);

// Telemetry of a pretrained model (TelemetryCallback, attention.h): weights (B, H, T, T),
// read_norms (B, H, T) = |v_j|/sqrt(d), reads (B, H, T, d), for query head h the values of its
// key/value head h / (H / Hkv); phantom_mass (B, H, T) the mass on a learned sink (gpt_oss),
// else undefined; gates undefined.

/// The weights of one block in nn.Linear layout (out, in).
struct PretrainedBlock {
  torch::Tensor ln1_weight, ln1_bias, ln2_weight, ln2_bias;
  torch::Tensor qkv_weight, qkv_bias;    // (3C, C), (3C): rows [Q; K; V], head-major within each
  torch::Tensor proj_weight, proj_bias;  // (C, C), (C)
  torch::Tensor fc_weight, fc_bias;      // (n_inner, C), (n_inner)
  torch::Tensor out_weight, out_bias;    // (C, n_inner), (C)
  // Decoder families.
  torch::Tensor up_weight, up_bias;      // SwiGLU: down(silu(fc x) * up x), fc = gate_proj, out = down_proj
  torch::Tensor q_norm, k_norm;          // (d) per head or (H d) / (Hkv d) over all heads
  torch::Tensor sinks;                   // (H) learned sink logits
  torch::Tensor router_weight, router_bias;    // (E, C), (E)
  torch::Tensor expert_up, expert_up_bias;      // (E, C, 2 n_inner), (E, 2 n_inner): gate and up interleaved
  torch::Tensor expert_down, expert_down_bias;  // (E, n_inner, C), (E, C)
};

/// The keys and values of every layer for incremental decoding (keys after the rotary embedding).
struct PretrainedCache {
  std::vector<torch::Tensor> keys, values;  // per layer (B, H, tokens, d)
  int64_t tokens = 0;                       // positions consumed so far
};

/// How a loaded model holds its weights.
enum class WeightResidence {
  float32,    // converted to float32 at load: the fastest forward pass; memory: the float32 size
  per_block   // as stored (memory-mapped on the CPU, copied on CUDA), each block converted to float32
              // while it runs, the embeddings' rows as they are looked up and the head when applied
};

class PretrainedModel {
 public:
  /// Loads config.json and the safetensors weights of a checkpoint folder onto `device`, held as
  /// `residence` says. Throws InputError naming the file and the problem (see the file comment).
  static PretrainedModel load(const std::string& folder, const torch::Device& device,
                              WeightResidence residence = WeightResidence::float32);

  /// idx (B, T) int64 -> logits (B, T, V), float32. T must not exceed n_positions (UsageError).
  /// With a callback, attention is computed explicitly and each layer's telemetry is passed to it;
  /// without, the fused kernel is used.
  torch::Tensor forward(const torch::Tensor& idx, const TelemetryCallback& telemetry = {}) const;

  /// idx (B, T) -> hidden states after the final LayerNorm (B, T, C); the head is not applied.
  torch::Tensor hidden(const torch::Tensor& idx, const TelemetryCallback& telemetry = {}) const;

  /// The next positions idx (B, T) after those already in `cache` -> their hidden states (B, T, C);
  /// their keys and values are appended to the cache. The same values as hidden() on the whole
  /// sequence (up to rounding). UsageError past n_positions.
  torch::Tensor hidden(const torch::Tensor& idx, PretrainedCache& cache) const;

  /// Hidden states (..., C) -> logits (..., V), float32.
  torch::Tensor head(const torch::Tensor& hidden) const;

  const PretrainedConfig& config() const { return config_; }
  const std::string& folder() const { return folder_; }
  /// The files read (config.json and the safetensors files), for provenance.
  const std::vector<std::string>& files() const { return files_; }
  WeightResidence residence() const { return stored_ ? WeightResidence::per_block : WeightResidence::float32; }
  /// Block `layer`'s weights in float32: held (WeightResidence::float32) or converted from the stored
  /// tensors now (per_block).
  PretrainedBlock block(int64_t layer) const;
  /// Parameters as transformers counts them: embeddings, blocks, final norm, and the head once
  /// (none extra when tied).
  int64_t parameter_count() const { return parameter_count_; }
  torch::Device device() const { return token_embedding_.device(); }

 private:
  torch::Tensor run(const torch::Tensor& idx, const TelemetryCallback& telemetry, PretrainedCache* cache) const;
  torch::Tensor block_forward(const PretrainedBlock& block, int64_t layer, const torch::Tensor& x,
                              const TelemetryCallback& telemetry, PretrainedCache* cache) const;
  torch::Tensor attention(const PretrainedBlock& block, int64_t layer, const torch::Tensor& x,
                          const TelemetryCallback& telemetry, PretrainedCache* cache) const;
  /// Softmax attention of q (B, H, T, d) over k, v (B, H, offset + T, d), causal and within the
  /// window; explicit (with telemetry) when asked or with learned sinks, else the fused kernel.
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& sinks,
                       int64_t layer, int64_t offset, int64_t window, double scale, const TelemetryCallback& telemetry) const;
  torch::Tensor feed_forward(const PretrainedBlock& block, const torch::Tensor& x) const;
  torch::Tensor norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) const;

  PretrainedConfig config_;
  std::string folder_;
  std::vector<std::string> files_;
  int64_t parameter_count_ = 0;
  torch::Tensor token_embedding_;     // (V, C): float32, or as stored for per_block
  torch::Tensor position_embedding_;  // (n_positions, C), GPT-2 only
  std::vector<PretrainedBlock> blocks_;  // float32 residence; empty for per_block
  // per_block: every block's tensors as stored, by their name in the checkpoint.
  std::shared_ptr<const std::map<std::string, torch::Tensor>> stored_;
  torch::Tensor final_norm_weight_, final_norm_bias_;
  torch::Tensor head_weight_;         // (V, C): the token embedding when tied
  torch::Tensor inv_freq_;            // (rotary dims / 2) float32; undefined for GPT-2
  double rotary_scaling_ = 1.0;       // yarn's attention factor on cos and sin
};

}  // namespace sg

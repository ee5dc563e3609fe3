// pretrained.cpp — GPT-2, GPT-NeoX and the decoder families of families.h from Hugging Face
// checkpoints (see pretrained.h).
#include "lib/hf/pretrained.h"

#include <sys/stat.h>

#include <cmath>
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "lib/base/error.h"
#include "lib/base/json.h"
#include "lib/base/log.h"
#include "lib/hf/families.h"
#include "lib/io/safetensors.h"
#include "lib/model/tensors.h"

namespace sg {
namespace {

namespace F = torch::nn::functional;
using json = nlohmann::json;

/// Reads config.json fields with defaults, naming the file in every error.
class ConfigReader {
 public:
  ConfigReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  bool has(const std::string& key) const { return object_.contains(key) && !object_[key].is_null(); }

  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!has(key)) {
      if (fallback) return *fallback;
      throw InputError(path_ + ": lacks \"" + key + "\"", "is this a config.json written by transformers?");
    }
    const auto& v = object_[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0)
      throw InputError(path_ + ": \"" + key + "\" must be a positive integer, not " + json_excerpt(v));
    return v.get<int64_t>();
  }

  double real(const std::string& key, double fallback) const {
    if (!has(key)) return fallback;
    const auto& v = object_[key];
    if (!v.is_number()) throw InputError(path_ + ": \"" + key + "\" must be a number, not " + json_excerpt(v));
    return v.get<double>();
  }

  bool boolean(const std::string& key, bool fallback) const {
    if (!has(key)) return fallback;
    const auto& v = object_[key];
    if (!v.is_boolean()) throw InputError(path_ + ": \"" + key + "\" must be true or false, not " + json_excerpt(v));
    return v.get<bool>();
  }

  std::string text(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const auto& v = object_[key];
    if (!v.is_string()) throw InputError(path_ + ": \"" + key + "\" must be a string, not " + json_excerpt(v));
    return v.get<std::string>();
  }

 private:
  const json& object_;
  std::string path_;
};

bool parse_activation(const std::string& name, const std::string& path) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return true;
  if (name == "gelu") return false;
  throw InputError(path + ": activation '" + name + "' is not supported",
                   "supported: gelu (erf), gelu_new / gelu_pytorch_tanh / gelu_fast (tanh approximation)");
}

/// Finds, checks and loads the tensors of one checkpoint folder; or, for a per_block model, replays
/// the tensors kept at load, converted to float32, so that the block readers below serve both.
class WeightReader {
 public:
  /// At load: each tensor is checked (presence, shape, dtype, finite values) and returned in
  /// float32 on the device; with `keep`, returned as stored instead (viewing the file's memory map
  /// on the CPU) and recorded in `keep` under its stored name.
  WeightReader(const SafetensorsFolder& folder, const PretrainedConfig& config, const torch::Device& device,
               std::vector<std::string> prefixes, std::map<std::string, torch::Tensor>* keep = nullptr)
      : folder_(&folder), config_(config), device_(device), prefixes_(std::move(prefixes)), keep_(keep) {}
  /// A block of a per_block model: the tensors `kept` at load, each converted to float32 when read.
  WeightReader(const std::map<std::string, torch::Tensor>& kept, const PretrainedConfig& config, const torch::Device& device,
               std::vector<std::string> prefixes)
      : config_(config), device_(device), prefixes_(std::move(prefixes)), replay_(&kept) {}

  /// The stored name of `name` under one of the prefixes, or "" when absent.
  std::string find(const std::string& name) const {
    for (const auto& prefix : prefixes_)
      if (replay_ ? replay_->count(prefix + name) > 0 : folder_->contains(prefix + name)) return prefix + name;
    return "";
  }

  /// The tensor `name` as float32 on the device (as stored when keeping), after checking presence,
  /// shape and dtype.
  torch::Tensor load(const std::string& name, const std::vector<int64_t>& shape) {
    if (replay_) return replay_->at(find(name)).to(torch::kFloat32);
    const auto stored = find(name);
    if (stored.empty())
      throw InputError(folder_->folder() + ": the checkpoint lacks tensor '" + prefixes_.front() + name + "', which a " +
                           config_.model_type() + " model with this config.json has",
                       "is config.json from the same model as the safetensors files?");
    const auto& entry = folder_->entry(stored);
    const auto& file = folder_->file_of(stored).path();
    if (entry.shape != shape)
      throw InputError(file + ": tensor '" + stored + "' has shape " + shape_text(entry.shape) + ", but config.json implies " +
                           shape_text(shape),
                       "is config.json from the same model as the safetensors files?");
    const bool floating = entry.dtype == SafetensorsDtype::F32 || entry.dtype == SafetensorsDtype::F16 ||
                          entry.dtype == SafetensorsDtype::BF16 || entry.dtype == SafetensorsDtype::F64;
    if (!floating)
      throw InputError(file + ": tensor '" + stored + "' has dtype " + to_string(entry.dtype) + "; weights must be floating point");
    if (!config_.dtype.empty() && dtype_name(entry.dtype) != config_.dtype)
      throw InputError(file + ": tensor '" + stored + "' is " + dtype_name(entry.dtype) + ", but config.json declares " +
                           config_.dtype,
                       "is config.json from the same model as the safetensors files?");
    count_ += entry.numel();
    used_.insert(stored);
    const auto tensor = keep_ ? as_stored(stored) : load_tensor(*folder_, stored).to(device_, torch::kFloat32);
    if (!all_finite(tensor))
      throw InputError(file + ": tensor '" + stored + "' holds non-finite values (NaN or infinity)",
                       "the file is damaged; download it again");
    return tensor;
  }

  /// The expert weights `name` (E, columns, rows) as float32: stored as such, or in MXFP4 as
  /// name_blocks (E, rows, columns / 32, 16) and name_scales (E, rows, columns / 32), U8.
  torch::Tensor load_experts(const std::string& name, int64_t experts, int64_t columns, int64_t rows) {
    if (!find(name).empty() || find(name + "_blocks").empty()) return load(name, {experts, columns, rows});
    const int64_t groups = columns / 32;
    auto raw = [&](const std::string& part, const std::vector<int64_t>& shape) {
      const auto stored = find(part);
      if (replay_) return replay_->at(stored);
      if (stored.empty()) throw InputError(folder_->folder() + ": the checkpoint lacks tensor '" + prefixes_.front() + part + "'");
      const auto& entry = folder_->entry(stored);
      if (entry.shape != shape || entry.dtype != SafetensorsDtype::U8)
        throw InputError(folder_->file_of(stored).path() + ": tensor '" + stored + "' is " + to_string(entry.dtype) + " " +
                         shape_text(entry.shape) + ", but MXFP4 expert weights of this config.json are U8 " + shape_text(shape));
      used_.insert(stored);
      return keep_ ? as_stored(stored) : load_tensor(*folder_, stored).to(device_);
    };
    const std::string what = replay_ ? name : folder_->file_of(find(name + "_blocks")).path() + ": " + name;
    if (columns % 32 != 0) throw InputError(what + ": MXFP4 expert weights need a multiple of 32 columns");
    const auto blocks = raw(name + "_blocks", {experts, rows, groups, 16});
    const auto scales = raw(name + "_scales", {experts, rows, groups});
    if (!replay_) count_ += experts * rows * columns;
    return dequantize_mxfp4(blocks, scales, what);
  }

  int64_t count() const { return count_; }
  /// The stored names of the tensors loaded so far.
  const std::set<std::string>& used() const { return used_; }

 private:
  /// The stored tensor `name` on the device in its own dtype, kept: on the CPU a view of the file's
  /// memory map (no copy), on another device a copy there.
  torch::Tensor as_stored(const std::string& name) {
    auto tensor = device_.is_cpu() ? map_tensor(*folder_, name) : load_tensor(*folder_, name).to(device_);
    (*keep_)[name] = tensor;
    return tensor;
  }

  const SafetensorsFolder* folder_ = nullptr;
  const PretrainedConfig& config_;
  torch::Device device_;
  std::vector<std::string> prefixes_;
  std::map<std::string, torch::Tensor>* keep_ = nullptr;
  const std::map<std::string, torch::Tensor>* replay_ = nullptr;
  int64_t count_ = 0;
  std::set<std::string> used_;
};

/// The prefixes of a family's stored tensor names (transformers' current one first).
std::vector<std::string> weight_prefixes(const PretrainedConfig& c) {
  return {c.architecture == Architecture::gpt2 ? "transformer." : c.architecture == Architecture::gpt_neox ? "gpt_neox." : "model.", ""};
}

/// Whether an unused tensor `name` of a checkpoint folder is one that transformers itself leaves
/// unused: per-layer attention buffers that older versions saved (GPT-2's causal mask `attn.bias`
/// and `attn.masked_bias`; GPT-NeoX's `attention.bias`, `attention.masked_bias` and
/// `attention.rotary_emb.inv_freq`), for a layer the config has, and the output layer `head` of a
/// model whose config ties it to the embedding (then of the embedding's shape).
bool ignorable_tensor(const std::string& name, const PretrainedConfig& config, const SafetensorsFolder& folder) {
  const bool gpt2 = config.architecture == Architecture::gpt2, neox = config.architecture == Architecture::gpt_neox;
  const std::string head = neox ? "embed_out.weight" : "lm_head.weight";
  if (name == head)
    return config.tie_word_embeddings && folder.entry(name).shape == std::vector<int64_t>{config.vocab_size, config.n_embd};
  const std::vector<std::string> prefixes = gpt2 ? std::vector<std::string>{"transformer.h.", "h."}
                                            : neox ? std::vector<std::string>{"gpt_neox.layers.", "layers."}
                                                   : std::vector<std::string>{"model.layers.", "layers."};
  for (const std::string& prefix : prefixes) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const auto dot = name.find('.', prefix.size());
    const std::string digits = name.substr(prefix.size(), dot == std::string::npos ? std::string::npos : dot - prefix.size());
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
    if (std::stoll(digits) >= config.n_layer) return false;
    const std::string rest = name.substr(dot + 1);
    if (!gpt2 && !neox) return rest == "self_attn.rotary_emb.inv_freq";
    return gpt2 ? rest == "attn.bias" || rest == "attn.masked_bias"
                : rest == "attention.bias" || rest == "attention.masked_bias" || rest == "attention.rotary_emb.inv_freq";
  }
  return false;
}

/// (B, H, T, d): the first 2 · inv_freq.size(0) dimensions rotated by position, positions offset ..
/// offset + T - 1 (the rotate-half form of GPT-NeoX and Llama); cos and sin multiplied by `scaling`.
torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& inv_freq, double scaling, int64_t offset) {
  if (!inv_freq.defined() || inv_freq.size(0) == 0) return x;
  const int64_t length = x.size(2), dims = 2 * inv_freq.size(0);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
  const auto positions = torch::arange(offset, offset + length, options);
  const auto freqs = positions.unsqueeze(1) * inv_freq.unsqueeze(0);  // (T, dims/2)
  const auto angles = torch::cat({freqs, freqs}, -1);                 // (T, dims)
  auto cos = angles.cos(), sin = angles.sin();
  if (scaling != 1.0) cos = cos * scaling, sin = sin * scaling;
  const auto rotated = x.narrow(-1, 0, dims);
  const auto first = rotated.narrow(-1, 0, dims / 2), second = rotated.narrow(-1, dims / 2, dims - dims / 2);
  const auto turned = torch::cat({-second, first}, -1);
  const auto out = rotated * cos + turned * sin;
  if (dims == x.size(-1)) return out;
  return torch::cat({out, x.narrow(-1, dims, x.size(-1) - dims)}, -1);
}

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return bias.defined() ? F::linear(x, weight, bias) : F::linear(x, weight);
}

/// Block l of a GPT-2 checkpoint. Conv1D stores (in, out); nn.Linear's layout is (out, in).
PretrainedBlock gpt2_block(WeightReader& reader, const PretrainedConfig& c, int64_t l) {
  const int64_t C = c.n_embd, I = c.n_inner;
  const std::string p = "h." + std::to_string(l) + ".";
  PretrainedBlock b;
  b.ln1_weight = reader.load(p + "ln_1.weight", {C});
  b.ln1_bias = reader.load(p + "ln_1.bias", {C});
  b.qkv_weight = reader.load(p + "attn.c_attn.weight", {C, 3 * C}).t().contiguous();
  b.qkv_bias = reader.load(p + "attn.c_attn.bias", {3 * C});
  b.proj_weight = reader.load(p + "attn.c_proj.weight", {C, C}).t().contiguous();
  b.proj_bias = reader.load(p + "attn.c_proj.bias", {C});
  b.ln2_weight = reader.load(p + "ln_2.weight", {C});
  b.ln2_bias = reader.load(p + "ln_2.bias", {C});
  b.fc_weight = reader.load(p + "mlp.c_fc.weight", {C, I}).t().contiguous();
  b.fc_bias = reader.load(p + "mlp.c_fc.bias", {I});
  b.out_weight = reader.load(p + "mlp.c_proj.weight", {I, C}).t().contiguous();
  b.out_bias = reader.load(p + "mlp.c_proj.bias", {C});
  return b;
}

/// Block l of a GPT-NeoX checkpoint. query_key_value rows are per head [q_h; k_h; v_h]:
/// (H, 3, d) -> (3, H, d), i.e. [Q; K; V].
PretrainedBlock neox_block(WeightReader& reader, const PretrainedConfig& c, int64_t l) {
  const int64_t C = c.n_embd, I = c.n_inner, H = c.n_head, d = c.head_dim();
  const std::string p = "layers." + std::to_string(l) + ".";
  PretrainedBlock b;
  b.ln1_weight = reader.load(p + "input_layernorm.weight", {C});
  b.ln1_bias = reader.load(p + "input_layernorm.bias", {C});
  b.ln2_weight = reader.load(p + "post_attention_layernorm.weight", {C});
  b.ln2_bias = reader.load(p + "post_attention_layernorm.bias", {C});
  b.qkv_weight = reader.load(p + "attention.query_key_value.weight", {3 * C, C})
                     .view({H, 3, d, C}).transpose(0, 1).reshape({3 * C, C}).contiguous();
  b.proj_weight = reader.load(p + "attention.dense.weight", {C, C});
  if (c.attention_bias) {
    b.qkv_bias = reader.load(p + "attention.query_key_value.bias", {3 * C}).view({H, 3, d}).transpose(0, 1).reshape({3 * C}).contiguous();
    b.proj_bias = reader.load(p + "attention.dense.bias", {C});
  }
  b.fc_weight = reader.load(p + "mlp.dense_h_to_4h.weight", {I, C});
  b.fc_bias = reader.load(p + "mlp.dense_h_to_4h.bias", {I});
  b.out_weight = reader.load(p + "mlp.dense_4h_to_h.weight", {C, I});
  b.out_bias = reader.load(p + "mlp.dense_4h_to_h.bias", {C});
  return b;
}

/// Block l of a decoder family, its tensor names and options from the family's row.
PretrainedBlock decoder_block(WeightReader& reader, const PretrainedConfig& c, int64_t l) {
  const auto& row = family_of(c.architecture);
  const int64_t C = c.n_embd, I = c.n_inner, H = c.n_head, K = c.n_kv_head, d = c.head_dim(), E = c.experts;
  const std::string p = "layers." + std::to_string(l) + ".", a = p + "self_attn.", m = p + "mlp.";
  PretrainedBlock b;
  b.ln1_weight = reader.load(p + row.attention_norm + ".weight", {C});
  b.ln2_weight = reader.load(p + row.feed_forward_norm + ".weight", {C});
  b.qkv_weight = torch::cat({reader.load(a + "q_proj.weight", {H * d, C}), reader.load(a + "k_proj.weight", {K * d, C}),
                             reader.load(a + "v_proj.weight", {K * d, C})});
  if (c.qkv_bias)
    b.qkv_bias = torch::cat({reader.load(a + "q_proj.bias", {H * d}), reader.load(a + "k_proj.bias", {K * d}),
                             reader.load(a + "v_proj.bias", {K * d})});
  b.proj_weight = reader.load(a + "o_proj.weight", {C, H * d});
  if (c.out_bias) b.proj_bias = reader.load(a + "o_proj.bias", {C});
  if (row.qk_norm != QkNorm::none) {
    const bool per_head = row.qk_norm == QkNorm::per_head;
    b.q_norm = reader.load(a + "q_norm.weight", {per_head ? d : H * d});
    b.k_norm = reader.load(a + "k_norm.weight", {per_head ? d : K * d});
  }
  if (c.sinks) b.sinks = reader.load(a + "sinks", {H});
  if (E > 0) {
    b.router_weight = reader.load(m + "router.weight", {E, C});
    b.router_bias = reader.load(m + "router.bias", {E});
    b.expert_up = reader.load_experts(m + "experts.gate_up_proj", E, C, 2 * I);
    b.expert_up_bias = reader.load(m + "experts.gate_up_proj_bias", {E, 2 * I});
    b.expert_down = reader.load_experts(m + "experts.down_proj", E, I, C);
    b.expert_down_bias = reader.load(m + "experts.down_proj_bias", {E, C});
  } else {
    b.fc_weight = reader.load(m + "gate_proj.weight", {I, C});
    b.up_weight = reader.load(m + "up_proj.weight", {I, C});
    b.out_weight = reader.load(m + "down_proj.weight", {C, I});
  }
  return b;
}

/// Block l of any family.
PretrainedBlock read_block(WeightReader& reader, const PretrainedConfig& c, int64_t l) {
  if (c.architecture == Architecture::gpt2) return gpt2_block(reader, c, l);
  if (c.architecture == Architecture::gpt_neox) return neox_block(reader, c, l);
  return decoder_block(reader, c, l);
}

/// x * rsqrt(mean(x²) + eps) * weight over the last dimension (transformers' RMSNorm, float32).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  return weight * (x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps));
}

}  // namespace

int64_t PretrainedConfig::rotary_dims() const {
  if (decoder_family()) return head_size;
  if (architecture != Architecture::gpt_neox) return 0;
  return static_cast<int64_t>(static_cast<double>(head_dim()) * rotary_pct);
}

std::string PretrainedConfig::model_type() const { return family_of(architecture).model_type; }

bool PretrainedConfig::decoder_family() const {
  return architecture != Architecture::gpt2 && architecture != Architecture::gpt_neox;
}

std::string PretrainedConfig::attention_kind() const {
  std::string kind = n_kv_head == n_head ? "mha" : "gqa";
  for (auto w : windows)
    if (w > 0) {
      kind += "+window";
      break;
    }
  return sinks ? kind + "+sinks" : kind;
}

nlohmann::json read_config_json(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0)
    throw InputError(path + ": cannot be read", "a Hugging Face checkpoint folder holds config.json");
  // A config.json is a few KB; nesting is limited (lib/base/json.h): 200,000 levels overflowed the
  // stack in an error message.
  json object = read_json_file(path, /*max_bytes=*/std::size_t{16} << 20);
  if (!object.is_object()) throw InputError(path + ": not a JSON object");
  return object;
}

PretrainedConfig read_pretrained_config(const std::string& path) { return parse_pretrained_config(read_config_json(path), path); }

namespace {

/// config.json's names, and defaults, of the fields GPT-2 and GPT-NeoX both have.
struct SharedFieldNames {
  const char *width, *heads, *layers, *positions;
  int64_t positions_default;
  const char* inner;
  bool inner_required;  // else 4 × the width where absent
  const char *epsilon, *activation, *activation_default;
  bool tied_default;
};

constexpr SharedFieldNames kGpt2Names{"n_embd", "n_head", "n_layer", "n_positions", 1024, "n_inner", false,
                                      "layer_norm_epsilon", "activation_function", "gelu_new", true};
constexpr SharedFieldNames kNeoxNames{"hidden_size", "num_attention_heads", "num_hidden_layers", "max_position_embeddings",
                                      2048, "intermediate_size", true, "layer_norm_eps", "hidden_act", "gelu", false};

void read_shared_fields(const ConfigReader& r, const SharedFieldNames& names, PretrainedConfig& c, const std::string& path) {
  c.n_embd = r.integer(names.width);
  c.n_head = r.integer(names.heads);
  c.n_layer = r.integer(names.layers);
  c.vocab_size = r.integer("vocab_size");
  c.n_positions = r.integer(names.positions, names.positions_default);
  c.n_inner = names.inner_required ? r.integer(names.inner) : r.integer(names.inner, 4 * c.n_embd);
  c.layer_norm_eps = r.real(names.epsilon, 1e-5);
  c.gelu_tanh = parse_activation(r.text(names.activation, names.activation_default), path);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", names.tied_default);
}

/// A number of an object that must have it.
double required_real(const ConfigReader& r, const std::string& key, const std::string& path) {
  if (!r.has(key)) throw InputError(path + ": lacks \"" + key + "\"", "the rope type needs it");
  return r.real(key, 0);
}

/// The rotary embedding: transformers 5's rope_parameters, or transformers 4's rope_theta and
/// rope_scaling.
RopeConfig read_rope(const ConfigReader& r, const json& object, int64_t positions, const std::string& path) {
  RopeConfig rope;
  rope.theta = r.real("rope_theta", 10000.0);
  const char* key = r.has("rope_parameters") ? "rope_parameters" : r.has("rope_scaling") ? "rope_scaling" : nullptr;
  if (!key) return rope;
  const std::string where = path + " (" + key + ")";
  if (!object[key].is_object()) throw InputError(where + ": not an object");
  const ConfigReader rr(object[key], where);
  rope.theta = rr.real("rope_theta", rope.theta);
  if (rr.real("partial_rotary_factor", 1.0) != 1.0) throw InputError(where + ": partial_rotary_factor is not supported here");
  const auto type = rr.text("rope_type", rr.text("type", "default"));
  if (type == "llama3") {
    rope.type = RopeType::llama3;
    rope.factor = required_real(rr, "factor", where);
    rope.low_freq_factor = required_real(rr, "low_freq_factor", where);
    rope.high_freq_factor = required_real(rr, "high_freq_factor", where);
    rope.original_positions = rr.integer("original_max_position_embeddings");
  } else if (type == "yarn") {
    rope.type = RopeType::yarn;
    rope.original_positions = rr.integer("original_max_position_embeddings");
    rope.factor = rr.real("factor", static_cast<double>(positions) / static_cast<double>(rope.original_positions));
    rope.beta_fast = rr.real("beta_fast", 0) != 0 ? rr.real("beta_fast", 0) : 32.0;
    rope.beta_slow = rr.real("beta_slow", 0) != 0 ? rr.real("beta_slow", 0) : 1.0;
    rope.truncate = rr.boolean("truncate", true);
    auto mscale = [](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
    const double m = rr.real("mscale", 0), m_all = rr.real("mscale_all_dim", 0);
    rope.attention_factor = rr.has("attention_factor") ? rr.real("attention_factor", 1.0)
                            : m != 0 && m_all != 0     ? mscale(rope.factor, m) / mscale(rope.factor, m_all)
                                                       : mscale(rope.factor, 1.0);
  } else if (type != "default") {
    throw InputError(where + ": rope_type '" + type + "' is not supported", "supported: default, llama3, yarn");
  }
  return rope;
}

/// Per layer: the sliding window, 0 where a layer attends to every earlier position.
std::vector<int64_t> read_windows(const ConfigReader& r, const json& object, const FamilyRow& row, int64_t layers,
                                  const std::string& path) {
  std::vector<int64_t> windows(static_cast<size_t>(layers), 0);
  const int64_t window = r.has("sliding_window") ? r.integer("sliding_window") : 0;
  if (row.windows == WindowLayers::none) {
    if (window) throw InputError(path + ": sliding_window is set, but " + row.model_type + " models have none");
    return windows;
  }
  if (r.has("layer_types")) {
    const auto& types = object["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != layers)
      throw InputError(path + ": layer_types must list one type per layer (" + std::to_string(layers) + ")");
    for (int64_t l = 0; l < layers; ++l) {
      const auto& type = types[static_cast<size_t>(l)];
      if (type == "sliding_attention" && window) windows[static_cast<size_t>(l)] = window;
      else if (type != "full_attention" && type != "sliding_attention")
        throw InputError(path + ": layer type " + json_excerpt(type) + " is not supported",
                         "supported: full_attention, sliding_attention");
    }
    return windows;
  }
  for (int64_t l = 0; l < layers && window; ++l) {
    bool slides = row.windows == WindowLayers::all || (row.windows == WindowLayers::alternate && l % 2 == 0);
    if (row.windows == WindowLayers::from_max_window_layers)
      slides = r.boolean("use_sliding_window", false) && l >= r.integer("max_window_layers", 28);
    if (slides) windows[static_cast<size_t>(l)] = window;
  }
  return windows;
}

/// The fields of a decoder family (families.h) from config.json.
void read_decoder_fields(const ConfigReader& r, const json& object, const FamilyRow& row, PretrainedConfig& c,
                         const std::string& path) {
  c.architecture = row.architecture;
  c.n_embd = r.integer("hidden_size");
  c.n_head = r.integer("num_attention_heads");
  c.n_layer = r.integer("num_hidden_layers");
  c.n_kv_head = r.integer("num_key_value_heads", c.n_head);
  c.head_size = r.integer("head_dim", c.n_embd / c.n_head);
  c.vocab_size = r.integer("vocab_size");
  c.n_positions = r.integer("max_position_embeddings");
  c.n_inner = r.integer("intermediate_size");
  c.layer_norm_eps = r.real("rms_norm_eps", row.epsilon_default);
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", row.tied_default);
  const auto activation = r.text("hidden_act", "silu");
  if (activation != "silu") throw InputError(path + ": hidden_act '" + activation + "' is not supported", "supported: silu");
  if (c.n_head % c.n_kv_head != 0)
    throw InputError(path + ": " + std::to_string(c.n_head) + " attention heads are not a multiple of " +
                     std::to_string(c.n_kv_head) + " key/value heads");
  const bool asked = r.boolean("attention_bias", row.bias_default);
  if (row.bias == AttentionBias::none && asked)
    throw InputError(path + ": attention_bias is true, but " + row.model_type + " attention has no biases");
  c.qkv_bias = row.bias == AttentionBias::qkv || (row.bias == AttentionBias::from_config && asked);
  c.out_bias = row.bias == AttentionBias::from_config && asked;
  if (r.boolean("mlp_bias", false)) throw InputError(path + ": mlp_bias is not supported");
  c.windows = read_windows(r, object, row, c.n_layer, path);
  c.sinks = row.sinks;
  if (row.experts) {
    c.experts = r.integer("num_local_experts");
    c.experts_per_token = r.integer("num_experts_per_tok");
    c.swiglu_alpha = r.real("swiglu_alpha", 1.702);
    c.swiglu_limit = r.real("swiglu_limit", 7.0);
    if (c.experts_per_token > c.experts) throw InputError(path + ": num_experts_per_tok exceeds num_local_experts");
  }
  c.rope = read_rope(r, object, c.n_positions, path);
  if (c.head_size % 2 != 0) throw InputError(path + ": head_dim " + std::to_string(c.head_size) + " must be even");
}

}  // namespace

PretrainedConfig parse_pretrained_config(const nlohmann::json& object, const std::string& path) {
  const ConfigReader r(object, path);
  PretrainedConfig c;
  const auto type = r.text("model_type", "");
  if (type == "gpt2") {
    c.architecture = Architecture::gpt2;
    read_shared_fields(r, kGpt2Names, c, path);
    c.scale_attn_weights = r.boolean("scale_attn_weights", true);
    c.scale_attn_by_inverse_layer_idx = r.boolean("scale_attn_by_inverse_layer_idx", false);
    if (r.boolean("add_cross_attention", false))
      throw InputError(path + ": add_cross_attention is set; only decoder-only GPT-2 models are supported");
  } else if (type == "gpt_neox") {
    c.architecture = Architecture::gpt_neox;
    read_shared_fields(r, kNeoxNames, c, path);
    c.use_parallel_residual = r.boolean("use_parallel_residual", true);
    c.attention_bias = r.boolean("attention_bias", true);
    // transformers 4 (the hub's Pythia files): rotary_pct, rotary_emb_base, rope_scaling;
    // transformers 5: rope_parameters {rope_type, rope_theta, partial_rotary_factor}.
    c.rotary_pct = r.real("rotary_pct", 0.25);
    c.rotary_base = r.real("rotary_emb_base", 10000.0);
    if (r.has("rope_scaling"))
      throw InputError(path + ": rope_scaling is set; only the default rotary embedding is supported");
    if (r.has("rope_parameters")) {
      const auto& rope = object["rope_parameters"];
      if (!rope.is_object()) throw InputError(path + ": rope_parameters is not an object");
      const ConfigReader rr(rope, path + " (rope_parameters)");
      const auto rope_type = rr.text("rope_type", "default");
      if (rope_type != "default")
        throw InputError(path + ": rope_type '" + rope_type + "' is not supported; only the default rotary embedding is");
      c.rotary_pct = rr.real("partial_rotary_factor", c.rotary_pct);
      c.rotary_base = rr.real("rope_theta", c.rotary_base);
    }
    if (c.rotary_pct < 0 || c.rotary_pct > 1) throw InputError(path + ": rotary_pct must lie in [0, 1]");
  } else if (const FamilyRow* row = find_family(type)) {
    read_decoder_fields(r, object, *row, c, path);
  } else {
    throw InputError(path + ": model_type '" + type + "' is not supported", "supported: " + supported_families());
  }
  if (!c.decoder_family()) c.n_kv_head = c.n_head, c.head_size = c.n_embd / c.n_head;
  if (!c.decoder_family() && c.n_embd % c.n_head != 0)
    throw InputError(path + ": the width " + std::to_string(c.n_embd) + " is not divisible by " + std::to_string(c.n_head) + " heads");
  if (c.architecture == Architecture::gpt_neox && c.rotary_dims() % 2 != 0)
    throw InputError(path + ": the rotary dimensions per head (" + std::to_string(c.rotary_dims()) + ") must be even");
  std::string dtype = r.text("dtype", r.text("torch_dtype", ""));
  if (dtype == "float" || dtype == "torch.float32") dtype = "float32";
  if (dtype == "half" || dtype == "torch.float16") dtype = "float16";
  if (dtype == "torch.bfloat16") dtype = "bfloat16";
  if (dtype == "auto") dtype = "";
  if (!dtype.empty() && dtype != "float32" && dtype != "float16" && dtype != "bfloat16")
    throw InputError(path + ": dtype '" + dtype + "' is not supported", "weights must be float32, float16 or bfloat16");
  c.dtype = dtype;
  return c;
}

PretrainedModel PretrainedModel::load(const std::string& folder, const torch::Device& device, WeightResidence residence) {
  PretrainedModel model;
  model.folder_ = folder;
  const std::string config_path = folder + "/config.json";
  model.config_ = read_pretrained_config(config_path);
  const auto& c = model.config_;
  const auto weights = SafetensorsFolder::open(folder);
  model.files_.push_back(config_path);
  for (const auto& p : weights.paths()) model.files_.push_back(p);
  torch::NoGradGuard no_grad;
  const int64_t C = c.n_embd, V = c.vocab_size;
  const bool gpt2 = c.architecture == Architecture::gpt2, neox = c.architecture == Architecture::gpt_neox;
  std::map<std::string, torch::Tensor> kept;  // per_block: every tensor as stored
  auto* keep = residence == WeightResidence::per_block ? &kept : nullptr;
  WeightReader reader(weights, c, device, weight_prefixes(c), keep);
  std::set<std::string> used;  // of an untied output layer
  model.token_embedding_ = reader.load(gpt2 ? "wte.weight" : neox ? "embed_in.weight" : "embed_tokens.weight", {V, C});
  if (gpt2) model.position_embedding_ = reader.load("wpe.weight", {c.n_positions, C});
  for (int64_t l = 0; l < c.n_layer; ++l) {
    auto block = read_block(reader, c, l);  // per_block: checked, then dropped (block() rebuilds it)
    if (!keep) model.blocks_.push_back(std::move(block));
  }
  const std::string final_norm = gpt2 ? "ln_f" : neox ? "final_layer_norm" : "norm";
  model.final_norm_weight_ = reader.load(final_norm + ".weight", {C}).to(torch::kFloat32);
  if (!c.decoder_family()) model.final_norm_bias_ = reader.load(final_norm + ".bias", {C}).to(torch::kFloat32);
  if (!gpt2) {
    RopeConfig rope = c.rope;
    if (neox) rope = RopeConfig{}, rope.theta = c.rotary_base;
    model.inv_freq_ = rotary_inverse_frequencies(rope, c.rotary_dims()).to(device);
    model.rotary_scaling_ = rope.attention_factor;
  }
  if (c.tie_word_embeddings) {
    model.head_weight_ = model.token_embedding_;
  } else {
    WeightReader head(weights, c, device, {""}, keep);
    model.head_weight_ = head.load(neox ? "embed_out.weight" : "lm_head.weight", {V, C});
    model.parameter_count_ += head.count();
    used = head.used();
  }
  model.parameter_count_ += reader.count();
  // Every tensor of the folder is used, but for transformers' own leftovers: a config.json of fewer
  // layers (or another shape) than the weights would otherwise drop the rest without a word.
  used.insert(reader.used().begin(), reader.used().end());
  for (const auto& name : weights.names())
    if (!used.count(name) && !ignorable_tensor(name, c, weights))
      throw InputError(weights.file_of(name).path() + ": tensor '" + name + "' is not used by the " + c.model_type() +
                           " model that " + config_path + " describes (" + std::to_string(c.n_layer) + " layer" +
                           (c.n_layer == 1 ? "" : "s") + ")",
                       "is config.json from the same model as the safetensors files?");
  if (keep) model.stored_ = std::make_shared<const std::map<std::string, torch::Tensor>>(std::move(kept));
  log::debug("pretrained: " + folder + ": " + c.model_type() + ", " + std::to_string(model.parameter_count_) + " parameters");
  return model;
}

PretrainedBlock PretrainedModel::block(int64_t layer) const {
  if (!stored_) return blocks_.at(static_cast<size_t>(layer));
  torch::NoGradGuard no_grad;
  WeightReader reader(*stored_, config_, device(), weight_prefixes(config_));
  return read_block(reader, config_, layer);
}

namespace {

/// (B, Hkv, T, d) -> (B, Hkv · groups, T, d): each key/value head repeated for its query heads.
torch::Tensor repeat_heads(const torch::Tensor& x, int64_t groups) {
  if (groups == 1) return x;
  const auto s = x.sizes();
  return x.unsqueeze(2).expand({s[0], s[1], groups, s[2], s[3]}).reshape({s[0], s[1] * groups, s[2], s[3]});
}

/// (Tq, Tk) bool: query offset + i sees key j when j <= offset + i and, with a window W > 0,
/// j > offset + i - W.
torch::Tensor visible_keys(int64_t offset, int64_t length, int64_t window, const torch::Device& device) {
  const auto options = torch::TensorOptions().dtype(torch::kLong).device(device);
  const auto keys = torch::arange(offset + length, options).unsqueeze(0);
  const auto queries = torch::arange(offset, offset + length, options).unsqueeze(1);
  auto visible = keys <= queries;
  if (window > 0) visible = visible.logical_and(keys > queries - window);
  return visible;
}

}  // namespace

torch::Tensor PretrainedModel::attention(const PretrainedBlock& block, int64_t layer, const torch::Tensor& x,
                                         const TelemetryCallback& telemetry, PretrainedCache* cache) const {
  const auto& c = config_;
  const auto& row = family_of(c.architecture);
  const int64_t batch = x.size(0), length = x.size(1), h = c.n_head, kv = c.n_kv_head, d = c.head_dim();
  const int64_t offset = cache ? cache->tokens : 0;
  const auto qkv = linear(x, block.qkv_weight, block.qkv_bias);  // (B, T, (H + 2 Hkv) d)
  auto q = qkv.narrow(-1, 0, h * d), k = qkv.narrow(-1, h * d, kv * d);
  auto v = qkv.narrow(-1, (h + kv) * d, kv * d).view({batch, length, kv, d}).transpose(1, 2);  // (B, Hkv, T, d)
  if (row.qk_norm == QkNorm::all_heads)
    q = rms_norm(q, block.q_norm, c.layer_norm_eps), k = rms_norm(k, block.k_norm, c.layer_norm_eps);
  q = q.view({batch, length, h, d}), k = k.view({batch, length, kv, d});
  if (row.qk_norm == QkNorm::per_head)
    q = rms_norm(q, block.q_norm, c.layer_norm_eps), k = rms_norm(k, block.k_norm, c.layer_norm_eps);
  q = apply_rotary(q.transpose(1, 2), inv_freq_, rotary_scaling_, offset);  // (B, H, T, d)
  k = apply_rotary(k.transpose(1, 2), inv_freq_, rotary_scaling_, offset);  // (B, Hkv, T, d)
  if (cache) {
    auto& keys = cache->keys[static_cast<size_t>(layer)];
    auto& values = cache->values[static_cast<size_t>(layer)];
    keys = keys.defined() ? torch::cat({keys, k}, 2) : k;  // (B, Hkv, offset + T, d)
    values = values.defined() ? torch::cat({values, v}, 2) : v;
    k = keys;
    v = values;
  }
  k = repeat_heads(k, h / kv), v = repeat_heads(v, h / kv);
  double scale = 1.0;
  if (c.architecture != Architecture::gpt2 || c.scale_attn_weights) scale = 1.0 / std::sqrt(static_cast<double>(d));
  if (c.scale_attn_by_inverse_layer_idx) scale /= static_cast<double>(layer + 1);
  const int64_t window = c.windows.empty() ? 0 : c.windows[static_cast<size_t>(layer)];
  const auto y = attend(q, k, v, block.sinks, layer, offset, window, scale, cache ? TelemetryCallback{} : telemetry);
  return linear(y.transpose(1, 2).reshape({batch, length, h * d}), block.proj_weight, block.proj_bias);
}

torch::Tensor PretrainedModel::attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                      const torch::Tensor& sinks, int64_t layer, int64_t offset, int64_t window, double scale,
                                      const TelemetryCallback& telemetry) const {
  const int64_t length = q.size(2), d = q.size(3);
  if (!telemetry && !sinks.defined()) {
    if (offset == 0 && window == 0)
      return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true, scale);
    const auto visible = visible_keys(offset, length, window, q.device());  // (T, offset + T)
    return at::scaled_dot_product_attention(q, k, v, visible, /*dropout_p=*/0.0, /*is_causal=*/false, scale);
  }
  auto logits = torch::matmul(q, k.transpose(-2, -1)) * scale;  // (B, H, T, offset + T)
  logits = logits.masked_fill(visible_keys(offset, length, window, q.device()).logical_not(),
                              -std::numeric_limits<float>::infinity());
  torch::Tensor weights, phantom;
  if (sinks.defined()) {
    const auto column = sinks.view({1, -1, 1, 1}).expand({logits.size(0), logits.size(1), length, 1});
    const auto probabilities = torch::softmax(torch::cat({logits, column}, -1), -1);
    weights = probabilities.narrow(-1, 0, logits.size(-1));
    phantom = probabilities.select(-1, logits.size(-1));  // (B, H, T)
  } else {
    weights = torch::softmax(logits, -1);
  }
  const auto y = torch::matmul(weights, v);
  if (telemetry) {
    AttentionTelemetry record;
    record.weights = weights;
    record.phantom_mass = phantom;
    record.read_norms = v.pow(2).sum(-1).sqrt() / std::sqrt(static_cast<double>(d));  // (B, H, T)
    record.reads = v;
    telemetry(layer, record);
  }
  return y;
}

torch::Tensor PretrainedModel::norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) const {
  if (config_.decoder_family()) return rms_norm(x, weight, config_.layer_norm_eps);
  return torch::layer_norm(x, {config_.n_embd}, weight, bias, config_.layer_norm_eps);
}

torch::Tensor PretrainedModel::feed_forward(const PretrainedBlock& block, const torch::Tensor& x) const {
  const auto& c = config_;
  if (!c.decoder_family()) {
    const auto hidden = torch::gelu(linear(x, block.fc_weight, block.fc_bias), c.gelu_tanh ? "tanh" : "none");
    return linear(hidden, block.out_weight, block.out_bias);
  }
  if (c.experts == 0) return F::linear(torch::silu(F::linear(x, block.fc_weight)) * F::linear(x, block.up_weight), block.out_weight);
  // gpt-oss: the top experts_per_token experts of a router, their outputs weighted by a softmax over
  // the chosen logits; each expert a clamped SwiGLU with gate and up interleaved.
  const auto flat = x.reshape({-1, c.n_embd});  // (N, C)
  const auto [top, chosen] = F::linear(flat, block.router_weight, block.router_bias).topk(c.experts_per_token, -1);
  const auto scores = torch::softmax(top, 1);  // (N, k)
  auto out = torch::zeros_like(flat);
  for (int64_t e = 0; e < c.experts; ++e) {
    const auto hits = (chosen == e).nonzero();  // (n, 2): token, slot
    if (hits.size(0) == 0) continue;
    const auto tokens = hits.select(1, 0), slots = hits.select(1, 1);
    const auto gate_up = torch::matmul(flat.index_select(0, tokens), block.expert_up[e]) + block.expert_up_bias[e];
    const auto gate = gate_up.slice(-1, 0, c.n_inner * 2, 2).clamp_max(c.swiglu_limit);
    const auto up = gate_up.slice(-1, 1, c.n_inner * 2, 2).clamp(-c.swiglu_limit, c.swiglu_limit);
    const auto hidden = (up + 1) * (gate * torch::sigmoid(gate * c.swiglu_alpha));
    const auto expert = torch::matmul(hidden, block.expert_down[e]) + block.expert_down_bias[e];
    out.index_add_(0, tokens, expert * scores.index({tokens, slots}).unsqueeze(1));
  }
  return out.view(x.sizes());
}

torch::Tensor PretrainedModel::block_forward(const PretrainedBlock& block, int64_t layer, const torch::Tensor& x,
                                             const TelemetryCallback& telemetry, PretrainedCache* cache) const {
  const auto& c = config_;
  if (c.decoder_family() && family_of(c.architecture).norm_after) {
    const auto mid = x + norm(attention(block, layer, x, telemetry, cache), block.ln1_weight, block.ln1_bias);
    return mid + norm(feed_forward(block, mid), block.ln2_weight, block.ln2_bias);
  }
  const auto attended = attention(block, layer, norm(x, block.ln1_weight, block.ln1_bias), telemetry, cache);
  if (c.architecture == Architecture::gpt_neox && c.use_parallel_residual)
    return x + attended + feed_forward(block, norm(x, block.ln2_weight, block.ln2_bias));
  const auto mid = x + attended;
  return mid + feed_forward(block, norm(mid, block.ln2_weight, block.ln2_bias));
}

torch::Tensor PretrainedModel::run(const torch::Tensor& idx, const TelemetryCallback& telemetry,
                                   PretrainedCache* cache) const {
  TORCH_CHECK(idx.dim() == 2, "idx must be (B, T)");
  const int64_t offset = cache ? cache->tokens : 0;
  const int64_t length = idx.size(1);
  if (offset + length > config_.n_positions)
    throw UsageError("sequence of " + std::to_string(offset + length) + " tokens exceeds the context length " +
                         std::to_string(config_.n_positions) + " of " + folder_,
                     "use a shorter sequence");
  const auto layers = static_cast<size_t>(config_.n_layer);
  if (cache && cache->keys.empty()) {
    cache->keys.resize(layers);
    cache->values.resize(layers);
  }
  torch::NoGradGuard no_grad;
  const auto ids = idx.to(device(), torch::kLong);
  auto x = F::embedding(ids, token_embedding_).to(torch::kFloat32);  // (B, T, C)
  if (position_embedding_.defined())
    x = x + position_embedding_.narrow(0, offset, length).to(torch::kFloat32).unsqueeze(0);
  for (size_t l = 0; l < layers; ++l) {
    const auto layer = static_cast<int64_t>(l);
    x = block_forward(block(layer), layer, x, telemetry, cache);  // per_block: this block's float32 weights live only here
  }
  if (cache) cache->tokens += length;
  return norm(x, final_norm_weight_, final_norm_bias_);
}

torch::Tensor PretrainedModel::hidden(const torch::Tensor& idx, const TelemetryCallback& telemetry) const {
  return run(idx, telemetry, nullptr);
}

torch::Tensor PretrainedModel::hidden(const torch::Tensor& idx, PretrainedCache& cache) const {
  return run(idx, {}, &cache);
}

torch::Tensor PretrainedModel::head(const torch::Tensor& hidden) const {
  torch::NoGradGuard no_grad;
  if (head_weight_.scalar_type() == torch::kFloat32) return F::linear(hidden, head_weight_);
  // Stored in another dtype (per_block): converted a slice of rows at a time, never whole.
  constexpr int64_t kRows = 8192;
  const int64_t vocab = head_weight_.size(0);
  auto sizes = hidden.sizes().vec();
  sizes.back() = vocab;
  auto logits = torch::empty(sizes, hidden.options().dtype(torch::kFloat32));
  for (int64_t row = 0; row < vocab; row += kRows) {
    const int64_t rows = std::min(kRows, vocab - row);
    logits.narrow(-1, row, rows).copy_(F::linear(hidden, head_weight_.narrow(0, row, rows).to(torch::kFloat32)));
  }
  return logits;
}

torch::Tensor PretrainedModel::forward(const torch::Tensor& idx, const TelemetryCallback& telemetry) const {
  return head(hidden(idx, telemetry));
}

}  // namespace sg

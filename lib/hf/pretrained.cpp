// pretrained.cpp — GPT-2 and GPT-NeoX from Hugging Face checkpoints (see pretrained.h).
#include "lib/hf/pretrained.h"

#include <sys/stat.h>

#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "lib/base/error.h"
#include "lib/base/json.h"
#include "lib/base/log.h"
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

/// Finds, checks and loads the tensors of one checkpoint folder.
class WeightReader {
 public:
  WeightReader(const SafetensorsFolder& folder, const PretrainedConfig& config, const torch::Device& device,
               std::vector<std::string> prefixes)
      : folder_(folder), config_(config), device_(device), prefixes_(std::move(prefixes)) {}

  /// The stored name of `name` under one of the prefixes, or "" when absent.
  std::string find(const std::string& name) const {
    for (const auto& prefix : prefixes_)
      if (folder_.contains(prefix + name)) return prefix + name;
    return "";
  }

  /// The tensor `name` as float32 on the device, after checking presence, shape and dtype.
  torch::Tensor load(const std::string& name, const std::vector<int64_t>& shape) {
    const auto stored = find(name);
    if (stored.empty())
      throw InputError(folder_.folder() + ": the checkpoint lacks tensor '" + prefixes_.front() + name + "', which a " +
                           config_.model_type() + " model with this config.json has",
                       "is config.json from the same model as the safetensors files?");
    const auto& entry = folder_.entry(stored);
    const auto& file = folder_.file_of(stored).path();
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
    auto tensor = load_tensor(folder_, stored).to(device_, torch::kFloat32);
    if (!all_finite(tensor))
      throw InputError(file + ": tensor '" + stored + "' holds non-finite values (NaN or infinity)",
                       "the file is damaged; download it again");
    return tensor;
  }

  int64_t count() const { return count_; }
  /// The stored names of the tensors loaded so far.
  const std::set<std::string>& used() const { return used_; }

 private:
  const SafetensorsFolder& folder_;
  const PretrainedConfig& config_;
  torch::Device device_;
  std::vector<std::string> prefixes_;
  int64_t count_ = 0;
  std::set<std::string> used_;
};

/// Whether an unused tensor `name` of a checkpoint folder is one that transformers itself leaves
/// unused: per-layer attention buffers that older versions saved (GPT-2's causal mask `attn.bias`
/// and `attn.masked_bias`; GPT-NeoX's `attention.bias`, `attention.masked_bias` and
/// `attention.rotary_emb.inv_freq`), for a layer the config has, and the output layer `head` of a
/// model whose config ties it to the embedding (then of the embedding's shape).
bool ignorable_tensor(const std::string& name, const PretrainedConfig& config, const SafetensorsFolder& folder) {
  const bool gpt2 = config.architecture == Architecture::gpt2;
  const std::string head = gpt2 ? "lm_head.weight" : "embed_out.weight";
  if (name == head)
    return config.tie_word_embeddings && folder.entry(name).shape == std::vector<int64_t>{config.vocab_size, config.n_embd};
  for (const std::string& prefix : gpt2 ? std::vector<std::string>{"transformer.h.", "h."}
                                       : std::vector<std::string>{"gpt_neox.layers.", "layers."}) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const auto dot = name.find('.', prefix.size());
    const std::string digits = name.substr(prefix.size(), dot == std::string::npos ? std::string::npos : dot - prefix.size());
    if (digits.empty() || digits.size() > 6 || digits.find_first_not_of("0123456789") != std::string::npos) return false;
    if (std::stoll(digits) >= config.n_layer) return false;
    const std::string rest = name.substr(dot + 1);
    return gpt2 ? rest == "attn.bias" || rest == "attn.masked_bias"
                : rest == "attention.bias" || rest == "attention.masked_bias" || rest == "attention.rotary_emb.inv_freq";
  }
  return false;
}

/// (B, H, T, d): the first `dims` dimensions rotated by position, positions offset .. offset + T - 1
/// (GPT-NeoX's rotate-half form).
torch::Tensor apply_rotary(const torch::Tensor& x, int64_t dims, double base, int64_t offset) {
  if (dims == 0) return x;
  const int64_t length = x.size(2);
  const auto options = torch::TensorOptions().dtype(torch::kFloat32).device(x.device());
  const auto inv_freq = 1.0 / torch::pow(base, torch::arange(0, dims, 2, options) / static_cast<double>(dims));  // (dims/2)
  const auto positions = torch::arange(offset, offset + length, options);
  const auto freqs = positions.unsqueeze(1) * inv_freq.unsqueeze(0);  // (T, dims/2)
  const auto angles = torch::cat({freqs, freqs}, -1);                                                          // (T, dims)
  const auto cos = angles.cos(), sin = angles.sin();
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

}  // namespace

int64_t PretrainedConfig::rotary_dims() const {
  if (architecture != Architecture::gpt_neox) return 0;
  return static_cast<int64_t>(static_cast<double>(head_dim()) * rotary_pct);
}

std::string PretrainedConfig::model_type() const { return architecture == Architecture::gpt2 ? "gpt2" : "gpt_neox"; }

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
  } else {
    throw InputError(path + ": model_type '" + type + "' is not supported",
                     "supported: gpt2 (GPT-2 family) and gpt_neox (Pythia)");
  }
  if (c.n_embd % c.n_head != 0)
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

PretrainedModel PretrainedModel::load(const std::string& folder, const torch::Device& device) {
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
  const bool gpt2 = c.architecture == Architecture::gpt2;
  WeightReader reader(weights, c, device, gpt2 ? std::vector<std::string>{"transformer.", ""}
                                               : std::vector<std::string>{"gpt_neox.", ""});
  std::set<std::string> used;  // of an untied output layer
  model.token_embedding_ = reader.load(gpt2 ? "wte.weight" : "embed_in.weight", {V, C});
  if (gpt2) model.position_embedding_ = reader.load("wpe.weight", {c.n_positions, C});
  for (int64_t l = 0; l < c.n_layer; ++l) model.blocks_.push_back(gpt2 ? gpt2_block(reader, c, l) : neox_block(reader, c, l));
  const std::string final_norm = gpt2 ? "ln_f" : "final_layer_norm";
  model.final_norm_weight_ = reader.load(final_norm + ".weight", {C});
  model.final_norm_bias_ = reader.load(final_norm + ".bias", {C});
  if (c.tie_word_embeddings) {
    model.head_weight_ = model.token_embedding_;
  } else {
    WeightReader head(weights, c, device, {""});
    model.head_weight_ = head.load(gpt2 ? "lm_head.weight" : "embed_out.weight", {V, C});
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
  log::debug("pretrained: " + folder + ": " + c.model_type() + ", " + std::to_string(model.parameter_count_) + " parameters");
  return model;
}

torch::Tensor PretrainedModel::attention(const PretrainedBlock& block, int64_t layer, const torch::Tensor& x,
                                         const TelemetryCallback& telemetry, PretrainedCache* cache) const {
  const auto& c = config_;
  const int64_t batch = x.size(0), length = x.size(1), h = c.n_head, d = c.head_dim();
  const int64_t offset = cache ? cache->tokens : 0;
  const auto qkv = linear(x, block.qkv_weight, block.qkv_bias).view({batch, length, 3, h, d}).permute({2, 0, 3, 1, 4});
  auto q = qkv[0], k = qkv[1];  // (B, H, T, d)
  auto v = qkv[2];
  if (c.architecture == Architecture::gpt_neox) {
    q = apply_rotary(q, c.rotary_dims(), c.rotary_base, offset);
    k = apply_rotary(k, c.rotary_dims(), c.rotary_base, offset);
  }
  if (cache) {
    auto& keys = cache->keys[static_cast<size_t>(layer)];
    auto& values = cache->values[static_cast<size_t>(layer)];
    keys = keys.defined() ? torch::cat({keys, k}, 2) : k;  // (B, H, offset + T, d)
    values = values.defined() ? torch::cat({values, v}, 2) : v;
    k = keys;
    v = values;
  }
  double scale = 1.0;
  if (c.architecture == Architecture::gpt_neox || c.scale_attn_weights) scale = 1.0 / std::sqrt(static_cast<double>(d));
  if (c.scale_attn_by_inverse_layer_idx) scale /= static_cast<double>(layer + 1);
  torch::Tensor y;  // (B, H, T, d)
  if (cache) {
    // Query offset + i sees keys 0 .. offset + i.
    const auto options = torch::TensorOptions().dtype(torch::kLong).device(x.device());
    const auto visible = torch::arange(offset + length, options).unsqueeze(0) <=
                         torch::arange(offset, offset + length, options).unsqueeze(1);  // (T, offset + T)
    y = at::scaled_dot_product_attention(q, k, v, visible, /*dropout_p=*/0.0, /*is_causal=*/false, scale);
  } else if (telemetry) {
    auto logits = torch::matmul(q, k.transpose(-2, -1)) * scale;  // (B, H, T, T)
    const auto future = torch::ones({length, length}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
    logits = logits.masked_fill(future, -std::numeric_limits<float>::infinity());
    const auto weights = torch::softmax(logits, -1);
    y = torch::matmul(weights, v);
    AttentionTelemetry record;
    record.weights = weights;
    record.read_norms = v.pow(2).sum(-1).sqrt() / std::sqrt(static_cast<double>(d));  // (B, H, T)
    record.reads = v;
    telemetry(layer, record);
  } else {
    y = at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/true, scale);
  }
  return linear(y.transpose(1, 2).reshape({batch, length, c.n_embd}), block.proj_weight, block.proj_bias);
}

torch::Tensor PretrainedModel::block_forward(const PretrainedBlock& block, int64_t layer, const torch::Tensor& x,
                                             const TelemetryCallback& telemetry, PretrainedCache* cache) const {
  const auto& c = config_;
  auto norm = [&](const torch::Tensor& t, const torch::Tensor& w, const torch::Tensor& b) {
    return torch::layer_norm(t, {c.n_embd}, w, b, c.layer_norm_eps);
  };
  auto mlp = [&](const torch::Tensor& t) {
    const auto hidden = torch::gelu(linear(t, block.fc_weight, block.fc_bias), c.gelu_tanh ? "tanh" : "none");
    return linear(hidden, block.out_weight, block.out_bias);
  };
  const auto attended = attention(block, layer, norm(x, block.ln1_weight, block.ln1_bias), telemetry, cache);
  if (c.architecture == Architecture::gpt_neox && c.use_parallel_residual)
    return x + attended + mlp(norm(x, block.ln2_weight, block.ln2_bias));
  const auto mid = x + attended;
  return mid + mlp(norm(mid, block.ln2_weight, block.ln2_bias));
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
  if (cache && cache->keys.empty()) {
    cache->keys.resize(blocks_.size());
    cache->values.resize(blocks_.size());
  }
  torch::NoGradGuard no_grad;
  const auto ids = idx.to(device(), torch::kLong);
  auto x = F::embedding(ids, token_embedding_);  // (B, T, C)
  if (position_embedding_.defined()) x = x + position_embedding_.narrow(0, offset, length).unsqueeze(0);
  for (size_t l = 0; l < blocks_.size(); ++l)
    x = block_forward(blocks_[l], static_cast<int64_t>(l), x, telemetry, cache);
  if (cache) cache->tokens += length;
  return torch::layer_norm(x, {config_.n_embd}, final_norm_weight_, final_norm_bias_, config_.layer_norm_eps);
}

torch::Tensor PretrainedModel::hidden(const torch::Tensor& idx, const TelemetryCallback& telemetry) const {
  return run(idx, telemetry, nullptr);
}

torch::Tensor PretrainedModel::hidden(const torch::Tensor& idx, PretrainedCache& cache) const {
  return run(idx, {}, &cache);
}

torch::Tensor PretrainedModel::head(const torch::Tensor& hidden) const {
  torch::NoGradGuard no_grad;
  return F::linear(hidden, head_weight_);
}

torch::Tensor PretrainedModel::forward(const torch::Tensor& idx, const TelemetryCallback& telemetry) const {
  return head(hidden(idx, telemetry));
}

}  // namespace sg

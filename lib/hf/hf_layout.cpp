// hf_layout.cpp — a sinkgate model in a Hugging Face folder (see hf_layout.h).
#include "lib/hf/hf_layout.h"

#include <cmath>
#include <map>
#include <set>
#include <type_traits>

#include "lib/base/error.h"
#include "lib/base/json.h"
#include "lib/base/text.h"
#include "lib/hf/pretrained.h"
#include "lib/io/safetensors.h"
#include "lib/model/tensors.h"

namespace sg {
namespace {

using json = nlohmann::json;

/// One parameter: sinkgate's name and the folder's (after "transformer." for the model's own,
/// after "transformer.h.L." for block L's), and whether it is a Conv1D projection.
struct NameRule {
  const char* parameter;
  const char* tensor;
  bool conv1d;
};

// GPT-2's own names (hf_layout.h); the arms' parameters are named by the arm table (lib/run/arm.h:
// ArmParameter::export_name).
const NameRule kModelTensors[] = {
    {"wte.weight", "wte.weight", false},
    {"wpe.weight", "wpe.weight", false},
    {"ln_f.weight", "ln_f.weight", false},
    {"ln_f.bias", "ln_f.bias", false},
};
const NameRule kBlockTensors[] = {
    {"ln_1.weight", "ln_1.weight", false},
    {"ln_1.bias", "ln_1.bias", false},
    {"ln_2.weight", "ln_2.weight", false},
    {"ln_2.bias", "ln_2.bias", false},
    {"attn.c_attn.weight", "attn.c_attn.weight", true},
    {"attn.c_proj.weight", "attn.c_proj.weight", true},
    {"mlp.c_fc.weight", "mlp.c_fc.weight", true},
    {"mlp.c_proj.weight", "mlp.c_proj.weight", true},
};

/// The rule of a parameter: GPT-2's from `rules`, else an arm parameter's from the arm table (per
/// layer when `per_layer`, named after "blocks.L." as "attn." + its name); nullptr for neither.
template <size_t N>
std::optional<NameRule> find_rule(const NameRule (&rules)[N], const std::string& name, bool per_layer) {
  for (const auto& rule : rules)
    if (name == rule.parameter) return rule;
  for (const auto& option : arm_options())
    for (const auto& parameter : option.parameters) {
      if (parameter.per_layer != per_layer) continue;
      const std::string stored = parameter.stored_name(0);  // "blocks.0.attn.gate_w" or "sink_token"
      const std::string suffix = per_layer ? stored.substr(std::string("blocks.0.").size()) : stored;
      if (name == suffix) return NameRule{parameter.name, parameter.export_name, false};
    }
  return std::nullopt;
}

const char* kSameModel = "is config.json from the same export as model.safetensors? sg-export the run again";

/// The arm that config.json names: "arm" (zero_option+filter when absent), which zero_option and
/// filter, where given, must agree with.
Arm read_arm(const json& object, const std::string& path) {
  const auto text = [&](const char* key, const std::string& fallback) {
    if (!object.contains(key) || object[key].is_null()) return fallback;
    if (!object[key].is_string()) throw InputError(path + ": \"" + key + "\" must be a string, not " + json_excerpt(object[key]));
    return object[key].get<std::string>();
  };
  const auto zero = text("zero_option", ""), filter = text("filter", ""), output_gate = text("output_gate", "");
  std::string joined;  // the options joined, for a folder that names no arm
  for (const auto& option : {zero, filter, output_gate})
    if (!option.empty() && option != "none") joined += (joined.empty() ? "" : "+") + option;
  if (joined.empty() && !(zero.empty() && filter.empty() && output_gate.empty())) joined = "baseline";
  const auto name = text("arm", joined);
  if (name.empty()) throw InputError(path + ": names no arm (\"arm\", or \"zero_option\" and \"filter\")", kSameModel);
  Arm arm;
  try {
    arm = parse_arm(name);
  } catch (const UsageError& error) {
    throw InputError(path + ": arm '" + name + "' is not one this sinkgate knows",
                     "the folder was exported by another sinkgate version; read it with that one. " + error.hint());
  }
  if ((!zero.empty() && zero != to_string(arm.zero)) || (!filter.empty() && filter != to_string(arm.filter)) ||
      (!output_gate.empty() && output_gate != to_string(arm.output_gate)))
    throw InputError(path + ": arm '" + name + "' has zero option " + to_string(arm.zero) + ", filter " +
                         to_string(arm.filter) + " and output gate " + to_string(arm.output_gate) +
                         ", but zero_option is '" + zero + "', filter '" + filter + "' and output_gate '" +
                         (output_gate.empty() ? "none" : output_gate) + "'",
                     "config.json was edited: restore the arm's fields, or sg-export the run again");
  return arm;
}

/// An integer or real of the "sinkgate" object, or fallback when absent or null.
template <typename T>
T field(const json& object, const char* key, T fallback, const std::string& path) {
  if (!object.contains(key) || object[key].is_null()) return fallback;
  const auto& value = object[key];
  if constexpr (std::is_same_v<T, bool>) {
    if (!value.is_boolean()) throw InputError(path + ": sinkgate." + key + " must be true or false, not " + json_excerpt(value));
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!value.is_string()) throw InputError(path + ": sinkgate." + key + " must be a string, not " + json_excerpt(value));
  } else {
    if (!value.is_number()) throw InputError(path + ": sinkgate." + key + " must be a number, not " + json_excerpt(value));
  }
  return value.get<T>();
}

}  // namespace

std::vector<HfTensor> hf_tensors(const ModelConfig& config) {
  std::vector<HfTensor> tensors;
  const std::string blocks = "blocks.";
  for (const auto& [name, shape] : config.parameter_shapes()) {
    std::optional<NameRule> rule;
    std::string prefix = "transformer.";
    if (name.compare(0, blocks.size(), blocks) == 0) {
      const auto dot = name.find('.', blocks.size());
      if (dot != std::string::npos) {
        prefix = "transformer.h." + name.substr(blocks.size(), dot - blocks.size()) + ".";
        rule = find_rule(kBlockTensors, name.substr(dot + 1), /*per_layer=*/true);
      }
    } else {
      rule = find_rule(kModelTensors, name, /*per_layer=*/false);
    }
    if (!rule) throw std::logic_error("hf_layout: no Hugging Face name for parameter " + name + " (an arm parameter needs "
                                      "its export_name in the arm table, lib/run/arm.cpp; other parameters: kModelTensors or kBlockTensors in lib/hf/hf_layout.cpp)");
    const std::string tensor = prefix + rule->tensor;
    if (!rule->conv1d) {
      tensors.push_back({tensor, shape, name, false});
      continue;
    }
    tensors.push_back({tensor, {shape[1], shape[0]}, name, true});
    tensors.push_back({tensor.substr(0, tensor.size() - std::string("weight").size()) + "bias", {shape[0]}, "", false});
  }
  return tensors;
}

nlohmann::ordered_json hf_arm_fields(const ModelConfig& config) {
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  fields["arm"] = config.arm.name();
  for (const auto axis : {ArmAxis::zero, ArmAxis::filter, ArmAxis::output_gate})
    fields[config_field(axis)] = arm_option(config.arm, axis).name;
  fields["gate_beta"] = config.gate_beta;
  return fields;
}

std::optional<ExportedRun> read_exported_run(const std::string& path) {
  json object = read_config_json(path);
  const bool sinkgate = object.contains("model_type") && object["model_type"] == "sinkgate";
  const bool recorded = object.contains("sinkgate") && object["sinkgate"].is_object();
  if (!sinkgate && !(recorded && object.contains("model_type") && object["model_type"] == "gpt2")) return std::nullopt;

  ExportedRun exported;
  exported.sinkgate = sinkgate;
  auto& state = exported.state;
  auto& config = state.config;
  // The run's configuration as recorded (folders of the first sg-export lack "config": the tier's
  // preset then, where the tier is known), then the model's as config.json computes it.
  const json run = recorded ? object["sinkgate"] : json::object();
  const bool configured = run.contains("config");
  if (!configured) {
    try {
      config = make_run_config(field<std::string>(run, "tier", config.tier, path), "baseline", 0);
    } catch (const UsageError&) {
      // an unknown tier: the defaults
    }
  }
  if (configured) {
    if (!run["config"].is_object()) throw InputError(path + ": sinkgate.config is not an object");
    for (const auto& [key, value] : run["config"].items()) {
      if (!value.is_string()) throw InputError(path + ": sinkgate.config." + key + " must be a string, not " + json_excerpt(value));
      try {
        set_field(config, key, value.get<std::string>());
      } catch (const UsageError& error) {
        throw InputError(path + ": sinkgate.config: " + error.what(), error.hint());
      }
    }
  }
  config.tier = field<std::string>(run, "tier", config.tier, path);
  config.seed = field<int64_t>(run, "seed", config.seed, path);
  if (!configured) config.train.iterations = field<int64_t>(run, "iterations", config.train.iterations, path);
  config.train.final_eval_batches = field<int64_t>(run, "final_eval_batches", config.train.final_eval_batches, path);
  state.step = field<int64_t>(run, "step", 0, path);
  state.finished = field<bool>(run, "finished", false, path);
  state.tokens_seen = field<int64_t>(run, "tokens_seen", 0, path);
  state.final_val_loss = field<double>(run, "final_val_loss", std::nan(""), path);

  json gpt2 = object;  // the GPT-2 fields, read as a GPT-2 config.json
  gpt2["model_type"] = "gpt2";
  const auto c = parse_pretrained_config(gpt2, path);
  const auto unlike = [&](const std::string& what) {
    return InputError(path + ": " + what + ", which a sinkgate model does not compute", kSameModel);
  };
  // (A baseline's folder is read as GPT-2, which computes these fields whatever they are.)
  if (sinkgate && c.gelu_tanh) throw unlike("activation_function is GELU's tanh approximation (sinkgate's is exact, \"gelu\")");
  if (sinkgate && c.n_inner != 4 * c.n_embd) throw unlike("n_inner is " + std::to_string(c.n_inner) + ", not 4 n_embd");
  if (sinkgate && std::abs(c.layer_norm_eps - 1e-5) > 1e-12) throw unlike("layer_norm_epsilon is not 1e-5");
  if (sinkgate && !c.tie_word_embeddings) throw unlike("the head is not tied to the token embedding");
  if (sinkgate && (!c.scale_attn_weights || c.scale_attn_by_inverse_layer_idx)) throw unlike("attention is scaled otherwise than by 1/sqrt(d)");
  auto& model = config.model;
  model.n_layer = c.n_layer;
  model.n_head = c.n_head;
  model.n_embd = c.n_embd;
  model.vocab_size = c.vocab_size;
  model.block_size = c.n_positions;
  model.arm = sinkgate ? read_arm(object, path) : Arm{};
  if (sinkgate && object.contains("gate_beta")) {
    if (!object["gate_beta"].is_number()) throw InputError(path + ": \"gate_beta\" must be a number, not " + json_excerpt(object["gate_beta"]));
    model.gate_beta = object["gate_beta"].get<double>();
  }
  if (!sinkgate && (object.contains("arm") && object["arm"] != "baseline"))
    throw InputError(path + ": model_type \"gpt2\" with the arm " + json_excerpt(object["arm"]) +
                     ": only the baseline arm is a plain GPT-2", kSameModel);
  try {
    model.validate();
    if (configured) config.train.validate();
  } catch (const UsageError& error) {
    throw InputError(path + ": " + error.what(), error.hint());
  }
  return exported;
}

GPT load_exported_model(const std::string& folder, const ModelConfig& config, const torch::Device& device) {
  const auto weights = SafetensorsFolder::open(folder);
  const auto declared = read_config_json(folder + "/config.json");
  const std::string dtype = declared.contains("dtype") && declared["dtype"].is_string() ? declared["dtype"].get<std::string>() : "";
  GPT model = build_model(config, /*seed=*/0);
  torch::NoGradGuard no_grad;
  std::map<std::string, torch::Tensor> parameters;
  for (auto& item : model->named_parameters()) parameters[item.key()] = item.value();
  const std::string described = "the " + config.arm.name() + " model that " + folder + "/config.json describes";
  std::set<std::string> used;
  for (const auto& tensor : hf_tensors(config)) {
    if (!weights.contains(tensor.name))
      throw InputError(folder + ": model.safetensors lacks tensor '" + tensor.name + "', which " + described + " has", kSameModel);
    const auto& entry = weights.entry(tensor.name);
    const auto& file = weights.file_of(tensor.name).path();
    if (entry.shape != tensor.shape)
      throw InputError(file + ": tensor '" + tensor.name + "' has shape " + shape_text(entry.shape) + ", but " + described +
                           " has " + shape_text(tensor.shape),
                       kSameModel);
    const auto stored = dtype_name(entry.dtype);
    if (stored != "float32" && stored != "bfloat16" && stored != "float16")
      throw InputError(file + ": tensor '" + tensor.name + "' has dtype " + stored + "; weights must be floating point");
    if (!dtype.empty() && stored != dtype)
      throw InputError(file + ": tensor '" + tensor.name + "' is " + stored + ", but config.json declares " + dtype, kSameModel);
    const auto value = load_tensor(weights, tensor.name).to(torch::kFloat32);
    if (!all_finite(value))
      throw InputError(file + ": tensor '" + tensor.name + "' holds non-finite values (NaN or infinity)",
                       "the file is damaged; export the run again");
    used.insert(tensor.name);
    if (tensor.parameter.empty()) {
      if (value.abs().max().item<double>() != 0.0)
        throw InputError(file + ": tensor '" + tensor.name + "' is not zero, but sinkgate's layers have no bias",
                         "was the model changed outside sinkgate (fine-tuned)? transformers reads it; sinkgate cannot");
      continue;
    }
    parameters.at(tensor.parameter).copy_(tensor.transposed ? value.t() : value);
  }
  for (const auto& name : weights.names()) {
    if (used.count(name)) continue;
    // A tied head that transformers saved: the token embedding again.
    if (name == "lm_head.weight" && weights.entry(name).shape == parameters.at("wte.weight").sizes().vec() &&
        torch::equal(load_tensor(weights, name).to(torch::kFloat32), parameters.at("wte.weight")))
      continue;
    throw InputError(weights.file_of(name).path() + ": tensor '" + name + "' is not used by " + described, kSameModel);
  }
  model->to(device);
  model->eval();
  return model;
}

}  // namespace sg

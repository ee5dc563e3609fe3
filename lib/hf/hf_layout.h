// hf_layout.h — how a sinkgate model lies in a Hugging Face folder: sg-export writes it
// (export.h), and LanguageModel reads it back (language_model.h), both through this one mapping.
//
// model.safetensors: sinkgate's parameters under GPT-2's names, "transformer." + NAME for the
// model's own and "transformer.h.L." + NAME for block L's. The four projections (attn.c_attn,
// attn.c_proj, mlp.c_fc, mlp.c_proj) are in GPT-2's Conv1D layout, weights (in, out), each with a
// zero bias beside it (sinkgate's linear layers have none); everything else is stored as sinkgate
// holds it, the arms' own parameters (sink_token; per layer attn.sink_logit, attn.gate_tau,
// attn.gate_w, attn.gate_b, attn.out_gate) under their export names in the arm table (lib/run/arm.h,
// ArmParameter::export_name): an arm option that adds parameters names them there, and both
// directions follow. GPT-2's own names are hf_layout.cpp's table.
// config.json: GPT-2's fields; model_type "gpt2" for the baseline arm, else "sinkgate" with the
// arm's fields (arm, zero_option, filter, output_gate, gate_beta); and the run it came from in the object
// "sinkgate" (tier, seed, step, iterations, finished, tokens_seen, final_val_loss, … and "config",
// every field of the run's configuration as its text, lib/run/config.h to_fields).
//
// Not here: writing the folder (export.h), GPT-2 and Pythia folders of other origins (pretrained.h).
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lib/model/model.h"
#include "lib/run/config.h"
#include "lib/run/run_file.h"

namespace sg {

/// One tensor of an exported model.safetensors.
struct HfTensor {
  std::string name;            // in the folder: "transformer.h.0.attn.c_attn.weight"
  std::vector<int64_t> shape;  // in the folder (a Conv1D weight (in, out))
  std::string parameter;       // sinkgate's parameter ("blocks.0.attn.c_attn.weight"); "" for a zero bias
  bool transposed = false;     // the parameter (out, in) stored as Conv1D's (in, out)
};

/// The tensors of a model of `config` in the folder, in the order the model registers its
/// parameters (a zero bias after its weight). Throws std::logic_error for a parameter no table
/// names.
std::vector<HfTensor> hf_tensors(const ModelConfig& config);

/// The arm's fields of config.json: arm, then each axis's (config_field: zero_option, filter,
/// output_gate), gate_beta.
nlohmann::ordered_json hf_arm_fields(const ModelConfig& config);

/// A folder sg-export wrote, as config.json describes it.
struct ExportedRun {
  RunState state;          // the run's configuration (the model's from config.json's GPT-2 and arm
                           // fields), step, finished, tokens_seen, final_val_loss; no curves
  bool sinkgate = false;   // model_type "sinkgate" (read with load_exported_model); else "gpt2"
};

/// The run that the folder's config.json (`config_path`) describes, when sg-export wrote it:
/// model_type "sinkgate", or "gpt2" with the "sinkgate" object; std::nullopt for any other
/// folder. Throws InputError naming config.json for a field that does not read, an arm this
/// sinkgate does not know (or zero_option / filter that contradict it), or, for model_type
/// "sinkgate", GPT-2 fields a sinkgate model does not compute (a tanh GELU, another MLP width, an
/// untied head, …).
std::optional<ExportedRun> read_exported_run(const std::string& config_path);

/// The sinkgate model of `config` with the weights of the folder's safetensors, on `device`, in
/// eval mode. Throws InputError naming the file and tensor when a tensor is missing, of another
/// shape or dtype (config.json's "dtype"), not finite, a bias that is not zero, or left over.
GPT load_exported_model(const std::string& folder, const ModelConfig& config, const torch::Device& device);

}  // namespace sg

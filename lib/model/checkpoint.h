// checkpoint.h — run files (format "sinkgate-run"), their tensors: the weights by parameter name
// and the AdamW state, saved beside the torch-free rest (lib/run/run_file.h: configuration, state,
// curves, labels, provenance) and loaded back into a model and an optimizer.
//
// One HDF5 file holds everything needed to rebuild the model and continue the run exactly:
// the full configuration, the weights by parameter name, the AdamW state, the step and the
// position in the paired batch stream (the sampler is counter-based, so that index is its
// whole random state), and the curves. Written atomically (temporary name, then rename).
#pragma once
#include <torch/torch.h>

#include <string>

#include "lib/io/provenance.h"
#include "lib/model/model.h"
#include "lib/run/config.h"
#include "lib/run/run_file.h"

namespace sg {

/// Writes a run file atomically: the state (lib/run/run_file.h) and the model's weights, and with
/// an optimizer its AdamW state (null: weights only). Throws NumericError, leaving the file as it
/// was, when a weight or moment is not finite; OutputError.
void save_run(const std::string& path, bool force, GPTImpl& model, torch::optim::AdamW* optimizer,
              const RunState& state, const Provenance& provenance);

/// Rebuilds the model of a run file and loads its weights (float32) onto `device`.
GPT load_model(const std::string& path, const torch::Device& device);
/// The same, for a run whose configuration the caller has read already (read_run_state).
GPT load_model(const std::string& path, const RunConfig& config, const torch::Device& device);

/// Restores the AdamW moments and step counts of a run file into `optimizer`, whose parameters
/// must be those of `model`.
void load_optimizer(const std::string& path, GPTImpl& model, torch::optim::AdamW& optimizer);

}  // namespace sg

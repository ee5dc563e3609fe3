// checkpoint.cpp — run files' tensors.
#include "lib/model/checkpoint.h"

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/model/tensors.h"

namespace sg {
namespace {

/// The AdamW state of one parameter (created on its first step).
torch::optim::AdamWParamState* adam_state(torch::optim::AdamW& optimizer, const torch::Tensor& parameter) {
  auto& states = optimizer.state();
  auto found = states.find(parameter.unsafeGetTensorImpl());
  if (found == states.end()) return nullptr;
  return static_cast<torch::optim::AdamWParamState*>(found->second.get());
}

void require(const h5::Group& root, const std::string& path, const std::string& file) {
  if (!root.exists(path)) throw InputError(file + ": run file lacks '" + path + "'", "is it complete? rewrite it with sg-train");
}

}  // namespace

void save_run(const std::string& path, bool force, GPTImpl& model, torch::optim::AdamW* optimizer,
              const RunState& state, const Provenance& provenance) {
  // Never a checkpoint that cannot be resumed from: every weight and optimizer moment finite.
  {
    torch::NoGradGuard no_grad;
    for (const auto& item : model.named_parameters()) {
      std::vector<torch::Tensor> tensors{item.value()};
      if (optimizer)
        if (auto* adam = adam_state(*optimizer, item.value())) tensors.insert(tensors.end(), {adam->exp_avg(), adam->exp_avg_sq()});
      for (const auto& t : tensors)
        if (!all_finite(t))
          throw NumericError("the " + std::string(t.is_same(item.value()) ? "weights" : "optimizer state") + " of " +
                                 item.key() + " are not finite at step " + std::to_string(state.step) + "; " + path +
                                 " keeps its last checkpoint",
                             "the run diverged: lower lr_peak or raise warmup");
    }
  }
  h5::Writer writer(path, force);
  auto& root = writer.root();
  write_run_contents(root, state, provenance);
  torch::NoGradGuard no_grad;
  for (const auto& item : model.named_parameters()) {
    write_tensor(root, "model/" + item.key(), item.value().detach().to(torch::kCPU, torch::kFloat));
    if (!optimizer) continue;
    if (auto* adam = adam_state(*optimizer, item.value())) {
      auto group = root.create_group("optimizer/" + item.key());
      group.set_attribute("step", adam->step());
      write_tensor(group, "exp_avg", adam->exp_avg().to(torch::kCPU));
      write_tensor(group, "exp_avg_sq", adam->exp_avg_sq().to(torch::kCPU));
    }
  }
  writer.commit();
}

namespace {

/// sinkgate writes weights and optimizer moments in float32 only; anything else is a file edited
/// or written by another program, refused rather than converted (a float64 moment made the
/// optimizer's step fail inside LibTorch).
void require_float32(const torch::Tensor& tensor, const std::string& path, const std::string& name) {
  if (tensor.scalar_type() != torch::kFloat)
    throw InputError(path + ": /" + name + " is stored as " + std::string(c10::toString(tensor.scalar_type())) +
                         ", but run files hold float32 tensors",
                     "the run file was written or edited by another program");
}

}  // namespace

GPT load_model(const std::string& path, const torch::Device& device) {
  return load_model(path, read_run_state(path).config, device);
}

GPT load_model(const std::string& path, const RunConfig& config, const torch::Device& device) {
  const auto root = h5::File::open(path);
  GPT model = build_model(config.model, config.seed);
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    const std::string name = "model/" + item.key();
    require(root, name, path);
    const auto stored = read_tensor(root, name);
    require_float32(stored, path, name);
    if (stored.sizes() != item.value().sizes())
      throw InputError(path + ": parameter '" + item.key() + "' has shape " + c10::str(stored.sizes()) +
                       ", the configuration implies " + c10::str(item.value().sizes()));
    if (!all_finite(stored))  // sinkgate never writes them (save_checkpoint)
      throw InputError(path + ": parameter '" + item.key() + "' holds non-finite values (NaN or infinity)",
                       "the run file is damaged");
    item.value().copy_(stored);
  }
  model->to(device);
  return model;
}

namespace {
std::string shape_text(const torch::Tensor& t) {
  std::string out = "(";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + ")";
}
}  // namespace

void load_optimizer(const std::string& path, GPTImpl& model, torch::optim::AdamW& optimizer) {
  const auto root = h5::File::open(path);
  const int64_t run_step = root.group("state").attribute_int("step");
  for (const auto& item : model.named_parameters()) {
    const std::string name = "optimizer/" + item.key();
    if (!root.exists(name)) {
      if (run_step == 0) continue;  // not stepped yet
      // Every parameter gets a gradient at every step: missing moments mean a damaged file, and
      // resuming would silently restart Adam.
      throw InputError(path + ": /" + name + " is missing at step " + std::to_string(run_step),
                       "the run file is damaged: its optimizer state cannot be restored");
    }
    const auto group = root.group(name);
    auto state = std::make_unique<torch::optim::AdamWParamState>();
    const int64_t step = group.attribute_int("step");
    if (step < 1 || step > run_step)
      throw InputError(path + ": /" + name + " has step " + std::to_string(step) + ", outside [1, " +
                       std::to_string(run_step) + "]", "the run file is damaged");
    state->step(step);
    for (const char* moment : {"exp_avg", "exp_avg_sq"}) {
      const auto tensor = read_tensor(group, moment);
      require_float32(tensor, path, name + "/" + moment);
      if (tensor.sizes() != item.value().sizes())
        throw InputError(path + ": /" + name + "/" + moment + " has shape " + shape_text(tensor) + ", but " +
                         item.key() + " has " + shape_text(item.value()), "the run file is damaged");
      if (!all_finite(tensor) || (std::string(moment) == "exp_avg_sq" && tensor.lt(0).any().item<bool>()))
        throw InputError(path + ": /" + name + "/" + moment + " holds non-finite or impossible values",
                         "the run file is damaged");
      if (std::string(moment) == "exp_avg") state->exp_avg(tensor.to(item.value().device()));
      else state->exp_avg_sq(tensor.to(item.value().device()));
    }
    optimizer.state()[item.value().unsafeGetTensorImpl()] = std::move(state);
  }
}

}  // namespace sg

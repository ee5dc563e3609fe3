// checkpoint.cpp — run files.
#include "lib/model/checkpoint.h"

#include <cctype>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/io/h5.h"
#include "lib/io/results.h"
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
  h5::set_format(root, kRunFormat, kRunSchemaVersion);
  write_provenance(root, provenance);
  auto config = root.create_group("config");
  for (const auto& [name, value] : to_fields(state.config)) config.set_attribute(name, value);
  auto status = root.create_group("state");
  status.set_attribute("step", state.step);
  status.set_attribute("data_position", state.data_position);
  status.set_attribute("tokens_seen", state.tokens_seen);
  status.set_attribute("finished", static_cast<int64_t>(state.finished));
  status.set_attribute("final_val_loss", state.final_val_loss);
  status.set_attribute("token_file", state.token_file);
  status.set_attribute("token_file_sha256", state.token_file_hash);
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
  if (!state.labels.empty()) {
    auto labels = root.create_group("labels");
    for (const auto& [key, value] : state.labels) labels.set_attribute(key, value);
  }
  const auto& c = state.curves;
  root.write_ints("curves/step", c.step).set_attribute("units", "optimizer steps");
  root.write_doubles("curves/train_loss", c.train_loss).set_attribute("units", "nats");
  root.write_doubles("curves/lr", c.lr).set_attribute("units", "learning rate");
  root.write_doubles("curves/tokens_per_second", c.tokens_per_second).set_attribute("units", "tokens/s");
  root.write_ints("curves/val_step", c.val_step).set_attribute("units", "optimizer steps");
  root.write_doubles("curves/val_loss", c.val_loss).set_attribute("units", "nats");
  writer.commit();
}

RunState read_run_state(const std::string& path) {
  const auto root = h5::File::open(path);
  h5::check_format(root, kRunFormat, kRunSchemaVersion);
  for (const char* member : {"config", "state", "model", "curves"}) require(root, member, path);
  RunState state;
  const auto config = root.group("config");
  for (const auto& name : config.attribute_names()) {
    try {
      set_field(state.config, name, config.attribute_string(name));
    } catch (const UsageError& error) {
      throw InputError(path + ": configuration field '" + name + "': " + error.what(),
                       "was the file written by a newer sinkgate?");
    }
  }
  const auto status = root.group("state");
  state.step = status.attribute_int("step");
  state.data_position = status.attribute_int("data_position");
  state.tokens_seen = status.attribute_int("tokens_seen");
  state.finished = status.attribute_int("finished") != 0;
  state.final_val_loss = status.attribute_double("final_val_loss");
  state.token_file = status.attribute_string("token_file");
  state.token_file_hash = status.attribute_string("token_file_sha256");
  auto& c = state.curves;
  c.step = root.dataset("curves/step").read_ints();
  c.train_loss = root.dataset("curves/train_loss").read_doubles();
  c.lr = root.dataset("curves/lr").read_doubles();
  c.tokens_per_second = root.dataset("curves/tokens_per_second").read_doubles();
  c.val_step = root.dataset("curves/val_step").read_ints();
  c.val_loss = root.dataset("curves/val_loss").read_doubles();
  if (root.exists("labels")) {
    const auto labels = root.group("labels");
    for (const auto& key : labels.attribute_names()) state.labels.emplace_back(key, labels.attribute_string(key));
  }
  // The file's configuration and state are checked as strictly as a command line's: a damaged
  // file must fail here, naming itself, not crash the training loop (a zero interval divides).
  try {
    state.config.model.validate();
    state.config.train.validate();
  } catch (const UsageError& error) {
    throw InputError(path + ": its configuration is invalid: " + error.what(), "the run file is damaged");
  }
  const auto& t = state.config.train;
  auto bad_state = [&](const std::string& what) {
    throw InputError(path + ": /state " + what, "the run file is damaged");
  };
  if (state.step < 0 || state.step > t.iterations)
    bad_state("step " + std::to_string(state.step) + " lies outside [0, iterations = " + std::to_string(t.iterations) + "]");
  if (state.data_position != state.step * t.batch())
    bad_state("data_position " + std::to_string(state.data_position) + " is not step x batch = " +
              std::to_string(state.step * t.batch()));
  if (state.tokens_seen < 0) bad_state("tokens_seen " + std::to_string(state.tokens_seen) + " is negative");
  if (state.finished && state.step != t.iterations)
    bad_state("says finished at step " + std::to_string(state.step) + " of " + std::to_string(t.iterations));
  if (c.train_loss.size() != c.step.size() || c.lr.size() != c.step.size() ||
      c.tokens_per_second.size() != c.step.size() || c.val_loss.size() != c.val_step.size())
    bad_state("curves have unequal lengths");
  return state;
}

void check_token_file(const RunState& state, const std::string& run_path, const std::string& token_path,
                      const std::string& token_sha256, bool allow_other, const std::string& tool) {
  if (state.token_file_hash.empty() || token_sha256.empty() || state.token_file_hash == token_sha256) return;
  const std::string message = run_path + " was trained on " + state.token_file + " (sha256 " +
                              state.token_file_hash.substr(0, 12) + "…), not on " + token_path + " (sha256 " +
                              token_sha256.substr(0, 12) + "…)";
  if (!allow_other)
    throw InputError(message, "give the run's token file, or --allow-other-tokens to use this one anyway");
  log::info(tool + ": warning: " + message + "; going on (--allow-other-tokens)");
}

std::vector<std::pair<std::string, std::string>> parse_labels(const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, std::string>> labels;
  for (const auto& spec : specs) {
    const auto eq = spec.find('=');
    const std::string key = spec.substr(0, eq);
    bool valid = eq != std::string::npos && !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0]));
    for (char c : key) valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!valid)
      throw UsageError("--label '" + spec + "' is not KEY=VALUE with a KEY of letters, digits and '_'",
                       "e.g. --label lr=3e-4 --label sweep=warmup");
    if (key == "tier" || key == "arm" || key == "seed")
      throw UsageError("--label " + key + "=… would shadow the run's own " + key, "choose another label name");
    for (const auto& [seen, value] : labels)
      if (seen == key) throw UsageError("--label " + key + " is given twice");
    labels.emplace_back(key, spec.substr(eq + 1));
  }
  return labels;
}

std::vector<std::pair<std::string, std::string>> run_keys(const std::string& path, const RunState& state) {
  std::vector<std::pair<std::string, std::string>> keys = {{kRunKey, path}};
  for (const auto& [key, value] : state.labels) {
    if (key == kRunKey) keys.front().second = value;
    else keys.emplace_back(key, value);
  }
  return keys;
}

GPT load_model(const std::string& path, const torch::Device& device) {
  const auto state = read_run_state(path);
  const auto root = h5::File::open(path);
  GPT model = build_model(state.config.model, state.config.seed);
  torch::NoGradGuard no_grad;
  for (auto& item : model->named_parameters()) {
    const std::string name = "model/" + item.key();
    require(root, name, path);
    const auto stored = read_tensor(root, name);
    if (stored.sizes() != item.value().sizes())
      throw InputError(path + ": parameter '" + item.key() + "' has shape " + c10::str(stored.sizes()) +
                       ", the configuration implies " + c10::str(item.value().sizes()));
    if (!all_finite(stored))  // sinkgate never writes them (save_checkpoint)
      throw InputError(path + ": parameter '" + item.key() + "' holds non-finite values (NaN or infinity)",
                       "the run file is damaged");
    item.value().copy_(stored.to(torch::kFloat));
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

// run_file.cpp — run files without their tensors.
#include "lib/run/run_file.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/io/results.h"

namespace sg {
namespace {

void require(const h5::Group& root, const std::string& path, const std::string& file) {
  if (!root.exists(path)) throw InputError(file + ": run file lacks '" + path + "'", "is it complete? rewrite it with sg-train");
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ")";
}

/// The tensors of a run file against its configuration, by name, shape and dtype (no data read):
/// /model holds exactly the parameters of the configured model, /optimizer only groups of those
/// parameters with exp_avg and exp_avg_sq of the parameter's shape, and all of them fit in the
/// file (run files are uncompressed). So a configuration edited to another arm, fewer layers or a
/// huge width is refused before any model is built, and what is built is bounded by the file.
void check_tensors(const h5::Group& root, const RunConfig& config, const std::string& path) {
  const std::string describes = "arm " + config.model.arm.name() + ", n_layer " + std::to_string(config.model.n_layer) +
                                ", n_embd " + std::to_string(config.model.n_embd);
  const std::string hint = "the run file was edited or damaged: its /config no longer describes its tensors";
  std::map<std::string, std::vector<int64_t>> expected;
  for (const auto& [name, shape] : config.model.parameter_shapes()) expected.emplace(name, shape);
  uint64_t bytes = 0;
  auto check_dataset = [&](const h5::Group& group, const std::string& member, const std::vector<int64_t>& shape) {
    const std::string where = group.path() + "/" + member;
    if (!group.is_dataset(member)) throw InputError(path + ": " + where + " is not a dataset", hint);
    const auto dataset = group.dataset(member);
    const auto stored = dataset.shape();
    if (stored != shape)
      throw InputError(path + ": " + where + " has shape " + shape_text(stored) + ", but the configuration (" +
                           describes + ") implies " + shape_text(shape),
                       hint);
    if (dataset.dtype() != h5::Dtype::float32)
      throw InputError(path + ": " + where + " is stored as " + h5::to_string(dataset.dtype()) +
                           ", but run files hold float32 tensors",
                       "the run file was written or edited by another program");
    bytes += static_cast<uint64_t>(dataset.numel()) * 4;
  };
  const auto model = root.group("model");
  const auto members = model.members();
  for (const auto& name : members) {
    const auto found = expected.find(name);
    if (found == expected.end())
      throw InputError(path + ": /model/" + name + " is not a parameter of the model its configuration describes (" +
                           describes + ")",
                       hint);
    check_dataset(model, name, found->second);
  }
  if (members.size() != expected.size())
    for (const auto& [name, shape] : expected)
      if (!model.exists(name)) throw InputError(path + ": run file lacks '/model/" + name + "'", hint);
  if (root.exists("optimizer")) {
    const auto optimizer = root.group("optimizer");
    for (const auto& name : optimizer.members()) {
      const auto found = expected.find(name);
      if (found == expected.end() || !optimizer.is_group(name))
        throw InputError(path + ": /optimizer/" + name + " is not the state of a parameter of the model its "
                             "configuration describes (" + describes + ")",
                         hint);
      const auto state = optimizer.group(name);
      for (const auto& moment : state.members())
        if (moment != "exp_avg" && moment != "exp_avg_sq")
          throw InputError(path + ": /optimizer/" + name + "/" + moment + " is not an AdamW moment", hint);
      for (const char* moment : {"exp_avg", "exp_avg_sq"}) {
        if (!state.exists(moment))
          throw InputError(path + ": run file lacks '/optimizer/" + name + "/" + moment + "'", "the run file is damaged");
        check_dataset(state, moment, found->second);
      }
    }
  }
  struct stat info {};
  const std::string local = h5::resolve_input(path);
  if (::stat(local.c_str(), &info) == 0 && bytes > static_cast<uint64_t>(info.st_size))
    throw InputError(path + ": its tensors would take " + std::to_string(bytes) + " bytes, more than the file's " +
                         std::to_string(info.st_size),
                     "the run file is damaged or truncated");
}

}  // namespace

void write_run_contents(h5::Group& root, const RunState& state, const Provenance& provenance) {
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
  if (state.tokenizer.known()) write_tokenizer_record(root, state.tokenizer);
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
  // A state made without them (a run of an earlier version, a hand-made file): NaN, not recorded.
  auto per_step = [&](std::vector<double> values) {
    values.resize(c.step.size(), std::nan(""));
    return values;
  };
  root.write_doubles("curves/grad_norm", per_step(c.grad_norm)).set_attribute("units", "gradient norm before clipping");
  root.write_doubles("curves/max_attention_logit", per_step(c.max_attention_logit)).set_attribute("units", "attention logit");
  root.write_doubles("curves/max_activation", per_step(c.max_activation)).set_attribute("units", "activation");
}

namespace {
/// The configuration of /config, one attribute a field. Every field the schema does not mark
/// optional is there: a missing one would silently take the 10M tier's default (arm baseline,
/// seed 0, 6,000 iterations). A missing optional one means what the runs of the versions without
/// it did (field_absent_value).
RunConfig read_config(const h5::Group& config, const std::string& path) {
  RunConfig out;
  const auto names = config.attribute_names();
  for (const auto& name : names) {
    try {
      set_field(out, name, config.attribute_string(name));
    } catch (const UsageError& error) {
      throw InputError(path + ": configuration field '" + name + "': " + error.what(),
                       "was the file written by a newer sinkgate?");
    }
  }
  for (const auto& name : field_names()) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    if (!field_optional(name))
      throw InputError(path + ": /config lacks the attribute '" + name + "'",
                       "the run file is damaged: every configuration field but loss_plan, precision and telemetry must be there");
    set_field(out, name, field_absent_value(name));
  }
  return out;
}
}  // namespace

RunState read_run_state(const std::string& path) {
  const auto root = h5::File::open(path);
  h5::check_format(root, kRunFormat, kRunSchemaVersion);
  for (const char* member : {"config", "state", "model", "curves"}) require(root, member, path);
  RunState state;
  state.config = read_config(root.group("config"), path);
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
  // Recorded since the stability sweep: a run of an earlier version has NaN in their place.
  for (auto [name, values] : {std::pair{"curves/grad_norm", &c.grad_norm}, std::pair{"curves/max_attention_logit", &c.max_attention_logit},
                              std::pair{"curves/max_activation", &c.max_activation}})
    *values = root.exists(name) ? root.dataset(name).read_doubles() : std::vector<double>(c.step.size(), std::nan(""));
  if (root.exists("labels")) {
    const auto labels = root.group("labels");
    for (const auto& key : labels.attribute_names()) state.labels.emplace_back(key, labels.attribute_string(key));
  }
  state.tokenizer = read_tokenizer_record(root, path);
  // The file's configuration and state are checked as strictly as a command line's: a damaged
  // file must fail here, naming itself, not crash the training loop (a zero interval divides).
  try {
    find_tier(state.config.tier);
    state.config.model.validate();
    state.config.train.validate();
  } catch (const UsageError& error) {
    throw InputError(path + ": its configuration is invalid: " + error.what(), "the run file is damaged");
  }
  check_tensors(root, state.config, path);
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
  if (state.tokenizer.known() && state.tokenizer.identity.vocab_size > state.config.model.vocab_size)
    bad_state("/tokenizer has " + std::to_string(state.tokenizer.identity.vocab_size) +
              " ids, more than the model's vocab_size " + std::to_string(state.config.model.vocab_size));
  if (state.finished && state.step != t.iterations)
    bad_state("says finished at step " + std::to_string(state.step) + " of " + std::to_string(t.iterations));
  if (c.train_loss.size() != c.step.size() || c.lr.size() != c.step.size() ||
      c.tokens_per_second.size() != c.step.size() || c.val_loss.size() != c.val_step.size() ||
      c.grad_norm.size() != c.step.size() || c.max_attention_logit.size() != c.step.size() ||
      c.max_activation.size() != c.step.size())
    bad_state("curves have unequal lengths");
  return state;
}

void check_token_file(const RunState& state, const std::string& run_path, const std::string& token_path,
                      const std::string& token_sha256, bool allow_other) {
  if (state.token_file_hash.empty() || token_sha256.empty() || state.token_file_hash == token_sha256) return;
  const std::string message = run_path + " was trained on " + state.token_file + " (sha256 " +
                              state.token_file_hash.substr(0, 12) + "…), not on " + token_path + " (sha256 " +
                              token_sha256.substr(0, 12) + "…)";
  if (!allow_other)
    throw InputError(message, "give the run's token file, or --allow-other-tokens to use this one anyway");
  log::warn(message + "; going on (--allow-other-tokens)");
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

}  // namespace sg

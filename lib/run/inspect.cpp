// inspect.cpp — descriptions of sinkgate files and tiers for sg-info.
#include "lib/run/inspect.h"

#include <nlohmann/json.hpp>

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/io/provenance.h"
#include "lib/io/results.h"
#include "lib/run/config.h"
#include "lib/run/run_file.h"
#include "lib/text/token_file.h"

namespace sg {
namespace {

using json = nlohmann::ordered_json;

json provenance_json(const h5::Group& root) {
  const auto p = read_provenance(root);
  json inputs = json::array();
  for (const auto& input : p.inputs) inputs.push_back({{"path", input.path}, {"sha256", input.sha256}});
  return {{"tool", p.tool},          {"version", p.version}, {"git_commit", p.git_commit},
          {"command_line", p.command_line}, {"config", p.config}, {"created", p.created},
          {"arithmetic", p.arithmetic.empty() ? json(nullptr) : json(p.arithmetic)}, {"inputs", inputs}};
}

json number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

// A tokenizer record (lib/SCHEMA.md "Tokenizer record"), null when the file has none.
json describe_record(const TokenizerRecord& record) {
  if (!record.known()) return nullptr;
  return {{"kind", record.identity.kind},     {"sha256", record.identity.sha256},
          {"vocab_size", record.identity.vocab_size}, {"eot_id", record.identity.eot_id},
          {"source", record.source},          {"embedded", !record.files.empty()}};
}

std::string text_of_record(const json& record) {
  if (record.is_null()) return "not recorded (a file of an older version: GPT-2's vocabulary is assumed)";
  return record["kind"].get<std::string>() + ", sha256 " + record["sha256"].get<std::string>() + ", " +
         (record["embedded"].get<bool>() ? "embedded" : "not embedded (GPT-2's)");
}

json describe_tokens(const std::string& path) {
  const auto tokens = TokenFile::open(path);
  const auto& info = tokens.info();
  return {{"tokenizer", info.tokenizer},   {"vocab_size", info.vocab_size},   {"eot_id", info.eot_id},
          {"documents", info.documents},   {"val_tokens", info.val_tokens}, {"train_tokens", info.train_tokens},
          {"tokenizer_record", describe_record(info.tokenizer_record)}};
}

/// The file's modification time (its last checkpoint, for a run file) in UTC, ISO 8601.
std::string modified_utc(const std::string& path) {
  struct stat info {};
  if (path == "-" || stat(path.c_str(), &info) != 0) return "";
  std::tm utc{};
  gmtime_r(&info.st_mtime, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

json describe_run(const std::string& path) {
  const auto state = read_run_state(path);
  const auto& config = state.config;
  json fields = json::object(), changed = json::array();
  const auto preset = make_run_config(config.tier, config.model.arm.name(), config.seed);
  const auto have = to_fields(config), defaults = to_fields(preset);
  for (size_t i = 0; i < have.size(); ++i) {
    fields[have[i].first] = have[i].second;
    // A preset leaves the loss plan and the precision to the machine (auto); a run fixes them: not a difference.
    if (have[i].second != defaults[i].second && have[i].first != "loss_plan" && have[i].first != "precision")
      changed.push_back(have[i].first);
  }
  json labels = json::object();
  for (const auto& [key, value] : state.labels) labels[key] = value;
  return {{"tier", config.tier},
          {"arm", config.model.arm.name()},
          {"seed", config.seed},
          {"labels", labels},
          {"parameters", config.model.parameter_count()},
          {"step", state.step},
          {"iterations", config.train.iterations},
          {"finished", state.finished},
          {"final_val_loss", number(state.final_val_loss)},
          {"final_val_batches", config.train.final_eval_batches},
          {"curve_val_batches", config.train.eval_batches},
          {"val_batch_windows", config.train.batch()},
          {"val_window_tokens", config.model.block_size},
          {"eval_seed", config.train.eval_seed},
          {"last_val_loss", state.curves.val_loss.empty() ? json(nullptr) : number(state.curves.val_loss.back())},
          {"tokens_seen", state.tokens_seen},
          {"token_file", state.token_file},
          {"token_file_sha256", state.token_file_hash},
          {"tokenizer_record", describe_record(state.tokenizer)},
          {"loss_plan", config.train.loss_plan.automatic() ? json(nullptr) : json(loss_plan_text(config.train.loss_plan))},
          {"loss_plan_words", config.train.loss_plan.automatic() ? json(nullptr) : json(loss_plan_words(config.train.loss_plan))},
          {"precision", config.train.precision == Precision::automatic ? json(nullptr) : json(to_string(config.train.precision))},
          {"telemetry", config.train.telemetry},
          {"checkpoint_time", modified_utc(path)},
          {"config", fields},
          {"differs_from_tier", changed}};
}

json describe_table(const ResultTable& table) {
  json columns = json::array();
  for (const auto& c : table.columns())
    columns.push_back({{"name", c.name}, {"role", to_string(c.role)}, {"type", to_string(c.type)}, {"units", c.units}});
  return {{"rows", table.rows()}, {"columns", columns}};
}

// --- text ------------------------------------------------------------------------------------

std::string text_of(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "–";
  if (value.is_boolean()) return value.get<bool>() ? "yes" : "no";
  if (value.is_number_float()) {
    std::ostringstream out;
    out << std::setprecision(6) << value.get<double>();
    return out.str();
  }
  return value.dump();
}

/// A stored number in its shortest exact form ("0.00059999999999999995" -> "0.0006"); other text as is.
std::string shortest(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return text;
  return format_exact(value);
}

class Lines {
 public:
  void add(const std::string& name, const std::string& value) {
    out_ << "  " << std::left << std::setw(20) << name << (name.size() >= 20 ? " " : "") << value << "\n";
  }
  void heading(const std::string& text) { out_ << text << "\n"; }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

/// A run file's lines: the run, its progress, validation, files, plan, precision, configuration.
void render_run(Lines& lines, const json& r) {
  lines.add("run", "tier " + text_of(r["tier"]) + ", arm " + text_of(r["arm"]) + ", seed " + text_of(r["seed"]));
  if (!r["labels"].empty()) {
    std::string labels;
    for (const auto& [key, value] : r["labels"].items()) labels += (labels.empty() ? "" : " ") + key + "=" + text_of(value);
    lines.add("labels", labels);
  }
  lines.add("parameters", text_of(r["parameters"]) + " (the tied embedding once)");
  lines.add("progress", "step " + text_of(r["step"]) + " of " + text_of(r["iterations"]) +
                            (r["finished"].get<bool>() ? ", finished" : ", unfinished") + ", " +
                            text_of(r["tokens_seen"]) + " tokens seen");
  // Every validation loss says which batches it is over: the final value (sg-eval's default, Table 1's)
  // over final_eval_batches, the curve's over eval_batches, both from the start of the same stream.
  const std::string windows = " batches of " + text_of(r["val_batch_windows"]) + " windows x " +
                              text_of(r["val_window_tokens"]) + " tokens, eval_seed " + text_of(r["eval_seed"]);
  lines.add("final val_loss",
            r["finished"].get<bool>()
                ? text_of(r["final_val_loss"]) + " (" + text_of(r["final_val_batches"]) + windows +
                      ": sg-eval's default, Tables 1, 2, 5)"
                : text_of(r["final_val_loss"]) + " (last estimate: " + text_of(r["last_val_loss"]) + " over the curve's " +
                      text_of(r["curve_val_batches"]) + windows + ")");
  lines.add("last checkpoint", text_of(r["checkpoint_time"]));
  lines.add("token file", text_of(r["token_file"]) + "  sha256 " + text_of(r["token_file_sha256"]));
  lines.add("vocabulary", text_of_record(r["tokenizer_record"]));
  if (r["loss_plan"].is_null()) {
    lines.add("loss plan", "not recorded (a run file of an older version: a resume fixes one and records it)");
  } else {
    lines.add("loss plan", text_of(r["loss_plan"]) + " (" + text_of(r["loss_plan_words"]) + "; kept by --resume)");
  }
  if (r["precision"].is_null())
    lines.add("precision", "not recorded (a run file of an older version: float32 on a CPU, bf16 on a GPU)");
  else
    lines.add("precision", text_of(r["precision"]) + (uses_autocast(parse_precision(text_of(r["precision"])))
                                                          ? " (bf16 matrix products, float32 master weights; kept by --resume)"
                                                          : " (kept by --resume)"));
  const int64_t every = r["telemetry"].get<int64_t>();
  lines.add("telemetry", every == 0   ? "off: max_attention_logit and max_activation not recorded (--set telemetry=N measures every Nth step)"
                         : every == 1 ? "every step: max_attention_logit and max_activation in the curves"
                                      : "every " + std::to_string(every) + " steps: max_attention_logit and max_activation "
                                                                           "in the curves (NaN in the steps between)");
  std::set<std::string> changed;
  for (const auto& name : r["differs_from_tier"]) changed.insert(name.get<std::string>());
  lines.heading("  configuration (* differs from the tier's preset)");
  for (const auto& [key, value] : r["config"].items())
    lines.add("  " + key + (changed.count(key) ? " *" : ""), shortest(text_of(value)));
}

/// The provenance's lines: who wrote the file, how, with what arithmetic, from which inputs.
void render_provenance(Lines& lines, const json& p) {
  lines.add("written by", text_of(p["tool"]) + " " + text_of(p["version"]) + " (commit " + text_of(p["git_commit"]) +
                                ") at " + text_of(p["created"]));
  lines.add("command line", text_of(p["command_line"]));
  if (!p["arithmetic"].is_null()) lines.add("arithmetic", text_of(p["arithmetic"]));
  const size_t shown = 4, inputs = p["inputs"].size();
  for (size_t i = 0; i < inputs && i < shown; ++i)
    lines.add("input", text_of(p["inputs"][i]["path"]) + "  sha256 " + text_of(p["inputs"][i]["sha256"]));
  if (inputs > shown) lines.add("", "… and " + std::to_string(inputs - shown) + " more inputs (--format json lists all)");
}

std::string render(const json& d) {
  Lines lines;
  lines.heading(d["path"].get<std::string>());
  const std::string kind = d["kind"];
  const std::map<std::string, std::string> names = {{"tokens", "token file"}, {"run", "run file"}, {"result", "result table"}};
  lines.add("kind", names.at(kind) + (d.contains("format") ? " (" + d["format"].get<std::string>() + ", schema_version " +
                                                                 text_of(d["schema_version"]) + ")"
                                                           : " (CSV)"));
  if (kind == "tokens") {
    const auto& t = d["tokens"];
    lines.add("tokenizer", text_of(t["tokenizer"]) + ", vocabulary " + text_of(t["vocab_size"]) + ", end-of-text id " +
                               text_of(t["eot_id"]));
    lines.add("vocabulary", text_of_record(t["tokenizer_record"]));
    lines.add("documents", text_of(t["documents"]));
    lines.add("validation split", text_of(t["val_tokens"]) + " tokens (taken first)");
    lines.add("training split", text_of(t["train_tokens"]) + " tokens");
  } else if (kind == "run") {
    render_run(lines, d["run"]);
  } else {
    const auto& t = d["result"];
    lines.add("rows", text_of(t["rows"]));
    for (const auto& c : t["columns"])
      lines.add(c["role"].get<std::string>() == "key" ? "key" : "value",
                c["name"].get<std::string>() + " (" + c["type"].get<std::string>() +
                    (c["units"].get<std::string>().empty() ? "" : ", " + c["units"].get<std::string>()) + ")");
  }
  if (d.contains("provenance")) render_provenance(lines, d["provenance"]);
  return lines.str();
}

}  // namespace

std::string describe_file(const std::string& path, InfoFormat format) {
  json d = {{"path", h5::display_name(path)}};
  if (h5::is_hdf5(path)) {
    const auto root = h5::File::open(path);
    if (!root.has_attribute("format"))
      throw InputError(h5::display_name(path) + ": an HDF5 file, but not a sinkgate file (no 'format' attribute)",
                       "sg-info describes token files, run files and result tables (lib/SCHEMA.md)");
    const std::string kind = root.attribute_string("format");
    d["format"] = kind;
    d["schema_version"] = root.has_attribute("schema_version") ? json(root.attribute_int("schema_version")) : json(nullptr);
    if (kind == kTokenFormat) {
      d["kind"] = "tokens";
      d["tokens"] = describe_tokens(path);
    } else if (kind == kRunFormat) {
      d["kind"] = "run";
      d["run"] = describe_run(path);
    } else if (kind == kResultFormat) {
      d["kind"] = "result";
      d["result"] = describe_table(read_table(path));
    } else {
      throw InputError(h5::display_name(path) + ": a sinkgate file of an unknown kind '" + kind + "'",
                       "this build reads sinkgate-tokens, sinkgate-run and sinkgate-result files");
    }
    d["provenance"] = provenance_json(root);
  } else {
    d["kind"] = "result";
    d["result"] = describe_table(read_table(path));
  }
  return format == InfoFormat::json ? d.dump() + "\n" : render(d);
}

std::string describe_tiers(const std::string& name, InfoFormat format, const std::string& config_file,
                           const std::vector<std::string>& overrides) {
  json out = json::array();
  for (const auto& tier : tiers()) {
    if (name != "all" && tier.name != find_tier(name).name) continue;
    json fields = json::object();
    for (const auto& [key, value] : to_fields(configure_run({tier.name, "baseline", 0, 0, config_file, overrides})))
      if (key != "tier" && key != "arm" && key != "seed") fields[key] = value;
    out.push_back({{"name", tier.name}, {"description", tier.description}, {"fields", fields}});
  }
  if (format == InfoFormat::json) return json{{"tiers", out}}.dump() + "\n";
  Lines lines;
  for (const auto& tier : out) {
    lines.heading("tier " + tier["name"].get<std::string>() + ": " + tier["description"].get<std::string>());
    for (const auto& [key, value] : tier["fields"].items()) lines.add(key, shortest(text_of(value)));
  }
  return lines.str();
}

}  // namespace sg

namespace sg {

std::string run_curves(const std::vector<std::string>& paths) {
  std::ostringstream out;
  out << "# run\ttier\tarm\tseed\tseries\tstep\tvalue\n";
  for (const auto& path : paths) {
    const auto state = read_run_state(path);
    const auto& config = state.config;
    std::string name = config.tier + "/" + config.model.arm.name() + "/" + std::to_string(config.seed);
    for (const auto& [key, value] : state.labels) name += "/" + key + "=" + value;
    const std::string prefix = name + "\t" + config.tier + "\t" + config.model.arm.name() + "\t" +
                               std::to_string(config.seed) + "\t";
    out << "# " << name << ": val_loss over eval_batches " << config.train.eval_batches << " (batches of "
        << config.train.batch() << " windows x " << config.model.block_size << " tokens, eval_seed "
        << config.train.eval_seed << "); the final val_loss over final_eval_batches " << config.train.final_eval_batches
        << " of the same stream\n";
    const auto& c = state.curves;
    auto series = [&](const char* what, const std::vector<int64_t>& steps, const std::vector<double>& values) {
      for (size_t i = 0; i < steps.size() && i < values.size(); ++i)
        out << prefix << what << "\t" << steps[i] << "\t" << format_exact(values[i]) << "\n";
    };
    series("train_loss", c.step, c.train_loss);
    series("val_loss", c.val_step, c.val_loss);
    series("lr", c.step, c.lr);
    series("tokens_per_second", c.step, c.tokens_per_second);
    series("grad_norm", c.step, c.grad_norm);
    // The maxima of the steps the telemetry measured only; none when it was off.
    if (config.train.telemetry == 0)
      out << "# " << name << ": max_attention_logit and max_activation not recorded (telemetry 0: trained without "
          << "--set telemetry=N)\n";
    std::vector<int64_t> measured;
    std::vector<double> logits, activations;
    for (size_t i = 0; i < c.step.size() && i < c.max_attention_logit.size() && i < c.max_activation.size(); ++i)
      if (telemetry_measures(config.train.telemetry, c.step[i])) {
        measured.push_back(c.step[i]);
        logits.push_back(c.max_attention_logit[i]);
        activations.push_back(c.max_activation[i]);
      }
    series("max_attention_logit", measured, logits);
    series("max_activation", measured, activations);
  }
  return out.str();
}

}  // namespace sg

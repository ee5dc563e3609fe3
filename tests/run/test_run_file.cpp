// Tests of lib/run/run_file: a run file's configuration, state, curves and labels round-trip
// through HDF5 without LibTorch, a damaged state is an InputError naming the file, every
// configuration field but the optional ones must be there and within its bounds, the tensors must
// be exactly those the configuration describes, and labels.
#include <catch2/catch.hpp>

#include <cmath>

#include "lib/base/error.h"
#include "lib/io/h5.h"
#include "lib/run/run_file.h"
#include "tests/support.h"

namespace {

sg::RunState small_state() {
  sg::RunState state;
  state.config = sg::make_run_config("tiny", "sinklogit", 5);
  sg::apply_overrides(state.config, {"n_layer=1", "iterations=8", "warmup=2", "lr_peak=3e-4", "vocab_size=40"});
  state.step = 2;
  state.data_position = 2 * state.config.train.batch();
  state.tokens_seen = 123;
  state.token_file = "tokens.h5";
  state.token_file_hash = "ab12";
  state.curves.step = {1, 2};
  state.curves.train_loss = {4.5, 4.25};
  state.curves.lr = {1e-4, 2e-4};
  state.curves.tokens_per_second = {10, 11};
  state.curves.val_step = {2};
  state.curves.val_loss = {4.0};
  state.labels = {{"run", "first"}, {"sweep", "lr"}};
  return state;
}

/// Zero-filled float32 tensors of the parameters of `model` under /model (and, with `optimizer`,
/// their AdamW moments under /optimizer), as lib/model/checkpoint writes them, without LibTorch.
void write_tensors(sg::h5::Group& root, const sg::ModelConfig& model, bool optimizer = false) {
  root.create_group("model");
  for (const auto& [name, shape] : model.parameter_shapes()) {
    int64_t numel = 1;
    for (const auto size : shape) numel *= size;
    const std::vector<float> zeros(static_cast<size_t>(numel), 0.0f);
    root.write_array("model/" + name, sg::h5::Dtype::float32, shape, zeros.data());
    if (!optimizer) continue;
    auto group = root.create_group("optimizer/" + name);
    group.set_attribute("step", int64_t{1});
    for (const char* moment : {"exp_avg", "exp_avg_sq"}) group.write_array(moment, sg::h5::Dtype::float32, shape, zeros.data());
  }
}

/// A run file of `state` with zero weights of the configured model (or of `tensors_of`'s).
std::string write(const sg_test::Scratch& scratch, const std::string& name, const sg::RunState& state,
                  const sg::ModelConfig* tensors_of = nullptr) {
  const auto path = scratch / name;
  sg::h5::Writer writer(path, /*force=*/true);
  sg::Provenance provenance;
  provenance.tool = "test_run_file";
  sg::write_run_contents(writer.root(), state, provenance);
  write_tensors(writer.root(), tensors_of ? *tensors_of : state.config.model);
  writer.commit();
  return path;
}

/// A run file of `state` whose /config has the fields of `fields` only (each as a string), written
/// field by field as write_run_contents writes them: to delete or replace single fields.
std::string write_fields(const sg_test::Scratch& scratch, const std::string& name, const sg::RunState& state,
                         const std::vector<std::pair<std::string, std::string>>& fields) {
  const auto path = scratch / name;
  sg::h5::Writer writer(path, /*force=*/true);
  auto& root = writer.root();
  sg::h5::set_format(root, sg::kRunFormat, sg::kRunSchemaVersion);
  auto config = root.create_group("config");
  for (const auto& [key, value] : fields) config.set_attribute(key, value);
  auto status = root.create_group("state");
  status.set_attribute("step", state.step);
  status.set_attribute("data_position", state.data_position);
  status.set_attribute("tokens_seen", state.tokens_seen);
  status.set_attribute("finished", int64_t{0});
  status.set_attribute("final_val_loss", std::nan(""));
  status.set_attribute("token_file", state.token_file);
  status.set_attribute("token_file_sha256", state.token_file_hash);
  const auto& c = state.curves;
  root.write_ints("curves/step", c.step);
  root.write_doubles("curves/train_loss", c.train_loss);
  root.write_doubles("curves/lr", c.lr);
  root.write_doubles("curves/tokens_per_second", c.tokens_per_second);
  root.write_ints("curves/val_step", c.val_step);
  root.write_doubles("curves/val_loss", c.val_loss);
  write_tensors(root, state.config.model);
  writer.commit();
  return path;
}

}  // namespace

TEST_CASE("a run file's configuration, state, curves and labels round-trip without LibTorch") {
  sg_test::Scratch scratch;
  const auto state = small_state();
  const auto path = write(scratch, "run.h5", state);
  const auto back = sg::read_run_state(path);
  CHECK(sg::to_fields(back.config) == sg::to_fields(state.config));
  CHECK(back.step == 2);
  CHECK(back.data_position == state.data_position);
  CHECK(back.tokens_seen == 123);
  CHECK_FALSE(back.finished);
  CHECK(std::isnan(back.final_val_loss));
  CHECK(back.token_file == "tokens.h5");
  CHECK(back.token_file_hash == "ab12");
  CHECK(back.curves.train_loss == state.curves.train_loss);
  CHECK(back.curves.val_step == state.curves.val_step);
  CHECK(back.labels == state.labels);
  CHECK(sg::run_keys(path, back) == std::vector<std::pair<std::string, std::string>>{{"run", "first"}, {"sweep", "lr"}});
  CHECK(sg::read_provenance(sg::h5::File::open(path)).tool == "test_run_file");
}

TEST_CASE("a run file whose state contradicts its configuration is an InputError naming the file") {
  sg_test::Scratch scratch;
  auto state = small_state();
  state.data_position = 5;
  const auto path = write(scratch, "damaged.h5", state);
  CHECK_THROWS_WITH(sg::read_run_state(path), Catch::Contains(path) && Catch::Contains("data_position 5 is not step x batch"));
}

TEST_CASE("labels are KEY=VALUE with a plain key, never the run's own tier, arm or seed") {
  CHECK(sg::parse_labels({"lr=3e-4", "note="}) == std::vector<std::pair<std::string, std::string>>{{"lr", "3e-4"}, {"note", ""}});
  CHECK_THROWS_AS(sg::parse_labels({"lr"}), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_labels({"=1"}), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_labels({"2x=1"}), sg::UsageError);
  CHECK_THROWS_AS(sg::parse_labels({"a-b=1"}), sg::UsageError);
  CHECK_THROWS_WITH(sg::parse_labels({"seed=1"}), Catch::Contains("shadow"));
  CHECK_THROWS_WITH(sg::parse_labels({"lr=1", "lr=2"}), Catch::Contains("twice"));
}

TEST_CASE("a run file carries its tokenizer record, and refuses one with more ids than the model") {
  sg_test::Scratch scratch;
  auto state = small_state();
  CHECK_FALSE(sg::read_run_state(write(scratch, "none.h5", state)).tokenizer.known());  // as runs of earlier versions
  state.tokenizer.identity.kind = "tokenizer.json";
  state.tokenizer.identity.vocab_size = 300;
  state.tokenizer.identity.eot_id = 0;
  state.tokenizer.source = "my/tokenizer.json";
  state.tokenizer.files = {{"tokenizer.json", std::string("{\"model\": {}}\0tail", 18)}};
  state.tokenizer.identity.sha256 = sg::sha256_bytes(state.tokenizer.files[0].bytes);
  state.config.model.vocab_size = 300;
  const auto back = sg::read_run_state(write(scratch, "run.h5", state));
  CHECK(back.tokenizer.identity.kind == "tokenizer.json");
  CHECK(back.tokenizer.identity.sha256 == state.tokenizer.identity.sha256);
  CHECK(back.tokenizer.identity.vocab_size == 300);
  CHECK(back.tokenizer.identity.eot_id == 0);
  CHECK(back.tokenizer.source == "my/tokenizer.json");
  REQUIRE(back.tokenizer.files.size() == 1);
  CHECK(back.tokenizer.files[0].bytes == state.tokenizer.files[0].bytes);  // byte for byte, NUL included
  state.config.model.vocab_size = 299;
  const auto path = write(scratch, "small.h5", state);
  CHECK_THROWS_WITH(sg::read_run_state(path), Catch::Contains(path) && Catch::Contains("300 ids"));
}

TEST_CASE("a run file lacking a configuration field is refused, naming the file and the field, but for loss_plan, precision and telemetry") {
  sg_test::Scratch scratch;
  const auto state = small_state();
  const auto all = sg::to_fields(state.config);
  CHECK(sg_test::error_of(write_fields(scratch, "all.h5", state, all)) == "(no error)");
  int refused = 0;
  for (size_t skip = 0; skip < all.size(); ++skip) {
    auto fields = all;
    fields.erase(fields.begin() + static_cast<std::ptrdiff_t>(skip));
    const auto path = write_fields(scratch, "lacks-" + all[skip].first + ".h5", state, fields);
    if (all[skip].first == "loss_plan") {  // files written before sinkgate recorded it
      CHECK(sg::read_run_state(path).config.train.loss_plan.automatic());
      continue;
    }
    if (all[skip].first == "precision") {  // likewise: the device's precision, as those runs trained
      CHECK(sg::read_run_state(path).config.train.precision == sg::Precision::automatic);
      continue;
    }
    if (all[skip].first == "telemetry") {  // those runs measured their maxima every step
      CHECK(sg::read_run_state(path).config.train.telemetry == 1);
      continue;
    }
    INFO("without " << all[skip].first);
    CHECK_THAT(sg_test::error_of(path), Catch::Contains(path) && Catch::Contains("/config lacks the attribute '" + all[skip].first + "'"));
    ++refused;
  }
  CHECK(refused == static_cast<int>(all.size()) - 3);
  CHECK_FALSE(sg::field_optional("arm"));
  CHECK(sg::field_optional("loss_plan"));
  CHECK(sg::field_optional("precision"));
  CHECK(sg::field_optional("telemetry"));
  CHECK(sg::RunConfig{}.train.telemetry == 0);  // a new run measures nothing unless asked
}

TEST_CASE("a run file's configuration values are bounded as on a command line: unknown tier, huge sizes, endless runs") {
  sg_test::Scratch scratch;
  const auto state = small_state();
  auto with = [&](const std::string& key, const std::string& value) {
    auto fields = sg::to_fields(state.config);
    for (auto& field : fields)
      if (field.first == key) field.second = value;
    return write_fields(scratch, key + ".h5", state, fields);
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tier", "garbage"},          {"n_layer", "1000000"},       {"n_embd", "1000000000"},
      {"block_size", "100000000"},  {"vocab_size", "1000000000"}, {"eval_batches", "1000000000"},
      {"iterations", "4611686018427387904"}, {"final_eval_batches", "1000000000"}, {"micro_batch", "100000000"},
      {"n_head", "128"}};
  for (const auto& [key, value] : cases) {
    INFO(key << " = " << value);
    const auto path = with(key, value);
    const auto message = sg_test::error_of(path);
    CHECK_THAT(message, Catch::Contains(path) && Catch::Contains("configuration is invalid") && Catch::Contains(key));
  }
  // The same bounds on the command line (a usage error there).
  auto config = state.config;
  sg::apply_overrides(config, {"iterations=4611686018427387904"});
  CHECK_THROWS_WITH(config.train.validate(), Catch::Contains("iterations") && Catch::Contains("bound"));
  config = state.config;
  sg::apply_overrides(config, {"n_layer=1000000"});
  CHECK_THROWS_WITH(config.model.validate(), Catch::Contains("n_layer") && Catch::Contains("bound"));
  // The bounds themselves are far above every tier.
  for (const auto& tier : sg::tiers()) {
    CHECK_NOTHROW(tier.model.validate());
    CHECK_NOTHROW(tier.train.validate());
  }
}

TEST_CASE("a run file whose configuration does not describe its tensors is refused: another arm, fewer layers, leftovers") {
  sg_test::Scratch scratch;
  auto state = small_state();  // sinklogit, 1 layer
  CHECK(sg_test::error_of(write(scratch, "good.h5", state)) == "(no error)");

  // Tensors of combo2 (sink logit and a projection gate), configuration baseline: the gate is left over.
  auto combo2 = state.config.model;
  combo2.arm = sg::parse_arm("combo2");
  auto baseline = state;
  baseline.config.model.arm = sg::parse_arm("baseline");
  auto path = write(scratch, "arm.h5", baseline, &combo2);
  CHECK_THAT(sg_test::error_of(path), Catch::Contains(path) && Catch::Contains("attn.sink_logit is not a parameter") &&
                                 Catch::Contains("arm baseline"));

  // Tensors of 2 layers, configuration 1 layer.
  auto two = state.config.model;
  two.n_layer = 2;
  path = write(scratch, "layers.h5", state, &two);
  CHECK_THAT(sg_test::error_of(path), Catch::Contains(path) && Catch::Contains("/model/blocks.1.") &&
                                 Catch::Contains("is not a parameter"));

  // Configuration of 2 layers, tensors of 1: a missing parameter.
  auto more = state;
  more.config.model.n_layer = 2;
  path = write(scratch, "missing.h5", more, &state.config.model);
  CHECK_THAT(sg_test::error_of(path), Catch::Contains(path) && Catch::Contains("lacks '/model/blocks.1."));

  // A wider configuration than the tensors: a shape, checked before anything is allocated.
  auto wide = state;
  wide.config.model.n_embd = 4096;
  wide.config.model.n_head = 2;
  path = write(scratch, "wide.h5", wide, &state.config.model);
  CHECK_THAT(sg_test::error_of(path), Catch::Contains(path) && Catch::Contains("has shape") && Catch::Contains("n_embd 4096"));
}

TEST_CASE("optimizer state of a parameter the configuration does not have is refused") {
  sg_test::Scratch scratch;
  const auto state = small_state();
  auto combo2 = state.config.model;
  combo2.arm = sg::parse_arm("combo2");
  const auto path = scratch / "optimizer.h5";
  {
    sg::h5::Writer writer(path, /*force=*/true);
    sg::write_run_contents(writer.root(), state, sg::Provenance{});
    write_tensors(writer.root(), state.config.model, /*optimizer=*/true);
    // One more group: the moments of a gate this sinklogit model does not have.
    auto extra = writer.root().create_group("optimizer/blocks.0.attn.gate_b");
    const std::vector<float> zeros(2, 0.0f);
    extra.write_array("exp_avg", sg::h5::Dtype::float32, {2}, zeros.data());
    extra.write_array("exp_avg_sq", sg::h5::Dtype::float32, {2}, zeros.data());
    writer.commit();
  }
  CHECK_THAT(sg_test::error_of(path), Catch::Contains(path) && Catch::Contains("/optimizer/blocks.0.attn.gate_b is not the state"));
}

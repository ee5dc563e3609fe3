// sg-sample — text generation from a run file or a Hugging Face GPT-2/Pythia folder.
//
// Input: one model (an sg-train run file, any arm, its sg-export folder, or a checkpoint folder) and a prompt: --prompt
// TEXT, --prompt-file FILE ('-': stdin), or stdin when neither is given; an empty prompt starts
// from the end-of-text token. Output: the generated text on stdout, each token written as soon as
// it is decoded (with --echo, the prompt first); a summary (tokens, tokens/s) on stderr.
// Decoding uses the key-value cache (lib/instruments/generation.h); greedy with --temperature 0.
//
// Examples:
//   sg-sample results/paper/runs/124M/combo/0.h5 --prompt "The meaning of life is" --max-tokens 50
//   echo "def fibonacci(n):" | sg-sample runs/quick/baseline/0.h5 --temperature 0.8 --top-k 40 --seed 3
//   sg-sample checkpoints/gpt2 --prompt-file prompt.txt --top-p 0.9 --device cuda
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "lib/base/cli.h"
#include "lib/base/error.h"
#include "lib/base/log.h"
#include "lib/base/paths.h"
#include "lib/hf/language_model.h"
#include "lib/instruments/generation.h"
#include "lib/model/runtime.h"

namespace {

struct Options {
  sg::cli::CommonOptions common;
  std::string model;
  std::string prompt;
  bool prompt_given = false;
  std::string prompt_file;
  std::string vocab;
  sg::SamplingOptions sampling;
  bool greedy = false;
  bool echo = false;
  bool no_stop = false;
  bool no_cache = false;
};

std::string read_prompt(const Options& options) {
  if (options.prompt_given) return options.prompt;
  std::ostringstream text;
  if (options.prompt_file.empty() || options.prompt_file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(options.prompt_file, std::ios::binary);
    if (!in) throw sg::InputError(options.prompt_file + ": cannot be read", "--prompt-file takes a text file");
    text << in.rdbuf();
  }
  // An empty stdin or file is most often a mistake upstream (a failed command, a wrong path):
  // generating from nothing then looks like an answer. --prompt '' asks for it explicitly.
  if (text.str().empty())
    throw sg::InputError((options.prompt_file.empty() || options.prompt_file == "-" ? std::string("stdin")
                                                                                     : options.prompt_file) +
                             ": the prompt is empty",
                         "to generate from the end-of-text token alone, say so: --prompt ''");
  return text.str();
}

void write_bytes(const std::string& bytes) {
  if (bytes.empty()) return;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0)
    throw sg::OutputError(sg::stdout_failure_message(errno));
}

void run(Options options) {
  if (options.prompt_given && !options.prompt_file.empty())
    throw sg::UsageError("give --prompt or --prompt-file, not both");
  if (options.greedy) options.sampling.temperature = 0;
  options.sampling.seed = static_cast<uint64_t>(options.common.seed);
  options.sampling.stop_at_end_of_text = !options.no_stop;
  options.sampling.use_cache = !options.no_cache;
  options.sampling.validate();
  sg::model_input_files(options.model, options.vocab);  // a bad model fails before the prompt is read
  const auto prompt = read_prompt(options);
  const auto device = sg::parse_device(options.common.device);
  const auto model = sg::LanguageModel::load(options.model, device, options.vocab);
  auto ids = model.tokenizer().encode(prompt);
  if (ids.empty()) ids.push_back(model.tokenizer().eot_id());
  bool cut = false;
  if (static_cast<int64_t>(ids.size()) >= model.context_length()) {
    const auto keep = static_cast<size_t>(model.context_length() / 2);
    sg::log::warn("the prompt has " + std::to_string(ids.size()) + " tokens, the context " +
                  std::to_string(model.context_length()) + "; keeping its last " + std::to_string(keep));
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
    cut = true;
  }
  if (options.echo) write_bytes(cut ? model.tokenizer().decode(ids) : prompt);  // what the model was given
  // Bytes are written as tokens arrive: a character split across tokens completes with the next.
  const auto start = std::chrono::steady_clock::now();
  const auto generated = sg::generate(model, ids, options.sampling, [&](int32_t token) {
    if (token == model.tokenizer().eot_id() && options.sampling.stop_at_end_of_text) return;
    write_bytes(model.tokenizer().decode({token}));
  });
  write_bytes("\n");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool filled = static_cast<int64_t>(ids.size() + generated.size()) >= model.context_length();
  sg::log::info("sg-sample: " + model.name() + ": " + std::to_string(ids.size()) + " prompt tokens, " +
                std::to_string(generated.size()) + " generated in " + std::to_string(seconds) + " s (" +
                std::to_string(seconds > 0 ? static_cast<double>(generated.size()) / seconds : 0.0) + " tokens/s)" +
                (filled ? "; stopped at the model's context" : ""));
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  sg::cli::Parser parser("sg-sample",
                         "Generates text from a run file or a Hugging Face GPT-2/Pythia folder (key-value cache; greedy, "
                         "temperature, top-k, top-p); streams it to stdout.");
  parser.option("model", options.model, "an sg-train run file, its sg-export folder or a Hugging Face checkpoint folder", /*required=*/true);
  parser.option("--prompt", options.prompt, "the prompt text (default: --prompt-file, else stdin)");
  parser.option("--prompt-file", options.prompt_file, "read the prompt from this file ('-': stdin)");
  parser.option("-n,--max-tokens", options.sampling.max_tokens, "tokens to generate at most");
  parser.option("--temperature", options.sampling.temperature, "softmax temperature (0: greedy)");
  parser.option("--top-k", options.sampling.top_k, "sample among the k most likely tokens (0: all)");
  parser.option("--top-p", options.sampling.top_p, "sample among the most likely tokens whose probability reaches p");
  parser.flag("--greedy", options.greedy, "always the most likely token (--temperature 0)");
  parser.flag("--echo", options.echo, "write the prompt before the generated text");
  parser.flag("--no-stop", options.no_stop, "go on past an end-of-text token");
  parser.flag("--no-cache", options.no_cache, "recompute the whole sequence at every step (slow; checks the cache)");
  parser.option("--vocab", options.vocab,
                "vocabulary (default: a folder's own; a run file's recorded one, GPT-2's for runs of older versions); "
                "for a run file it must be the vocabulary the run records");
  parser.renamed("--tokenizer", "--vocab");
  parser.common(options.common, sg::cli::kSeed | sg::cli::kDevice | sg::cli::kThreads | sg::cli::kLogLevel);
  return sg::run_torch_tool(parser, argc, argv, [&] {
    options.prompt_given = parser.given("--prompt");
    run(options);
  });
}

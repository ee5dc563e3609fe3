#!/usr/bin/env python3
"""export_round_trip.py — sinkgate reads an sg-export folder back as the run it came from.

The numbers compared here are sinkgate's on both sides (the run file and its export, through the
real executables); that the export computes what the run computes is checked against transformers,
the independent implementation, by tests/hf_export_reference.py and tests/hf/test_export.cpp.

Commands:
  same BIN RUN FOLDER TOKENS LAMBADA TEXT WORK
      sg-eval on RUN and FOLDER (val on the run's validation batches, LAMBADA on the task file
      LAMBADA): every metric within 1e-5 (relative for perplexities), and the export's rows keyed
      by the run's tier, arm and seed; sg-sample's greedy text after a prompt, the same; sg-survey's
      statistics on TEXT (the arm's own sinkgate model; GPT-2's for the baseline's folder): within
      1e-5. Prints "round trip: ok".
  refusals BIN FOLDER TOKENS WORK
      copies of FOLDER (an arm with a gate) with config.json or model.safetensors changed: an
      unknown arm, zero_option contradicting the arm, another filter (its tensors left over), a
      layer fewer, a bias that is not zero. sg-eval and sg-sample exit 3 naming the file and the
      problem. Prints "refusals: ok".
"""
import json
import math
import os
import shutil
import subprocess
import sys

import h5py


def tool(bin_dir, name, *args, code=0):
    result = subprocess.run([os.path.join(bin_dir, name), *args], capture_output=True, timeout=300)
    if result.returncode != code:
        sys.exit(f"FAIL: {name} {' '.join(args)}: exit {result.returncode}, expected {code}\n"
                 f"stderr: {result.stderr.decode(errors='replace')}")
    return result.stdout, result.stderr.decode(errors="replace")


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def table(path):
    """A result table's rows as dicts (strings decoded)."""
    with h5py.File(path, "r") as f:
        group = f["table"]
        columns = {name: group[name][()] for name in group}
    rows = []
    for i in range(len(next(iter(columns.values())))):
        row = {}
        for name, values in columns.items():
            value = values[i]
            row[name] = value.decode().rstrip("\0") if isinstance(value, bytes) else value
        rows.append(row)
    return rows


def close(a, b, relative=False):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= 1e-5 * (max(1.0, abs(a)) if relative else 1.0)


def command_same(bin_dir, run, folder, tokens, lambada, text, work):
    os.makedirs(work, exist_ok=True)
    quiet = ["--threads", "1", "--log-level", "error"]
    evaluated = os.path.join(work, "eval.h5")
    tool(bin_dir, "sg-eval", run, folder, "--task", "val,lambada", "--tokens", tokens, "--lambada", lambada,
         "-o", evaluated, "--force", *quiet)
    rows = table(evaluated)
    by_model = {}
    for row in rows:
        by_model.setdefault(row["run"], {})[(row["task"], row["metric"], row["bin"])] = row
    check(set(by_model) == {run, folder}, f"sg-eval's rows are of {sorted(by_model)}")
    ours, theirs = by_model[run], by_model[folder]
    check(set(ours) == set(theirs) and ("val", "loss", "all") in ours, f"metrics {sorted(ours)} vs {sorted(theirs)}")
    for key, row in ours.items():
        other = theirs[key]
        check(close(row["value"], other["value"], relative=key[1] == "perplexity"),
              f"{key}: run {row['value']!r}, export {other['value']!r}")
        check(row["n"] == other["n"], f"{key}: n {row['n']} vs {other['n']}")
        for name in ("tier", "arm", "seed"):
            check(row[name] == other[name], f"{key}: the export's {name} is {other[name]!r}, the run's {row[name]!r}")
    val = abs(ours[("val", "loss", "all")]["value"] - theirs[("val", "loss", "all")]["value"])

    sample = ["--prompt", "The tutorial", "-n", "16", "--greedy", "--no-stop", *quiet]
    text_run, _ = tool(bin_dir, "sg-sample", run, *sample)
    text_folder, _ = tool(bin_dir, "sg-sample", folder, *sample)
    check(len(text_run) > 1, "sg-sample wrote nothing")
    check(text_run == text_folder, f"sg-sample: run {text_run!r}, export {text_folder!r}")

    surveyed = os.path.join(work, "survey.h5")
    tool(bin_dir, "sg-survey", run, folder, "--text", text, "--blocks", "2", "--block-length", "24",
         "-o", surveyed, "--force", *quiet)
    statistics = {}
    for row in table(surveyed):
        statistics.setdefault(row["model"], {})[(row["scope"], row["layer"], row["head"], row["statistic"])] = row["value"]
    check(len(statistics) == 2, f"sg-survey's models: {sorted(statistics)}")
    first, second = statistics.values()
    check(set(first) == set(second), "sg-survey: the export has other statistics than the run")
    worst = max(abs(first[key] - second[key]) if not math.isnan(first[key]) else 0.0 for key in first)
    for key in first:
        check(close(first[key], second[key]), f"sg-survey {key}: run {first[key]!r}, export {second[key]!r}")
    print(f"val_loss_diff={val:.3g} survey_diff={worst:.3g} sample=same")
    print("round trip: ok")


def command_refusals(bin_dir, folder, tokens, work):
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    check(config["filter"] != "none", "refusals: give an export of an arm with a gate")

    def variant(name, change=None, tensors=None):
        path = os.path.join(work, name)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(folder, path)
        if change:
            edited = dict(config)
            edited.update(change)
            with open(os.path.join(path, "config.json"), "w") as f:
                json.dump(edited, f)
        if tensors:
            from safetensors.numpy import load_file, save_file
            weights = os.path.join(path, "model.safetensors")
            values = load_file(weights)
            tensors(values)
            save_file(values, weights, metadata={"format": "pt"})
        return path

    def nonzero_bias(values):
        values["transformer.h.0.attn.c_proj.bias"][0] = 0.5

    cases = [
        (variant("unknown-arm", {"arm": "combo9"}), "config.json", "arm 'combo9' is not one this sinkgate knows"),
        (variant("contradiction", {"zero_option": "sinktoken"}), "config.json", "but zero_option is 'sinktoken'"),
        (variant("other-filter", {"arm": config["zero_option"] + "+none", "filter": "none"}), "model.safetensors",
         "is not used by"),
        (variant("fewer-layers", {"n_layer": config["n_layer"] - 1}), "model.safetensors", "is not used by"),
        (variant("nonzero-bias", tensors=nonzero_bias), "model.safetensors",
         "'transformer.h.0.attn.c_proj.bias' is not zero"),
    ]
    for path, file, problem in cases:
        for name, args in (("sg-eval", [path, "--tokens", tokens, "-o", os.path.join(work, "x.h5"), "--force"]),
                           ("sg-sample", [path, "--prompt", "a", "-n", "1"])):
            _, err = tool(bin_dir, name, *args, code=3)
            check(os.path.join(path, file) in err and problem in err,
                  f"{name} on {os.path.basename(path)}: stderr does not name {file} and '{problem}': {err}")
    print("refusals: ok")


def main(argv):
    if len(argv) == 8 and argv[0] == "same":
        command_same(*argv[1:])
    elif len(argv) == 5 and argv[0] == "refusals":
        command_refusals(*argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

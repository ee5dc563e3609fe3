#!/usr/bin/env python3
"""Tables 3 and 4 of the paper, printed from sinkgate's own definitions (not from a copy).

  paper_tables.py BIN table3   the paper tiers' configuration, from `sg-info --tier NAME --format json`
  paper_tables.py BIN table4   the nine arms, from `sg-arms --tier NAME` at every paper tier: zero
                               option, filter, and the parameters per layer as the formula in H
                               (heads), d (head width) and d_model that the counts of every tier fit
  add --csv to print CSV (the test compares it with pipelines/paper_table3.csv / paper_table4.csv)

BIN is the folder of the tools (build/bin). Python 3's standard library only.
"""
import csv
import json
import subprocess
import sys

PAPER_TIERS = ["10M", "50M", "124M", "350M"]

# The paper's words for the code's zero options and filters (Table 4's columns). An arm with a gate
# on the value slot and no zero option abstains partially, through Z_i (Lemma 3.1).
ZERO_WORDS = {"none": "none", "offbyone": "phantom, fixed", "sinklogit": "phantom, learned",
              "sinktoken": "token, approximate"}
FILTER_WORDS = {"none": "none", "normgate": "norm threshold", "renorm": "norm, in routing",
                "projgate": "learned direction"}


def run(bin_dir, *args):
    return subprocess.run([f"{bin_dir}/{args[0]}", *args[1:]], check=True, capture_output=True, text=True).stdout


def tier_fields(bin_dir, tier):
    return json.loads(run(bin_dir, "sg-info", "--tier", tier, "--format", "json").splitlines()[0])["tiers"][0]["fields"]


def table3(bin_dir):
    header = ["Tier", "Layers", "Heads", "Width", "Context", "Batch", "Iterations", "Warmup", "Tokens"]
    rows = []
    for tier in PAPER_TIERS:
        f = {k: int(float(v)) for k, v in tier_fields(bin_dir, tier).items() if k in (
            "n_layer", "n_head", "n_embd", "block_size", "micro_batch", "accumulation", "iterations", "warmup")}
        tokens = f["iterations"] * f["micro_batch"] * f["accumulation"] * f["block_size"]
        rows.append([tier, f["n_layer"], f["n_head"], f["n_embd"], f["block_size"],
                     f"{f['micro_batch']}x{f['accumulation']}", f"{f['iterations']:,}", f"{f['warmup']:,}",
                     f"{tokens / 1e9:.2f}B"])
    return header, rows


def formula(counts):
    """The formula in H, d, d_model that every (H, d, d_model) -> count fits, else the counts."""
    candidates = {"0": lambda H, d, D: 0, "H": lambda H, d, D: H, "2H": lambda H, d, D: 2 * H,
                  "d_model": lambda H, d, D: D, "H(d+1)": lambda H, d, D: H * (d + 1),
                  "H(d+2)": lambda H, d, D: H * (d + 2)}
    for name, f in candidates.items():
        if all(f(H, d, D) == count for (H, d, D), count in counts):
            return name
    return " / ".join(str(count) for _, count in counts)


def table4(bin_dir):
    counts, order, kinds = {}, [], {}
    for tier in PAPER_TIERS:
        f = tier_fields(bin_dir, tier)
        H, D = int(f["n_head"]), int(f["n_embd"])
        lines = run(bin_dir, "sg-arms", "--tier", tier).strip().splitlines()
        names = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(names, line.split("\t")))
            if row["arm"] not in kinds:
                order.append(row["arm"])
                kinds[row["arm"]] = (row["zero"], row["filter"])
            counts.setdefault(row["arm"], []).append(((H, D // H, D), int(row["params_per_layer"])))
    header = ["Arm", "Zero option", "Filter", "Params"]
    rows = []
    for arm in order:
        zero, filt = kinds[arm]
        zero_words = ZERO_WORDS[zero]
        if zero == "none" and filt in ("normgate", "projgate"):
            zero_words = "partial (Z_i)"
        rows.append([arm, zero_words, FILTER_WORDS[filt], formula(counts[arm])])
    return header, rows


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("table3", "table4"):
        sys.exit(__doc__)
    header, rows = (table3 if sys.argv[2] == "table3" else table4)(sys.argv[1])
    if "--csv" in sys.argv:
        out = csv.writer(sys.stdout, lineterminator="\n")
        out.writerow(header)
        out.writerows(rows)
        return
    print("| " + " | ".join(header) + " |")
    print("| " + " | ".join([":---"] + ["---:" if sys.argv[2] == "table3" else ":---"] * (len(header) - 1)) + " |")
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


if __name__ == "__main__":
    main()

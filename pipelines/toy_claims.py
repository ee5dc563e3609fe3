#!/usr/bin/env python3
"""pipelines/toy_claims.py — the claims of Figure 3 (App. D–E) checked on a toy grid's numbers.

    python3 pipelines/toy_claims.py runs/toy/fig3.tsv > runs/toy/fig3-claims.md
    python3 pipelines/toy_claims.py --beyond runs/toy/beyond/fig3-beyond.tsv

Reads the grid's table with seeds as columns (`sg-tabulate --rows condition,arm,load --cols seed
--cell error --format tsv`: condition, arm, load, then the task error of each seed) and prints, as
Markdown, each claim of the paper's Figure 3 that the grid can test, with the numbers it rests on
and whether it holds:

  1. channel-blind keys: the baseline's error rises with the superposition load (by more than
     0.05 from the smallest load to the largest);
  2. channel-blind keys: the norm gate matches the oracle at every load (within 0.02);
  3. channel-blind keys: off-by-one does not help (at the largest load it closes less than a tenth
     of the gap between the baseline and the oracle);
  4. channel-blind keys: the routing-slot control (renorm) does not recover the oracle (at the
     largest load it closes less than half of the gap);
  5. routing-visible keys (the control): the baseline and the oracle coincide (within 0.02).

With --beyond (the grid of `make -f pipelines/toy.mk fig3-beyond`, docs/beyond.md), claims 3 and 4
give way to the prediction of the paper's argument for gates that do not decide on the read they
multiply: in the channel-blind condition the key gate (keygate), the output gate (outgate,
outgate-elem) and the output gate with the sink logit (sinklogit+outgate) each track the baseline
(at the largest load each closes less than half of the gap between the baseline and the oracle).

Every claim compares seed pairs (the same seed of two arms or loads) by pipelines/claim_rule.py: a
claim holds only when every seed pair agrees and the mean paired difference clears its threshold
(or, for "matches" and "coincide", stays inside the tolerance) by more than two standard errors of
the paired differences; otherwise it is "not shown", printed with the mean, SE, pairs and how many
agree. For claims 3 and 4 each seed's difference is the share of the gap allowed minus the share
closed, in task error: threshold × (baseline − oracle) − (baseline − arm). A claim the grid cannot
test (its arm or condition was not run) is untested. A claim not shown is a finding, not an error:
the exit status is 0 either way (2 on bad input).
"""
import math
import sys

from claim_rule import exceeds, verdict, within


def read_table(path):
    """{(condition, arm, load): {seed: error}} from the seeds-as-columns table (NaN cells left out)."""
    rows, seeds = {}, None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            if line.startswith("#"):
                fields = line[1:].strip().split("\t")
                if seeds is None and fields[:3] == ["condition", "arm", "load"]:
                    if fields[3:4] == ["mean"]:
                        raise ValueError(f"{path}: a summary (mean, se, seeds); give the table with one column per seed "
                                         "(fig3.tsv, not fig3-summary.tsv)")
                    seeds = fields[3:]
                continue
            fields = line.split("\t")
            if seeds is None:
                raise ValueError(f"{path}:{number}: no header '# condition, arm, load, SEED…' before the first row")
            if len(fields) != 3 + len(seeds):
                raise ValueError(f"{path}:{number}: expected {3 + len(seeds)} tab-separated fields, found {len(fields)}")
            condition, arm, load = fields[:3]
            values = {seed: float(v) for seed, v in zip(seeds, fields[3:])}
            rows[(condition, arm, float(load))] = {seed: v for seed, v in values.items() if math.isfinite(v)}
    if not rows:
        raise ValueError(f"{path}: no rows (was the toy grid run?)")
    return rows


def mean(cell):
    return sum(cell.values()) / len(cell) if cell else math.nan


def paired(a, b):
    """a − b for each seed both cells have."""
    return [a[s] - b[s] for s in a if s in b]


def loads_of(rows, condition, arm):
    return sorted(load for (c, a, load) in rows if c == condition and a == arm)


def fmt_load(load):
    return f"{load:g}"


def nz(value, digits):
    """value rounded to `digits` places without a negative zero, so that -0.00001 prints as 0.0000."""
    return round(value, digits) + 0.0


def main(argv):
    args = argv[1:]
    beyond = bool(args) and args[0] == "--beyond"
    if beyond:
        args = args[1:]
    if len(args) != 1 or args[0].startswith("--"):
        print("usage: toy_claims.py [--beyond] FIG3.tsv", file=sys.stderr)
        return 2
    try:
        rows = read_table(args[0])
    except (OSError, ValueError) as error:
        print(f"toy_claims.py: error: {error}", file=sys.stderr)
        return 2

    seeds = sorted({len(cell) for cell in rows.values()})
    conditions = sorted({c for (c, _, _) in rows})
    loads = sorted({load for (_, _, load) in rows})
    print(f"Conditions {', '.join(conditions)}; loads {', '.join(map(fmt_load, loads))}; "
          f"{'/'.join(map(str, seeds))} seed(s) per point. Task error: mean over seeds. A claim holds only when every "
          f"seed pair agrees and the mean paired difference clears its threshold by more than two standard errors.")
    print()

    def claim(text, evidence, numbers):
        print(f"- {text}: **{verdict(evidence)}** — {numbers}")

    blind = "blind"
    base_loads = loads_of(rows, blind, "baseline")
    # 1. The baseline's error rises with the load: largest load − smallest, per seed, above 0.05.
    if len(base_loads) >= 2:
        low, high = rows[(blind, "baseline", base_loads[0])], rows[(blind, "baseline", base_loads[-1])]
        evidence = exceeds(paired(high, low), threshold=0.05)
        claim("channel-blind: the baseline's error rises with the load", evidence,
              f"{nz(mean(low), 4):.4f} at load {fmt_load(base_loads[0])}, {nz(mean(high), 4):.4f} at load "
              f"{fmt_load(base_loads[-1])}; the rise per seed: {evidence.text()}")
    else:
        claim("channel-blind: the baseline's error rises with the load", None, "needs the baseline at two loads")

    def match(text, condition, arm, ref, label, missing):
        """`arm` and `ref` coincide at every load both ran: every seed pair of every load within 0.02."""
        shared = [l for l in loads_of(rows, condition, arm) if (condition, ref, l) in rows]
        if not shared:
            return claim(text, None, missing)
        differences = [d for l in shared for d in paired(rows[(condition, arm, l)], rows[(condition, ref, l)])]
        evidence = within(differences, tolerance=0.02)
        claim(text, evidence, f"{label} " + ", ".join(
            f"{nz(mean(rows[(condition, arm, l)]) - mean(rows[(condition, ref, l)]), 4):+.4f} (load {fmt_load(l)})"
            for l in shared) + f"; every seed pair at every load: {evidence.text()}")

    # 2. The norm gate matches the oracle at every load.
    match("channel-blind: the norm gate matches the oracle", blind, "normgate", "oracle", "norm gate − oracle",
          "needs normgate and oracle in the blind condition")

    def gap_claim(text, arm, label, threshold, missing):
        """At the largest load: `arm` closes less than `threshold` of the baseline-oracle gap."""
        shared = [l for l in loads_of(rows, blind, arm) if (blind, "baseline", l) in rows and (blind, "oracle", l) in rows]
        if not shared:
            return claim(text, None, missing)
        l = shared[-1]
        cells = [rows[(blind, a, l)] for a in ("baseline", arm, "oracle")]
        base, value, oracle = (mean(c) for c in cells)
        gap = base - oracle
        if gap <= 0.05:
            return claim(text, None, f"at load {fmt_load(l)} the baseline is already within 0.05 of the oracle (gap {nz(gap, 4):+.4f})")
        closed = (base - value) / gap
        # Per seed, in task error: the share of the gap allowed minus the share closed.
        differences = [threshold * (cells[0][s] - cells[2][s]) - (cells[0][s] - cells[1][s])
                       for s in cells[0] if s in cells[1] and s in cells[2]]
        evidence = exceeds(differences)
        claim(text, evidence,
              f"at load {fmt_load(l)} baseline {nz(base, 4):.4f}, {label} {nz(value, 4):.4f}, oracle {nz(oracle, 4):.4f}: "
              f"it closes {nz(100 * closed, 1):.1f}% of the gap (threshold {nz(100 * threshold, 0):.0f}%); "
              f"allowed − closed per seed: {evidence.text()}")

    if beyond:
        # Gates that do not decide on the read they multiply cannot tell relevant from irrelevant
        # items when the keys are blind: each should track the baseline, not the oracle.
        for arm, label in (("keygate", "the key gate"), ("outgate", "the output gate"),
                           ("outgate-elem", "the element-wise output gate"),
                           ("sinklogit+outgate", "the sink logit with the output gate")):
            if not loads_of(rows, blind, arm):
                continue
            differences = ", ".join(f"{nz(mean(rows[(blind, arm, l)]) - mean(rows[(blind, 'baseline', l)]), 4):+.4f} (load {fmt_load(l)})"
                                    for l in loads_of(rows, blind, arm) if (blind, "baseline", l) in rows)
            print(f"- channel-blind: {label} − baseline: {differences}")
            gap_claim(f"channel-blind: {label} does not filter (tracks the baseline)", arm, arm, 0.5,
                      f"needs {arm}, baseline and oracle in the blind condition")
    else:
        # 3. Off-by-one does not help: it closes less than a tenth of the baseline-oracle gap.
        gap_claim("channel-blind: off-by-one does not help", "offbyone", "off-by-one", 0.1,
                  "needs offbyone, baseline and oracle in the blind condition")
        # 4. The routing-slot control does not recover the oracle (Figure 3's caption: only the value-slot gate does).
        gap_claim("channel-blind: the routing-slot control does not recover the oracle", "renorm", "renorm", 0.5,
                  "the grid has no renorm arm in the blind condition")

    # 5. Routing-visible control: the baseline and the oracle coincide (no filtering headroom).
    match("routing-visible: the baseline and the oracle coincide", "visible", "baseline", "oracle", "baseline − oracle",
          "the grid has no visible condition (the full grid: make -f pipelines/toy.mk -j2 fig3)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

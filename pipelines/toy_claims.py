#!/usr/bin/env python3
"""pipelines/toy_claims.py — the claims of Figure 3 (App. D–E) checked on a toy grid's numbers.

    python3 pipelines/toy_claims.py runs/toy/fig3-summary.tsv > runs/toy/fig3-claims.md
    python3 pipelines/toy_claims.py --beyond runs/toy/beyond/fig3-beyond-summary.tsv

Reads fig3.gp's summary (condition, arm, load, mean, se, seeds: the task error of each arm,
condition and load, mean and standard error over seeds) and prints, as Markdown, each claim of the
paper's Figure 3 that the grid can test, with the numbers it rests on and whether it holds:

  1. channel-blind keys: the baseline's error rises with the superposition load;
  2. channel-blind keys: the norm gate matches the oracle at every load;
  3. channel-blind keys: off-by-one does not help (at the largest load it closes less than a tenth
     of the gap between the baseline and the oracle);
  4. channel-blind keys: the routing-slot control (renorm) does not recover the oracle (at the
     largest load it closes less than half of the gap);
  5. routing-visible keys (the control): the baseline and the oracle coincide.

With --beyond (the grid of `make -f pipelines/toy.mk fig3-beyond`, docs/beyond.md), claims 3 and 4
give way to the prediction of the paper's argument for gates that do not decide on the read they
multiply: in the channel-blind condition the key gate (keygate), the output gate (outgate,
outgate-elem) and the output gate with the sink logit (sinklogit+outgate) each track the baseline
(at the largest load each closes less than half of the gap between the baseline and the oracle).

A claim the grid cannot test (its arm or condition was not run) is said to be untested. A claim
that does not hold is a finding, not an error: the exit status is 0 either way (2 on bad input).
The thresholds are written beside each claim: "matches" means within 0.02 task error (or two
standard errors, whichever is larger); "rises" means by more than 0.05 and more than two standard
errors.
"""
import math
import sys


def read_summary(path):
    rows = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            if len(fields) != 6:
                raise ValueError(f"{path}:{number}: expected 6 tab-separated fields, found {len(fields)}")
            condition, arm, load, mean, se, seeds = fields
            se_value = float(se)
            rows[(condition, arm, float(load))] = (float(mean), 0.0 if math.isnan(se_value) else se_value, int(seeds))
    if not rows:
        raise ValueError(f"{path}: no rows (was the toy grid run?)")
    return rows


def loads_of(rows, condition, arm):
    return sorted(load for (c, a, load) in rows if c == condition and a == arm)


def fmt_load(load):
    return f"{load:g}"


def nz(value, digits):
    """value rounded to `digits` places without a negative zero, so that -0.00001 prints as 0.0000."""
    return round(value, digits) + 0.0


def close(a, b, tolerance=0.02):
    """|a - b| within the tolerance or two combined standard errors."""
    (ma, sa, _), (mb, sb, _) = a, b
    return abs(ma - mb) <= max(tolerance, 2 * math.hypot(sa, sb))


def main(argv):
    args = argv[1:]
    beyond = bool(args) and args[0] == "--beyond"
    if beyond:
        args = args[1:]
    if len(args) != 1 or args[0].startswith("--"):
        print("usage: toy_claims.py [--beyond] FIG3-SUMMARY.tsv", file=sys.stderr)
        return 2
    try:
        rows = read_summary(args[0])
    except (OSError, ValueError) as error:
        print(f"toy_claims.py: error: {error}", file=sys.stderr)
        return 2

    seeds = sorted({s for (_, _, s) in rows.values()})
    conditions = sorted({c for (c, _, _) in rows})
    loads = sorted({load for (_, _, load) in rows})
    print(f"Conditions {', '.join(conditions)}; loads {', '.join(map(fmt_load, loads))}; "
          f"{'/'.join(map(str, seeds))} seed(s) per point. Task error: mean over seeds.")
    print()

    def claim(text, holds, evidence):
        verdict = "untested" if holds is None else ("holds" if holds else "does NOT hold")
        print(f"- {text}: **{verdict}** — {evidence}")

    blind = "blind"
    base_loads = loads_of(rows, blind, "baseline")
    # 1. The baseline's error rises with the load.
    if len(base_loads) >= 2:
        low, high = rows[(blind, "baseline", base_loads[0])], rows[(blind, "baseline", base_loads[-1])]
        rise = high[0] - low[0]
        holds = rise > 0.05 and rise > 2 * math.hypot(low[1], high[1])
        claim("channel-blind: the baseline's error rises with the load", holds,
              f"{nz(low[0], 4):.4f} at load {fmt_load(base_loads[0])}, {nz(high[0], 4):.4f} at load {fmt_load(base_loads[-1])} "
              f"(rise {nz(rise, 4):+.4f}; threshold 0.05)")
    else:
        claim("channel-blind: the baseline's error rises with the load", None, "needs the baseline at two loads")

    # 2. The norm gate matches the oracle at every load.
    shared = [l for l in loads_of(rows, blind, "normgate") if (blind, "oracle", l) in rows]
    if shared:
        gaps = [(rows[(blind, "normgate", l)][0] - rows[(blind, "oracle", l)][0], l) for l in shared]
        holds = all(close(rows[(blind, "normgate", l)], rows[(blind, "oracle", l)]) for l in shared)
        widest = max(gaps, key=lambda g: abs(g[0]))
        claim("channel-blind: the norm gate matches the oracle", holds,
              "norm gate − oracle " + ", ".join(f"{nz(g, 4):+.4f} (load {fmt_load(l)})" for g, l in gaps) +
              f"; the widest {nz(widest[0], 4):+.4f}; tolerance 0.02")
    else:
        claim("channel-blind: the norm gate matches the oracle", None, "needs normgate and oracle in the blind condition")

    def gap_claim(text, arm, label, threshold, missing):
        """At the largest load: `arm` closes less than `threshold` of the baseline-oracle gap."""
        shared = [l for l in loads_of(rows, blind, arm) if (blind, "baseline", l) in rows and (blind, "oracle", l) in rows]
        if not shared:
            return claim(text, None, missing)
        l = shared[-1]
        base, value, oracle = (rows[(blind, a, l)][0] for a in ("baseline", arm, "oracle"))
        gap = base - oracle
        if gap <= 0.05:
            return claim(text, None, f"at load {fmt_load(l)} the baseline is already within 0.05 of the oracle (gap {nz(gap, 4):+.4f})")
        closed = (base - value) / gap
        claim(text, closed < threshold,
              f"at load {fmt_load(l)} baseline {nz(base, 4):.4f}, {label} {nz(value, 4):.4f}, oracle {nz(oracle, 4):.4f}: "
              f"it closes {nz(100 * closed, 1):.1f}% of the gap (threshold {nz(100 * threshold, 0):.0f}%)")

    if beyond:
        # Gates that do not decide on the read they multiply cannot tell relevant from irrelevant
        # items when the keys are blind: each should track the baseline, not the oracle.
        for arm, label in (("keygate", "the key gate"), ("outgate", "the output gate"),
                           ("outgate-elem", "the element-wise output gate"),
                           ("sinklogit+outgate", "the sink logit with the output gate")):
            if not loads_of(rows, blind, arm):
                continue
            differences = ", ".join(f"{nz(rows[(blind, arm, l)][0] - rows[(blind, 'baseline', l)][0], 4):+.4f} (load {fmt_load(l)})"
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
    shared = [l for l in loads_of(rows, "visible", "baseline") if ("visible", "oracle", l) in rows]
    if shared:
        holds = all(close(rows[("visible", "baseline", l)], rows[("visible", "oracle", l)]) for l in shared)
        claim("routing-visible: the baseline and the oracle coincide", holds,
              "baseline − oracle " + ", ".join(
                  f"{nz(rows[('visible', 'baseline', l)][0] - rows[('visible', 'oracle', l)][0], 4):+.4f} (load {fmt_load(l)})"
                  for l in shared) + "; tolerance 0.02 or two standard errors")
    else:
        claim("routing-visible: the baseline and the oracle coincide", None,
              "the grid has no visible condition (the full grid: make -f pipelines/toy.mk -j2 fig3)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

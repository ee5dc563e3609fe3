#!/usr/bin/env python3
"""tests/stability_claims.py — pipelines/stability.py on hand-made tables, against numbers worked out
by hand here (never against the script's own output).

    python3 tests/stability_claims.py pipelines/stability.py

The grid: baseline, sinklogit and outgate at peak rates 6e-4, 2.4e-3 and 9.6e-3, seeds 0 and 1,
40 steps each, every run's first training loss 10.9 (the initial loss). By hand:

- baseline: 5.0/5.2, 5.1/5.3, then 12.0/11.5 (both above 10.9: diverged) -> largest stable 0.0024;
- outgate: 5.1/5.3, 5.0/5.2, 5.5/5.6 -> largest stable 0.0096; at 0.0024 outgate - baseline is
  -0.1, -0.1 (mean -0.1000, SE 0.0000); at 0.0096 -6.5, -5.9 (mean -6.2000, SE 0.3000, every pair
  lower): claim (a) holds;
- sinklogit: 5.0/5.2, 5.2/5.4, then 7.0/11.2 (seed 1 diverged) -> largest stable 0.0024, the
  baseline's: claim (b) does NOT hold;
- at 0.0096 only outgate's two runs are stable (sinklogit's seed 0, 7.0, is more than 1 nat above
  its best mean 5.1); attention logits: stable runs 3-4, the unstable baseline and sinklogit seed 1
  20-25, sinklogit seed 0 3 -> medians 3.50 (2) against 22.50 (4): (c) holds for logits;
  activations: stable 50, unstable 30, 30, 50, 30 -> 50.00 (2) against 30.00 (4): (c) does NOT
  hold for activations;
- baseline lr 0.0024 seed 0 has one spike: loss 6.0 (+-0.01) for 40 steps but 8.0 at steps 30-31
  (one excursion: 1 spike, first at step 30); no other run has one;
- repetitive set at 0.0096: baseline 15.3/15.1, every other run 5.0 -> neither minus either:
  ordinary 11.75 - (7.0 + 11.2 + 5.5 + 5.6)/4 = 4.425, repetitive 15.2 - 5.0 = 10.2; per seed the
  ordinary advantage is 12.0 - 6.25 = 5.75 and 11.5 - 8.4 = 3.1, the repetitive one 10.3 and 10.1,
  so repetitive - ordinary is 4.55 and 7.0 (mean 5.775, SE 1.225, both above zero, 5.675 above
  the 0.1 threshold against 2 SE = 2.45): (e) holds.
- (e) on noise, the repetitive baseline at 0.0096 changed: 10.76/8.35 -> per seed 0.01 and 0.25,
  mean 0.13 (the 0.13 nat over a 0.1 threshold that a comparison of means passes), SE 0.12: both
  pairs agree but 0.03 is not two SE (0.24): not shown. 11.05/8.06 -> 0.30 and -0.04: mean 0.13,
  one pair of two disagrees: not shown.
- (a) and (b) at 0.0096, baseline - arm per seed: outgate 6.5, 5.9 (mean 6.2, SE 0.3): holds;
  sinklogit 5.0, 0.3 (mean 2.65, SE 2.35): both agree but 2.65 < 4.7, and its largest stable rate
  is the baseline's: not shown.
Plus: a non-finite training loss is a divergence; bad input is exit 2 naming the file.
"""
import csv
import os
import subprocess
import sys
import tempfile

RATES = {"1": 6e-4, "4": 2.4e-3, "16": 9.6e-3}
VAL = {  # (arm, factor): (seed 0, seed 1)
    ("baseline", "1"): (5.0, 5.2), ("baseline", "4"): (5.1, 5.3), ("baseline", "16"): (12.0, 11.5),
    ("outgate", "1"): (5.1, 5.3), ("outgate", "4"): (5.0, 5.2), ("outgate", "16"): (5.5, 5.6),
    ("sinklogit", "1"): (5.0, 5.2), ("sinklogit", "4"): (5.2, 5.4), ("sinklogit", "16"): (7.0, 11.2),
}
UNSTABLE = {("baseline", "16", 0), ("baseline", "16", 1), ("sinklogit", "16", 1)}


def write_tables(folder, nonfinite=False, repetitive=(15.3, 15.1)):
    with open(os.path.join(folder, "curves.tsv"), "w") as f:
        f.write("# run\ttier\tarm\tseed\tseries\tstep\tvalue\n")
        for (arm, factor), seeds in VAL.items():
            for seed in (0, 1):
                name = f"tiny/{arm}/{seed}/lr_factor={factor}"
                unstable = (arm, factor, seed) in UNSTABLE
                for step in range(1, 41):
                    loss = 10.9 if step == 1 else 6.0 + 0.01 * ((step * 7) % 3)
                    if (arm, factor, seed) == ("baseline", "4", 0) and step in (30, 31):
                        loss = 8.0
                    if nonfinite and (arm, factor, seed) == ("outgate", "1", 0) and step == 40:
                        loss = float("nan")
                    lr = RATES[factor] * min(1.0, step / 4)
                    logit = (20.0 + seed * 5) if unstable else 3.0 + seed
                    activation = 30.0 if unstable else (50.0 if factor == "16" else 10.0)
                    for series, value in (("train_loss", loss), ("lr", lr), ("grad_norm", 1.0 + step / 100),
                                          ("max_attention_logit", logit), ("max_activation", activation)):
                        f.write(f"{name}\ttiny\t{arm}\t{seed}\t{series}\t{step}\t{value!r}\n")
    for name, value in (("val.csv", lambda arm, factor, seed: VAL[(arm, factor)][seed]),
                        ("repetitive.csv", lambda arm, factor, seed:
                         repetitive[seed] if (arm, factor) == ("baseline", "16") else 5.0)):
        with open(os.path.join(folder, name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["tier", "arm", "seed", "run", "lr_factor", "val_loss", "val_batches"])
            for (arm, factor), _ in VAL.items():
                for seed in (0, 1):
                    w.writerow(["tiny", arm, seed, f"runs/{arm}/{factor}/{seed}.h5", factor, value(arm, factor, seed), 16])
    with open(os.path.join(folder, "sinks.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tier", "arm", "seed", "run", "lr_factor", "probe", "layer", "head", "statistic", "value"])
        for (arm, factor), _ in VAL.items():
            for seed in (0, 1):
                for statistic, value in (("position0_mass", 0.05), ("r0_ratio", 1.1)):
                    w.writerow(["tiny", arm, seed, "r", factor, "sinks", "all", "all", statistic, value])


def run(script, folder, *extra):
    command = [sys.executable, script, "--curves", os.path.join(folder, "curves.tsv"), "--val", os.path.join(folder, "val.csv"),
               "--repetitive", os.path.join(folder, "repetitive.csv"), "--sinks", os.path.join(folder, "sinks.csv"),
               "--out", os.path.join(folder, "out"), *extra]
    return subprocess.run(command, capture_output=True, text=True)


def expect(text, piece, what):
    if piece not in text:
        print(f"FAIL: {what}: '{piece}' not in:\n{text}")
        sys.exit(1)


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        write_tables(folder)
        result = run(script, folder)
        if result.returncode != 0:
            print(f"FAIL: exit {result.returncode}: {result.stderr}")
            return 1
        out = result.stdout
        expect(out, "(a) the output gate tolerates a larger rate than the baseline (outgate): **holds** — largest stable rate "
                    "0.0096 against the baseline's 0.0024; at the baseline's, outgate − baseline -0.1000 ± 0.0000 nats (2 seed pairs); "
                    "at 0.0096, baseline − outgate: mean +6.2000, SE 0.3000 (2 pairs, 2 of 2 agree; threshold 0)", "claim (a)")
        expect(out, "(b) a zero option tolerates a larger rate than the baseline (sinklogit): **not shown** — largest stable "
                    "rate 0.0024 against the baseline's 0.0024", "claim (b)")
        expect(out, "at 0.0096, baseline − sinklogit: mean +2.6500, SE 2.3500 (2 pairs, 2 of 2 agree; threshold 0)", "claim (b)'s pairs")
        expect(out, "(c) runs that stay stable keep smaller attention logits: **holds** — median over runs, stable against "
                    "unstable: lr 0.0096 3.50 (2) vs 22.50 (4); unstable − stable within each seed and rate: mean +14.75, SE 6.25 "
                    "(2 pairs, 2 of 2 agree; threshold 0)", "claim (c), logits")
        expect(out, "(c) runs that stay stable keep smaller residual activations: **not shown** — median over runs, stable "
                    "against unstable: lr 0.0096 50.00 (2) vs 30.00 (4); unstable − stable within each seed and rate: "
                    "mean -15.00, SE 5.00 (2 pairs, 0 of 2 agree", "claim (c), activations")
        expect(out, "(d) largest stable rate of each arm: baseline 0.0024, sinklogit 0.0024, outgate 0.0096", "claim (d)")
        expect(out, "(e) at the largest rate", "claim (e)")
        expect(out, "lr 0.0096 4.425 / 10.200", "claim (e)'s gaps")
        expect(out, "**holds** — neither (baseline)", "claim (e)'s verdict")
        expect(out, "repetitive − ordinary advantage per seed: mean +5.775, SE 1.225 (2 pairs, 2 of 2 agree; threshold 0.1)",
               "claim (e)'s pairs")
        if "does NOT hold" in out:
            print(f"FAIL: a verdict other than holds / not shown / untested:\n{out}")
            return 1

        # (e) on noise: a 0.13-nat mean over the 0.1 threshold inside its standard error, then with
        # one seed pair of two disagreeing: not shown either way, each with its numbers.
        for repetitive, numbers, what in (((10.76, 8.35), "mean +0.130, SE 0.120 (2 pairs, 2 of 2 agree; threshold 0.1)",
                                           "noise only"),
                                          ((11.05, 8.06), "mean +0.130, SE 0.170 (2 pairs, 1 of 2 agree; threshold 0.1)",
                                           "one pair disagrees")):
            write_tables(folder, repetitive=repetitive)
            out = run(script, folder).stdout
            expect(out, "by more than 0.1 nat): **not shown** — neither (baseline)", f"claim (e), {what}")
            expect(out, numbers, f"claim (e)'s numbers, {what}")
        write_tables(folder)
        with open(os.path.join(folder, "out", "stability.md")) as f:
            table = f.read()
        expect(table, "| baseline | 5.100 ± 0.100 | 5.200 ± 0.100 | 11.750 ± 0.250 (2/2 diverged) | 0.0024 |", "the Markdown table")
        expect(table, "| sinklogit | 5.100 ± 0.100 | 5.300 ± 0.100 | 9.100 ± 2.100 (1/2 diverged) | 0.0024 |", "the Markdown table")
        with open(os.path.join(folder, "out", "stability-runs.tsv")) as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        header = rows[0]
        header[0] = header[0][2:]
        by = {(r[header.index("arm")], r[header.index("lr_factor")], r[header.index("seed")]): dict(zip(header, r)) for r in rows[1:]}
        spiky = by[("baseline", "4", "0")]
        if (spiky["spikes"], spiky["first_spike"]) != ("1", "30"):
            print(f"FAIL: spikes of baseline/4/0: {spiky['spikes']} first at {spiky['first_spike']}, expected 1 at 30")
            return 1
        if any(r["spikes"] != "0" for k, r in by.items() if k != ("baseline", "4", "0")):
            print("FAIL: a spike counted in a run without one")
            return 1
        if (by[("baseline", "16", "0")]["diverged"], by[("outgate", "16", "0")]["diverged"]) != ("1", "0"):
            print("FAIL: diverged column")
            return 1

        # A non-finite training loss is a divergence (and the run's finite val loss does not hide it).
        write_tables(folder, nonfinite=True)
        result = run(script, folder)
        expect(result.stdout, "(d) largest stable rate of each arm: baseline 0.0024, sinklogit 0.0024, outgate none", "non-finite loss")

        # Bad input: exit 2, the file named.
        with open(os.path.join(folder, "val.csv"), "w") as f:
            f.write("tier,arm,seed\ntiny,baseline,0\n")
        result = run(script, folder)
        if result.returncode != 2 or "val.csv: no column lr_factor, val_loss" not in result.stderr:
            print(f"FAIL: bad input: exit {result.returncode}, stderr {result.stderr}")
            return 1
    print("stability claims: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# figures.sh WORK TOKENS MAKE… — the figures of Makefile.experiments drawn from a tiny make run into
# WORK (emptied first), then checked through the data each is drawn from (not its pixels): every
# arm trained has its series, no arm that was not trained has one, every point is accounted for, and
# Figure 2's points below its log axis's floor are marked as such. Then the injection battery's
# settings stamp: the same settings rerun nothing, new doses rerun the injections. MAKE… is the make
# command (make -C SOURCE -f Makefile.experiments BIN=…). Prints one line per check; exit 1 on a
# failed one.
set -uo pipefail
work=$1 tokens=$2
shift 2
rm -rf "$work"
mkdir -p "$work"
tiny=(PROFILE=quick TIERS=tiny OUT="$work" TOKENS="$tokens" ARMS='baseline sinklogit combo2' SEEDS='0 1' THREADS=1
      TRAIN_FLAGS='--set iterations=4 --set warmup=1 --set eval_interval=2 --set eval_batches=1 --set final_eval_batches=1 --set block_size=16 --log-level quiet'
      INJECT_FLAGS='--batches 2 --log-level quiet' PROBE_FLAGS='--batches 2 --log-level quiet'
      TOY_DIR="$work/toy" TOY_CONDITIONS='blind visible' TOY_LOADS='1 2' TOY_SEEDS=0,1 TOY_ARMS=baseline,normgate,oracle
      TOY_FLAGS='--steps 20 --batch-size 16 --eval-sequences 256 --log-interval 0 --log-level quiet')
if ! "$@" -j2 "${tiny[@]}" fig1 fig2 fig3 fig5 curves direction > "$work/make.log" 2>&1; then
  echo "make failed:"; tail -n 30 "$work/make.log"; exit 1
fi

status=0
check() {  # WHAT ACTUAL EXPECTED
  if [ "$2" == "$3" ]; then echo "ok: $1: $2"; else echo "FAILED: $1: '$2', expected '$3'"; status=1; fi
}
# The distinct values of an awk expression over a TSV's rows that pass a condition, sorted, one line.
values() {  # FILE CONDITION EXPRESSION
  awk -F'\t' "!/^#/ && ($2) { print $3 }" "$1" | sort -u | tr '\n' ' ' | sed 's/ $//'
}
rows() {  # FILE [CONDITION]
  awk -F'\t' "!/^#/ && (${2:-1}) { n++ } END { print n + 0 }" "$1"
}

for f in fig1 fig2 fig5 curves direction toy/fig3; do
  check "$f.png is a PNG" "$(head -c 4 "$work/$f.png" | tail -c 3)" PNG
done

# Figure 2: panel a (structured junk, the tier's arms), panel b (directions: the baseline and combo2,
# the only arm with a projection gate), four doses each; every row a point or a marked floor point.
f=$work/fig2.tsv
check "fig2 panels" "$(values "$f" 1 '$1 "/" $2')" "a/tiny b/tiny"
check "fig2 (a) series" "$(values "$f" '$1 == "a"' '$5 ":" $3')" "baseline:structured combo2:structured sinklogit:structured"
check "fig2 (b) series" "$(values "$f" '$1 == "b"' '$5 ":" $3')" "baseline:random-direction combo2:own-direction combo2:random-direction"
check "fig2 doses" "$(values "$f" 1 '$6')" "0.2 0.4 0.8 1.6"
check "fig2 points: every row of its inputs" "$(rows "$f")" "$(( $(rows "$work/fig2-ab.tsv") + $(rows "$work/fig2-c.tsv") ))"
check "fig2 points: 3 x 4 + 3 x 4" "$(rows "$f")" 24
check "fig2 points on the floor: every value below it" "$(rows "$f" '$9 == "floor"')" "$(rows "$f" '$7 < 5e-4')"
check "fig2 rows drawn where their value is" "$(rows "$f" '$9 == "point" && ($8 != $7 || $7 < 5e-4)')" 0
check "fig2 rows drawn on the floor are below it" "$(rows "$f" '$9 == "floor" && ($8 != 5e-4 || $7 >= 5e-4)')" 0
check "fig2 rows with a marker" "$(rows "$f" '$9 != "point" && $9 != "floor"')" 0

# Figure 1: (a) the increments of the arms trained; (b) the sink logit; (c) the value-slot gates.
f=$work/fig1.tsv
check "fig1 (a) series" "$(values "$f" '$1 == "a"' '$2 ":" $3 "/" $4')" "baseline:sinklogit/tiny sinklogit:combo2/tiny"
check "fig1 (b) series" "$(values "$f" '$1 == "b"' '$3 "/" $4')" "sinklogit/tiny"
check "fig1 (c) series" "$(values "$f" '$1 == "c"' '$3 "/" $4')" "combo2/tiny"
check "fig1 values and (a)'s standard errors are numbers" "$(rows "$f" '$5 != $5 + 0 || ($1 == "a" && $6 != $6 + 0)')" 0
check "fig1 (a) is Table 1's difference with its sign flipped" \
  "$(awk -F'\t' '!/^#/ && $1 == "baseline" && $2 == "sinklogit" { printf "%.6g", -$4 }' "$work/fig1-a.tsv")" \
  "$(awk -F'\t' '$1 == "a" && $3 == "sinklogit" { printf "%.6g", $5 }' "$f")"

# Figure 5: every arm's position-0 mass and norm ratio, the phantom only where there is one.
f=$work/fig5.tsv
check "fig5 arms" "$(values "$f" 1 '$1')" "baseline combo2 sinklogit"
check "fig5 bars" "$(values "$f" 1 '$1 ":" $2')" \
  "baseline:position0_mass baseline:r0_ratio combo2:phantom_mass combo2:position0_mass combo2:r0_ratio sinklogit:phantom_mass sinklogit:position0_mass sinklogit:r0_ratio"

# The direction figure: combo2, the only arm with a projection gate; a series per layer and one for
# the model, 40 bins each, each series' shares summing to 1; the table has a row per layer and the model.
f=$work/direction.tsv
check "direction series" "$(values "$f" 'NF > 0' '$1 ":" $2')" "combo2:0 combo2:1 combo2:all"
check "direction points: 3 series x 40 bins" "$(rows "$f" 'NF > 0')" 120
check "direction series sum to 1" \
  "$(awk -F'\t' '!/^#/ && NF > 0 { s[$1 ":" $2] += $4 * 0.05 } END { for (k in s) printf "%.4f\n", s[k] }' "$f" | sort -u)" 1.0000
check "direction table rows" "$(grep -c '^| combo2 | 0 \|^|  | 1 \|^|  | every layer ' "$work/direction.md")" 3

# The curves: every run, with its training and validation losses.
f=$work/curves.tsv
check "curves runs" "$(values "$f" 1 '$1')" \
  "tiny/baseline/0 tiny/baseline/1 tiny/combo2/0 tiny/combo2/1 tiny/sinklogit/0 tiny/sinklogit/1"
check "curves series" "$(values "$f" '$5 == "train_loss" || $5 == "val_loss"' '$1 ":" $5' | wc -w)" 12

# Figure 3: the arms asked for, every condition and load, mean and SE over both seeds.
f=$work/toy/fig3-summary.tsv
check "fig3 arms" "$(values "$f" 1 '$2')" "baseline normgate oracle"
check "fig3 points: 2 conditions x 3 arms x 2 loads" "$(rows "$f")" 12
check "fig3 seeds per point" "$(values "$f" 1 '$6')" 2
check "fig3 claims: one line per claim" "$(grep -c '^- ' "$work/toy/fig3-claims.md")" 5

# The injection battery's settings stamp.
"$@" "${tiny[@]}" fig2 > "$work/again.log" 2>&1 || { echo "make fig2 again failed:"; tail -n 20 "$work/again.log"; status=1; }
check "fig2 again with the same settings: injections rerun" "$(grep -c 'sg-inject --tokens' "$work/again.log")" 0
"$@" "${tiny[@]}" INJECT_DOSES=0.4,1.6 fig2 > "$work/doses.log" 2>&1 || { echo "make fig2 with new doses failed:"; tail -n 20 "$work/doses.log"; status=1; }
check "fig2 with new doses: injections rerun" "$(grep -c 'sg-inject --tokens' "$work/doses.log")" 3
check "fig2 with new doses: doses drawn" "$(values "$work/fig2.tsv" 1 '$6')" "0.4 1.6"

[ $status = 0 ] && echo "figures: every series and point accounted for"
exit $status

# pipelines/fig2.gp — Figure 2: the increase in validation loss under injected junk against the dose.
# (a, b) structured junk at the 25th-percentile cutoff, one line per arm, at two tiers; (c) a random
# fixed direction (dashed) against the projection gate's own direction (solid), median cutoff.
#
#   gnuplot -e "ab='results/paper/fig2-ab.tsv'; c='results/paper/fig2-c.tsv'; output='results/paper/fig2.png'; \
#               tiers='124M 350M'; ctier='124M'" pipelines/fig2.gp
#
# ab: `sg-tabulate … --rows tier,arm,dose --cell delta_loss --format tsv` (columns tier, arm, dose,
# delta_loss); c: the same with junk in place of tier. The y axis is logarithmic: a change of zero or
# less (a model the junk does not hurt) is not drawn.

if (!exists("ab")) ab = 'results/paper/fig2-ab.tsv'
if (!exists("c")) c = 'results/paper/fig2-c.tsv'
if (!exists("output")) output = 'results/paper/fig2.png'
if (!exists("tiers")) tiers = '124M 350M'
if (!exists("ctier")) ctier = '124M'

set datafile separator "\t"
arms = "baseline sinklogit normgate projgate combo combo2"
array titles[6] = ["baseline", "sink logit", "norm gate", "projection gate", "combo", "combo2"]
array colors[6] = ["#444444", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"]
positive(y) = y > 0 ? y : NaN
pick(first, arm) = (strcol(1) eq first && strcol(2) eq arm)

set terminal pngcairo size 1500,480 font "sans,11"
set output output
set multiplot layout 1,3
set logscale xy
set xrange [0.17:1.9]
set xtics (0.2, 0.4, 0.8, 1.6)
set xlabel "dose ε"
set ylabel "Δ validation loss (nats)"
set key top left
set yrange [0.0005:20]  # fixed: a panel without a positive point (a model the junk does not hurt) stays empty
set grid

do for [p = 1:2] {
  tier = word(tiers, p)
  set title sprintf("(%s) structured junk, q25 cutoff, %s", p == 1 ? "a" : "b", tier)
  plot for [i = 1:words(arms)] ab using (pick(tier, word(arms, i)) ? $3 : NaN):(positive($4)) \
       with linespoints lw 2 pt 7 lc rgb colors[i] title titles[i]
}

set key bottom right
set title sprintf("(c) random vs own gate direction, median cutoff, %s", ctier)
line(junk, arm) = pick(junk, arm) ? $3 : NaN
plot c using (line("random-direction", "baseline")):(positive($4)) with linespoints lw 2 pt 7 lc rgb colors[1] dt 2 \
       title "baseline, random direction", \
     c using (line("random-direction", "projgate")):(positive($4)) with linespoints lw 2 pt 7 lc rgb colors[4] dt 2 \
       title "projection gate, random direction", \
     c using (line("own-direction", "projgate")):(positive($4)) with linespoints lw 2 pt 5 lc rgb colors[4] \
       title "projection gate, own direction", \
     c using (line("random-direction", "combo2")):(positive($4)) with linespoints lw 2 pt 7 lc rgb colors[6] dt 2 \
       title "combo2, random direction", \
     c using (line("own-direction", "combo2")):(positive($4)) with linespoints lw 2 pt 5 lc rgb colors[6] \
       title "combo2, own direction"
unset multiplot

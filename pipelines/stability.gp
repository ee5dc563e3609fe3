# pipelines/stability.gp — training stability against the learning rate (make stability): left, the
# final validation loss of every arm against the peak learning rate (a line through the mean over
# seeds, each seed a point, diverged seeds as crosses); right, the largest attention logit over
# training, the same way.
#
#   gnuplot -e "runs='results/quick/stability/stability-runs.tsv'; grid='results/quick/stability/stability-grid.tsv'; \
#               output='results/quick/stability/stability.png'" pipelines/stability.gp
#
# runs and grid: pipelines/stability.py's stability-runs.tsv (arm column 2, lr 4, seed 5, val_loss 8,
# diverged 10, max_attention_logit 16) and stability-grid.tsv (arm 1, lr 2, val_mean 3,
# max_logit_mean 7).

here = ARG0[1:strlen(ARG0) - strlen('stability.gp')]
load here . 'figures.gp'
set datafile separator "\t"

order = "baseline offbyone sinklogit projgate combo2 outgate sinklogit+outgate keygate"
seen = " "
stats grid using (collect(strcol(1))) nooutput
arms = ordered(order, seen)
k = words(arms)
stats runs using 5 nooutput
runs_count = STATS_records
stats runs using ($10 > 0 ? 1 : 0) nooutput
diverged = STATS_sum
seeds = " "
seen = " "
stats runs using (collect(strcol(5))) nooutput
seeds = seen
# Points of one rate spread sideways by arm, so that they stay apart.
spread(j) = 1 + 0.03 * (j - (k + 1) / 2.0)

set terminal pngcairo size 1300,650 font "sans,11" noenhanced
set output output
set multiplot layout 1,2 margins 0.07, 0.98, 0.3, 0.92 spacing 0.08, 0
set logscale x 2
set format x "%.2g"
set xlabel "peak learning rate"
set grid ytics
set key at graph 0, -0.17 left top horizontal maxcols 4 reverse Left samplen 2 width -2

set title "(a) final validation loss (ordinary batches)"
set ylabel "val loss (nats)"
plot for [j = 1:k] grid using (strcol(1) eq word(arms, j) ? $2 * spread(j) : NaN):3 with lines lw 2 \
       lc rgb arm_color(word(arms, j), j) title arm_title(word(arms, j)), \
     for [j = 1:k] runs using (strcol(2) eq word(arms, j) && $10 == 0 ? $4 * spread(j) : NaN):8 with points pt 7 ps 0.8 \
       lc rgb arm_color(word(arms, j), j) notitle, \
     for [j = 1:k] runs using (strcol(2) eq word(arms, j) && $10 > 0 ? $4 * spread(j) : NaN):8 with points pt 2 ps 1.6 lw 2 \
       lc rgb arm_color(word(arms, j), j) notitle

set title "(b) largest attention logit over training"
set ylabel "max q.k/sqrt(d)"
set key off
# Runs trained without telemetry (sg-train's default) have no logits: the panel says so.
stats runs using (strcol(16) eq "nan" || strcol(16) eq "" ? 0 : 1) nooutput
measured = STATS_sum
if (measured > 0) { set logscale y 10 } else {
  set yrange [0:1]
  set label 2 "not recorded: the runs were trained without telemetry\n(sg-train --set telemetry=1; make stability sets it)" at graph 0.5, 0.5 center front
}
set label 1 sprintf("%d runs of %d arms, seeds%s(the same batches for every arm at a seed); dots: a seed; crosses: a diverged seed (%d of them: a non-finite loss,\nor a final val loss above the first step's loss). Lines: the mean over seeds. A point whose value is not finite is not drawn (make stability, docs/stability.md).", \
                    runs_count, k, seeds, diverged) at screen 0.01, 0.06 left front
if (measured == 0) { plot runs using 4:(-1) notitle } else {
plot for [j = 1:k] grid using (strcol(1) eq word(arms, j) ? $2 * spread(j) : NaN):7 with lines lw 2 \
       lc rgb arm_color(word(arms, j), j) notitle, \
     for [j = 1:k] runs using (strcol(2) eq word(arms, j) && $10 == 0 ? $4 * spread(j) : NaN):16 with points pt 7 ps 0.8 \
       lc rgb arm_color(word(arms, j), j) notitle, \
     for [j = 1:k] runs using (strcol(2) eq word(arms, j) && $10 > 0 ? $4 * spread(j) : NaN):16 with points pt 2 ps 1.6 lw 2 \
       lc rgb arm_color(word(arms, j), j) notitle
}
unset multiplot

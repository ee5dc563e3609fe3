# pipelines/fig3.gp — Figure 3: task error against superposition load, one line per arm, error bars
# the standard error over seeds; left the channel-blind condition, right the routing-visible control.
#
#   gnuplot -e "data='runs/toy/fig3.tsv'; output='runs/toy/fig3.png'; summary='runs/toy/fig3-summary.tsv'" pipelines/fig3.gp
#
# data: `sg-tabulate … --rows condition,arm,load --cols seed --cell error --format tsv`, i.e. the
# columns condition, arm, load, then one column of task error per seed. summary (optional) receives
# the plotted numbers: condition, arm, load, mean, standard error, number of seeds.

if (!exists("data")) data = 'runs/toy/fig3.tsv'
if (!exists("output")) output = 'runs/toy/fig3.png'

set datafile separator "\t"
stats data using 3 nooutput
first = 4                      # the first seed column
seeds = STATS_columns - first + 1

mean(dummy) = sum [i=first:first+seeds-1] column(i) / seeds
sd(m) = seeds > 1 ? sqrt(sum [i=first:first+seeds-1] (column(i) - m)**2 / (seeds - 1)) : NaN
se(m) = sd(m) / sqrt(seeds)
pick(condition, arm) = (strcol(1) eq condition && strcol(2) eq arm)

arms = "baseline offbyone normgate renorm oracle"
array titles[5] = ["baseline", "off-by-one", "norm gate", "renorm (routing slot)", "oracle"]
array colors[5] = ["#444444", "#1f77b4", "#d62728", "#ff7f0e", "#2ca02c"]
array points[5] = [7, 5, 9, 13, 4]
conditions = "blind visible"

if (exists("summary")) {
  set print summary
  print "# condition\tarm\tload\tmean\tse\tseeds"
  unset print
  set table summary append
  set format "%.6g"
  do for [c in conditions] {
    do for [a in arms] {
      plot data using (c):(a):3:(m = mean(0)):(se(m)):(seeds) with table if (pick(c, a))
    }
  }
  unset table
  set format "% h"
}

set terminal pngcairo size 1200,520 font "sans,11"
set output output
set multiplot layout 1,2
set logscale x 2
set xrange [0.85:9.4]
set xtics (1, 2, 4, 8)
set xlabel "superposition load N/d"
set ylabel "task error (per-label error rate)"
set yrange [0:*]
set grid ytics
set key below horizontal maxrows 2 samplen 2
do for [k = 1:2] {
  c = word(conditions, k)
  set title (k == 1 ? "channel-blind keys" : "routing-visible keys (control)")
  plot for [j = 1:words(arms)] data \
       using (pick(c, word(arms, j)) ? $3 * (1 + 0.02 * (j - 3)) : NaN):(m = mean(0)):(se(m)) \
       with yerrorlines lw 2 pt points[j] ps 1.2 lc rgb colors[j] title titles[j]
}
unset multiplot

# pipelines/fig5.gp — Figure 5: the sink analysis at one tier. (a) The share of attention mass on key
# position 0 and on the zero option (the phantom, or the sink token) per arm; (b) the norm of the
# value read at position 0 relative to an ordinary read (1: an ordinary read).
#
#   gnuplot -e "data='results/paper/fig5.tsv'; output='results/paper/fig5.png'; tier='124M'; \
#               arms='baseline sinklogit normgate combo'" pipelines/fig5.gp
#
# data: `sg-tabulate … --where probe=sinks --where layer=all --where head=all --rows arm,statistic
# --cell value --format tsv` (columns arm, statistic, value); arms: the bars, in order.

if (!exists("data")) data = 'results/paper/fig5.tsv'
if (!exists("output")) output = 'results/paper/fig5.png'
if (!exists("tier")) tier = '124M'
if (!exists("arms")) arms = 'baseline offbyone sinktoken sinklogit renorm normgate projgate combo combo2'

set datafile separator "\t"
# The position of an arm in `arms` (NaN when it is not there).
slot(a, i) = i > words(arms) ? NaN : (word(arms, i) eq a ? i : slot(a, i + 1))
bar(statistic, shift) = strcol(2) eq statistic ? slot(strcol(1), 1) + shift : NaN

set terminal pngcairo size 1200,460 font "sans,11"
set output output
set multiplot layout 1,2
set style fill solid 0.85 border -1
set grid ytics
set xrange [0.4:words(arms) + 0.6]
set xtics () rotate by -30 noenhanced
do for [i = 1:words(arms)] { set xtics add (word(arms, i) i) }

set title sprintf("(a) where attention mass goes, %s", tier)
set ylabel "share of attention mass"
# A fixed range (autoscaling fails on a series without points, e.g. no arm with a sink token).
stats data using (strcol(2) ne "r0_ratio" ? $3 : NaN) nooutput
set yrange [0:(STATS_max > 0 ? 1.2 * STATS_max : 1)]
set key top right
set boxwidth 0.36
plot data using (bar("position0_mass", -0.19)):3 with boxes lc rgb "#444444" title "position 0", \
     data using (bar("phantom_mass", 0.19)):3 with boxes lc rgb "#1f77b4" title "phantom", \
     data using (bar("sink_token_mass", 0.19)):3 with boxes lc rgb "#17becf" title "sink token"

set title sprintf("(b) position-0 read norm / ordinary read, %s", tier)
set ylabel "norm ratio"
set key off
set yrange [0:1.3]
set boxwidth 0.6
plot data using (bar("r0_ratio", 0)):3 with boxes lc rgb "#ff7f0e", 1 with lines dt 2 lc rgb "#888888"
unset multiplot

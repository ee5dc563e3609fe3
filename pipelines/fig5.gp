# pipelines/fig5.gp — Figure 5: the sink analysis at one tier. (a) The share of attention mass on key
# position 0 and on the zero option (the phantom, or the sink token) per arm; (b) the norm of the
# value read at position 0 relative to an ordinary read (1: an ordinary read).
#
#   gnuplot -e "data='results/paper/fig5.tsv'; output='results/paper/fig5.png'; tier='124M'; seed='0'; \
#               arms='baseline sinklogit normgate combo'" pipelines/fig5.gp
#
# data: `sg-tabulate … --where probe=sinks --where layer=all --where head=all --rows arm,statistic
# --cell value --format tsv` (columns arm, statistic, value), every row one bar; arms: the order of
# the bars (an arm without rows gets none); seed: the probed run (caption).

if (!exists("data")) data = 'results/paper/fig5.tsv'
if (!exists("output")) output = 'results/paper/fig5.png'
if (!exists("tier")) tier = '124M'
if (!exists("seed")) seed = '0'
if (!exists("arms")) arms = 'baseline offbyone sinktoken sinklogit renorm normgate projgate combo combo2'
here = ARG0[1:strlen(ARG0) - strlen('fig5.gp')]
load here . 'figures.gp'
set datafile separator "\t"

# The bars: the arms with rows, in the order of `arms`; the statistics present, in panel (a)'s order.
seen = " "
if (has_rows(data)) { stats data using (collect(strcol(1))) nooutput }
bars = ordered(arms, seen)
seen = " "
if (has_rows(data)) { stats data using (collect(strcol(2))) nooutput }
masses = common("position0_mass phantom_mass sink_token_mass", seen)
mass_title(s) = s eq "position0_mass" ? "position 0" : s eq "phantom_mass" ? "phantom" : "sink token"
mass_color(s) = s eq "position0_mass" ? "#444444" : s eq "phantom_mass" ? "#1f77b4" : "#17becf"
# The phantom and the sink token share the right-hand slot (an arm has one or the other).
mass_shift(s) = s eq "position0_mass" ? -0.19 : 0.19
slot(a, i) = i > words(bars) ? NaN : (word(bars, i) eq a ? i : slot(a, i + 1))
bar(statistic, shift) = strcol(2) eq statistic ? slot(strcol(1), 1) + shift : NaN

set terminal pngcairo size 1200,560 font "sans,11" noenhanced
set output output
set multiplot layout 1,2 margins 0.07, 0.98, 0.3, 0.92 spacing 0.1, 0
set style fill solid 0.85 border -1
set grid ytics
set xrange [0.4:words(bars) + 0.6]
set xtics () rotate by -30
do for [i = 1:words(bars)] { set xtics add (arm_title(word(bars, i)) i) }
set key at graph 0, -0.2 left top horizontal reverse Left samplen 2

set title sprintf("(a) where attention mass goes, tier %s", tier)
set ylabel "share of attention mass"
# A fixed range (autoscaling fails on a series without points).
top = 0; top_ratio = 0
if (has_rows(data)) {
  stats data using (strcol(2) ne "r0_ratio" ? ($3 > top ? top = $3 : 0) : ($3 > top_ratio ? top_ratio = $3 : 0), 0) nooutput
}
set yrange [0:(top > 0 ? 1.15 * top : 1)]
set boxwidth 0.36
plot for [s in masses] data using (bar(s, mass_shift(s))):3 with boxes lc rgb mass_color(s) title mass_title(s), NaN notitle

set title sprintf("(b) position-0 read norm / ordinary read, tier %s", tier)
set ylabel "norm ratio"
set key off
set yrange [0:(top_ratio > 1.15 ? 1.15 * top_ratio : 1.3)]
set boxwidth 0.6
set label 1 sprintf("Probes (sg-probe) of the seed-%s run of each arm at tier %s: (a) the share of each attention row's mass on key position 0 and on the zero option\n(the phantom, or the sink token); (b) the norm of the value read at position 0 over an ordinary read's (dashed: 1, an ordinary read).", seed, tier) \
    at screen 0.01, 0.06 left front
plot data using (bar("r0_ratio", 0)):3 with boxes lc rgb "#ff7f0e" notitle, 1 with lines dt 2 lc rgb "#888888" notitle
unset multiplot

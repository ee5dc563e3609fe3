# pipelines/survey_training.gp — the survey over training (beyond the paper's App. F): (a) the mass
# on the sink (the first four positions), (b) the position-0 read-norm ratio r0 (median over heads)
# and (c) the blind-mass ratio at the 30th percentile (1: routing blind to read norms) of one model's
# intermediate checkpoints, against the tokens it had been trained on; one series per model in the
# data.
#
#   gnuplot -e "data='runs/survey/training/pythia-160m.tsv'; output='runs/survey/training/pythia-160m.png'" \
#       pipelines/survey_training.gp
#
# data: survey.mk's training table (columns model, step, tokens, sink_mass, r0_ratio,
# blind_ratio_p30; a header line). A checkpoint at 0 tokens (Pythia's step0) has no place on the log
# axis: it is drawn at the axis's left edge with an open marker, and the caption counts those.
# text (optional): what was read, for the caption.

if (!exists("data")) data = 'runs/survey/training/pythia-160m.tsv'
if (!exists("output")) output = 'runs/survey/training/pythia-160m.png'
if (!exists("text")) text = ''
here = ARG0[1:strlen(ARG0) - strlen('survey_training.gp')]
load here . 'figures.gp'

set datafile separator "\t"
seen = " "
smallest = 1e300
untrained = 0
note(tokens) = (tokens > 0 ? (tokens < smallest ? smallest = tokens : 0) : untrained = untrained + 1, 0)
stats data using (collect(strcol(1)) + note(column(3))) nooutput
models = seen
floor = smallest < 1e300 ? smallest / 4 : 1
array colors[5] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
array points[5] = [7, 5, 9, 13, 11]
trained(m) = strcol(1) eq m && column(3) > 0 ? column(3) : NaN
at_floor(m) = strcol(1) eq m && column(3) <= 0 ? floor : NaN

set terminal pngcairo size 1500,560 font "sans,11" noenhanced
set output output
set multiplot layout 1,3 margins 0.06, 0.98, 0.33, 0.92 spacing 0.08, 0
set logscale x
set xrange [floor / 2:*]
set xlabel "training tokens"
set format x "%.0s%c"
set grid
set key at graph 0, -0.19 left top horizontal reverse Left samplen 2 width 2
array titles[3] = ["(a) sink mass", "(b) r0 ratio", "(c) blind-mass ratio @30"]
array ylabels[3] = ["share of attention mass", "r_0 / mean r_j (ratio)", "quiet-band mass / band size"]
do for [p = 1:3] {
  set title titles[p]
  set ylabel ylabels[p]
  if (p == 3) {
    set label 1 "Intermediate checkpoints surveyed by sg-survey on " . (strlen(text) > 0 ? text : "WikiText-2 validation text") . ".\n" . \
        "One point per checkpoint, its summary over heads as in Table 12" . \
        (untrained > 0 ? sprintf("; %d untrained checkpoint%s (0 tokens) drawn at the left edge, open marker", untrained, untrained == 1 ? "" : "s") : "") . ".\n" . \
        "(a) Attention mass on the first four positions; (b) position 0's read norm r_0 over the mean read norm, the median over heads;\n" . \
        "(c) mass on the quiet band (reads below the 30th percentile of norm) over the band's share of keys (1: routing blind to norms)." \
        at screen 0.01, 0.13 left front
  }
  plot for [i = 1:words(models)] data using (trained(word(models, i))):(column(3 + p)) \
       with linespoints lw 2 pt points[(i - 1) % 5 + 1] lc rgb colors[(i - 1) % 5 + 1] title word(models, i), \
       for [i = 1:words(models)] data using (at_floor(word(models, i))):(column(3 + p)) \
       with points pt 6 ps 1.5 lc rgb colors[(i - 1) % 5 + 1] notitle, \
       NaN notitle
}
unset multiplot

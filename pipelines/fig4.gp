# pipelines/fig4.gp — Figure 4: incidence in pretrained models against their size. (a) The mass on
# the sink (the first four positions), (b) the blind-mass ratio at the 30th percentile (1: routing
# blind to read norms), (c) the share of content through the quiet band at the 30th percentile; one
# series per family (GPT-2, Pythia).
#
#   gnuplot -e "data='runs/survey/fig4-models.tsv'; output='runs/survey/fig4.png'" pipelines/fig4.gp
#
# data: `sg-tabulate SURVEY.h5… --where scope=model --where statistic=sink_mass,blind_ratio_p30,content_share_p30
# --rows family,model,params_m --cols statistic --col-order sink_mass,blind_ratio_p30,content_share_p30
# --format tsv` (columns family, model, params_m, then the three statistics).

if (!exists("data")) data = 'runs/survey/fig4-models.tsv'
if (!exists("output")) output = 'runs/survey/fig4.png'

set datafile separator "\t"
set terminal pngcairo size 1500,460 font "sans,11" noenhanced
set output output
set multiplot layout 1,3
set logscale x
set xlabel "parameters (millions)"
set grid
set key top left noenhanced
family(f) = strcol(1) eq f ? $3 : NaN
array titles[3] = ["(a) sink mass", "(b) blind-mass ratio @30", "(c) content share @30"]
array ylabels[3] = ["share of attention mass", "quiet-band mass / band size", "share of a_ij |v_j|"]
do for [p = 1:3] {
  set title titles[p]
  set ylabel ylabels[p]
  plot data using (family("gpt2")):(column(3 + p)) with linespoints lw 2 pt 7 lc rgb "#1f77b4" title "GPT-2", \
       data using (family("gpt_neox")):(column(3 + p)) with linespoints lw 2 pt 5 lc rgb "#ff7f0e" title "Pythia", \
       data using (family("sinkgate")):(column(3 + p)) with points pt 9 ps 1.5 lc rgb "#2ca02c" title "sinkgate"
}
unset multiplot

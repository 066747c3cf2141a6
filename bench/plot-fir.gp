# plot-fir.gp — x-realtime per kernel length, one line per program.
#   gnuplot -e "datafile='fir.dat'; outfile='fir.png'; secs='60'" plot-fir.gp
# datafile: tab-separated, header row "taps prog1 prog2 ...", '?' = missing.
if (!exists("datafile")) datafile = 'fir.dat'
if (!exists("outfile")) outfile = 'fir.png'
if (!exists("secs")) secs = '60'

if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  set terminal pngcairo size 1000,640 enhanced font "sans,10"
} else {
  set terminal png size 1000,640
}
set output outfile

set datafile separator "\t"
set datafile missing "?"
set title sprintf("FIR throughput, 48 kHz stereo f32, %s s input (whole process, median)", secs)
set xlabel "kernel length (taps)"
set ylabel "x-realtime (higher is better)"
set logscale xy 2
set format x "%.0f"
set format y "%g"
set grid xtics ytics mxtics mytics
set key outside right top
set xrange [*:*]
set offsets graph 0.05, graph 0.05, 0, 0

# Ten distinct colours (the default cycle repeats after 8 lines).
colors = "#1b9e77 #d95f02 #7570b3 #e7298a #66a61e #e6ab02 #a6761d #666666 #1f78b4 #e31a1c"
do for [i=1:10] { set linetype i lc rgb word(colors, i) lw 2 pt i + 3 }

# Column count from the header line.
stats datafile using 1 nooutput
ncols = STATS_columns

# cudafilter (columns headed ours-*) solid, peers dashed.
header = system(sprintf("head -n 1 '%s'", datafile))
dash(i) = strstrt(word(header, i), "ours") == 1 ? 1 : 2
plot for [i=2:ncols] datafile using 1:i with linespoints lt (i - 1) \
     dashtype dash(i) title word(header, i)

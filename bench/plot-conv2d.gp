# plot-conv2d.gp — ms per 1080p frame per kernel, one panel per format,
# one bar per tool (log scale; lower is better).
#   gnuplot -e "datafile='conv2d.dat'; outfile='conv2d.png'; formats='GRAY32F GRAY8 RGBA'" plot-conv2d.gp
# datafile (written by run-conv2d-peers): a '#' header line, then one block
# per format (blocks separated by two blank lines, in the order of
# `formats`), each row "case ours cv2.filter2D cv2.sepFilter2D
# cv2.GaussianBlur ffmpeg_convolution ffmpeg_tmix", '?' = not measured.
if (!exists("datafile")) datafile = 'conv2d.dat'
if (!exists("outfile")) outfile = 'conv2d.png'
if (!exists("formats")) formats = 'GRAY32F GRAY8 RGBA'

n = words(formats)
if (strstrt(GPVAL_TERMINALS, "pngcairo") > 0) {
  set terminal pngcairo size 1100, 330 * n + 60 enhanced font "sans,10"
} else {
  set terminal png size 1100, 330 * n + 60
}
set output outfile

set datafile separator "\t"
set datafile missing "?"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y 10
set format y "%g"
set grid ytics mytics
set ylabel "ms / frame (log)"
set key outside right top
set xtics rotate by -20 noenhanced
set yrange [*:*]

colors = "#1b9e77 #d95f02 #7570b3 #e7298a #66a61e #e6ab02"
titles = "ours cv2.filter2D cv2.sepFilter2D cv2.GaussianBlur ffmpeg-convolution ffmpeg-tmix"

set multiplot layout n, 1 title "2D / temporal convolution of 1920x1080 frames (lower is better)"
do for [b = 1:n] {
  set title word(formats, b) noenhanced
  plot for [i = 2:7] datafile index (b - 1) using i:xtic(1) \
       lc rgb word(colors, i - 1) \
       title word(titles, i - 1) noenhanced
}
unset multiplot

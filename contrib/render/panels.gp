# contrib/render/panels.gp: the panels of contrib/grafana/backfill.json,
# drawn by gnuplot from what scrape.pl wrote.
#
#   gnuplot -e "dir='DIR'; jobs='job1 job2'; at=T; out='x.png'; title='...'" panels.gp
#
# "at" is the second (since the first scrape) shown by the progress bars and
# marked on the time series.  Lag panels say so when no job copies from
# another server (their values are NaN).

set terminal pngcairo size 1400,900 font "DejaVu Sans,10" background "#111217"
set output out
set termoption noenhanced
set multiplot title title textcolor "#d8d9da" font ",13"
set border lc "#5a5a5a"
set tics textcolor "#ccccdc"
set key textcolor "#ccccdc" top left
set grid lc "#2c2c2c" lw 1
set xlabel "seconds" textcolor "#ccccdc"
colors = "#73bf69 #5794f2 #ff9830 #b877d9 #f2cc0c #8ab8ff"
n = words(jobs)
set style line 99 lc "#f2495c" dt 2 lw 1
set arrow 1 from at, graph 0 to at, graph 1 nohead ls 99 front

# ---- progress per job: horizontal bars as of "at" ----
set origin 0.0, 0.62
set size 0.5, 0.34
set title sprintf("Progress per job (at %d s)", at) textcolor "#d8d9da"
unset arrow 1
set xrange [0:100]
set yrange [-0.6:n-0.4]
set xlabel "%" textcolor "#ccccdc"
set ytics () 
do for [i=1:n] { set ytics add (word(jobs,i) i-1) }
set linetype 1 lc rgb word(colors,1)
set linetype 2 lc rgb word(colors,2)
set linetype 3 lc rgb word(colors,3)
set style fill solid 0.9 noborder
unset key
# bars.dat (run.sh): "job value" as of "at", one line per job in order
plot sprintf("%s/bars.dat", dir) using ($2*50):0:($2*50):(0.3):($0+1) \
        with boxxy lc variable, \
     '' using ($2*100 + 1):0:(sprintf("%.1f%%", $2*100)) with labels left textcolor "#d8d9da"
set ytics autofreq
set key
set xrange [*:*]
set yrange [*:*]
set xlabel "seconds"
set arrow 1 from at, graph 0 to at, graph 1 nohead ls 99 front

# ---- progress over time ----
set origin 0.5, 0.62
set size 0.5, 0.34
set title "Progress (backfill_job_progress_ratio)" textcolor "#d8d9da"
set yrange [0:105]
set format y "%.0f%%"
plot for [i=1:n] sprintf("%s/progress_ratio.%s.dat", dir, word(jobs,i)) using 1:($2*100) \
        with lines lw 2 lc rgb word(colors,i) title word(jobs,i)
set format y "%g"
set yrange [*:*]
set yrange [0:*]

# ---- rows per second ----
set origin 0.0, 0.31
set size 0.5, 0.31
set title "Rows per second (backfill_job_rows_per_second)" textcolor "#d8d9da"
plot for [i=1:n] sprintf("%s/rows_per_second.%s.dat", dir, word(jobs,i)) using 1:2 \
        with lines lw 2 lc rgb word(colors,i) title word(jobs,i)

# ---- throttled ----
set origin 0.5, 0.31
set size 0.5, 0.31
set title "Throttled (backfill_job_throttled)" textcolor "#d8d9da"
set yrange [-0.1:n*1.2]
set ytics ("0" 0, "1" 1)
plot for [i=1:n] sprintf("%s/throttled.%s.dat", dir, word(jobs,i)) using 1:($2 + (i-1)*0.04) \
        with steps lw 2 lc rgb word(colors,i) title word(jobs,i)
set ytics autofreq
set yrange [0:*]

# ---- lag, bytes and seconds ----
set origin 0.0, 0.0
set size 0.5, 0.31
set title "Lag behind the source, bytes (backfill_job_lag_bytes)" textcolor "#d8d9da"
set ylabel "KiB" textcolor "#ccccdc"
plot for [i=1:n] sprintf("%s/lag_bytes.%s.dat", dir, word(jobs,i)) using 1:($2/1024) \
        with lines lw 2 lc rgb word(colors,i) title word(jobs,i)
unset ylabel
set origin 0.5, 0.0
set size 0.5, 0.31
set title "Lag behind the source, seconds (backfill_job_lag_seconds)" textcolor "#d8d9da"
plot for [i=1:n] sprintf("%s/lag_seconds.%s.dat", dir, word(jobs,i)) using 1:2 \
        with lines lw 2 lc rgb word(colors,i) title word(jobs,i)
unset multiplot

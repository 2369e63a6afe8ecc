# bench/lib.sh: what bench/remote.sh and bench/shards.sh share, sourced by
# both: the clock, the machine's CPU time, medians over the runs, and the
# targets (bench/verify.sh takes its medians from here too).  The script sets RUNS and fills, for each contender NAME and run
# R, S[NAME,R] (seconds) and C[NAME,R] (the machine's CPU seconds); before
# its targets it may set TARGET_WIDTH, the width of their names.

now() { date +%s.%N; }
log() { echo "$*" >&2; }

# CPU time spent by the whole machine so far, in seconds (every core: user,
# nice, system, irq, softirq, steal; /proc/stat counts in USER_HZ ticks)
cpu_busy() { awk -v hz="$(getconf CLK_TCK)" '/^cpu / {print ($2 + $3 + $4 + $7 + $8 + $9) / hz}' /proc/stat; }
# after a timed copy: its CPU seconds, from cpu_busy at its start (CPU0)
cpu_since() { echo "$(cpu_busy) - $CPU0" | bc; }

# the median of the numbers on stdin (0 for none)
median() { sort -g | awk '{v[NR] = $1} END {if (NR == 0) print 0; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# the median time, and CPU time, of contender $1 over the runs
med() { for r in $(seq 1 "$RUNS"); do echo "${S[$1,$r]}"; done | median; }
cpu_med() { for r in $(seq 1 "$RUNS"); do echo "${C[$1,$r]}"; done | median; }
# speed of $1 to $2 (the inverse ratio of their times), the median of the
# runs': above 1, $1 is faster
speed() { for r in $(seq 1 "$RUNS"); do echo "${S[$2,$r]} / ${S[$1,$r]}" | bc -l; done | median; }

# target NAME VALUE BOUND: prints the target's line, and counts a miss in FAILS
FAILS=0
target() {
    local res=PASS
    [ "$(echo "$2 >= $3" | bc -l)" = 1 ] || { res=FAIL; FAILS=$((FAILS + 1)); }
    printf "%-${TARGET_WIDTH:-52}s %.2f  >= %.2f  %s\n" "$1" "$2" "$3" "$res"
}

# shm_pages: the page size of the clusters' shared memory
. "$(dirname "${BASH_SOURCE[0]}")/pages.sh"

#!/bin/bash
# bench/shards.sh: copying a table sharded over several servers (see
# bench/README.md and doc/sharded.md).
#
#   bash bench/shards.sh [--rows N] [--runs K] [--pgbench-seconds S] [--quick]
#                        [--huge-pages try|on|off]
#
# Four throw-away clusters on this machine: three sources (wal_level =
# logical), each with one table t_1, t_2 or t_3 of N / 3 rows (N default
# 3000000, keys in a range of their own), and a local one (the library
# preloaded, postgres_fdw) where `shards` is a table partitioned by range of
# the key whose three partitions are the sources' tables as postgres_fdw
# foreign tables.  Measures, K times (default 3), one contender after the
# other on fresh targets, the initial copy of the three tables by:
#   - logical replication: three subscriptions, one per source
#     (copy_data = true), into the three partitions of a local partitioned
#     table, made disabled and enabled in one transaction, timed from it
#     until pg_subscription_rel says 'r' for all three;
#   - one cdc job over `shards`, parallelism 3 and 6 (start_job, timed until
#     finished);
# checks that each copied every row, and prints the medians, each ratio the
# median of the per-run ratios (the subscriptions' time over the job's:
# above 1 the job is faster), the CPU time the whole machine and the four
# clusters alone (and the local one's share) spent on each copy, the rows
# each read on the sources per row, and whether the target is met (the
# job at parallelism 3 at least the subscriptions' speed; exit 1 when
# missed).  Once: the writers' TPS on the
# three sources (a pgbench on each at once, S seconds, by default 60% of
# the job's median time at parallelism 3, so that it ends first) with no
# copy and during the copy of a job at parallelism 3, and the job's copy
# compared with the sources both ways after it finished.
# --quick: 60000 rows, 1 run.  --huge-pages: the clusters' huge_pages (default
# try, PostgreSQL's); the report says which page size their shared memory got.
# BIN (default /usr/lib/postgresql/15/bin) names the installation to use.
set -euo pipefail

ROWS=3000000
RUNS=3
HUGE_PAGES=try
PGB_SECS=auto
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --huge-pages) HUGE_PAGES=$2; shift 2 ;;
        --pgbench-seconds) PGB_SECS=$2; shift 2 ;;
        --quick) ROWS=60000; RUNS=1; shift ;;
        -h|--help) sed -n 2,34p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done
BIN=${BIN:-/usr/lib/postgresql/15/bin}
NSRC=3
PER=$(( ROWS / NSRC ))
ROWS=$(( PER * NSRC ))
# source k holds the even keys (k - 1) * STRIDE + 2 .. (k - 1) * STRIDE + 2 * PER;
# the writers insert odd ones in the same range
STRIDE=$(( 2 * PER + 2 ))
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
DIR=$(mktemp -d /tmp/backfill-shards-bench.XXXXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
BASE=$(( 40000 + RANDOM % 10000 ))
declare -A PORT=([loc]=$BASE [s1]=$(( BASE + 1 )) [s2]=$(( BASE + 2 )) [s3]=$(( BASE + 3 )))
START=$(date +%s)
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

cleanup() {
    for n in loc s1 s2 s3; do
        "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/$n" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT

q() { local n=$1; shift; "${RUNAS[@]}" "$BIN/psql" -X -At -h "$DIR" -p "${PORT[$n]}" -d postgres -v ON_ERROR_STOP=1 "$@"; }
lq() { q loc "$@"; }
. "$(dirname "$0")/lib.sh"
# CPU time spent so far by the four clusters' processes alone (the machine
# is shared): each postmaster's own and its exited children's (cutime,
# cstime), and its live children's; in seconds
cpu_ours() {
    local n pm pids p
    for n in ${1:-loc s1 s2 s3}; do
        pm=$(head -1 "$DIR/$n/postmaster.pid")
        pids="$pm $(pgrep -P "$pm" | tr '\n' ' ')"
        for p in $pids; do
            # fields after the command's closing parenthesis: utime, stime,
            # (cutime, cstime) are the 12th to 15th
            sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk -v pm="$p" -v top="$pm" \
                '{print $12 + $13 + (pm == top ? $14 + $15 : 0)}'
        done
    done | awk -v hz="$(getconf CLK_TCK)" '{s += $1} END {print s / hz}'
}
# since a copy's start (OURS0, LOC0): the four clusters', the local one's
ours_since() { echo "$(cpu_ours) - $OURS0" | bc; }
loc_since() { echo "$(cpu_ours loc) - $LOC0" | bc; }

for n in loc s1 s2 s3; do
    "${RUNAS[@]}" "$BIN/initdb" -D "$DIR/$n" -A trust >/dev/null
    cat >>"$DIR/$n/postgresql.conf" <<EOF
port = ${PORT[$n]}
unix_socket_directories = '$DIR'
listen_addresses = ''
wal_init_zero = off
max_wal_size = 4GB
log_statement = none
huge_pages = $HUGE_PAGES
EOF
done
for k in 1 2 3; do
    cat >>"$DIR/s$k/postgresql.conf" <<EOF
shared_buffers = 256MB
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
EOF
done
# three subscriptions: three apply workers and three table syncs at once
cat >>"$DIR/loc/postgresql.conf" <<EOF
shared_buffers = 512MB
shared_preload_libraries = 'backfill'
max_worker_processes = 24
max_logical_replication_workers = 8
EOF
for n in loc s1 s2 s3; do "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/$n" -l "$DIR/$n.log" -w start >/dev/null; done
SHM_PAGES=$(shm_pages "$DIR/loc" "$DIR/s1" "$DIR/s2" "$DIR/s3")

log "sources: $NSRC x $PER rows"
for k in 1 2 3; do
    q "s$k" -q <<EOF
CREATE TABLE t_$k (id bigint PRIMARY KEY, a int, b text);
INSERT INTO t_$k SELECT ($k - 1) * $STRIDE + g * 2, g % 1000, md5(g::text) FROM generate_series(1, $PER) g;
ANALYZE t_$k;
CREATE PUBLICATION bench_pub FOR TABLE t_$k;
EOF
done
lq -q <<EOF
CREATE EXTENSION backfill;
CREATE EXTENSION postgres_fdw;
CREATE SCHEMA remote;
CREATE TABLE shards (id bigint, a int, b text) PARTITION BY RANGE (id);
-- the subscriptions' target: the sources' table names, as partitions
CREATE TABLE sub_t (id bigint, a int, b text, PRIMARY KEY (id)) PARTITION BY RANGE (id);
EOF
for k in 1 2 3; do
    lq -q <<EOF
CREATE SERVER s$k FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$DIR', port '${PORT[s$k]}', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER s$k;
CREATE FOREIGN TABLE remote.t_$k PARTITION OF shards
    FOR VALUES FROM ($(( (k - 1) * STRIDE ))) TO ($(( k * STRIDE )))
    SERVER s$k OPTIONS (schema_name 'public', table_name 't_$k');
CREATE TABLE public.t_$k PARTITION OF sub_t FOR VALUES FROM ($(( (k - 1) * STRIDE ))) TO ($(( k * STRIDE )));
EOF
done

# rows read from the sources' tables so far (sequential and index fetches),
# summed over the three: the statistics counters, which a backend flushes
# at least once a second while it runs and when it exits
src_reads() {
    local k
    for k in 1 2 3; do
        q "s$k" -c "SELECT seq_tup_read + coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE relname = 't_$k'"
    done | awk '{s += $1} END {print s}'
}
checkpoint() { for n in s1 s2 s3 loc; do q "$n" -q -c "CHECKPOINT"; done; }
# waits in the server, polling every 10 ms: a client polling with a psql
# per look would cost the machine as much CPU as a copy's own processes
SUB_WAIT="DO \$\$BEGIN WHILE NOT (SELECT count(*) = 3 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel) LOOP PERFORM pg_sleep(0.01); END LOOP; END\$\$"
job_wait() { echo "DO \$\$BEGIN WHILE (SELECT status NOT IN ('finished', 'failed', 'cancelled') FROM backfill.job WHERE job_id = $1) LOOP PERFORM pg_sleep(0.01); END LOOP; END\$\$"; }
# after job_wait: stops the benchmark unless job $1 finished
job_finished() {
    [ "$(lq -c "SELECT status FROM backfill.job WHERE job_id = $1")" = finished ] && return
    echo "job $1 did not finish:" >&2; lq -c "SELECT * FROM backfill.jobs WHERE job_id = $1" >&2; exit 1
}
sub_create() {
    echo "CREATE SUBSCRIPTION bench_sub_$1 CONNECTION 'host=$DIR port=${PORT[s$1]} dbname=postgres' PUBLICATION bench_pub WITH (copy_data = true, enabled = false)"
}
# The three subscriptions are made disabled (each makes its slot on its
# source), then enabled in one transaction, which the timing starts with:
# the launcher starts the apply workers of every enabled subscription when
# it wakes, then waits wal_retrieve_retry_interval (5 s) before it starts
# more, so subscriptions enabled one after the other would start 5 s apart.
sub_run() {
    local t0 t1 n r0
    lq -q -c "SET client_min_messages = warning" -c "$(sub_create 1)" -c "$(sub_create 2)" -c "$(sub_create 3)"
    checkpoint
    r0=$(src_reads)
    CPU0=$(cpu_busy); OURS0=$(cpu_ours); LOC0=$(cpu_ours loc); t0=$(now)
    lq -q -c "BEGIN" -c "ALTER SUBSCRIPTION bench_sub_1 ENABLE" -c "ALTER SUBSCRIPTION bench_sub_2 ENABLE" \
        -c "ALTER SUBSCRIPTION bench_sub_3 ENABLE" -c "COMMIT" -c "$SUB_WAIT"
    t1=$(now); cpu=$(cpu_since); ours=$(ours_since); loc=$(loc_since)
    n=$(lq -c "SELECT count(*) FROM sub_t")
    [ "$n" = "$ROWS" ] || { echo "the subscriptions copied $n rows, not $ROWS" >&2; exit 1; }
    for k in 1 2 3; do lq -q -c "SET client_min_messages = warning" -c "DROP SUBSCRIPTION bench_sub_$k"; done
    lq -q -c "TRUNCATE sub_t"
    sleep 1
    printf '%s %s %.3f %s %s\n' "$(echo "$t1 - $t0" | bc)" "$cpu" "$(echo "($(src_reads) - $r0) / $ROWS" | bc -l)" "$ours" "$loc"
}
job_run() {
    local p=$1 job t0 t1 n r0
    job=$(lq -c "SELECT backfill.create_job('copy_$p', 'shards', kind => 'cdc', parallelism => $p)")
    checkpoint
    sleep 1
    r0=$(src_reads)
    CPU0=$(cpu_busy); OURS0=$(cpu_ours); LOC0=$(cpu_ours loc); t0=$(now)
    lq -q -c "SELECT backfill.start_job($job)" -c "$(job_wait "$job")" >/dev/null
    t1=$(now); cpu=$(cpu_since); ours=$(ours_since); loc=$(loc_since)
    job_finished "$job"
    n=$(lq -c "SELECT count(*) FROM copy_$p")
    [ "$n" = "$ROWS" ] || { echo "the job (parallelism $p) copied $n rows, not $ROWS" >&2; exit 1; }
    lq -q -c "SELECT backfill.drop_job($job)" >/dev/null
    sleep 1
    printf '%s %s %.3f %s %s\n' "$(echo "$t1 - $t0" | bc)" "$cpu" "$(echo "($(src_reads) - $r0) / $ROWS" | bc -l)" "$ours" "$loc"
}
declare -A S C R O L
for r in $(seq 1 "$RUNS"); do
    log "run $r: three subscriptions' initial syncs at once"
    read -r "S[sub,$r]" "C[sub,$r]" "R[sub,$r]" "O[sub,$r]" "L[sub,$r]" < <(sub_run)
    for p in 3 6; do
        log "run $r: one cdc job over the three sources, parallelism $p"
        read -r "S[p$p,$r]" "C[p$p,$r]" "R[p$p,$r]" "O[p$p,$r]" "L[p$p,$r]" < <(job_run $p)
    done
    log "run $r: subscriptions ${S[sub,$r]} s (CPU machine ${C[sub,$r]} s, clusters ${O[sub,$r]} s, local ${L[sub,$r]} s, rows read ${R[sub,$r]}), job p3 ${S[p3,$r]} s (${C[p3,$r]}, ${O[p3,$r]}, ${L[p3,$r]}, ${R[p3,$r]}), p6 ${S[p6,$r]} s (${C[p6,$r]}, ${O[p6,$r]}, ${L[p6,$r]}, ${R[p6,$r]})"
done
ours_med() { for r in $(seq 1 "$RUNS"); do echo "${O[$1,$r]}"; done | median; }
loc_med() { for r in $(seq 1 "$RUNS"); do echo "${L[$1,$r]}"; done | median; }
reads_med() { for r in $(seq 1 "$RUNS"); do echo "${R[$1,$r]}"; done | median; }

# ---- writers on the three sources ----
# each source's pgbench updates one of its rows and upserts an odd key of
# its range (new rows, then updates), 2 clients, all three at once; the
# figure is the sum of the three TPS
for k in 1 2 3; do
    cat >"$DIR/w_$k.sql" <<EOF
\set i random(1, $PER)
UPDATE t_$k SET a = a + 1 WHERE id = ($k - 1) * $STRIDE + :i * 2;
INSERT INTO t_$k VALUES (($k - 1) * $STRIDE + :i * 2 + 1, 0, 'new') ON CONFLICT (id) DO UPDATE SET a = t_$k.a + 1;
EOF
    chmod 644 "$DIR/w_$k.sql"
done
tps_all() {
    local k
    for k in 1 2 3; do
        "${RUNAS[@]}" "$BIN/pgbench" -n -h "$DIR" -p "${PORT[s$k]}" -c 2 -j 2 -T "$PGB_SECS" -f "$DIR/w_$k.sql" postgres \
            >"$DIR/pgbench_$k.out" 2>&1 &
    done
    wait
    for k in 1 2 3; do sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$DIR/pgbench_$k.out"; done | awk '{s += $1} END {printf "%.0f\n", s}'
}
# the writers must end before the copy does: by default they run for 60%
# of the job's median time at parallelism 3 (writers slow it down further)
if [ "$PGB_SECS" = auto ]; then
    PGB_SECS=$(echo "$(med p3) * 0.6" | bc -l | awk '{s = int($1); print s < 1 ? 1 : s}')
fi
log "writers on the three sources, no copy ($PGB_SECS s)"
checkpoint
TPS0=$(tps_all)
log "writers on the three sources during a job's copy (parallelism 3)"
checkpoint
job=$(lq -c "SELECT backfill.create_job('copy_w', 'shards', kind => 'cdc', parallelism => 3)")
lq -q -c "SELECT backfill.start_job($job)" >/dev/null
TPS1=$(tps_all)
W_STATUS=$(lq -c "SELECT status FROM backfill.jobs WHERE job_id = $job")
lq -q -c "$(job_wait "$job")"
job_finished "$job"
# the writers' rows came in by the sources' WAL: the copy equals the
# sources both ways once the job has applied what they wrote
DIFF=$(lq -c "SELECT (SELECT count(*) FROM (SELECT * FROM shards EXCEPT SELECT * FROM copy_w) x) + (SELECT count(*) FROM (SELECT * FROM copy_w EXCEPT SELECT * FROM shards) y)")
lq -q -c "SELECT backfill.drop_job($job)" >/dev/null
SLOTS=$(for k in 1 2 3; do q "s$k" -c "SELECT count(*) FROM pg_replication_slots"; done | awk '{s += $1} END {print s}')

echo "backfill shards benchmark: $(git -C "$(dirname "$0")" log --oneline -1 2>/dev/null || echo unknown); rows $ROWS over $NSRC sources, runs $RUNS, $(nproc) cores, $(( $(date +%s) - START )) s, load average at the start $LOAD0"
printf '%-52s %s\n' "shared memory of the 4 clusters" "$SHM_PAGES"
printf '%-52s %.2f s\n' "3 subscriptions at once, until all are ready" "$(med sub)"
for p in 3 6; do
    printf '%-52s %.2f s  (%.2f of the subscriptions'"'"' speed)\n' "one cdc job over the 3 sources, parallelism $p" \
        "$(med p$p)" "$(speed p$p sub)"
done
printf '%-52s %.2f / %.2f / %.2f s\n' "CPU time of the machine, sub / p3 / p6" "$(cpu_med sub)" "$(cpu_med p3)" "$(cpu_med p6)"
printf '%-52s %.2f / %.2f / %.2f s\n' "CPU time of the 4 clusters, sub / p3 / p6" "$(ours_med sub)" "$(ours_med p3)" "$(ours_med p6)"
printf '%-52s %.2f / %.2f / %.2f s\n' "  of which the local cluster's, sub / p3 / p6" "$(loc_med sub)" "$(loc_med p3)" "$(loc_med p6)"
printf '%-52s %.2f / %.2f / %.2f\n' "rows read on the sources per row, sub / p3 / p6" "$(reads_med sub)" "$(reads_med p3)" "$(reads_med p6)"
target "target: job p3 vs the subscriptions" "$(speed p3 sub)" 1.0
printf '%-52s %.2f  (info)\n' "job p6 vs the subscriptions" "$(speed p6 sub)"
printf '%-52s %s  (pgbench, %s s on each source)\n' "writers' TPS on the 3 sources, no copy (sum)" "$TPS0" "$PGB_SECS"
printf '%-52s %s  (%.2f of no copy; job %s when they ended)\n' "writers' TPS during a job's copy, parallelism 3" \
    "$TPS1" "$(echo "$TPS1 / $TPS0" | bc -l)" "$W_STATUS"
printf '%-52s %s\n' "job with writers: differences after finish" "$DIFF"
printf '%-52s %s\n' "slots left on the sources after drop_job" "$SLOTS"
echo
echo "exit code: $(( FAILS > 0 ? 1 : 0 )) ($FAILS target(s) missed)"
[ "$FAILS" = 0 ]

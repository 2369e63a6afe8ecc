#!/bin/bash
# bench/remote.sh: copying a table from another server (see bench/README.md).
#
#   bash bench/remote.sh [--rows N] [--runs K] [--huge-pages try|on|off]
#
# Two throw-away clusters on this machine (source: wal_level = logical; local:
# the library preloaded, postgres_fdw), N rows (default 1000000) on the
# source.  Measures, K times (default 3), the initial copy of the table by:
#   - logical replication (CREATE SUBSCRIPTION ... WITH (copy_data = true),
#     timed until pg_subscription_rel says 'r');
#   - pgcopydb (Debian's package, installed by this script when missing):
#     clone --table-jobs 1 --index-jobs 1 into an empty database, timed
#     from start to end (schema, data, index, vacuum);
#   - a remote cdc job at parallelism 1, 2 and 4 (start_job, timed until
#     finished; its downstream's key index is built once, after the copy);
# and prints the medians, each ratio the median of the per-run ratios, and
# whether the targets are met; and the CPU time the whole machine spent on
# each copy (both servers and the kernel, from /proc/stat): with source and
# copy on the same cores, what parallelism can gain is bounded by it.  Once:
#   - the same killed (kill -9 of the local postmaster) at half way: the rows
#     copied again (the subscription starts its table over; the job re-reads
#     its unfinished splits);
#   - the writers' TPS on the source (pgbench, 10 s) with no copy and during
#     a copy at parallelism 4.
# --huge-pages: the clusters' huge_pages (default try, PostgreSQL's); the
# report says which page size their shared memory got.
# BIN (default /usr/lib/postgresql/15/bin) names the installation to use.
set -euo pipefail

ROWS=1000000
RUNS=3
HUGE_PAGES=try
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --huge-pages) HUGE_PAGES=$2; shift 2 ;;
        -h|--help) sed -n 2,26p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done
BIN=${BIN:-/usr/lib/postgresql/15/bin}
if ! command -v pgcopydb >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q pgcopydb >/dev/null
    else
        echo "pgcopydb is not installed: apt-get install pgcopydb" >&2; exit 2
    fi
fi
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
DIR=$(mktemp -d /tmp/backfill-remote-bench.XXXXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
SPORT=$(( 40000 + RANDOM % 10000 )); LPORT=$(( SPORT + 1 ))

cleanup() {
    for n in src loc; do
        "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/$n" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$DIR"
}
trap cleanup EXIT

sq() { "${RUNAS[@]}" "$BIN/psql" -X -At -h "$DIR" -p "$SPORT" -d postgres -v ON_ERROR_STOP=1 "$@"; }
lq() { "${RUNAS[@]}" "$BIN/psql" -X -At -h "$DIR" -p "$LPORT" -d postgres -v ON_ERROR_STOP=1 "$@"; }
. "$(dirname "$0")/lib.sh"

for n in src loc; do
    "${RUNAS[@]}" "$BIN/initdb" -D "$DIR/$n" -A trust >/dev/null
    cat >>"$DIR/$n/postgresql.conf" <<EOF
unix_socket_directories = '$DIR'
listen_addresses = ''
shared_buffers = 512MB
wal_init_zero = off
max_wal_size = 4GB
log_statement = none
huge_pages = $HUGE_PAGES
EOF
done
cat >>"$DIR/src/postgresql.conf" <<EOF
port = $SPORT
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
EOF
cat >>"$DIR/loc/postgresql.conf" <<EOF
port = $LPORT
shared_preload_libraries = 'backfill'
max_worker_processes = 16
max_logical_replication_workers = 4
restart_after_crash = on
EOF
for n in src loc; do "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/$n" -l "$DIR/$n.log" -w start >/dev/null; done
SHM_PAGES=$(shm_pages "$DIR/src" "$DIR/loc")

log "source: $ROWS rows"
sq -q <<EOF
CREATE TABLE t (id int PRIMARY KEY, a int, b text);
INSERT INTO t SELECT g * 2, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g;
ANALYZE t;
CREATE PUBLICATION bench_pub FOR TABLE t;
EOF
lq -q <<EOF
CREATE EXTENSION backfill;
CREATE EXTENSION postgres_fdw;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$DIR', port '$SPORT', dbname 'postgres');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src INTO remote;
EOF

# ---- the timed copies, RUNS times ----
sub_ready() { lq -c "SELECT count(*) = 1 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel"; }
sub_drop() {
    lq -q -c "DROP SUBSCRIPTION IF EXISTS bench_sub"
}
sub_create() {
    lq -q -c "CREATE SUBSCRIPTION bench_sub CONNECTION 'host=$DIR port=$SPORT dbname=postgres' PUBLICATION bench_pub WITH (copy_data = true)"
}
# the subscriber's table has the source's name
lq -q -c "CREATE TABLE public.t (id int PRIMARY KEY, a int, b text)"
# waits in the server, polling every 10 ms: a client polling with a psql
# per look would cost the machine as much CPU as a copy's own processes
SUB_WAIT="DO \$\$BEGIN WHILE NOT (SELECT count(*) = 1 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel) LOOP PERFORM pg_sleep(0.01); END LOOP; END\$\$"
job_wait() { echo "DO \$\$BEGIN WHILE (SELECT status FROM backfill.job WHERE job_id = $1) <> 'finished' LOOP PERFORM pg_sleep(0.01); END LOOP; END\$\$"; }
sub_run() {
    local t0 t1
    lq -q -c "CHECKPOINT"
    CPU0=$(cpu_busy); t0=$(now)
    lq -q -c "CREATE SUBSCRIPTION bench_sub CONNECTION 'host=$DIR port=$SPORT dbname=postgres' PUBLICATION bench_pub WITH (copy_data = true)" -c "$SUB_WAIT"
    t1=$(now); cpu=$(cpu_since)
    sub_drop; lq -q -c "TRUNCATE public.t"
    echo "$(echo "$t1 - $t0" | bc) $cpu"
}
pgcopydb_run() {
    local r=$1 t0 t1
    lq -q -c "CREATE DATABASE pgc_$r"
    lq -q -c "CHECKPOINT"
    CPU0=$(cpu_busy); t0=$(now)
    "${RUNAS[@]}" env PATH="$BIN:$PATH" pgcopydb clone --dir "$DIR/pgcopydb_$r" \
        --source "host=$DIR port=$SPORT dbname=postgres" --target "host=$DIR port=$LPORT dbname=pgc_$r" \
        --table-jobs 1 --index-jobs 1 --no-owner --no-acl >"$DIR/pgcopydb_$r.log" 2>&1 \
        || { echo "pgcopydb failed: see $DIR/pgcopydb_$r.log" >&2; tail -20 "$DIR/pgcopydb_$r.log" >&2; exit 1; }
    t1=$(now); cpu=$(cpu_since)
    [ "$(lq -d "pgc_$r" -c "SELECT count(*) FROM public.t")" = "$ROWS" ] \
        || { echo "pgcopydb copied a wrong number of rows" >&2; exit 1; }
    lq -q -c "DROP DATABASE pgc_$r"
    echo "$(echo "$t1 - $t0" | bc) $cpu"
}
job_run() {
    local p=$1 job t0 t1
    job=$(lq -c "SELECT backfill.create_job('copy_$p', 'remote.t', kind => 'cdc', parallelism => $p)")
    lq -q -c "CHECKPOINT"
    CPU0=$(cpu_busy); t0=$(now)
    lq -q -c "SELECT backfill.start_job($job)" -c "$(job_wait "$job")" >/dev/null
    t1=$(now); cpu=$(cpu_since)
    [ "$(lq -c "SELECT count(*) FROM copy_$p")" = "$ROWS" ] \
        || { echo "the job copied a wrong number of rows" >&2; exit 1; }
    lq -q -c "SELECT backfill.drop_job($job)" >/dev/null
    echo "$(echo "$t1 - $t0" | bc) $cpu"
}
declare -A S C
for r in $(seq 1 "$RUNS"); do
    log "run $r: logical replication's initial sync"
    read -r "S[sub,$r]" "C[sub,$r]" < <(sub_run)
    log "run $r: pgcopydb clone --table-jobs 1"
    read -r "S[pgcopydb,$r]" "C[pgcopydb,$r]" < <(pgcopydb_run "$r")
    for p in 1 2 4; do
        log "run $r: remote cdc job, parallelism $p"
        read -r "S[p$p,$r]" "C[p$p,$r]" < <(job_run $p)
    done
    log "run $r: subscription ${S[sub,$r]} s (CPU ${C[sub,$r]} s), pgcopydb ${S[pgcopydb,$r]} s (${C[pgcopydb,$r]}), job p1 ${S[p1,$r]} s (${C[p1,$r]}), p2 ${S[p2,$r]} s (${C[p2,$r]}), p4 ${S[p4,$r]} s (${C[p4,$r]})"
done
BEST=p1
for p in p2 p4; do
    if [ "$(echo "$(speed $p sub) > $(speed $BEST sub)" | bc -l)" = 1 ]; then BEST=$p; fi
done

# ---- killed at half way ----
kill_local() {
    local pm
    pm=$(head -1 "$DIR/loc/postmaster.pid")
    kill -9 "$pm"
    while kill -0 "$pm" 2>/dev/null || pgrep -P "$pm" >/dev/null; do sleep 0.1; done
    sleep 1
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/loc" -l "$DIR/loc.log" -w start >/dev/null
}
log "logical replication killed at half way"
sub_create
# a small table may be copied whole between two looks: then nothing is killed
until [ "$(lq -c "SELECT coalesce(max(tuples_processed), 0) >= $ROWS / 2 FROM pg_stat_progress_copy")" = t ] ||
    [ "$(sub_ready)" = t ]; do sleep 0.05; done
SUB_AGAIN=$(lq -c "SELECT max(tuples_processed) FROM pg_stat_progress_copy")
if [ -n "$SUB_AGAIN" ]; then
    kill_local
    SUB_AGAIN="$SUB_AGAIN rows (it starts over)"
else
    SUB_AGAIN="not measured: its copy ended between two looks"
fi
until [ "$(sub_ready)" = t ]; do sleep 0.2; done
sub_drop; lq -q -c "TRUNCATE public.t"

log "remote cdc job (parallelism 4) killed at half way"
job=$(lq -c "SELECT backfill.create_job('copy_k', 'remote.t', kind => 'cdc', parallelism => 4)")
lq -q -c "SELECT backfill.start_job($job)" >/dev/null
until [ "$(lq -c "SELECT row_count >= $ROWS / 2 OR status = 'finished' FROM backfill.jobs WHERE job_id = $job")" = t ]; do sleep 0.05; done
kill_local
# what the restart reads again: the splits started and not finished as
# committed, and the splits in flight at the kill (their barrier was lost),
# at most one per actor: bounded by 4 of the largest split
JOB_AGAIN=$(lq -c "SELECT 'at most 4 splits of at most ' || max(row_count) || ' rows (committed unfinished: ' || count(*) FILTER (WHERE NOT backfill_finished AND row_count > 0) || ')' FROM backfill.state_$job")
until [ "$(lq -c "SELECT status FROM backfill.jobs WHERE job_id = $job")" = finished ]; do sleep 0.2; done
JOB_AGAIN=$(lq -c "SELECT 'at most 4 splits of at most ' || max(row_count) || ' rows'  FROM backfill.state_$job") # after the finish every split has its size
DIFF=$(lq -c "SELECT (SELECT count(*) FROM (SELECT * FROM remote.t EXCEPT SELECT * FROM copy_k) x) + (SELECT count(*) FROM (SELECT * FROM copy_k EXCEPT SELECT * FROM remote.t) y)")
lq -q -c "SELECT backfill.drop_job($job)" >/dev/null

# ---- writers on the source ----
cat >"$DIR/w.sql" <<EOF
\set i random(1, $ROWS * 2)
UPDATE t SET a = a + 1 WHERE id = :i;
INSERT INTO t VALUES (-:i, 0, 'new') ON CONFLICT (id) DO UPDATE SET a = t.a + 1;
EOF
chmod 644 "$DIR/w.sql"
tps() { "${RUNAS[@]}" "$BIN/pgbench" -n -h "$DIR" -p "$SPORT" -c 2 -j 2 -T 10 -f "$DIR/w.sql" postgres 2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
log "writers, no copy"
TPS0=$(tps)
log "writers during a copy at parallelism 4"
job=$(lq -c "SELECT backfill.create_job('copy_w', 'remote.t', kind => 'cdc', parallelism => 4)")
lq -q -c "SELECT backfill.start_job($job)" >/dev/null
TPS1=$(tps)
lq -q -c "SELECT backfill.drop_job($job)" >/dev/null

TARGET_WIDTH=48
echo "backfill remote benchmark: $(git -C "$(dirname "$0")" log --oneline -1 2>/dev/null || echo unknown); rows $ROWS, runs $RUNS, $(nproc) cores"
printf '%-48s %s\n' "rows" "$ROWS"
printf '%-48s %s\n' "shared memory of the 2 clusters" "$SHM_PAGES"
printf '%-48s %.2f s\n' "logical replication initial sync" "$(med sub)"
printf '%-48s %.2f s  (%.2f of the subscription'"'"'s speed)\n' "pgcopydb clone --table-jobs 1" "$(med pgcopydb)" "$(speed pgcopydb sub)"
for p in 1 2 4; do
    printf '%-48s %.2f s  (%.2f of the subscription'"'"'s speed, %.2f of pgcopydb'"'"'s)\n' "remote cdc job, parallelism $p" \
        "$(med p$p)" "$(speed p$p sub)" "$(speed p$p pgcopydb)"
done
printf '%-48s %.2f / %.2f / %.2f / %.2f / %.2f s\n' "CPU time, subscription / pgcopydb / p1 / p2 / p4" \
    "$(cpu_med sub)" "$(cpu_med pgcopydb)" "$(cpu_med p1)" "$(cpu_med p2)" "$(cpu_med p4)"
target "target: p1 vs the subscription" "$(speed p1 sub)" 1.0
target "target: best (${BEST/p/parallelism }) vs the subscription" "$(speed $BEST sub)" 1.2
target "target: best vs pgcopydb" "$(speed $BEST pgcopydb)" 1.5
printf '%-48s %s\n' "killed at half: subscription copies again" "$SUB_AGAIN"
printf '%-48s %s\n' "killed at half: job (p=4) reads again" "$JOB_AGAIN"
printf '%-48s %s\n' "killed at half: job differences after finish" "$DIFF"
printf '%-48s %s\n' "writers' TPS on the source, no copy" "$TPS0"
printf '%-48s %s  (%.2f of no copy)\n' "writers' TPS during a copy at parallelism 4" "$TPS1" "$(echo "$TPS1 / $TPS0" | bc -l)"
echo
echo "exit code: $(( FAILS > 0 ? 1 : 0 )) ($FAILS target(s) missed)"
[ "$FAILS" = 0 ]

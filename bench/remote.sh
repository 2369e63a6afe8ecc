#!/bin/bash
# bench/remote.sh: copying a table from another server (see bench/README.md).
#
#   bash bench/remote.sh [--rows N]
#
# Two throw-away clusters on this machine (source: wal_level = logical; local:
# the library preloaded, postgres_fdw), N rows (default 1000000) on the
# source.  Measures, in one run:
#   1. the initial copy by logical replication (CREATE SUBSCRIPTION ... WITH
#      (copy_data = true), timed until pg_subscription_rel says 'r') and by a
#      remote cdc job at parallelism 1, 2 and 4 (start_job, timed until
#      finished);
#   2. the same killed (kill -9 of the local postmaster) at half way: the rows
#      copied again (the subscription starts its table over; the job re-reads
#      its unfinished splits);
#   3. the writers' TPS on the source (pgbench, 10 s) with no copy and during
#      a copy at parallelism 4.
# BIN (default /usr/lib/postgresql/15/bin) names the installation to use.
set -euo pipefail

ROWS=1000000
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        -h|--help) sed -n 2,18p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done
BIN=${BIN:-/usr/lib/postgresql/15/bin}
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
now() { date +%s.%N; }
log() { echo "$*" >&2; }

for n in src loc; do
    "${RUNAS[@]}" "$BIN/initdb" -D "$DIR/$n" -A trust >/dev/null
    cat >>"$DIR/$n/postgresql.conf" <<EOF
unix_socket_directories = '$DIR'
listen_addresses = ''
shared_buffers = 512MB
wal_init_zero = off
max_wal_size = 4GB
log_statement = none
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

# ---- logical replication's initial sync ----
sub_ready() { lq -c "SELECT count(*) = 1 AND bool_and(srsubstate = 'r') FROM pg_subscription_rel"; }
sub_drop() {
    lq -q -c "DROP SUBSCRIPTION IF EXISTS bench_sub"
}
sub_create() {
    lq -q -c "CREATE SUBSCRIPTION bench_sub CONNECTION 'host=$DIR port=$SPORT dbname=postgres' PUBLICATION bench_pub WITH (copy_data = true)"
}
# the subscriber's table has the source's name
lq -q -c "CREATE TABLE public.t (id int PRIMARY KEY, a int, b text)"

log "logical replication: initial sync"
t0=$(now); sub_create
until [ "$(sub_ready)" = t ]; do sleep 0.1; done
t1=$(now)
SUB_S=$(echo "$t1 - $t0" | bc)
sub_drop; lq -q -c "TRUNCATE public.t"; lq -q -c "CHECKPOINT"

# ---- the remote cdc job ----
job_run() {
    local p=$1 job
    job=$(lq -c "SELECT backfill.create_job('copy_$p', 'remote.t', kind => 'cdc', parallelism => $p)")
    lq -q -c "CHECKPOINT"
    t0=$(now)
    lq -q -c "SELECT backfill.start_job($job)" >/dev/null
    until [ "$(lq -c "SELECT status FROM backfill.jobs WHERE job_id = $job")" = finished ]; do sleep 0.1; done
    t1=$(now)
    echo "$(echo "$t1 - $t0" | bc) $job"
}
declare -A JOB_S
for p in 1 2 4; do
    log "remote cdc job, parallelism $p"
    read -r s job < <(job_run $p)
    JOB_S[$p]=$s
    lq -q -c "SELECT backfill.drop_job($job)" >/dev/null
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
until [ "$(lq -c "SELECT coalesce(max(tuples_processed), 0) >= $ROWS / 2 FROM pg_stat_progress_copy")" = t ]; do sleep 0.05; done
SUB_AGAIN=$(lq -c "SELECT max(tuples_processed) FROM pg_stat_progress_copy")
kill_local
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

printf '%-48s %s\n' "rows" "$ROWS"
printf '%-48s %.2f s\n' "logical replication initial sync" "$SUB_S"
for p in 1 2 4; do
    printf '%-48s %.2f s  (%.2f of the subscription'"'"'s speed)\n' "remote cdc job, parallelism $p" "${JOB_S[$p]}" "$(echo "$SUB_S / ${JOB_S[$p]}" | bc -l)"
done
printf '%-48s %s rows (it starts over)\n' "killed at half: subscription copies again" "$SUB_AGAIN"
printf '%-48s %s\n' "killed at half: job (p=4) reads again" "$JOB_AGAIN"
printf '%-48s %s\n' "killed at half: job differences after finish" "$DIFF"
printf '%-48s %s\n' "writers' TPS on the source, no copy" "$TPS0"
printf '%-48s %s  (%.2f of no copy)\n' "writers' TPS during a copy at parallelism 4" "$TPS1" "$(echo "$TPS1 / $TPS0" | bc -l)"

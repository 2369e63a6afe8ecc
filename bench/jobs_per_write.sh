#!/bin/bash
# bench/jobs_per_write.sh: what each job costs a write to its upstream.
#
#   bash bench/jobs_per_write.sh [--jobs "0 1 10 100"] [--runs K] [--pgbench-seconds S]
#                                [--clients C] [--rows N] [--sync] [--keep]
#
# Every job that is not cancelled keeps a trigger on its upstream; once
# finished, its apply trigger writes each change to its downstream in the
# writer's transaction.  This measures one-row INSERTs (pgbench, a new key
# each) into a table with 0, 1, 10 and 100 finished jobs on it, and prints
# each TPS (the median of K runs) with its ratio to the TPS without jobs.
# The jobs are the default kind (arrangement), copying every column; they
# are added between measurements, so the same table grows along.  The
# writers commit with synchronous_commit = off, so that the figures show the
# triggers' work rather than the disk's flushes; --sync measures with
# synchronous_commit = on.
#
# Starts a throw-away PostgreSQL 15 cluster in a temp dir (own port, unix
# socket in that dir, listen_addresses = ''), as bench/run.sh does, and
# removes it at the end; it never touches another cluster.  It uses the
# extension installed in BIN's installation.
set -euo pipefail

JOBS="0 1 10 100"
RUNS=3
PGB_SECS=10
CLIENTS=2
ROWS=10000
SYNC=off
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --jobs) JOBS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --pgbench-seconds) PGB_SECS=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --rows) ROWS=$2; shift 2 ;;
        --sync) SYNC=on; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n 2,21p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

. "$(dirname "$0")/cluster.sh"

log "cluster in $DIR, port $PORT; measuring $COMMIT"
cluster_start <<CONF
shared_buffers = 256MB
max_wal_size = 4GB
wal_init_zero = off
jit = off
synchronous_commit = $SYNC
# the jobs of this table are more than the default cap
backfill.max_jobs_per_upstream = -1
CONF

sql <<SQL
CREATE EXTENSION backfill;
CREATE TABLE up (id bigint PRIMARY KEY, a int, b text);
INSERT INTO up SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g;
CREATE SEQUENCE up_ids START $(( ROWS + 1 ));
VACUUM ANALYZE up;
SQL
SCRIPT=$DIR/insert.sql
cat > "$SCRIPT" <<'EOS'
INSERT INTO up VALUES (nextval('up_ids'), 1, 'new');
EOS
[ "$(id -u)" = 0 ] && chown postgres "$SCRIPT"

# median TPS of RUNS pgbench runs
measure() {
    local r tps all=()
    for r in $(seq 1 "$RUNS"); do
        sql -c CHECKPOINT
        tps=$("${RUNAS[@]}" env PGHOST="$PGHOST" PGPORT="$PGPORT" "$BIN/pgbench" -n -U postgres \
                -c "$CLIENTS" -j "$CLIENTS" -T "$PGB_SECS" -f "$SCRIPT" postgres 2>/dev/null \
              | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
        all+=("$tps")
    done
    printf '%s\n' "${all[@]}" | sort -g | sed -n "$(( (RUNS + 1) / 2 ))p"
}

have=0
base=
printf 'one-row INSERT TPS by finished jobs on the table: %s; %d clients, %d s, median of %d; %d rows to start; synchronous_commit %s\n' \
    "$COMMIT" "$CLIENTS" "$PGB_SECS" "$RUNS" "$ROWS" "$SYNC"
printf '%-6s %12s %10s\n' jobs tps ratio
for n in $JOBS; do
    while [ "$have" -lt "$n" ]; do
        have=$(( have + 1 ))
        job=$(val "SELECT backfill.create_job('down_$have', 'up')")
        sql -c "CALL backfill.run_job($job)" >/dev/null
    done
    [ "$(val "SELECT count(*) FROM backfill.job WHERE status = 'finished'")" = "$n" ] \
        || { echo "the jobs did not all finish" >&2; exit 1; }
    log "$n finished jobs: measuring"
    tps=$(measure)
    [ -z "$base" ] && base=$tps
    printf '%-6s %12.1f %10.3f\n' "$n" "$tps" "$(echo "$tps / $base" | bc -l)"
done
log "done"

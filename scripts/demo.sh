#!/bin/bash
# scripts/demo.sh: backfill on a throw-away cluster, start to finish.
#
# Builds and installs the extension, starts a private PostgreSQL 15 cluster
# in a temporary directory (never an existing one), and shows:
#   1. an arrangement job filling a copy of a 200,000-row table while pgbench
#      writes to it, killed mid-backfill (kill -9 of its backend), then
#      resumed where its last barrier left it, and verified;
#   2. a legacy no-shuffle job killed the same way, which cannot resume and
#      stops with RisingWave's error, then recreated and finished.
# The cluster is removed at the end.
set -euo pipefail

PGVER=${PGVER:-15}
ROWS=${ROWS:-200000}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"
. scripts/common.sh
install_packages postgresql-$PGVER postgresql-server-dev-$PGVER make gcc

export PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
BIN=$($PG_CONFIG --bindir)
step "building and installing the extension"
make -s
install_extension

# the cluster runs as "postgres" when we are root: PostgreSQL refuses root
RUNAS=()
[ "$(id -u)" = 0 ] && RUNAS=(runuser -u postgres --)
DIR=$(mktemp -d /tmp/backfill-demo.XXXXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PORT=$(( 20000 + RANDOM % 20000 ))
export PGHOST=$DIR PGPORT=$PORT PGDATABASE=postgres
cleanup() {
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$DIR"
}
trap cleanup EXIT

step "starting a throw-away cluster in $DIR (port $PORT)"
"${RUNAS[@]}" "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
"${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w \
    -o "-p $PORT -k $DIR -c listen_addresses='' -c restart_after_crash=on" start >/dev/null

sql() { "${RUNAS[@]}" env PGHOST="$PGHOST" PGPORT="$PGPORT" "$BIN/psql" -X -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
show() { printf '\n$ psql -c "%s"\n' "$1"; sql -c "$1"; }
value() {  # show a command and its output; print its last line on stdout
    local out
    printf '\n$ psql -c "%s"\n' "$1" >&2
    out=$(sql -Atc "$1" 2>&1)
    printf '%s\n' "$out" >&2
    tail -1 <<<"$out"
}
wait_ready() { until sql -Atc 'SELECT 1' >/dev/null 2>&1; do sleep 0.2; done; }
wait_rows() {  # wait until job $1 has committed at least $2 rows
    until [ "$(sql -Atc "SELECT row_count >= $2 FROM backfill.jobs WHERE job_id = $1")" = t ]; do sleep 0.1; done
}
kill_runner() {  # kill -9 the backend running job $1; the postmaster restarts
    local pid
    pid=$(sql -Atc "SELECT pid FROM pg_stat_activity WHERE query LIKE 'CALL backfill.run_job($1)%'")
    echo "kill -9 $pid   (the backend running job $1)"
    kill -9 "$pid"
    sleep 1
    wait_ready
}

step "an upstream table of $ROWS rows, and writers"
sql -q <<SQL
CREATE EXTENSION backfill;
CREATE TABLE orders (id bigint PRIMARY KEY, customer int, amount numeric(10,2), note text);
INSERT INTO orders SELECT g, g % 1000, (g % 997) * 1.25, md5(g::text) FROM generate_series(1, $ROWS) g;
SQL
cat > "$DIR/writes.sql" <<SQL
\set k random(1, $ROWS * 2)
INSERT INTO orders VALUES (:k, 1, 1.00, 'new') ON CONFLICT (id) DO UPDATE SET note = 'upserted';
UPDATE orders SET amount = amount + 1 WHERE id = :k / 2;
DELETE FROM orders WHERE id = :k / 3 + 7;
UPDATE orders SET id = id + $ROWS * 3 WHERE id = :k / 5 + 11;
SQL
[ "$(id -u)" = 0 ] && chown postgres "$DIR/writes.sql"
# a crash restart ends pgbench's sessions too: start it again each time
( while :; do
    "${RUNAS[@]}" "$BIN/pgbench" -n -h "$DIR" -p "$PORT" -U postgres -c 2 -T 600 \
        -f "$DIR/writes.sql" postgres >/dev/null 2>&1 || sleep 0.5
  done ) &
WRITERS=$!

step "1. an arrangement job, killed mid-backfill and resumed"
# a rate limit (rows/s per actor) keeps it mid-backfill until the kill
A=$(value "SELECT backfill.create_job('orders_mv', 'orders', kind => 'arrangement', parallelism => 4, rate_limit => $(( ROWS / 20 )))")
sql -q -c "SET backfill.barrier_interval_ms = 200" -c "CALL backfill.run_job($A)" >/dev/null 2>&1 &
wait_rows "$A" $(( ROWS / 3 ))
show "SELECT ddl_id, progress FROM backfill.ddl_progress"
kill_runner "$A"
show "SELECT job_id, kind, status, row_count FROM backfill.jobs"
echo
show "SELECT backfill.alter_rate_limit($A, NULL)"
echo "\$ psql -c \"CALL backfill.run_job($A)\"      # resumes after each vnode's position"
sql -c "SET backfill.barrier_interval_ms = 200" -c "CALL backfill.run_job($A)"
show "SELECT job_id, kind, status, row_count, progress FROM backfill.jobs"
show "SELECT count(*) AS being_created FROM backfill.ddl_progress"
echo "(writers still running: the downstream now follows the upstream in each writer's transaction)"
show "SELECT count(*) AS problems FROM backfill.verify_job($A)"

step "2. a legacy no-shuffle job, killed mid-backfill"
L=$(value "SELECT backfill.create_job('orders_legacy', 'orders', kind => 'no_shuffle', parallelism => 2, rate_limit => $(( ROWS / 10 )))")
sql -q -c "SET backfill.barrier_interval_ms = 200" -c "CALL backfill.run_job($L)" >/dev/null 2>&1 &
wait_rows "$L" $(( ROWS / 4 ))
kill_runner "$L"
echo
echo "\$ psql -c \"CALL backfill.run_job($L)\""
sql -c "CALL backfill.run_job($L)" 2>&1 || true
show "SELECT job_id, status, last_error FROM backfill.jobs WHERE job_id = $L"
show "SELECT count(*) AS problems FROM backfill.verify_job($L)"
echo "(the downstream holds exactly what the last committed barrier wrote)"
R=$(value "SELECT backfill.recreate_job($L, 'arrangement')")
show "SELECT backfill.alter_rate_limit($R, NULL)"
echo "\$ psql -c \"CALL backfill.run_job($R)\""
sql -c "SET backfill.barrier_interval_ms = 200" -c "CALL backfill.run_job($R)"
show "SELECT job_id, kind, status, row_count FROM backfill.jobs ORDER BY job_id"

kill "$WRITERS" 2>/dev/null || true
pkill -f "pgbench.*$DIR/writes.sql" 2>/dev/null || true
wait "$WRITERS" 2>/dev/null || true
step "writers stopped; both downstreams equal their upstream"
show "SELECT (SELECT count(*) FROM backfill.verify_job($A)) AS problems_$A, (SELECT count(*) FROM backfill.verify_job($R)) AS problems_$R, (SELECT count(*) FROM orders) AS upstream, (SELECT count(*) FROM orders_mv) AS downstream"

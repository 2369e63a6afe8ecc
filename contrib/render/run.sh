#!/bin/bash
# contrib/render/run.sh: a real run of backfill, watched through
# postgres_exporter and contrib/prometheus/queries.yaml, drawn as the panels
# of contrib/grafana/backfill.json with gnuplot (Grafana is not in Debian).
#
#   bash contrib/render/run.sh [OUT.png]        default doc/dashboard.png
#
# Needs: a PostgreSQL 15 with backfill installed (BIN, default
# `pg_config --bindir`), prometheus-postgres-exporter, gnuplot (Debian:
# gnuplot-nox), perl.  Run as a user that may run initdb (not root).
#
# A throw-away cluster in a temporary directory (a socket there, no TCP)
# runs three jobs in background workers at a rate limit, while writers keep
# writing: orders_mv (arrangement, 4 actors), events_mv (snapshot, 2
# actors) and remote_mv (cdc from a foreign table of postgres_fdw, whose
# source is another database of the same cluster, written to all along, so
# that it lags).  The exporter listens on 127.0.0.1; scrape.pl reads
# /metrics once a second until the jobs have finished; panels.gp draws the
# panels, the progress bars as of the moment orders_mv was half done.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${1:-$TOP/doc/dashboard.png}
BIN=${BIN:-$(pg_config --bindir)}
EXPORTER=${EXPORTER:-/usr/bin/prometheus-postgres-exporter}
W=$(mktemp -d /tmp/backfill-render.XXXX)
PORT=$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1")->sockport')
HTTP=$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1")->sockport')
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    "$BIN/pg_ctl" -D "$W/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$W"
}
trap cleanup EXIT

"$BIN/initdb" -D "$W/data" -A trust >/dev/null
cat >> "$W/data/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$W'
listen_addresses = ''
shared_preload_libraries = 'backfill'
wal_level = logical
max_worker_processes = 16
max_replication_slots = 10
backfill.barrier_interval_ms = 500
CONF
"$BIN/pg_ctl" -D "$W/data" -l "$W/log" -w start >/dev/null
export PGHOST=$W PGPORT=$PORT PGDATABASE=postgres
psql() { "$BIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }

psql -c 'CREATE DATABASE source'
psql -d source -c "CREATE TABLE t (id int PRIMARY KEY, a int, b text);
    INSERT INTO t SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 40000) g;"
psql <<SQL
CREATE EXTENSION backfill;
CREATE EXTENSION postgres_fdw;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$W', port '$PORT', dbname 'source');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src INTO remote;
CREATE TABLE orders (id bigint PRIMARY KEY, amount int, note text);
INSERT INTO orders SELECT g, g % 500, md5(g::text) FROM generate_series(1, 120000) g;
CREATE TABLE events (id bigint PRIMARY KEY, kind int, payload text);
INSERT INTO events SELECT g, g % 7, md5(g::text) FROM generate_series(1, 45000) g;
ANALYZE;
SELECT backfill.create_job('orders_mv', 'orders', parallelism => 4, chunk_size => 200, rate_limit => 1000);
SELECT backfill.create_job('events_mv', 'events', kind => 'snapshot', parallelism => 2, chunk_size => 200, rate_limit => 700);
SELECT backfill.create_job('remote_mv', 'remote.t', kind => 'cdc', chunk_size => 500, rate_limit => 1000);
SQL

# writers: the upstreams and the source change all along
( while :; do
    psql -c "UPDATE orders SET amount = amount + 1 WHERE id = (random() * 120000)::int;
             INSERT INTO events SELECT max(id) + 1, 1, 'new' FROM events;" >/dev/null 2>&1 || true
    psql -d source -c "INSERT INTO t SELECT m + g, 1, md5(g::text)
                       FROM (SELECT max(id) AS m FROM t) x, generate_series(1, 200) g;" >/dev/null 2>&1 || true
    sleep 0.2
  done ) &
pids+=($!)

DATA_SOURCE_NAME="host=$W port=$PORT dbname=postgres sslmode=disable" \
    "$EXPORTER" --web.listen-address="127.0.0.1:$HTTP" \
    --extend.query-path="$TOP/contrib/prometheus/queries.yaml" \
    --disable-default-metrics --disable-settings-metrics \
    --no-collector.database --no-collector.bgwriter --log.level=warn &
pids+=($!)
sleep 1

psql -c "SELECT backfill.start_job(job_id) FROM backfill.job ORDER BY job_id" >/dev/null
perl "$HERE/scrape.pl" "http://127.0.0.1:$HTTP/metrics" 180 "$W/scrape"
psql -c "SELECT pid, job_id, actor_id, phase FROM backfill.progress" >/dev/null

# the moment orders_mv was half done
JOBS="orders_mv events_mv remote_mv"
AT=$(awk '$2 >= 0.5 { print int($1); exit }' "$W/scrape/progress_ratio.orders_mv.dat")
AT=${AT:-10}
# each job's progress at the scrape nearest to that moment, for the bars
for j in $JOBS; do
    awk -v at="$AT" -v j="$j" '{ d = $1 - at; if (d < 0) d = -d; if (!n++ || d < best) { best = d; v = $2 } }
        END { print j, (n ? v : 0) }' "$W/scrape/progress_ratio.$j.dat"
done > "$W/scrape/bars.dat"
gnuplot -e "dir='$W/scrape'; jobs='$JOBS'; at=$AT; out='$OUT'; title='backfill jobs: a real run scraped from postgres_exporter once a second, drawn with gnuplot'" \
    "$HERE/panels.gp"
echo "$OUT"

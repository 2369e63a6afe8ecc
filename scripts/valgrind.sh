#!/bin/bash
# scripts/valgrind.sh: the pg_regress and isolation suites against a server
# that runs under valgrind; fails if valgrind reports an error whose stack
# passes through backfill.so.
#
#   bash scripts/valgrind.sh [--installed]
#
# With --installed it neither builds nor installs: scripts/test.sh runs it so,
# beside its TAP tests, once it has installed this tree's build.
#
# The server is a throw-away cluster in a temp dir (its own port and
# socket), started through a wrapper that runs every postgres process under
# valgrind (memcheck, no leak check: backends exit without freeing, by
# design).  The suites run as in scripts/test.sh, without the library
# preloaded; then the server restarts with it preloaded and jobs of every
# kind run in background workers, so the workers and the launcher run under
# valgrind too.
# PostgreSQL's own noise (its allocator, WAL padding, the dynamic loader) is
# not the extension's: only reports with a backfill.so frame count.  No
# existing cluster is touched.
set -euo pipefail

PGVER=${PGVER:-15}
HERE=$(cd "$(dirname "$0")/.." && pwd)
cd "$HERE"

. scripts/common.sh
install_packages postgresql-$PGVER postgresql-server-dev-$PGVER make gcc valgrind

INSTALLED=0
[ "${1:-}" = --installed ] && INSTALLED=1

export PG_CONFIG=/usr/lib/postgresql/$PGVER/bin/pg_config
BIN=$("$PG_CONFIG" --bindir)
if [ $INSTALLED = 0 ]; then
    step "build (warnings are errors)"
    make -s clean
    make -s PG_CFLAGS_EXTRA=-Werror
    install_extension
fi

DIR=$(mktemp -d /tmp/backfill-valgrind.XXXXXX)
run_as_tester() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# the suites run on a copy of the tree, so that another run of them in the
# tree (scripts/test.sh's, at the same time) keeps its own results
workdir=$DIR/tree
cp -a "$HERE"/. "$workdir"/
rm -rf "$workdir/.git"
[ "$(id -u)" = 0 ] && chown -R postgres "$DIR"
PORT=$(( 40000 + RANDOM % 20000 ))
cleanup() {
    run_as_tester "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

step "cluster under valgrind in $DIR"
cat > "$DIR/postgres-valgrind" <<EOF
#!/bin/sh
exec valgrind --quiet --tool=memcheck --trace-children=yes --leak-check=no \\
    --error-limit=no --num-callers=30 --read-var-info=no \\
    --log-file=$DIR/vg.%p.log $BIN/postgres "\$@"
EOF
chmod 755 "$DIR/postgres-valgrind"
[ "$(id -u)" = 0 ] && chown -R postgres "$DIR"
run_as_tester "$BIN/initdb" -D "$DIR/data" -A trust -U postgres >/dev/null
cat >> "$DIR/data/postgresql.conf" <<EOF
listen_addresses = ''
port = $PORT
unix_socket_directories = '$DIR'
max_worker_processes = 16
wal_level = logical
max_replication_slots = 10
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
# no lines of progress: a run takes many times as long under valgrind, and
# a line every 10 s would land in the expected outputs
backfill.client_progress_interval = 0
EOF
run_as_tester "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -p "$DIR/postgres-valgrind" \
    -w -t 300 start >/dev/null

step "pg_regress and isolation tests"
status=0
(cd "$workdir" && run_as_tester env PGHOST="$DIR" PGPORT="$PORT" PGUSER=postgres \
    make installcheck TAP_TESTS=) || status=1

step "background workers, preloaded"
run_as_tester "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 300 stop >/dev/null
echo "shared_preload_libraries = 'backfill'" >> "$DIR/data/postgresql.conf"
run_as_tester "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -p "$DIR/postgres-valgrind" \
    -w -t 300 start >/dev/null
run_as_tester env PGHOST="$DIR" PGPORT="$PORT" "$BIN/psql" -X -q -U postgres -d postgres \
    -v ON_ERROR_STOP=1 <<'SQL' || status=1
CREATE EXTENSION IF NOT EXISTS backfill;
SET backfill.barrier_interval_ms = 0;
CREATE TABLE vg_up (id int PRIMARY KEY, t text, n numeric);
INSERT INTO vg_up SELECT g, repeat(md5(g::text), 1 + g % 5), g / 3.0 FROM generate_series(1, 3000) g;
CREATE TEMP TABLE vg_jobs AS
SELECT backfill.create_job('vg_' || k, 'vg_up', kind => k, chunk_size => 100,
                           parallelism => CASE k WHEN 'cdc' THEN 1 ELSE 2 END) AS id
  FROM unnest(ARRAY['arrangement', 'snapshot', 'cdc']) k;
SELECT backfill.start_job(id) FROM vg_jobs;
UPDATE vg_up SET t = 'changed' WHERE id % 7 = 0;
DELETE FROM vg_up WHERE id % 11 = 0;
UPDATE vg_up SET id = id + 10000 WHERE id % 13 = 0;
SELECT backfill.wait_job(id) FROM vg_jobs;
DO $$
BEGIN
    IF EXISTS (SELECT FROM vg_jobs, backfill.verify_job(id)) THEN
        RAISE EXCEPTION 'a job is not consistent';
    END IF;
END $$;
SELECT backfill.drop_job(id) FROM vg_jobs;
DROP TABLE vg_up;
SQL
run_as_tester "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t 300 stop >/dev/null || true

step "valgrind reports"
# one report: from its "==pid== <kind>" line to the blank "==pid== " line
reports=$(cat "$DIR"/vg.*.log 2>/dev/null | awk '
    /^==[0-9]+== [A-Z]/ { block = $0; inblock = 1; next }
    inblock && /^==[0-9]+== *$/ { if (block ~ /backfill\.so/) print block "\n"; inblock = 0; next }
    inblock { block = block "\n" $0 }')
total=$(cat "$DIR"/vg.*.log 2>/dev/null | grep -cE '^==[0-9]+== (Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and destination)' || true)
echo "valgrind reports in all processes: $total; with a backfill.so frame: $(printf '%s' "$reports" | grep -cE '^==[0-9]+== [A-Z]' || true)"
if [ -n "$reports" ]; then
    printf '%s\n' "$reports"
    status=1
fi

if [ $status = 0 ]; then
    rm -rf "$DIR"
    step "no valgrind report in backfill.so, and the suites passed"
else
    step "failed; logs kept in $DIR"
fi
exit $status

#!/bin/bash
# bench/cutover.sh: what a cutover costs the writers (see doc/cutover.md).
#
#   BIN=/usr/lib/postgresql/15/bin bash bench/cutover.sh [--rows N] [--seconds S]
#                                   [--clients C] [--rate R] [--lock-timeout MS]
#
# Starts a throw-away PostgreSQL 15 cluster in a temp dir (own port, unix
# socket in that dir), as bench/run.sh does, with the installed extension;
# fills a table of N rows (1 M), copies it with a job of kind arrangement to
# its finish, then runs the same pgbench writers twice for S seconds at a
# fixed rate: once without a cutover (the baseline), once with a cutover in
# the middle of the run.  From pgbench's per-transaction log it prints the
# p99 and the longest latency of both runs, the longest latency of the
# transactions around the swap, and how long the cutover held the lock.
# Targets: no writer waits longer than the lock timeout, and the lock is held
# at most 100 ms; exits non-zero when one is missed.  It never touches any
# other cluster and removes only its own temp dir.
set -euo pipefail

ROWS=1000000
SECS=20
CLIENTS=4
RATE=400
LOCK_MS=1000
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --seconds) SECS=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --lock-timeout) LOCK_MS=$2; shift 2 ;;
        -h|--help) sed -n 2,17p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

BENCH_DIR=backfill-cutover
. "$(dirname "$0")/cluster.sh"

cluster_start <<CONF
max_connections = 50
shared_buffers = 256MB
backfill.client_progress_interval = 0
log_min_messages = log
CONF

log "filling $ROWS rows and copying them"
sql <<SQL
CREATE EXTENSION backfill;
CREATE TABLE orders (id bigint PRIMARY KEY, a int, b text);
INSERT INTO orders SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE orders;
SELECT backfill.create_job('orders_new', 'orders', chunk_size => 10000);
CALL backfill.run_job(1);
SQL
[ "$(val 'SELECT status FROM backfill.job WHERE job_id = 1')" = finished ] || { log "the job did not finish"; exit 1; }

cat > "$DIR/writers.sql" <<SQL
\set k random(1, $ROWS)
UPDATE orders SET a = a + 1 WHERE id = :k;
\set n random(1, $ROWS)
INSERT INTO orders VALUES ($ROWS + :n * $CLIENTS + :client_id, 1, 'new') ON CONFLICT (id) DO UPDATE SET a = orders.a + 1;
SQL
chmod 644 "$DIR/writers.sql"

# one pgbench run; its per-transaction latencies (us) with their end times
writers() {
    local name=$1
    (cd "$DIR" && "${RUNAS[@]}" "$BIN/pgbench" -n -h "$DIR" -p "$PORT" -U postgres -c "$CLIENTS" -j "$CLIENTS" \
        -T "$SECS" -R "$RATE" -l --log-prefix="$DIR/$name" -f "$DIR/writers.sql" postgres >"$DIR/$name.out" 2>&1)
    # client_id transaction_no time script_no time_epoch time_us [schedule_lag]
    cat "$DIR/$name".* | awk '{ printf "%d %.6f\n", $3, $5 + $6 / 1e6 }' > "$DIR/$name.lat"
}
p99() { sort -n "$1" | awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; print v[i] / 1000 }'; }
maxlat() { sort -n "$1" | tail -1 | awk '{ print $1 / 1000 }'; }

log "baseline: $SECS s of writers without a cutover"
writers base
awk '{ print $1 }' "$DIR/base.lat" > "$DIR/base.us"

log "the same writers, with a cutover after $(( SECS / 2 )) s"
writers cut &
WPID=$!
sleep $(( SECS / 2 ))
T0=$(date +%s.%N)
RES=$(val "SELECT attempts_made || ' ' || round(lock_held_ms::numeric, 1)
             FROM backfill.cutover(1, lock_timeout => '${LOCK_MS}ms', attempts => 100)")
T1=$(date +%s.%N)
wait $WPID
read -r ATTEMPTS HELD <<<"$RES"
awk '{ print $1 }' "$DIR/cut.lat" > "$DIR/cut.us"
# the transactions that ended within a second after the cutover began
awk -v t0="$T0" -v t1="$T1" '$2 >= t0 && $2 <= t1 + 1 { print $1 }' "$DIR/cut.lat" > "$DIR/swap.us"

BASE_P99=$(p99 "$DIR/base.us"); BASE_MAX=$(maxlat "$DIR/base.us")
CUT_P99=$(p99 "$DIR/cut.us"); CUT_MAX=$(maxlat "$DIR/cut.us")
SWAP_MAX=$( [ -s "$DIR/swap.us" ] && maxlat "$DIR/swap.us" || echo 0)
CALL_MS=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')

printf '\n%s rows, %s clients at %s tx/s for %s s, lock_timeout %s ms\n' "$ROWS" "$CLIENTS" "$RATE" "$SECS" "$LOCK_MS"
printf '%-44s %12s\n' 'measure' 'ms'
printf '%-44s %12s\n' 'writers, no cutover: p99 latency' "$BASE_P99"
printf '%-44s %12s\n' 'writers, no cutover: max latency' "$BASE_MAX"
printf '%-44s %12s\n' 'writers, with cutover: p99 latency' "$CUT_P99"
printf '%-44s %12s\n' 'writers, with cutover: max latency' "$CUT_MAX"
printf '%-44s %12s\n' 'writers ending around the swap: max latency' "$SWAP_MAX"
printf '%-44s %12s\n' 'cutover: lock held' "$HELD"
printf '%-44s %12s\n' 'cutover: whole call' "$CALL_MS"
printf '%-44s %12s\n' 'cutover: attempts' "$ATTEMPTS"
grep -h "cutover of backfill job" "$DIR/log" | sed 's/^/log: /' || true

rc=0
if awk -v m="$CUT_MAX" -v l="$LOCK_MS" 'BEGIN { exit !(m <= l) }'; then
    echo "PASS  every writer waited at most the lock timeout ($CUT_MAX <= $LOCK_MS ms)"
else
    echo "FAIL  a writer waited longer than the lock timeout ($CUT_MAX > $LOCK_MS ms)"; rc=1
fi
if awk -v h="$HELD" 'BEGIN { exit !(h <= 100) }'; then
    echo "PASS  the lock was held at most 100 ms ($HELD ms)"
else
    echo "FAIL  the lock was held more than 100 ms ($HELD ms)"; rc=1
fi
exit $rc

#!/bin/bash
# bench/verify.sh: what verify_job costs on a job with many keys pending.
#
#   bash bench/verify.sh [--rows N] [--pending "5000 20000 80000"] [--runs K] [--keep]
#
# A job that backfills has keys written since its last barrier: in its
# change table (the trigger kinds) or in its slot (cdc).  verify_job does not
# report them as differences.  This measures, for an arrangement job and a
# cdc job over N rows (default 400000) read to about half, with P of the
# rows below the position updated since the last barrier (each P of
# --pending), the time of verify_job against the time of the comparison a
# user would write by hand, which knows nothing of what is pending: one FULL
# JOIN of the two tables on the key.  It prints the medians of K runs
# (default 3) and each ratio, and checks that the ratio at the largest P is
# at most 2 x the ratio at the smallest: verify_job grows with the table
# and the keys pending, not with their product.
#
# Starts a throw-away PostgreSQL 15 cluster in a temp dir (own port, unix
# socket in that dir, listen_addresses = '', wal_level = logical), as
# bench/run.sh does, and removes it at the end; it never touches another
# cluster.  It uses the extension installed in BIN's installation.
set -euo pipefail

ROWS=400000
PENDING="5000 20000 80000"
RUNS=3
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --pending) PENDING=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n 2,21p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

. "$(dirname "$0")/lib.sh"       # median, med
. "$(dirname "$0")/cluster.sh"   # after lib.sh: its log is the one kept

log "cluster in $DIR, port $PORT; measuring $COMMIT"
cluster_start <<CONF
shared_buffers = 256MB
max_wal_size = 4GB
wal_init_zero = off
wal_level = logical
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
jit = off
client_min_messages = warning
CONF
val "CREATE EXTENSION backfill" >/dev/null

declare -A S

HALF=$(( ROWS / 2 ))
for p in $PENDING; do
    [ "$p" -lt "$HALF" ] || { echo "--pending $p: at most $(( HALF - 1 )) with --rows $ROWS" >&2; exit 2; }
done
for r in $(seq 1 "$RUNS"); do
    for kind in arrangement cdc; do
        for p in $PENDING; do
            sql <<SQL
DROP TABLE IF EXISTS up, down;
CREATE TABLE up (id bigint PRIMARY KEY, a int, b text);
INSERT INTO up SELECT g, g % 1000, md5(g::text) FROM generate_series(1, $ROWS) g;
VACUUM ANALYZE up;
SQL
            # read to about half: a barrier at most every second, HALF rows a second
            id=$(val "SELECT backfill.create_job('down', 'up', kind => '$kind', rate_limit => $HALF)")
            sql -c "CALL backfill.run_job($id, 2)" >/dev/null
            pos=$(val "SELECT min(row_count) FROM backfill.jobs WHERE job_id = $id")
            [ "$pos" -gt "$p" ] || { echo "the $kind job read $pos rows, fewer than $p" >&2; exit 1; }
            # P keys below the position change after the last barrier: pending
            val "UPDATE up SET a = -a - 1 WHERE id <= $p" >/dev/null
            S[$kind.$p.verify,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($id);")
            S[$kind.$p.join,$r]=$(timed "SELECT count(*) FROM up u FULL JOIN down d ON u.id = d.id WHERE u IS DISTINCT FROM d;")
            bad=$(val "SELECT count(*) FROM backfill.verify_job($id)")
            [ "$bad" = 0 ] || { echo "verify_job($id) reported $bad pending keys as differences" >&2; exit 1; }
            val "SELECT backfill.drop_job($id)" >/dev/null
            log "run $r, $kind, $p keys pending: verify_job ${S[$kind.$p.verify,$r]} s, the FULL JOIN ${S[$kind.$p.join,$r]} s"
        done
    done
done

printf 'verify_job with keys pending, %d rows read to about half: %s; median of %d\n' "$ROWS" "$COMMIT" "$RUNS"
printf '%-12s %8s %12s %12s %8s\n' kind pending verify_s join_s ratio
for kind in arrangement cdc; do
    first=; last=
    for p in $PENDING; do
        v=$(med "$kind.$p.verify"); j=$(med "$kind.$p.join")
        ratio=$(echo "$v / $j" | bc -l)
        [ -z "$first" ] && first=$ratio
        last=$ratio
        printf '%-12s %8d %12.3f %12.3f %8.2f\n' "$kind" "$p" "$v" "$j" "$ratio"
    done
    growth=$(echo "$last / $first" | bc -l)
    res=PASS
    [ "$(echo "$growth <= 2" | bc -l)" = 1 ] || { res=FAIL; FAILS=$(( FAILS + 1 )); }
    printf '%-12s ratio at the most keys pending / at the fewest: %.2f  <= 2.00  %s\n' "$kind" "$growth" "$res"
done
log "done"
[ "$FAILS" = 0 ] || { echo "exit code: 1 ($FAILS target(s) missed)"; exit 1; }

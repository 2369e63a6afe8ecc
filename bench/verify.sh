#!/bin/bash
# bench/verify.sh: what verify_job costs on a job with many keys pending,
# and its checksums against a row by row comparison at scale.
#
#   bash bench/verify.sh [--rows N] [--pending "5000 20000 80000"] [--runs K]
#                        [--scale-rows M] [--sharded-rows T] [--keep]
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
# Then, over M rows (default 1000000; --scale-rows 0 skips it; --pending ""
# skips the first part), a finished job copying a local table and one
# copying a table of a second throw-away cluster (the source, as
# bench/remote.sh makes it) through postgres_fdw, each equal to its
# upstream: the time of verify_job (method checksum), of verify_job(method
# => 'rows') and of the FULL JOIN by hand; for the remote job also the bytes
# the source sent (it listens on 127.0.0.1 for postgres_fdw, whose server
# is async_capable, and the kernel counts each TCP connection's bytes).  Targets: remote checksum at
# least 10 x faster than rows, the bytes at most 0.1 % of the source table's
# size, the local checksum no slower than the FULL JOIN, each checksum
# verify at most 15 % of the time its job's copy took (run_job, timed once
# when the jobs are made), and at least 2 x faster than pg_comparator when
# it runs.  When pg_comparator
# (Debian's postgresql-comparator) is installed and BIN's installation has
# its pgcmp extension, it compares the remote pair too (its default ck
# checksums and sum aggregate).
#
# Then (--sharded-rows T, default 3000000; 0 skips it) a finished cdc job
# over a table sharded on three more throw-away clusters, T / 3 rows each,
# their foreign tables the partitions of a local partitioned table (servers
# async_capable): the time of verify_job (auto: checksums, each server
# summing its partitions), of method rows and of the FULL JOIN by hand,
# and the bytes the three sent; the same targets as one source.
#
# Then, on the local job, verify_job(method => 'changed'): the first check,
# then per round the check after 1 % of the rows appended at the end of the
# key range, after 0.1 % updated at random keys, and after nothing written,
# each against the checksum method over the same rows, with the ranges it
# compared again.
#
# Starts a throw-away PostgreSQL 15 cluster in a temp dir (own port, unix
# socket in that dir, listen_addresses = '', wal_level = logical), as
# bench/run.sh does, and removes it at the end; it never touches another
# cluster.  It uses the extension installed in BIN's installation.
set -euo pipefail

ROWS=400000
PENDING="5000 20000 80000"
RUNS=3
SCALE=1000000
SHARDED=3000000
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --pending) PENDING=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --scale-rows) SCALE=$2; shift 2 ;;
        --sharded-rows) SHARDED=$2; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n 2,40p "$0"; exit 0 ;;
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
shared_preload_libraries = 'backfill'
jit = off
client_min_messages = warning
CONF
val "CREATE EXTENSION backfill" >/dev/null

declare -A S B

# a statement ($3), timed, with the bytes sent for it as a script ($2)
# counts them, after a statement ($1) that opens the connections: "seconds bytes"
bytes_timed() {
    local out
    out=$(sql -At <<SQL
$1 \\g /dev/null
\\! bash $2 > $DIR/sent0
SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset
$3
SELECT extract(epoch FROM clock_timestamp()) - :t0;
\\! bash $2 > $DIR/sent1
SQL
)
    echo "$(tail -1 <<<"$out") $(( $(cat "$DIR/sent1") - $(cat "$DIR/sent0") ))"
}

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
            # the limit was for the read to half: verify_job would obey it
            val "SELECT backfill.alter_rate_limit($id, NULL)" >/dev/null
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

if [ -n "$PENDING" ]; then
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
fi

# ---- checksums at scale: a local job and a remote one, equal copies ----
if [ "$SCALE" -gt 0 ]; then
    SDIR=$DIR/source; SPORT=$(( PORT + 1 ))
    "${RUNAS[@]}" "$BIN/initdb" -D "$SDIR" -A trust -U postgres >/dev/null
    cat >>"$SDIR/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $SPORT
unix_socket_directories = '$DIR'
shared_buffers = 256MB
wal_level = logical
max_replication_slots = 10
jit = off
CONF
    "${RUNAS[@]}" "$BIN/pg_ctl" -D "$SDIR" -l "$DIR/source.log" -w start >/dev/null
    stop_source() { "${RUNAS[@]}" "$BIN/pg_ctl" -D "$SDIR" -m immediate stop >/dev/null 2>&1 || true; cleanup; }
    trap stop_source EXIT
    src() { "${RUNAS[@]}" "$BIN/psql" -X -q -At -h "$DIR" -p "$SPORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
    # the bytes the source has sent on its TCP connections (postgres_fdw's:
    # the bench's own psql connects through the socket file), from the
    # kernel's counters of each (ss -i: bytes_sent)
    cat >"$DIR/sent.sh" <<SH
ss -tinH state established '( sport = :$SPORT )' | grep -o 'bytes_sent:[0-9]*' | cut -d: -f2 \\
    | awk '{s += \$1} END {print s + 0}'
SH
    log "checksums at scale: $SCALE rows, local and on a source cluster (port $SPORT)"
    src <<SQL
CREATE TABLE t (id int PRIMARY KEY, a int, b text);
INSERT INTO t SELECT g * 2, g % 1000, md5(g::text) FROM generate_series(1, $SCALE) g;
VACUUM ANALYZE t;
SQL
    sql <<SQL
CREATE TABLE big (id int PRIMARY KEY, a int, b text);
INSERT INTO big SELECT g * 2, g % 1000, md5(g::text) FROM generate_series(1, $SCALE) g;
VACUUM ANALYZE big;
CREATE EXTENSION postgres_fdw;
CREATE SERVER src FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '$SPORT', dbname 'postgres', async_capable 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER src;
CREATE SCHEMA remote;
IMPORT FOREIGN SCHEMA public LIMIT TO (t) FROM SERVER src INTO remote;
SQL
    # the copies, timed once each: a verify is measured against its job's copy
    lid=$(val "SELECT backfill.create_job('big_copy', 'big')")
    COPY_LOCAL=$(timed "CALL backfill.run_job($lid);")
    rid=$(val "SELECT backfill.create_job('t_copy', 'remote.t', kind => 'cdc', chunk_size => 20000)")
    COPY_REMOTE=$(timed "CALL backfill.run_job($rid);")
    val "VACUUM ANALYZE big_copy" >/dev/null; val "VACUUM ANALYZE t_copy" >/dev/null
    [ "$(val "SELECT string_agg(status, ' ') FROM backfill.jobs WHERE job_id IN ($lid, $rid)")" = "finished finished" ] \
        || { echo "the jobs did not finish" >&2; exit 1; }
    TSIZE=$(src -c "SELECT pg_table_size('t')")
    # a statement against the source, timed, with the bytes the source sent
    # for it (the connection opened first, by a one-row read)
    remote_timed() {
        bytes_timed "SELECT count(*) FROM (SELECT FROM remote.t LIMIT 1) x" "$DIR/sent.sh" "$1"
    }
    for r in $(seq 1 "$RUNS"); do
        S[local.checksum,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($lid);")
        S[local.rows,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($lid, 'rows');")
        S[local.join,$r]=$(timed "SELECT count(*) FROM big u FULL JOIN big_copy d ON u.id = d.id WHERE u IS DISTINCT FROM d;")
        read -r S[remote.checksum,$r] B[checksum,$r] < <(remote_timed "SELECT count(*) FROM backfill.verify_job($rid);")
        read -r S[remote.rows,$r] B[rows,$r] < <(remote_timed "SELECT count(*) FROM backfill.verify_job($rid, 'rows');")
        read -r S[remote.join,$r] B[join,$r] < <(remote_timed "SELECT count(*) FROM remote.t u FULL JOIN t_copy d ON u.id = d.id WHERE u IS DISTINCT FROM d;")
        log "run $r: local checksum ${S[local.checksum,$r]} s, rows ${S[local.rows,$r]} s, FULL JOIN ${S[local.join,$r]} s;" \
            "remote checksum ${S[remote.checksum,$r]} s (${B[checksum,$r]} B), rows ${S[remote.rows,$r]} s (${B[rows,$r]} B)," \
            "FULL JOIN ${S[remote.join,$r]} s (${B[join,$r]} B)"
    done
    bad=$(val "SELECT (SELECT count(*) FROM backfill.verify_job($lid)) + (SELECT count(*) FROM backfill.verify_job($rid))")
    [ "$bad" = 0 ] || { echo "verify_job found $bad differences between equal copies" >&2; exit 1; }
    bmed() { for r in $(seq 1 "$RUNS"); do echo "${B[$1,$r]}"; done | median; }

    PGC=
    if command -v pg_comparator >/dev/null && [ -f "$("$BIN/pg_config" --sharedir)/extension/pgcmp.control" ]; then
        val "CREATE EXTENSION pgcmp" >/dev/null; src -c "CREATE EXTENSION pgcmp"
        for r in $(seq 1 "$RUNS"); do
            t0=$(now)
            "${RUNAS[@]}" env PGHOST="$DIR" pg_comparator --no-lock \
                "pgsql://postgres@:$SPORT/postgres/public.t?id:a,b" \
                "pgsql://postgres@:$PORT/postgres/public.t_copy?id:a,b" >"$DIR/pgc.out" 2>&1 \
                || { cat "$DIR/pgc.out" >&2; echo "pg_comparator failed" >&2; exit 1; }
            S[pgc,$r]=$(echo "$(now) - $t0" | bc)
            log "run $r: pg_comparator ${S[pgc,$r]} s"
        done
        PGC=$(med pgc)
    fi

    # method changed: the local job checked again, each round after 1 % of
    # the rows appended at the end of the key range, after 0.1 % of the rows
    # updated at random keys (through the job, which keeps the copy equal),
    # and after nothing written (once a check has compared again the pages
    # the one before pruned of the updates' old rows); the checksum method
    # over the same rows after
    log "method changed: the first check, then $RUNS rounds"
    FIRST_CHANGED=$(timed "SELECT count(*) FROM backfill.verify_job($lid, 'changed');")
    ranges_done() { val "SELECT ranges_done FROM backfill.verification WHERE job_id = $lid AND operation = 'verify'"; }
    next=$(( SCALE * 2 + 2 ))
    for r in $(seq 1 "$RUNS"); do
        val "INSERT INTO big SELECT g, g % 1000, md5(g::text)
               FROM generate_series($next, $(( next + SCALE / 50 - 2 )), 2) g" >/dev/null
        next=$(( next + SCALE / 50 ))
        S[changed.append,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($lid, 'changed');")
        S[ranges.append,$r]=$(ranges_done)
        val "UPDATE big SET a = a + 1 WHERE id IN
               (SELECT 2 * (1 + floor(random() * $SCALE))::int FROM generate_series(1, $(( SCALE / 1000 ))))" >/dev/null
        S[changed.update,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($lid, 'changed');")
        S[ranges.update,$r]=$(ranges_done)
        val "SELECT count(*) FROM backfill.verify_job($lid, 'changed')" >/dev/null
        S[changed.none,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($lid, 'changed');")
        S[ranges.none,$r]=$(ranges_done)
        S[changed.full,$r]=$(timed "SELECT count(*) FROM backfill.verify_job($lid, 'checksum');")
        log "run $r: changed ${S[changed.append,$r]} s after 1 % appended (${S[ranges.append,$r]} ranges)," \
            "${S[changed.update,$r]} s after 0.1 % updated (${S[ranges.update,$r]} ranges)," \
            "${S[changed.none,$r]} s with nothing written (${S[ranges.none,$r]} ranges); checksum ${S[changed.full,$r]} s"
    done
    bad=$(val "SELECT count(*) FROM backfill.verify_job($lid, 'rows')")
    [ "$bad" = 0 ] || { echo "the local copy differs after the writes: $bad rows" >&2; exit 1; }

    printf '\nverify_job at scale, %d rows, equal copies: %s; median of %d\n' "$SCALE" "$COMMIT" "$RUNS"
    printf '%-8s %12s %12s %12s %14s %12s %12s\n' side checksum_s rows_s join_s checksum_bytes rows_bytes join_bytes
    printf '%-8s %12.3f %12.3f %12.3f\n' local "$(med local.checksum)" "$(med local.rows)" "$(med local.join)"
    printf '%-8s %12.3f %12.3f %12.3f %14d %12d %12d\n' remote "$(med remote.checksum)" "$(med remote.rows)" \
        "$(med remote.join)" "$(bmed checksum)" "$(bmed rows)" "$(bmed join)"
    [ -n "$PGC" ] && printf 'pg_comparator (remote pair): %.3f s\n' "$PGC"
    printf 'the copies (run_job, once): local %.3f s, remote %.3f s\n' "$COPY_LOCAL" "$COPY_REMOTE"
    printf 'source table: %d bytes\n' "$TSIZE"
    printf '\nmethod changed, local job: first check %.3f s (checksum %.3f s)\n' "$FIRST_CHANGED" "$(med changed.full)"
    printf '%-26s %10s %16s %8s\n' 'written since the last' changed_s 'checksum/changed' ranges
    for w in append update none; do
        printf '%-26s %10.3f %16.2f %8s\n' "$(case $w in none) echo nothing;; append) echo '1 % appended';;
            update) echo '0.1 % updated at random';; esac)" "$(med changed.$w)" "$(speed changed.$w changed.full)" \
            "$(med ranges.$w)"
    done
    printf 'ranges kept: %s\n' "$(val "SELECT count(*) FROM backfill.verification_range WHERE job_id = $lid")"
    TARGET_WIDTH=60
    target "remote: rows / checksum (speed)" "$(speed remote.checksum remote.rows)" 10
    target "remote: table bytes / bytes sent for the checksum / 1000" \
        "$(echo "$TSIZE / ($(bmed checksum) + 1) / 1000" | bc -l)" 1
    target "local: FULL JOIN / checksum (speed)" "$(speed local.checksum local.join)" 1.0
    target "local: copy / checksum verify (1 / 0.15)" "$(echo "$COPY_LOCAL / $(med local.checksum)" | bc -l)" 6.67
    target "remote: copy / checksum verify (1 / 0.15)" "$(echo "$COPY_REMOTE / $(med remote.checksum)" | bc -l)" 6.67
    [ -n "$PGC" ] && target "remote: pg_comparator / checksum (speed)" "$(echo "$PGC / $(med remote.checksum)" | bc -l)" 2
fi

# ---- over three servers: a finished job over a table sharded on three ----
if [ "$SHARDED" -gt 0 ]; then
    PER3=$(( SHARDED / 3 ))
    STRIDE3=$(( 2 * PER3 + 2 ))
    declare -A KPORT
    for k in 1 2 3; do
        KPORT[$k]=$(( PORT + 1 + k ))
        "${RUNAS[@]}" "$BIN/initdb" -D "$DIR/shard$k" -A trust -U postgres >/dev/null
        cat >>"$DIR/shard$k/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = ${KPORT[$k]}
unix_socket_directories = '$DIR'
shared_buffers = 128MB
wal_level = logical
max_replication_slots = 10
jit = off
CONF
        "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/shard$k" -l "$DIR/shard$k.log" -w start >/dev/null
    done
    stop_shards() {
        for k in 1 2 3; do "${RUNAS[@]}" "$BIN/pg_ctl" -D "$DIR/shard$k" -m immediate stop >/dev/null 2>&1 || true; done
        if [ -n "${SDIR:-}" ]; then stop_source; else cleanup; fi
    }
    trap stop_shards EXIT
    shard() { local k=$1; shift; "${RUNAS[@]}" "$BIN/psql" -X -q -At -h "$DIR" -p "${KPORT[$k]}" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
    cat >"$DIR/sent3.sh" <<SH
ss -tinH state established '( sport = :${KPORT[1]} or sport = :${KPORT[2]} or sport = :${KPORT[3]} )' \\
    | grep -o 'bytes_sent:[0-9]*' | cut -d: -f2 | awk '{s += \$1} END {print s + 0}'
SH
    log "over three servers: $PER3 rows on each (ports ${KPORT[1]}-${KPORT[3]})"
    val "CREATE EXTENSION IF NOT EXISTS postgres_fdw" >/dev/null
    val "CREATE TABLE shards (id bigint, a int, b text) PARTITION BY RANGE (id)" >/dev/null
    TSIZE3=0
    for k in 1 2 3; do
        shard "$k" <<SQL
CREATE TABLE t_$k (id bigint PRIMARY KEY, a int, b text);
INSERT INTO t_$k SELECT ($k - 1) * $STRIDE3 + g * 2, g % 1000, md5(g::text) FROM generate_series(1, $PER3) g;
VACUUM ANALYZE t_$k;
SQL
        TSIZE3=$(( TSIZE3 + $(shard "$k" -c "SELECT pg_table_size('t_$k')") ))
        sql <<SQL
CREATE SERVER sh$k FOREIGN DATA WRAPPER postgres_fdw
    OPTIONS (host '127.0.0.1', port '${KPORT[$k]}', dbname 'postgres', async_capable 'true');
CREATE USER MAPPING FOR CURRENT_USER SERVER sh$k;
CREATE FOREIGN TABLE shards_$k PARTITION OF shards FOR VALUES FROM ($(( (k - 1) * STRIDE3 ))) TO ($(( k * STRIDE3 )))
    SERVER sh$k OPTIONS (schema_name 'public', table_name 't_$k');
SQL
    done
    sid=$(val "SELECT backfill.create_job('shards_copy', 'shards', kind => 'cdc', parallelism => 3, chunk_size => 20000)")
    COPY_SHARDED=$(timed "SELECT backfill.start_job($sid); SELECT backfill.wait_job($sid);")
    [ "$(val "SELECT status FROM backfill.jobs WHERE job_id = $sid")" = finished ] \
        || { echo "the job over three servers did not finish" >&2; exit 1; }
    val "VACUUM ANALYZE shards_copy" >/dev/null
    # a statement, timed, with the bytes the three servers sent for it (each
    # connection opened first, by a one-row read of each partition)
    sharded_timed() {
        bytes_timed "SELECT (SELECT 1 FROM shards_1 LIMIT 1), (SELECT 1 FROM shards_2 LIMIT 1), (SELECT 1 FROM shards_3 LIMIT 1)" \
            "$DIR/sent3.sh" "$1"
    }
    for r in $(seq 1 "$RUNS"); do
        read -r S[sharded.checksum,$r] B[s.checksum,$r] < <(sharded_timed "SELECT count(*) FROM backfill.verify_job($sid);")
        read -r S[sharded.rows,$r] B[s.rows,$r] < <(sharded_timed "SELECT count(*) FROM backfill.verify_job($sid, 'rows');")
        read -r S[sharded.join,$r] B[s.join,$r] < <(sharded_timed "SELECT count(*) FROM shards u FULL JOIN shards_copy d ON u.id = d.id WHERE u IS DISTINCT FROM d;")
        log "run $r: over three servers, checksum ${S[sharded.checksum,$r]} s (${B[s.checksum,$r]} B)," \
            "rows ${S[sharded.rows,$r]} s (${B[s.rows,$r]} B), FULL JOIN ${S[sharded.join,$r]} s (${B[s.join,$r]} B)"
    done
    bad=$(val "SELECT count(*) FROM backfill.verify_job($sid)")
    [ "$bad" = 0 ] || { echo "verify_job found $bad differences between equal copies over three servers" >&2; exit 1; }
    sbmed() { for r in $(seq 1 "$RUNS"); do echo "${B[$1,$r]}"; done | median; }
    printf '\nverify_job over three servers, %d rows, equal copies: %s; median of %d\n' "$(( 3 * PER3 ))" "$COMMIT" "$RUNS"
    printf '%12s %12s %12s %14s %12s %12s\n' checksum_s rows_s join_s checksum_bytes rows_bytes join_bytes
    printf '%12.3f %12.3f %12.3f %14d %12d %12d\n' "$(med sharded.checksum)" "$(med sharded.rows)" \
        "$(med sharded.join)" "$(sbmed s.checksum)" "$(sbmed s.rows)" "$(sbmed s.join)"
    printf 'the copy (start_job, parallelism 3, once): %.3f s; the three tables: %d bytes\n' "$COPY_SHARDED" "$TSIZE3"
    TARGET_WIDTH=60
    target "three servers: rows / checksum (speed)" "$(speed sharded.checksum sharded.rows)" 10
    target "three servers: table bytes / bytes sent for the checksum / 1000" \
        "$(echo "$TSIZE3 / ($(sbmed s.checksum) + 1) / 1000" | bc -l)" 1
    target "three servers: copy / checksum verify (1 / 0.15)" "$(echo "$COPY_SHARDED / $(med sharded.checksum)" | bc -l)" 6.67
fi

log "done"
[ "$FAILS" = 0 ] || { echo "exit code: 1 ($FAILS target(s) missed)"; exit 1; }

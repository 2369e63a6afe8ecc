#!/bin/bash
# bench/run.sh: the backfill benchmark (see bench/README.md).
#
#   bash bench/run.sh [--rows N] [--runs K] [--pgbench-seconds S] [--clients C] [--quick]
#                     [--partitioned-only] [--writers-only] [--huge-pages try|on|off]
#
# Starts a throw-away PostgreSQL 15 cluster in a temp dir (own port, unix
# socket in that dir, shared_preload_libraries = 'backfill'), builds the data,
# measures throughput, cost to writers, memory and recovery, prints one table
# and exits non-zero when a target is missed.  It never touches any other
# cluster and removes only its own temp dir.  It uses the installed extension
# (cd /work/main && make && make install first).
set -euo pipefail

ROWS=1000000
RUNS=3
PGB_SECS=10
CLIENTS=4
QUICK=0
KEEP=0
ONLY_PART=0
ONLY_WRITERS=0
HUGE_PAGES=try
while [ $# -gt 0 ]; do
    case "$1" in
        --rows) ROWS=$2; shift 2 ;;
        --runs) RUNS=$2; shift 2 ;;
        --pgbench-seconds) PGB_SECS=$2; shift 2 ;;
        --clients) CLIENTS=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        --keep) KEEP=1; shift ;;   # keep the temp dir (debugging)
        --partitioned-only) ONLY_PART=1; shift ;;   # the partitioned upstream's rows alone
        --writers-only) ONLY_WRITERS=1; shift ;;    # sections 2, 2b and 5 alone
        --huge-pages) HUGE_PAGES=$2; shift 2 ;;     # the cluster's huge_pages (bench/README.md)
        -h|--help) sed -n 2,13p "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done
if [ "$QUICK" = 1 ]; then
    ROWS=200000; RUNS=1; PGB_SECS=5
fi
MEM_ROWS=$ROWS                       # memory: N and 4N
MEM_ROWS4=$(( ROWS * 4 ))
INTERVALS="1000 100"
KINDS="no_shuffle arrangement snapshot cdc"

. "$(dirname "$0")/cluster.sh"
wait_ready() {
    local i
    for i in $(seq 1 600); do val 'SELECT 1' >/dev/null 2>&1 && return 0; sleep 0.1; done
    echo "server did not come back" >&2; return 1
}

# ---------------------------------------------------------------- cluster
log "cluster in $DIR, port $PORT; measuring $COMMIT"
cluster_start <<CONF
shared_preload_libraries = 'backfill'
backfill.database = 'postgres'
max_worker_processes = 16
restart_after_crash = on
shared_buffers = 1GB
work_mem = 16MB
maintenance_work_mem = 512MB
max_wal_size = 16GB
min_wal_size = 4GB
wal_init_zero = off
checkpoint_timeout = 30min
huge_pages = $HUGE_PAGES
autovacuum = on
jit = off
wal_level = logical
max_replication_slots = 10
output_plugin_libraries = 'pgoutput, test_decoding, backfill'
CONF
. "$HERE/bench/pages.sh"
SHM_PAGES=$(shm_pages "$DIR/data")
wait_ready

# ---------------------------------------------------------------- data
log "building up ($ROWS rows) and the keyset procedure"
sql <<SQL
CREATE EXTENSION backfill;
CREATE EXTENSION pgstattuple;
CREATE TABLE up (id bigint PRIMARY KEY, a int, b text, c timestamptz);
INSERT INTO up SELECT g, ((g::bigint * 7919) % 1000003)::int, md5(g::text), '2026-01-01'::timestamptz + g * interval '1 second'
  FROM generate_series(1, $ROWS) g;
VACUUM (FREEZE, ANALYZE) up;

-- the same rows in a partitioned table: four partitions by hash of the key,
-- so that a chunk merges their key indexes
CREATE TABLE upp (id bigint PRIMARY KEY, a int, b text, c timestamptz) PARTITION BY HASH (id);
CREATE TABLE upp_0 PARTITION OF upp FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE upp_1 PARTITION OF upp FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE upp_2 PARTITION OF upp FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE upp_3 PARTITION OF upp FOR VALUES WITH (MODULUS 4, REMAINDER 3);
INSERT INTO upp SELECT * FROM up;
VACUUM (FREEZE, ANALYZE) upp;

-- the same rows with three secondary indexes, for the jobs given them with
-- indexes => true (the downstream then has four indexes)
CREATE TABLE up3 (id bigint PRIMARY KEY, a int, b text, c timestamptz);
INSERT INTO up3 SELECT * FROM up;
CREATE INDEX ON up3 (a);
CREATE INDEX ON up3 (b);
CREATE INDEX ON up3 (c);
VACUUM (FREEZE, ANALYZE) up3;

-- what people write by hand: a keyset loop committing every 1024 rows
-- (rows_per_sec > 0: no faster than that, for the writers' reference)
CREATE PROCEDURE keyset_copy(src regclass, dst regclass, batch int DEFAULT 1024,
                             rows_per_sec int DEFAULT 0)
LANGUAGE plpgsql AS \$\$
DECLARE
  last bigint := -9223372036854775808;
  n bigint;
  m bigint;
  t0 timestamptz := clock_timestamp();
  done bigint := 0;
BEGIN
  LOOP
    EXECUTE format('WITH ins AS (INSERT INTO %s SELECT * FROM %s WHERE id > \$1 ORDER BY id LIMIT \$2 RETURNING id)
                    SELECT count(*), max(id) FROM ins', dst, src)
      INTO n, m USING last, batch;
    EXIT WHEN n = 0;
    last := m;
    COMMIT;
    done := done + n;
    IF rows_per_sec > 0 THEN
      PERFORM pg_sleep(greatest(0, done::float8 / rows_per_sec
                                   - extract(epoch FROM clock_timestamp() - t0)));
    END IF;
  END LOOP;
  COMMIT;
END \$\$;

-- the keyset loop a user runs next to the hand-written trigger below: rows
-- the trigger has copied already are left alone
CREATE PROCEDURE keyset_copy_upsert(src regclass, dst regclass, batch int DEFAULT 1024,
                                    rows_per_sec int DEFAULT 0)
LANGUAGE plpgsql AS \$\$
DECLARE
  last bigint := -9223372036854775808;
  n bigint;
  m bigint;
  t0 timestamptz := clock_timestamp();
  done bigint := 0;
BEGIN
  LOOP
    EXECUTE format('WITH s AS (SELECT * FROM %s WHERE id > \$1 ORDER BY id LIMIT \$2),
                         ins AS (INSERT INTO %s SELECT * FROM s ON CONFLICT (id) DO NOTHING)
                    SELECT count(*), max(id) FROM s', src, dst)
      INTO n, m USING last, batch;
    EXIT WHEN n = 0;
    last := m;
    COMMIT;
    done := done + n;
    IF rows_per_sec > 0 THEN
      PERFORM pg_sleep(greatest(0, done::float8 / rows_per_sec
                                   - extract(epoch FROM clock_timestamp() - t0)));
    END IF;
  END LOOP;
  COMMIT;
END \$\$;

-- the trigger a user writes to keep a copy of up in down_hw: PL/pgSQL,
-- statement-level AFTER triggers with transition tables, upserting and
-- deleting by key (an update that moves a key deletes the old one)
CREATE FUNCTION hw_insert() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  INSERT INTO down_hw SELECT * FROM new_rows
    ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, c = EXCLUDED.c;
  RETURN NULL;
END \$\$;
CREATE FUNCTION hw_update() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  DELETE FROM down_hw d USING old_rows o
   WHERE d.id = o.id AND NOT EXISTS (SELECT FROM new_rows n WHERE n.id = o.id);
  INSERT INTO down_hw SELECT * FROM new_rows
    ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, c = EXCLUDED.c;
  RETURN NULL;
END \$\$;
CREATE FUNCTION hw_delete() RETURNS trigger LANGUAGE plpgsql AS \$\$
BEGIN
  DELETE FROM down_hw d USING old_rows o WHERE d.id = o.id;
  RETURN NULL;
END \$\$;
CREATE PROCEDURE hw_install() LANGUAGE plpgsql AS \$\$
BEGIN
  CREATE TABLE down_hw (id bigint PRIMARY KEY, a int, b text, c timestamptz);
  CREATE TRIGGER hw_ins AFTER INSERT ON up REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION hw_insert();
  CREATE TRIGGER hw_upd AFTER UPDATE ON up REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION hw_update();
  CREATE TRIGGER hw_del AFTER DELETE ON up REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION hw_delete();
END \$\$;
CREATE PROCEDURE hw_remove() LANGUAGE plpgsql AS \$\$
BEGIN
  DROP TRIGGER hw_ins ON up;
  DROP TRIGGER hw_upd ON up;
  DROP TRIGGER hw_del ON up;
END \$\$;
SQL

# ---------------------------------------------------------------- helpers
# availability of a kind: try create_job on a tiny table
val "CREATE TABLE probe (id bigint PRIMARY KEY, x int)" >/dev/null
declare -A AVAIL
for k in $KINDS; do
    if out=$(val "SELECT backfill.create_job('probe_$k', 'probe', kind => '$k')" 2>"$DIR/probe.err"); then
        AVAIL[$k]=1
        val "SELECT backfill.drop_job($out)" >/dev/null
    else
        AVAIL[$k]=0
        log "kind $k not available: $(grep ERROR "$DIR/probe.err" | head -1)"
    fi
done
# CDC capture for the writers: kind cdc
set_interval_workers() {
    val "ALTER SYSTEM SET backfill.barrier_interval_ms = $1" >/dev/null
    val "SELECT pg_reload_conf()" >/dev/null
    sleep 0.3
}

# results: R[name,run] = value
declare -A R

median() {  # numbers on stdin -> median
    sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"} else if (NR%2) {print a[(NR+1)/2]} else {print (a[NR/2]+a[NR/2+1])/2}}'
}
med() {  # med NAME -> median over runs of R[NAME,r]
    local r
    for r in $(seq 1 "$RUNS"); do
        if [ -n "${R[$1,$r]:-}" ]; then echo "${R[$1,$r]}"; fi
    done | median
}
ratio_med() {  # ratio_med A B -> median over runs of R[A,r]/R[B,r]
    local r
    for r in $(seq 1 "$RUNS"); do
        if [ -n "${R[$1,$r]:-}" ] && [ -n "${R[$2,$r]:-}" ]; then
            awk -v a="${R[$1,$r]}" -v b="${R[$2,$r]}" 'BEGIN {print (b > 0 ? a / b : 0)}'
        fi
    done | median
}

job_status_finished() {
    [ "$(val "SELECT status FROM backfill.jobs WHERE job_id = $1")" = finished ]
}

# ---- range vnodes: rows read, and the reference sessions split as a job's actors
# rows read from a table (or a partitioned table's partitions) so far, by the
# statistics counters: sequential scans' rows and index scans' fetches; the
# backends that read them (a run_job session, the workers) have exited just
# before, and flush their counters as they exit
rows_read() {  # table
    sleep 0.5
    val "SELECT sum(coalesce(s.seq_tup_read, 0) + coalesce(s.idx_tup_fetch, 0))::bigint
           FROM pg_stat_user_tables s
          WHERE s.relid = '$1'::regclass
             OR s.relid IN (SELECT relid FROM pg_partition_tree('$1') WHERE isleaf)"
}
# p sessions at once, each inserting the key range of one actor of a job
# with parallelism p (the ranges of a job made on up, read through the key's
# index, as the actors read them); sets R[insert$p,r]
insert_sessions() {  # p run
    local p=$1 r=$2 i id lo hi cond s
    id=$(val "SELECT backfill.create_job('down_ranges', 'up', parallelism => $p)")
    val "CREATE TABLE down (id bigint PRIMARY KEY, a int, b text, c timestamptz);
         CREATE TABLE par_times (t timestamptz); CHECKPOINT" >/dev/null
    for i in $(seq 0 $(( p - 1 ))); do
        lo=$(val "SELECT j.vnode_bounds[a.vnode_start][1] FROM backfill.job j JOIN backfill.actor a USING (job_id)
                   WHERE j.job_id = $id ORDER BY a.actor_id OFFSET $i LIMIT 1")
        hi=$(val "SELECT j.vnode_bounds[a.vnode_end + 1][1] FROM backfill.job j JOIN backfill.actor a USING (job_id)
                   WHERE j.job_id = $id ORDER BY a.actor_id OFFSET $i LIMIT 1")
        cond="true"
        [ -n "$lo" ] && cond="$cond AND id >= $lo"
        [ -n "$hi" ] && cond="$cond AND id < $hi"
        sql -c "SET enable_seqscan = off" -c "SET enable_bitmapscan = off" \
            -c "INSERT INTO par_times SELECT clock_timestamp()" \
            -c "INSERT INTO down SELECT * FROM up WHERE $cond" \
            -c "INSERT INTO par_times SELECT clock_timestamp()" >/dev/null &
    done
    wait
    [ "$(val 'SELECT count(*) FROM down')" = "$ROWS" ] || { echo "the $p INSERT sessions copied a wrong count" >&2; exit 3; }
    s=$(val "SELECT extract(epoch FROM max(t) - min(t)) FROM par_times")
    R[insert$p,$r]=$(awk -v n="$ROWS" -v s="$s" 'BEGIN {printf "%.0f", n / s}')
    val "DROP TABLE down, par_times" >/dev/null
    val "SELECT backfill.drop_job($id)" >/dev/null
}
# ---- end of range vnodes' helpers

# one backfill throughput measurement; sets LAST_RPS and LAST_READ (rows read
# from the upstream per upstream row)
measure_job() {  # kind parallelism interval mode(fg|bg) rows [upstream [more create_job arguments]]
    local kind=$1 par=$2 iv=$3 mode=$4 rows=$5 upstream=${6:-up} more=${7:-} id secs
    id=$(val "SELECT backfill.create_job('down', '$upstream', kind => '$kind', parallelism => $par$more)" 2>/dev/null)
    val "CHECKPOINT" >/dev/null
    local read0; read0=$(rows_read "$upstream")
    if [ "$mode" = fg ]; then
        secs=$(timed "SET backfill.barrier_interval_ms = $iv;
CALL backfill.run_job($id);")
    else
        set_interval_workers "$iv"
        secs=$(timed "SELECT backfill.start_job($id);
SELECT backfill.wait_job($id);")
    fi
    if ! job_status_finished "$id"; then
        echo "job $id did not finish" >&2; exit 3
    fi
    LAST_READ=$(awk -v r="$(( $(rows_read "$upstream") - read0 ))" -v n="$rows" 'BEGIN {printf "%.3f", r / n}')
    val "SELECT backfill.drop_job($id)" >/dev/null
    LAST_RPS=$(awk -v n="$rows" -v s="$secs" 'BEGIN {printf "%.0f", n / s}')
}

# the partitioned upstream: INSERT ... SELECT from the partitioned table, and
# an arrangement job (p1, 1000 ms) reading it; sets R[insertp,r] and
# R[arrangement.p1.part,r]
measure_partitioned() {  # run
    local r=$1 s
    val "CREATE TABLE down (id bigint PRIMARY KEY, a int, b text, c timestamptz); CHECKPOINT" >/dev/null
    s=$(timed "INSERT INTO down SELECT * FROM upp;")
    R[insertp,$r]=$(awk -v n="$ROWS" -v s="$s" 'BEGIN {printf "%.0f", n / s}')
    val "DROP TABLE down" >/dev/null
    measure_job arrangement 1 1000 fg "$ROWS" upp
    R[arrangement.p1.part,$r]=$LAST_RPS
    log "  run $r: partitioned upstream: INSERT ... SELECT ${R[insertp,$r]}, arrangement p1 1000ms run_job $LAST_RPS rows/s"
}
partitioned_rows() {
    row "INSERT INTO down SELECT * FROM upp (4 hash partitions)" "$(med insertp)" "$(f2 "$(ratio_med insertp insert)")" "" ""
    rat=$(ratio_med arrangement.p1.part insertp)
    row "arrangement p1 1000 ms from upp (ratio: to the row above)" "$(med arrangement.p1.part)" "$(f2 "$rat")" ">= 0.90 x INSERT...SELECT" "$(check "$rat" ">=" 0.9)"
}

# ---------------------------------------------------------------- 1. throughput
log "1. throughput: $RUNS run(s)"
for r in $(seq 1 "$RUNS"); do
    [ "$ONLY_WRITERS" = 1 ] && break
    val "CREATE TABLE down (id bigint PRIMARY KEY, a int, b text, c timestamptz); CHECKPOINT" >/dev/null
    s=$(timed "INSERT INTO down SELECT * FROM up;")
    R[insert,$r]=$(awk -v n="$ROWS" -v s="$s" 'BEGIN {printf "%.0f", n / s}')
    val "DROP TABLE down" >/dev/null
    log "  run $r: INSERT ... SELECT ${R[insert,$r]} rows/s"
    measure_partitioned "$r"
    [ "$ONLY_PART" = 1 ] && continue

    # two sessions at once, each inserting the key range of one actor of a
    # job with parallelism 2, as the actors do: how PostgreSQL itself scales
    # a parallel insert into one table here; and four
    insert_sessions 2 "$r"
    log "  run $r: 2 x INSERT ... SELECT, a range each ${R[insert2,$r]} rows/s"
    insert_sessions 4 "$r"
    log "  run $r: 4 x INSERT ... SELECT, a range each ${R[insert4,$r]} rows/s"

    val "CREATE TABLE down (id bigint PRIMARY KEY, a int, b text, c timestamptz); CHECKPOINT" >/dev/null
    s=$(timed "CALL keyset_copy('up', 'down');")
    [ "$(val 'SELECT count(*) FROM down')" = "$ROWS" ] || { echo "keyset loop copied a wrong count" >&2; exit 3; }
    R[keyset,$r]=$(awk -v n="$ROWS" -v s="$s" 'BEGIN {printf "%.0f", n / s}')
    val "DROP TABLE down" >/dev/null
    log "  run $r: keyset loop ${R[keyset,$r]} rows/s"

    # what pg_repack and pgcopydb do: write the heap, then build the key's
    # index once; and with the three secondary indexes of up3, four builds
    val "CHECKPOINT" >/dev/null
    s=$(timed "CREATE TABLE down AS SELECT * FROM up;
ALTER TABLE down ADD PRIMARY KEY (id);")
    R[ctas,$r]=$(awk -v n="$ROWS" -v s="$s" 'BEGIN {printf "%.0f", n / s}')
    val "DROP TABLE down; CHECKPOINT" >/dev/null
    s=$(timed "CREATE TABLE down AS SELECT * FROM up3;
ALTER TABLE down ADD PRIMARY KEY (id);
CREATE INDEX ON down (a);
CREATE INDEX ON down (b);
CREATE INDEX ON down (c);")
    R[ctas4,$r]=$(awk -v n="$ROWS" -v s="$s" 'BEGIN {printf "%.0f", n / s}')
    val "DROP TABLE down" >/dev/null
    log "  run $r: CREATE TABLE AS + ADD PRIMARY KEY ${R[ctas,$r]} rows/s, + 3 CREATE INDEX ${R[ctas4,$r]} rows/s"
    for k in snapshot arrangement; do
        [ "${AVAIL[$k]}" = 1 ] || continue
        measure_job "$k" 1 1000 fg "$ROWS" up3 ", indexes => true"
        R[$k.p1.idx3,$r]=$LAST_RPS
        log "  run $r: $k p1 1000ms run_job, up3 with indexes => true (4 indexes) $LAST_RPS rows/s"
    done

    for iv in $INTERVALS; do
        for k in $KINDS; do
            [ "${AVAIL[$k]}" = 1 ] || continue
            measure_job "$k" 1 "$iv" fg "$ROWS"
            R[$k.p1.$iv,$r]=$LAST_RPS
            R[read.$k.p1.$iv,$r]=$LAST_READ
            log "  run $r: $k p1 ${iv}ms run_job $LAST_RPS rows/s, $LAST_READ rows read per row"
        done
        measure_job arrangement 2 "$iv" bg "$ROWS"
        R[arrangement.p2w.$iv,$r]=$LAST_RPS
        R[read.arrangement.p2w.$iv,$r]=$LAST_READ
        log "  run $r: arrangement p2 ${iv}ms workers $LAST_RPS rows/s, $LAST_READ rows read per row"
        # ---- range vnodes: parallelism 4, and a job with hashed vnodes
        if [ "$iv" = 1000 ]; then
            measure_job arrangement 4 "$iv" bg "$ROWS"
            R[arrangement.p4w.$iv,$r]=$LAST_RPS
            R[read.arrangement.p4w.$iv,$r]=$LAST_READ
            log "  run $r: arrangement p4 ${iv}ms workers $LAST_RPS rows/s, $LAST_READ rows read per row"
            val "ALTER SYSTEM SET backfill.vnode_mapping = hash" >/dev/null
            val "SELECT pg_reload_conf()" >/dev/null
            measure_job arrangement 2 "$iv" bg "$ROWS"
            val "ALTER SYSTEM RESET backfill.vnode_mapping" >/dev/null
            val "SELECT pg_reload_conf()" >/dev/null
            R[arrangement.p2w.hash,$r]=$LAST_RPS
            R[read.arrangement.p2w.hash,$r]=$LAST_READ
            log "  run $r: arrangement p2 ${iv}ms workers, hashed vnodes $LAST_RPS rows/s, $LAST_READ rows read per row"
        fi
    done
done
set_interval_workers 1000

if [ "$ONLY_PART" = 1 ]; then
    FAILS=0; LINES=()
    row() {
        LINES+=("$(printf '%-58s %14s %8s  %-32s %s' "$1" "$2" "$3" "$4" "$5")")
        [ "$5" = FAIL ] && FAILS=$((FAILS + 1))
        return 0
    }
    check() { awk -v v="$1" -v b="$3" -v op="$2" 'BEGIN {ok = (op == ">=") ? (v >= b) : (v <= b); print ok ? "PASS" : "FAIL"}'; }
    f2() { awk -v v="$1" 'BEGIN {printf "%.2f", v}'; }
    row "1. throughput, rows/s (ratio: to INSERT...SELECT)" "median" "ratio" "target" "result"
    row "INSERT INTO down SELECT * FROM up (indexed; the limit)" "$(med insert)" "1.00" "" ""
    partitioned_rows
    echo
    echo "backfill benchmark (partitioned upstream only): $COMMIT; rows $ROWS, runs $RUNS, $(nproc) cores, $(( $(date +%s) - T_START )) s, shared memory in $SHM_PAGES"
    for l in "${LINES[@]}"; do echo "$l"; done
    echo
    echo "exit code: $(( FAILS > 0 ? 1 : 0 )) ($FAILS target(s) missed)"
    [ "$FAILS" = 0 ]
    exit
fi

# ---------------------------------------------------------------- 2. writers
# the keys a transaction writes, one line each, for this script and the one
# after it, so that both write the same keys
KEYS='\set k1 random(1, :n)
\set k2 random(1, :n)
\set k3 random(1, :n)'
{ echo "$KEYS"; cat <<'SQL'; } > "$DIR/writes.sql"
INSERT INTO up VALUES (:k1, 1, md5(:k1::text), now()) ON CONFLICT (id) DO UPDATE SET a = up.a + 1;
UPDATE up SET a = a + 1, c = now() WHERE id = :k2;
DELETE FROM up WHERE id = :k3;
SQL
chmod 644 "$DIR/writes.sql"
# the same statements, each also writing the copy down_hw in the same
# statement (a data-modifying WITH): a copy the writers keep themselves,
# with no trigger and no statement more
{ echo "$KEYS"; cat <<'SQL'; } > "$DIR/writes_dual.sql"
WITH w AS (INSERT INTO up VALUES (:k1, 1, md5(:k1::text), now()) ON CONFLICT (id) DO UPDATE SET a = up.a + 1 RETURNING *)
  INSERT INTO down_hw SELECT * FROM w ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, c = EXCLUDED.c;
WITH w AS (UPDATE up SET a = a + 1, c = now() WHERE id = :k2 RETURNING *)
  UPDATE down_hw d SET a = w.a, b = w.b, c = w.c FROM w WHERE d.id = w.id;
WITH w AS (DELETE FROM up WHERE id = :k3 RETURNING id)
  DELETE FROM down_hw d USING w WHERE d.id = w.id;
SQL
chmod 644 "$DIR/writes_dual.sql"
# a pgbench run's TPS, on stdout; the WAL the cluster wrote during it per
# transaction it committed, in bytes, into $DIR/wal.last (what the
# writers' commits flush: theirs, and a job's or a copy's beside them)
pgbench_run() {  # script [pgbench options...]
    local script=$1 out l0 n
    shift
    l0=$(val "SELECT pg_current_wal_insert_lsn()")
    out=$("${RUNAS[@]}" env PGHOST="$PGHOST" PGPORT="$PGPORT" "$BIN/pgbench" -n -U postgres \
          -c "$CLIENTS" -j "$CLIENTS" -T "$PGB_SECS" -f "$script" "$@" postgres 2>&1) \
        || { echo "$out" >&2; return 1; }
    n=$(sed -nE 's/^number of transactions actually processed: ([0-9]+).*/\1/p' <<<"$out")
    val "SELECT round((pg_current_wal_insert_lsn() - '$l0') / greatest($n, 1))" > "$DIR/wal.last"
    grep -E '^tps' <<<"$out" | head -1 | sed -E 's/^tps = ([0-9.]+).*/\1/'
}
pgbench_tps() { pgbench_run "$DIR/writes.sql" -D n="$ROWS"; }
pgbench_tps_dual() { pgbench_run "$DIR/writes_dual.sql" -D n="$ROWS"; }
# measure NAME RUN TPS-FUNCTION: R[NAME,RUN] its TPS, R[NAME.wal,RUN] the
# WAL per transaction
measure() {
    R[$1,$2]=$($3)
    R[$1.wal,$2]=$(<"$DIR/wal.last")
}
prep_writers() { val "VACUUM ANALYZE up" >/dev/null; val "CHECKPOINT" >/dev/null; }
# the hand-written trigger's phases: no trigger, during the keyset copy at
# RATE rows/s next to it, after the copy; sets R[PREFIX.hw.{none,during,after},run].
# Then, the copy complete and the trigger dropped, the writers' statements
# writing the copy themselves (R[PREFIX.dual.after,run]): what a copy kept
# in the writer's transaction costs with no trigger at all
hand_written() {  # prefix run tps-function dual-tps-function
    local p=$1 r=$2 tps=$3 dual=$4 pid
    prep_writers
    measure "$p.hw.none" "$r" "$tps"
    val "CALL hw_install()" >/dev/null
    PGAPPNAME=bench_hw sql -c "CALL keyset_copy_upsert('up', 'down_hw', $RATE, $RATE)" >/dev/null 2>&1 &
    pid=$!
    BGPIDS+=("$pid")
    sleep 1
    prep_writers
    measure "$p.hw.during" "$r" "$tps"
    val "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_hw'" >/dev/null
    wait "$pid" 2>/dev/null || true
    sql -c "CALL keyset_copy_upsert('up', 'down_hw')" >/dev/null
    prep_writers
    measure "$p.hw.after" "$r" "$tps"
    val "CALL hw_remove()" >/dev/null
    prep_writers
    measure "$p.dual.after" "$r" "$dual"
    val "DROP TABLE down_hw" >/dev/null
}

# a job's phases for each capture (trigger: arrangement; cdc): no job,
# during its backfill at RATE rows/s, after it finished; sets
# R[PREFIX.CAPTURE.{none,during,after},run]
job_phases() {  # prefix run tps-function label
    local p=$1 r=$2 tps=$3 label=$4 cap kind id st bad i
    for cap in trigger cdc; do
        kind=arrangement; [ "$cap" = cdc ] && kind=cdc
        [ "${AVAIL[$kind]}" = 1 ] || continue
        prep_writers
        measure "$p.$cap.none" "$r" "$tps"
        id=$(val "SELECT backfill.create_job('down', 'up', kind => '$kind', parallelism => 1, rate_limit => $RATE)")
        val "SELECT backfill.start_job($id)" >/dev/null
        # wait until the job has committed a barrier
        for i in $(seq 1 100); do
            [ "$(val "SELECT row_count > 0 FROM backfill.jobs WHERE job_id = $id")" = t ] && break; sleep 0.1
        done
        prep_writers
        measure "$p.$cap.during" "$r" "$tps"
        st=$(val "SELECT status FROM backfill.jobs WHERE job_id = $id")
        [ "$st" = backfilling ] || { echo "the job was $st at the end of the 'during' pgbench run; lower the rate" >&2; exit 3; }
        val "SELECT backfill.alter_rate_limit($id, NULL)" >/dev/null
        val "SELECT backfill.wait_job($id)" >/dev/null
        prep_writers
        measure "$p.$cap.after" "$r" "$tps"
        bad=$(val "SELECT count(*) FROM backfill.verify_job($id)")
        [ "$bad" = 0 ] || { echo "verify_job($id): $bad differences after the $label" >&2; exit 3; }
        val "SELECT backfill.drop_job($id)" >/dev/null
        log "  run $r: $label, $cap capture: tps none ${R[$p.$cap.none,$r]} during ${R[$p.$cap.during,$r]} after ${R[$p.$cap.after,$r]}"
    done
}

# the rate limit keeps the job backfilling for the whole pgbench run: at most
# a third of the table in the pgbench time, per actor (one actor)
RATE=$(( ROWS / (3 * PGB_SECS) ))
[ "$RATE" -lt 1 ] && RATE=1
log "2. writers: $CLIENTS clients, ${PGB_SECS}s each, rate limit $RATE rows/s during the backfill"
for r in $(seq 1 "$RUNS"); do
    # the reference: the same rows copied at the same rate by the keyset
    # loop, one commit a second as a job's barriers, capturing nothing: what
    # writers pay for the copy alone
    prep_writers
    R[w.ref.none,$r]=$(pgbench_tps)
    val "CREATE TABLE down_ref (id bigint PRIMARY KEY, a int, b text, c timestamptz)" >/dev/null
    PGAPPNAME=bench_ref sql -c "CALL keyset_copy('up', 'down_ref', $RATE, $RATE)" >/dev/null 2>&1 &
    refpid=$!
    BGPIDS+=("$refpid")
    sleep 1
    prep_writers
    R[w.ref.during,$r]=$(pgbench_tps)
    val "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench_ref'" >/dev/null
    wait "$refpid" 2>/dev/null || true
    val "DROP TABLE down_ref" >/dev/null
    log "  run $r: keyset copy at $RATE rows/s: tps none ${R[w.ref.none,$r]} during ${R[w.ref.during,$r]}"

    # the hand-written trigger, installed, then the rows copied next to it
    # by the keyset loop at the job's rate; after, the copy is complete
    hand_written w "$r" pgbench_tps pgbench_tps_dual
    log "  run $r: hand-written trigger: tps none ${R[w.hw.none,$r]} during ${R[w.hw.during,$r]} after ${R[w.hw.after,$r]}; the writers writing the copy ${R[w.dual.after,$r]}"

    job_phases w "$r" pgbench_tps "writers"
done

# ---------------------------------------------------------------- 2b. writers, 100-row statements
# The same phases as section 2, with statements of 100 rows each: an upsert
# of 100 keys (new ones inserted, existing ones updated), an update of 100
# and a delete of 100, each on a random range of contiguous keys.  Each
# client writes its own share of the keys, so that two statements never wait
# for each other's row locks (in whatever order their scans visit rows).
# Its keys, as in section 2, shared by the script and the one after it.
KEYS100='\set share (:n / :clients)
\set base (:client_id % :clients) * :share
\set k1 :base + random(1, :share - 100)
\set k2 :base + random(1, :share - 100)
\set k3 :base + random(1, :share - 100)'
{ echo "$KEYS100"; cat <<'SQL'; } > "$DIR/writes100.sql"
INSERT INTO up SELECT g, 1, md5(g::text), now() FROM generate_series(:k1, :k1 + 99) g ON CONFLICT (id) DO UPDATE SET a = up.a + 1;
UPDATE up SET a = a + 1, c = now() WHERE id BETWEEN :k2 AND :k2 + 99;
DELETE FROM up WHERE id BETWEEN :k3 AND :k3 + 99;
SQL
chmod 644 "$DIR/writes100.sql"
{ echo "$KEYS100"; cat <<'SQL'; } > "$DIR/writes100_dual.sql"
WITH w AS (INSERT INTO up SELECT g, 1, md5(g::text), now() FROM generate_series(:k1, :k1 + 99) g ON CONFLICT (id) DO UPDATE SET a = up.a + 1 RETURNING *)
  INSERT INTO down_hw SELECT * FROM w ON CONFLICT (id) DO UPDATE SET a = EXCLUDED.a, b = EXCLUDED.b, c = EXCLUDED.c;
WITH w AS (UPDATE up SET a = a + 1, c = now() WHERE id BETWEEN :k2 AND :k2 + 99 RETURNING *)
  UPDATE down_hw d SET a = w.a, b = w.b, c = w.c FROM w WHERE d.id = w.id;
WITH w AS (DELETE FROM up WHERE id BETWEEN :k3 AND :k3 + 99 RETURNING id)
  DELETE FROM down_hw d USING w WHERE d.id = w.id;
SQL
chmod 644 "$DIR/writes100_dual.sql"
pgbench_tps100() { pgbench_run "$DIR/writes100.sql" -D n="$ROWS" -D clients="$CLIENTS"; }
pgbench_tps100_dual() { pgbench_run "$DIR/writes100_dual.sql" -D n="$ROWS" -D clients="$CLIENTS"; }
log "2b. writers, 100-row statements: $CLIENTS clients, ${PGB_SECS}s each, rate limit $RATE rows/s during the backfill"
for r in $(seq 1 "$RUNS"); do
    hand_written w100 "$r" pgbench_tps100 pgbench_tps100_dual
    log "  run $r: 100-row statements, hand-written trigger: tps none ${R[w100.hw.none,$r]} during ${R[w100.hw.during,$r]} after ${R[w100.hw.after,$r]}; the writers writing the copy ${R[w100.dual.after,$r]}"
    job_phases w100 "$r" pgbench_tps100 "100-row statements"
done

# ---------------------------------------------------------------- 5. log store catch-up
# A snapshot job's log store: a table ls of LOGKEYS rows, a snapshot job on
# it, then one UPDATE of every row, so that its log holds LOGKEYS keys with
# their images.  The job (run_job, p1, 1000 ms) reads phase 1 from the
# images, then catches up on the log: it makes each logged key's downstream
# row the upstream's.  A watcher session polls the job's state every 2 ms:
# the catch-up is the time from the commit of the last phase-1 barrier
# (every vnode is_epoch_finished) to the job's finish.  The reference: an
# INSERT ... SELECT of the LOGKEYS rows into an indexed table (copying them).
LOGKEYS=$(( ROWS < 200000 ? ROWS : 200000 ))
log "5. log store catch-up: $LOGKEYS logged keys"
sql <<SQL
CREATE TABLE ls (id bigint PRIMARY KEY, a int, b text, c timestamptz);
INSERT INTO ls SELECT * FROM up ORDER BY id LIMIT $LOGKEYS;
VACUUM (FREEZE, ANALYZE) ls;
CREATE FUNCTION watch_phases(jid bigint, OUT phase1_done float8, OUT finished float8)
LANGUAGE plpgsql AS \$\$
DECLARE
  st regclass;
  done bool;
BEGIN
  SELECT j.state_table INTO st FROM backfill.job j WHERE j.job_id = jid;
  LOOP
    IF phase1_done IS NULL THEN
      EXECUTE format('SELECT count(*) = 256 AND bool_and(is_epoch_finished) FROM %s', st) INTO done;
      IF done THEN phase1_done := extract(epoch FROM clock_timestamp()); END IF;
    END IF;
    IF (SELECT j.status FROM backfill.job j WHERE j.job_id = jid) = 'finished' THEN
      finished := extract(epoch FROM clock_timestamp());
      phase1_done := coalesce(phase1_done, finished);
      RETURN;
    END IF;
    PERFORM pg_sleep(0.002);
  END LOOP;
END \$\$;
SQL
for r in $(seq 1 "$RUNS"); do
    val "CREATE TABLE down_ls (id bigint PRIMARY KEY, a int, b text, c timestamptz); CHECKPOINT" >/dev/null
    s=$(timed "INSERT INTO down_ls SELECT * FROM ls;")
    R[ls.copy,$r]=$s
    val "DROP TABLE down_ls" >/dev/null
    id=$(val "SELECT backfill.create_job('down_ls', 'ls', kind => 'snapshot', parallelism => 1)")
    val "UPDATE ls SET a = a + 1" >/dev/null
    val "VACUUM ANALYZE ls" >/dev/null
    val "CHECKPOINT" >/dev/null
    val "SELECT phase1_done, finished FROM watch_phases($id)" > "$DIR/watch.out" &
    watchpid=$!
    BGPIDS+=("$watchpid")
    sql -c "SET backfill.barrier_interval_ms = 1000" -c "CALL backfill.run_job($id)" >/dev/null
    wait "$watchpid"
    job_status_finished "$id" || { echo "log store job $id did not finish" >&2; exit 3; }
    bad=$(val "SELECT count(*) FROM backfill.verify_job($id)")
    [ "$bad" = 0 ] || { echo "verify_job($id): $bad differences after the log store" >&2; exit 3; }
    val "SELECT backfill.drop_job($id)" >/dev/null
    R[ls.catchup,$r]=$(awk -F'|' '{printf "%.3f", $2 - $1}' "$DIR/watch.out")
    log "  run $r: copy $LOGKEYS rows ${R[ls.copy,$r]} s, catch-up on $LOGKEYS logged keys ${R[ls.catchup,$r]} s"
done
val "DROP TABLE ls; DROP FUNCTION watch_phases" >/dev/null

# the hand-written trigger's rows, and the job's TPS against it, for each
# capture (while a cdc job copies, its writers pay their WAL alone, which
# the job decodes in its own process; once finished, every job follows
# through the apply trigger)
hw_rows() {  # prefix label job-prefix
    local p=$1 label=$2 j=$3 rat cap kind
    row "$label: hand-written trigger, no trigger" "$(med "$p.hw.none")" "" "" ""
    row "  WAL per transaction, bytes" "$(med "$p.hw.none.wal")" "" "" ""
    for ph in during after; do
        row "$label: hand-written trigger, $ph the copy" "$(med "$p.hw.$ph")" "$(f2 "$(ratio_med "$p.hw.$ph" "$p.hw.none")")" "(ratio: to no trigger)" ""
        row "  WAL per transaction, bytes" "$(med "$p.hw.$ph.wal")" "" "" ""
        for cap in trigger cdc; do
            kind=arrangement; [ "$cap" = cdc ] && kind=cdc
            [ "${AVAIL[$kind]}" = 1 ] || continue
            rat=$(ratio_med "$j.$cap.$ph" "$p.hw.$ph")
            row "  the job ($cap capture) $ph the copy vs hand-written" "$(med "$j.$cap.$ph")" "$(f2 "$rat")" ">= 1.20 x hand-written" "$(check "$rat" ">=" 1.2)"
            row "    WAL per transaction, bytes (ratio: to hand-written)" "$(med "$j.$cap.$ph.wal")" "$(f2 "$(ratio_med "$j.$cap.$ph.wal" "$p.hw.$ph.wal")")" "(info)" ""
        done
    done
    row "  the writers writing the copy themselves, no trigger, after" "$(med "$p.dual.after")" "$(f2 "$(ratio_med "$p.dual.after" "$p.hw.after")")" "(info: ratio to hand-written)" ""
    row "    WAL per transaction, bytes (ratio: to hand-written)" "$(med "$p.dual.after.wal")" "$(f2 "$(ratio_med "$p.dual.after.wal" "$p.hw.after.wal")")" "(info)" ""
}

# the rows of sections 2, 2b and 5 (row, check, f2 and NA are the report's)
writers_rows() {
    local cap kind rat
    row "2. writers, pgbench TPS, $CLIENTS clients, ${PGB_SECS} s (ratio: to no job)" "" "" "" ""
    row "reference: no job" "$(med w.ref.none)" "1.00" "" ""
    row "reference: during a keyset copy, $RATE rows/s (no capture)" "$(med w.ref.during)" "$(f2 "$(ratio_med w.ref.during w.ref.none)")" "(info: the copy alone)" ""
    for cap in trigger cdc; do
        kind=arrangement; [ "$cap" = cdc ] && kind=cdc
        if [ "${AVAIL[$kind]}" != 1 ]; then
            for ph in none during after; do row "$cap capture: $ph" "$NA" "" "" "n/a"; done
            continue
        fi
        row "$cap capture: no job" "$(med "w.$cap.none")" "1.00" "" ""
        rat=$(ratio_med "w.$cap.during" "w.$cap.none")
        row "$cap capture: during a backfill (rate limit $RATE rows/s)" "$(med "w.$cap.during")" "$(f2 "$rat")" ">= 0.95 x no job" "$(check "$rat" ">=" 0.95)"
        rat=$(ratio_med "w.$cap.after" "w.$cap.none")
        row "$cap capture: after it finished (downstream follows)" "$(med "w.$cap.after")" "$(f2 "$rat")" ">= 0.90 x no job" "$(check "$rat" ">=" 0.90)"
    done
    row "2b. writers, 100-row statements, pgbench TPS (ratio: to no job)" "" "" "" ""
    for cap in trigger cdc; do
        kind=arrangement; [ "$cap" = cdc ] && kind=cdc
        [ "${AVAIL[$kind]}" = 1 ] || continue
        row "100-row statements, $cap capture: no job" "$(med "w100.$cap.none")" "1.00" "" ""
        rat=$(ratio_med "w100.$cap.during" "w100.$cap.none")
        row "100-row statements, $cap capture: during a backfill" "$(med "w100.$cap.during")" "$(f2 "$rat")" ">= 0.95 x no job" "$(check "$rat" ">=" 0.95)"
        rat=$(ratio_med "w100.$cap.after" "w100.$cap.none")
        row "100-row statements, $cap capture: after it finished" "$(med "w100.$cap.after")" "$(f2 "$rat")" ">= 0.90 x no job" "$(check "$rat" ">=" 0.90)"
    done
    row "2c. writers against the hand-written trigger (ratio: job's TPS to its)" "" "" "" ""
    hw_rows w "single-row statements" w
    hw_rows w100 "100-row statements" w100
    row "5. snapshot log store, seconds (ratio: to copying the rows)" "" "" "" ""
    row "INSERT ... SELECT of $LOGKEYS rows (indexed)" "$(med ls.copy)" "1.00" "" ""
    rat=$(ratio_med ls.catchup ls.copy)
    row "catch-up on $LOGKEYS logged keys (snapshot, p1, 1000 ms)" "$(med ls.catchup)" "$(f2 "$rat")" "<= 2.00 x copying" "$(check "$rat" "<=" 2.0)"
}

if [ "$ONLY_WRITERS" = 1 ]; then
    FAILS=0; LINES=()
    row() {
        LINES+=("$(printf '%-58s %14s %8s  %-32s %s' "$1" "$2" "$3" "$4" "$5")")
        [ "$5" = FAIL ] && FAILS=$((FAILS + 1))
        return 0
    }
    check() { awk -v v="$1" -v b="$3" -v op="$2" 'BEGIN {ok = (op == ">=") ? (v >= b) : (v <= b); print ok ? "PASS" : "FAIL"}'; }
    f2() { awk -v v="$1" 'BEGIN {printf "%.2f", v}'; }
    NA="n/a (not available)"
    writers_rows
    echo
    echo "backfill benchmark (writers and log store only): $COMMIT; rows $ROWS, runs $RUNS, $(nproc) cores, $(( $(date +%s) - T_START )) s, shared memory in $SHM_PAGES"
    for l in "${LINES[@]}"; do echo "$l"; done
    echo
    echo "exit code: $(( FAILS > 0 ? 1 : 0 )) ($FAILS target(s) missed)"
    [ "$FAILS" = 0 ]
    exit
fi

# ---------------------------------------------------------------- 3. memory
# peak memory of the backend running CALL backfill.run_job: sampled from
# /proc/<pid>/status every 20 ms; VmHWM is read at the last sample.  VmHWM
# counts the shared buffers the backend touched (RssShmem), which grow with
# the table, so the target is checked on the peak private anonymous memory
# (RssAnon: palloc'd memory, the backend's heap; shared buffers are RssShmem,
# mapped binaries RssFile).
mem_run() {  # table rows -> sets MEM_PRIV (kB) and MEM_HWM (kB)
    local tbl=$1 id pid psqlpid priv hwm st
    id=$(val "SELECT backfill.create_job('down_mem', '$tbl', kind => 'arrangement', parallelism => 1)" 2>/dev/null)
    val "CHECKPOINT" >/dev/null
    PGAPPNAME=bench_mem sql -c "SET backfill.barrier_interval_ms = 1000" -c "CALL backfill.run_job($id)" &
    psqlpid=$!
    BGPIDS+=("$psqlpid")
    pid=
    for i in $(seq 1 200); do
        pid=$(val "SELECT pid FROM pg_stat_activity WHERE application_name = 'bench_mem'")
        [ -n "$pid" ] && break; sleep 0.02
    done
    MEM_PRIV=0; MEM_HWM=0
    while [ -n "$pid" ] && [ -r "/proc/$pid/status" ]; do
        st=$(cat "/proc/$pid/status" 2>/dev/null) || break
        priv=$(awk '/^RssAnon:/ {print $2}' <<<"$st")
        hwm=$(awk '/^VmHWM:/ {print $2}' <<<"$st")
        [ -n "$hwm" ] || break
        if [ "$priv" -gt "$MEM_PRIV" ]; then MEM_PRIV=$priv; fi
        MEM_HWM=$hwm
        kill -0 "$psqlpid" 2>/dev/null || break
        sleep 0.02
    done
    wait "$psqlpid"
    job_status_finished "$id" || { echo "memory job $id did not finish" >&2; exit 3; }
    val "SELECT backfill.drop_job($id)" >/dev/null
}
log "3. memory: building up4 ($MEM_ROWS4 rows)"
sql <<SQL
CREATE TABLE up4 (id bigint PRIMARY KEY, a int, b text, c timestamptz);
INSERT INTO up4 SELECT g, ((g::bigint * 7919) % 1000003)::int, md5(g::text), '2026-01-01'::timestamptz + g * interval '1 second'
  FROM generate_series(1, $MEM_ROWS4) g;
VACUUM (FREEZE, ANALYZE) up4;
CREATE TABLE up1 AS SELECT * FROM up4 WHERE id <= $MEM_ROWS;
ALTER TABLE up1 ADD PRIMARY KEY (id);
VACUUM (FREEZE, ANALYZE) up1;
SQL
for r in $(seq 1 "$RUNS"); do
    mem_run up1; R[mem.n.priv,$r]=$MEM_PRIV; R[mem.n.hwm,$r]=$MEM_HWM
    mem_run up4; R[mem.4n.priv,$r]=$MEM_PRIV; R[mem.4n.hwm,$r]=$MEM_HWM
    log "  run $r: private peak N ${R[mem.n.priv,$r]} kB, 4N ${R[mem.4n.priv,$r]} kB; VmHWM N ${R[mem.n.hwm,$r]} kB, 4N ${R[mem.4n.hwm,$r]} kB"
done
val "DROP TABLE up1" >/dev/null

# ---------------------------------------------------------------- 4. recovery
# An arrangement job (parallelism 1, 1000 ms barriers) runs in the foreground
# without writers.  We poll its committed row_count; the growth between two
# commits is one barrier's worth.  About 80% of a barrier after a commit we
# kill -9 its backend.  After the restart:
#   lost    = rows the in-flight barrier had read and inserted, which the
#             crash rolled back: the dead tuples of the downstream (its
#             aborted inserts; a lower bound: WAL not yet written is lost)
#   overlap = rows the resumed run inserts beyond N - committed row_count
#             (n_tup_ins of the downstream; statistics restart at zero after
#             a crash), i.e. rows it read that had been committed already
#   re-read = lost + overlap, as rows and in barriers' worth
# The job runs on up4 (4N rows).  It must last several barriers: if the
# measured arrangement p1 throughput would copy up4 in less than 4 s, the job
# gets a rate limit of 4N/6 rows/s (one barrier's worth is then measured too).
REC_ROWS=$MEM_ROWS4
REC_RATE=NULL
if [ "$(awk -v n="$REC_ROWS" -v t="$(med arrangement.p1.1000)" 'BEGIN {print (n / t < 4) ? 1 : 0}')" = 1 ]; then
    REC_RATE=$(( REC_ROWS / 6 ))
fi
log "4. recovery: $REC_ROWS rows, rate limit $REC_RATE"
recovery_run() {
    local id psqlpid pid prev cur t_commit worth=0 now committed ins deadt overlap
    id=$(val "SELECT backfill.create_job('down_rec', 'up4', kind => 'arrangement', parallelism => 1, rate_limit => $REC_RATE)" 2>/dev/null)
    val "ALTER TABLE down_rec SET (autovacuum_enabled = off)" >/dev/null
    PGAPPNAME=bench_rec sql -c "SET backfill.barrier_interval_ms = 1000" -c "CALL backfill.run_job($id)" >/dev/null 2>&1 &
    psqlpid=$!
    BGPIDS+=("$psqlpid")
    prev=0; local ncommits=0
    while :; do
        cur=$(val "SELECT row_count FROM backfill.jobs WHERE job_id = $id")
        if [ "$cur" != "$prev" ]; then
            if [ $(( cur - prev )) -gt "$worth" ]; then worth=$(( cur - prev )); fi
            prev=$cur; ncommits=$((ncommits + 1)); t_commit=$(date +%s%N)
            # kill 800 ms after the second commit we saw
            if [ "$ncommits" -ge 2 ]; then
                sleep 0.8
                break
            fi
        fi
        if [ "$cur" -gt $(( REC_ROWS * 4 / 5 )) ] || ! kill -0 "$psqlpid" 2>/dev/null; then
            echo "recovery: the job went too fast to be killed mid-backfill (row_count $cur)" >&2
            break
        fi
        sleep 0.02
    done
    pid=$(val "SELECT pid FROM pg_stat_activity WHERE application_name = 'bench_rec'")
    [ -n "$pid" ] || { echo "recovery: no backend to kill" >&2; exit 3; }
    REC_KILL_MS=$(( ($(date +%s%N) - t_commit) / 1000000 ))
    "${RUNAS[@]}" kill -9 "$pid"
    wait "$psqlpid" 2>/dev/null || true
    sleep 1
    wait_ready
    committed=$(val "SELECT row_count FROM backfill.jobs WHERE job_id = $id")
    deadt=$(val "SELECT dead_tuple_count FROM pgstattuple('down_rec')")
    ins0=$(val "SELECT coalesce(n_tup_ins, 0) FROM pg_stat_user_tables WHERE relid = 'down_rec'::regclass")
    sql -c "SET backfill.barrier_interval_ms = 1000" -c "CALL backfill.run_job($id)" >/dev/null
    val "SELECT pg_stat_force_next_flush()" >/dev/null 2>&1 || true
    sleep 0.6
    ins=$(val "SELECT coalesce(n_tup_ins, 0) FROM pg_stat_user_tables WHERE relid = 'down_rec'::regclass")
    job_status_finished "$id" || { echo "recovery job $id did not finish" >&2; exit 3; }
    bad=$(val "SELECT count(*) FROM backfill.verify_job($id)")
    [ "$bad" = 0 ] || { echo "verify_job($id): $bad differences after the crash" >&2; exit 3; }
    val "SELECT backfill.drop_job($id)" >/dev/null
    overlap=$(( ins - ins0 - (REC_ROWS - committed) ))
    if [ "$overlap" -lt 0 ]; then overlap=0; fi
    REC_COMMITTED=$committed; REC_LOST=$deadt; REC_OVERLAP=$overlap; REC_WORTH=$worth
    REC_REREAD=$(( deadt + overlap ))
}
for r in $(seq 1 "$RUNS"); do
    val "CHECKPOINT" >/dev/null
    recovery_run
    R[rec.reread,$r]=$REC_REREAD; R[rec.worth,$r]=$REC_WORTH
    R[rec.lost,$r]=$REC_LOST; R[rec.overlap,$r]=$REC_OVERLAP; R[rec.killms,$r]=$REC_KILL_MS
    log "  run $r: committed at the kill $REC_COMMITTED, lost in flight $REC_LOST, overlap $REC_OVERLAP, barrier worth $REC_WORTH, killed ${REC_KILL_MS} ms after a commit seen"
done
val "DROP TABLE up4" >/dev/null

# ---------------------------------------------------------------- report
FAILS=0
LINES=()
row() {  # measurement median ratio target result
    LINES+=("$(printf '%-58s %14s %8s  %-32s %s' "$1" "$2" "$3" "$4" "$5")")
    [ "$5" = FAIL ] && FAILS=$((FAILS + 1))
    return 0
}
check() {  # value op bound -> PASS/FAIL
    awk -v v="$1" -v b="$3" -v op="$2" 'BEGIN {ok = (op == ">=") ? (v >= b) : (v <= b); print ok ? "PASS" : "FAIL"}'
}
f2() { awk -v v="$1" 'BEGIN {printf "%.2f", v}'; }
NA="n/a (not available)"

row "1. throughput, rows/s (ratio: to INSERT...SELECT)" "median" "ratio" "target" "result"
row "INSERT INTO down SELECT * FROM up (indexed; the limit)" "$(med insert)" "1.00" "" ""
row "2 x INSERT...SELECT at once, a range each (as p2 actors)" "$(med insert2)" "$(f2 "$(ratio_med insert2 insert)")" "(info: parallel limit)" ""
row "4 x INSERT...SELECT at once, a range each (as p4 actors)" "$(med insert4)" "$(f2 "$(ratio_med insert4 insert)")" "(info: parallel limit)" ""
row "keyset loop, PL/pgSQL, COMMIT every 1024 rows" "$(med keyset)" "$(f2 "$(ratio_med keyset insert)")" "" ""
for iv in $INTERVALS; do
    for k in $KINDS; do
        name="$k, p1, run_job, ${iv} ms"
        if [ "${AVAIL[$k]}" != 1 ]; then row "$name" "$NA" "" "" "n/a"; continue; fi
        rat=$(ratio_med "$k.p1.$iv" insert)
        if [ "$k" = arrangement ] && [ "$iv" = 1000 ]; then
            row "$name" "$(med "$k.p1.$iv")" "$(f2 "$rat")" ">= 0.90 x INSERT...SELECT" "$(check "$rat" ">=" 0.9)"
        else
            row "$name" "$(med "$k.p1.$iv")" "$(f2 "$rat")" "" ""
        fi
        kr=$(ratio_med "$k.p1.$iv" keyset)
        if [ "$iv" = 1000 ]; then
            row "  $name vs keyset loop" "" "$(f2 "$kr")" ">= 1.20 x keyset" "$(check "$kr" ">=" 1.2)"
        else
            row "  $name vs keyset loop" "" "$(f2 "$kr")" "(info)" ""
        fi
    done
    name="arrangement, p2, workers, ${iv} ms"
    row "$name" "$(med "arrangement.p2w.$iv")" "$(f2 "$(ratio_med "arrangement.p2w.$iv" insert)")" "" ""
    pr=$(ratio_med "arrangement.p2w.$iv" "arrangement.p1.$iv")
    if [ "$iv" = 1000 ]; then
        row "  $name vs arrangement p1" "" "$(f2 "$pr")" ">= 1.30 x p1" "$(check "$pr" ">=" 1.3)"
        row "  2 x INSERT...SELECT vs INSERT...SELECT (same split)" "" "$(f2 "$(ratio_med insert2 insert)")" "(info: parallel limit)" ""
        kr=$(ratio_med "arrangement.p2w.$iv" keyset)
        row "  $name vs keyset loop" "" "$(f2 "$kr")" ">= 1.20 x keyset" "$(check "$kr" ">=" 1.2)"
        # ---- range vnodes: against the sessions that split the same way
        kr=$(ratio_med "arrangement.p2w.$iv" insert2)
        row "  $name vs 2 x INSERT...SELECT" "" "$(f2 "$kr")" ">= 0.95 x 2 sessions" "$(check "$kr" ">=" 0.95)"
        name="arrangement, p4, workers, ${iv} ms"
        row "$name" "$(med "arrangement.p4w.$iv")" "$(f2 "$(ratio_med "arrangement.p4w.$iv" insert)")" "" ""
        kr=$(ratio_med "arrangement.p4w.$iv" insert4)
        row "  $name vs 4 x INSERT...SELECT" "" "$(f2 "$kr")" ">= 0.95 x 4 sessions" "$(check "$kr" ">=" 0.95)"
        name="arrangement, p2, workers, ${iv} ms, hashed vnodes"
        row "$name" "$(med "arrangement.p2w.hash")" "$(f2 "$(ratio_med "arrangement.p2w.hash" insert)")" "(info: before 1.2)" ""
    else
        row "  $name vs arrangement p1" "" "$(f2 "$pr")" "(info)" ""
    fi
done
partitioned_rows
# ---- indexes built once: against writing the heap and building the indexes once
row "CREATE TABLE AS + ADD PRIMARY KEY (ratio: to INSERT...SELECT)" "$(med ctas)" "$(f2 "$(ratio_med ctas insert)")" "" ""
for k in snapshot arrangement; do
    [ "${AVAIL[$k]}" = 1 ] || continue
    rat=$(ratio_med "$k.p1.1000" ctas)
    if [ "$k" = snapshot ]; then
        row "  $k, p1, run_job, 1000 ms vs CTAS + PK" "" "$(f2 "$rat")" ">= 1.00 x CTAS + PK" "$(check "$rat" ">=" 1.0)"
    else
        row "  $k, p1, run_job, 1000 ms vs CTAS + PK" "" "$(f2 "$rat")" "(info: maintains its index)" ""
    fi
done
row "CREATE TABLE AS + 4 index builds (up3: key + 3 indexes)" "$(med ctas4)" "$(f2 "$(ratio_med ctas4 insert)")" "" ""
for k in snapshot arrangement; do
    [ "${AVAIL[$k]}" = 1 ] || continue
    name="$k, p1, run_job, 1000 ms, up3, indexes => true"
    rat=$(ratio_med "$k.p1.idx3" ctas4)
    row "$name" "$(med "$k.p1.idx3")" "" "" ""
    if [ "$k" = snapshot ]; then
        row "  vs CTAS + 4 index builds" "" "$(f2 "$rat")" ">= 1.00 x CTAS + 4 builds" "$(check "$rat" ">=" 1.0)"
    else
        row "  vs CTAS + 4 index builds" "" "$(f2 "$rat")" "(info: maintains 4 indexes)" ""
    fi
done
# ---- range vnodes: rows read by a job per upstream row
row "rows read from up per upstream row (seq_tup_read + idx_tup_fetch)" "" "" "" ""
for name in "arrangement.p1.1000:arrangement, p1, run_job" "arrangement.p2w.1000:arrangement, p2, workers" \
            "arrangement.p4w.1000:arrangement, p4, workers"; do
    v=$(med "read.${name%%:*}")
    row "  ${name#*:}, 1000 ms" "$v" "" "<= 1.05 x N" "$(check "$v" "<=" 1.05)"
done
row "  arrangement, p2, workers, 1000 ms, hashed vnodes" "$(med read.arrangement.p2w.hash)" "" "(info: before 1.2)" ""

writers_rows

row "3. memory of the run_job backend, kB (ratio: 4N to N)" "" "" "" ""
row "peak private memory (RssAnon), N = $MEM_ROWS" "$(med mem.n.priv)" "1.00" "" ""
rat=$(ratio_med mem.4n.priv mem.n.priv)
row "peak private memory (RssAnon), 4N = $MEM_ROWS4" "$(med mem.4n.priv)" "$(f2 "$rat")" "<= 1.10 x N" "$(check "$rat" "<=" 1.1)"
row "VmHWM (includes touched shared buffers), N" "$(med mem.n.hwm)" "1.00" "" ""
row "VmHWM (includes touched shared buffers), 4N" "$(med mem.4n.hwm)" "$(f2 "$(ratio_med mem.4n.hwm mem.n.hwm)")" "(info)" ""

row "4. recovery after kill -9, arrangement p1, 1000 ms, 4N rows, rate limit $REC_RATE" "" "" "" ""
row "one barrier's worth per actor, rows" "$(med rec.worth)" "" "" ""
row "kill -9 this many ms after the last commit seen" "$(med rec.killms)" "" "" ""
row "rows lost in flight (dead tuples, lower bound)" "$(med rec.lost)" "$(f2 "$(ratio_med rec.lost rec.worth)")" "" ""
row "rows read again beyond the committed position" "$(med rec.overlap)" "$(f2 "$(ratio_med rec.overlap rec.worth)")" "" ""
rat=$(ratio_med rec.reread rec.worth)
row "rows re-read in all (ratio: barriers' worth per actor)" "$(med rec.reread)" "$(f2 "$rat")" "<= 1.00 barrier per actor" "$(check "$rat" "<=" 1.0)"

echo
echo "backfill benchmark: $COMMIT; rows $ROWS, runs $RUNS, $(nproc) cores, $(( $(date +%s) - T_START )) s, shared memory in $SHM_PAGES"
for l in "${LINES[@]}"; do echo "$l"; done
echo
echo "exit code: $(( FAILS > 0 ? 1 : 0 )) ($FAILS target(s) missed)"
[ "$FAILS" = 0 ]

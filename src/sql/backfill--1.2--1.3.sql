/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Caps on background workers (src/runtime/registry.c): reschedule checks the new
-- parallelism against backfill.max_workers and backfill.max_workers_per_role
-- before it stops the job's workers, so that a refused reschedule leaves the
-- job running as it was.
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._check_workers(job_id bigint, parallelism integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_check_workers_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._check_workers(bigint, integer) IS
'Internal: refuses a parallelism whose background workers the caps backfill.max_workers and backfill.max_workers_per_role do not allow, for a job the caller owns that runs in the background.';

CREATE OR REPLACE FUNCTION backfill.reschedule(job_id bigint, parallelism integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    was_running boolean;
BEGIN
    IF parallelism IS NULL THEN
        RAISE EXCEPTION 'argument "parallelism" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF parallelism < 1 OR parallelism > 256 THEN
        RAISE EXCEPTION 'parallelism must be between 1 and 256'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The 256 vnodes are split across the actors, so there can be at most one actor per vnode.';
    END IF;
    IF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF j.kind = 'cdc' AND parallelism <> 1 THEN
        RAISE EXCEPTION 'a backfill job of kind "cdc" must have parallelism 1'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The cdc backfill reads each table with a single actor, as RisingWave''s non-parallel CDC backfill does.';
    END IF;
    -- before the workers stop: a refused reschedule leaves them running
    PERFORM backfill._check_reschedule(job_id);
    PERFORM backfill._check_workers(job_id, parallelism);
    was_running := backfill._stop_and_lock_job(job_id);
    -- new actors, new ids, the vnodes in even contiguous ranges again; the
    -- vnodes keep their progress wherever they land
    PERFORM backfill._rebuild_actors(job_id, parallelism);
    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
END
$$;
COMMENT ON FUNCTION backfill.reschedule(bigint, integer) IS
'Spreads the vnodes of a job over a new set of actors; restarts its background workers if it had any.';


-- ---------------------------------------------------------------------------
-- Watching a job: the live actors (backfill.progress) and the lines of
-- progress that run_job and wait_job send to their client (src/runtime/progress.c,
-- src/runtime/registry.c)
-- ---------------------------------------------------------------------------

-- the failures of each job, counted: a failed job may run again, and its
-- last_error tells only the last one (src/catalog/catalog.c counts them)
ALTER TABLE backfill.job ADD COLUMN failures integer NOT NULL DEFAULT 0;

CREATE FUNCTION backfill._live_actors(
    OUT pid integer, OUT job_id bigint, OUT actor_id integer, OUT run_mode text,
    OUT phase text, OUT rows_done bigint, OUT "position" text, OUT barriers bigint,
    OUT epoch bigint, OUT rows_per_second double precision, OUT throttled_by text,
    OUT started_at timestamptz, OUT last_barrier_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_live_actors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._live_actors() IS
'Internal: the actors running now, as their processes published them in shared memory after their last barrier; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats.';

CREATE FUNCTION backfill._report_progress(job_id bigint, since timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'backfill_report_progress'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._report_progress(bigint, timestamptz) IS
'Internal: for wait_job, sends the job''s line of progress to the client as an INFO message when backfill.client_progress_interval has passed since "since"; returns when it sent it, or "since".';

-- One row per actor running now, in a background worker or in a session's
-- CALL backfill.run_job, as pg_stat_progress_* has one per backend: from
-- shared memory when the library is preloaded; otherwise the actors of a run
-- in a session come from the catalog (committed each barrier), with its pid
-- from the job lock the session holds, and without position or barriers.
CREATE VIEW backfill.progress WITH (security_invoker = true) AS
SELECT l.pid, l.job_id, j.job_name, l.actor_id, j.kind, l.run_mode, l.phase,
       l.rows_done,
       (SELECT pg_catalog.sum(a.row_count) FROM backfill.actor a
         WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id)::bigint AS job_rows_done,
       j.total_rows AS job_rows_total,
       l."position", l.barriers, l.epoch,
       pg_catalog.round(l.rows_per_second)::bigint AS rows_per_second,
       l.throttled_by, l.started_at, l.last_barrier_at
  FROM backfill._live_actors() l
  JOIN backfill.job j ON j.job_id OPERATOR(pg_catalog.=) l.job_id
UNION ALL
SELECT k.pid, j.job_id, j.job_name, a.actor_id, j.kind, 'foreground',
       CASE WHEN a.log_store_lag_ms IS NOT NULL THEN 'log store' ELSE 'snapshot' END,
       a.row_count,
       (SELECT pg_catalog.sum(b.row_count) FROM backfill.actor b
         WHERE b.job_id OPERATOR(pg_catalog.=) j.job_id)::bigint,
       j.total_rows, NULL, NULL, a.epoch,
       pg_catalog.round(a.rows_per_second)::bigint, a.throttled_by, NULL, NULL
  FROM backfill.job j
  JOIN pg_catalog.pg_locks k
    ON k.locktype OPERATOR(pg_catalog.=) 'advisory'
   AND k.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                          WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
   AND k.classid OPERATOR(pg_catalog.=) (j.job_id OPERATOR(pg_catalog.>>) 32)::pg_catalog.oid
   AND k.objid OPERATOR(pg_catalog.=) (j.job_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
   AND k.objsubid OPERATOR(pg_catalog.=) 25190   -- BACKFILL_LOCK_FIELD4, the job lock
   AND k.mode OPERATOR(pg_catalog.=) 'ExclusiveLock' AND k.granted
  JOIN backfill.actor a ON a.job_id OPERATOR(pg_catalog.=) j.job_id
 WHERE j.status OPERATOR(pg_catalog.=) 'backfilling'
   AND NOT EXISTS (SELECT FROM backfill._live_actors() l
                    WHERE l.job_id OPERATOR(pg_catalog.=) j.job_id);
COMMENT ON VIEW backfill.progress IS
'One row per actor running now, in a worker or in CALL backfill.run_job: its process, phase, rows, position, barriers and pace; \watch 1 on it is the live picture.';
GRANT SELECT ON backfill.progress TO PUBLIC;

-- wait_job of 1.0, which also sends the job's line of progress every
-- backfill.client_progress_interval while it waits
CREATE OR REPLACE FUNCTION backfill.wait_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    running boolean;
    reported timestamptz := pg_catalog.clock_timestamp();
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'backfill.wait_job() must run at isolation level READ COMMITTED'
            USING ERRCODE = 'invalid_transaction_state',
                  DETAIL = 'It watches the job''s status as the workers commit it.';
    END IF;
    LOOP
        running := backfill._job_is_running(job_id);
        -- read after the check: a worker commits the final status, then exits
        SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = wait_job.job_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'backfill job % was dropped', job_id
                USING ERRCODE = 'undefined_object';
        ELSIF j.status = 'finished' THEN
            RETURN;
        ELSIF j.status = 'failed' THEN
            RAISE EXCEPTION USING MESSAGE = j.last_error,
                                  ERRCODE = coalesce(j.last_sqlstate, 'XX000'),
                                  DETAIL = coalesce(j.last_error_detail, '');
        ELSIF j.status = 'cancelled' THEN
            RAISE EXCEPTION 'backfill job % has been cancelled', job_id
                USING ERRCODE = 'object_not_in_prerequisite_state';
        ELSIF NOT running THEN
            RAISE EXCEPTION 'backfill job % is not running', job_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = format('Start it with backfill.start_job(%s), or run it here with CALL backfill.run_job(%s).', job_id, job_id);
        END IF;
        reported := backfill._report_progress(job_id, reported);
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
COMMENT ON FUNCTION backfill.wait_job(bigint) IS
'Waits until a job has finished; raises its error if it fails; sends its progress to the client every backfill.client_progress_interval.';



-- ---- keys: comparisons through the key types' btree operator classes ----

-- The comparison of two keys of a job's upstream, written with the
-- operators of the key types' default btree operator classes
-- (OPERATOR(schema.name), looked up by strategy), for SQL that builds
-- statements over a job's key: the order of the primary key's index
-- whatever the operators are named (hstore's #<#, #<=#, ...), whatever the
-- search_path.
CREATE FUNCTION backfill._key_compare_sql(upstream regclass, pk_columns text[], "left" text,
                                          op text, "right" text)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_key_compare_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._key_compare_sql(regclass, text[], text, text, text) IS
'Internal: the SQL comparing the key columns pk_columns of upstream under alias left with those under alias right (op: <, <=, =, >=, >), through the key types'' btree operator classes.';

-- verify_job of 1.2, its positions compared through _key_compare_sql
CREATE OR REPLACE FUNCTION backfill.verify_job(job_id bigint)
RETURNS TABLE (pk text, problem text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    key_u text;
    key_d text;
    key_s text;
    key_c text;
    cols_u text;
    cols_d text;
    scan_u text;
    scan_d text;
    covered text := 'true';
    settled text := 'true';
    decoded text := 'SELECT NULL::record AS k WHERE false';
    vnode_u text;
    key_types text;
    first_type text;
    part_cases text := '';
BEGIN
    IF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT string_agg('u.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('d.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('s.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('c.' || quote_ident(c), ', ' ORDER BY o)
      INTO key_u, key_d, key_s, key_c
      FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o);
    -- a key's vnode in the job: its range, or the hash of older jobs
    vnode_u := CASE WHEN j.vnode_mapping = 'range'
                    THEN format('backfill.job_vnode(%s::int8, %s)', j.job_id, key_u)
                    ELSE format('backfill.vnode(%s)', key_u) END;
    -- each value as the downstream's column stores it
    SELECT string_agg(format('CAST(%s AS %s)', coalesce('(' || t.e || ')', 'u.' || quote_ident(t.c)),
                             format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY t.o),
           string_agg('d.' || quote_ident(t.c), ', ' ORDER BY t.o)
      INTO cols_u, cols_d
      FROM unnest(j.columns, j.expressions) WITH ORDINALITY AS t(c, e, o)
      JOIN pg_attribute a ON a.attrelid = j.downstream AND a.attname = t.c AND NOT a.attisdropped;
    -- a partitioned upstream is read through its partitions
    scan_u := format('%s%s u', CASE WHEN (SELECT relkind FROM pg_class WHERE oid = j.upstream) = 'p'
                                    THEN '' ELSE 'ONLY ' END, j.upstream);
    scan_d := format('%s', j.downstream);

    IF j.remote THEN
        SELECT string_agg(format('p.k[%s]::%s', t.o, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY t.o),
               min(format_type(a.atttypid, a.atttypmod)) FILTER (WHERE t.o = 1)
          INTO key_types, first_type
          FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o)
          JOIN pg_attribute a ON a.attrelid = j.downstream AND a.attname = t.c AND NOT a.attisdropped;
        IF j.status <> 'finished' THEN
            -- the keys of finished splits: [bound split_id - 1, bound split_id)
            -- (compared through the key type's btree operators, as the
            -- splits were cut: an hstore key has no >= of that name)
            -- and, over several servers, in the split's partition: its
            -- partition constraint, on the key's columns, which hold the
            -- partition keys (a NULL bound is the partition's start or end)
            IF j.remote_partitions IS NOT NULL THEN
                SELECT format(' AND CASE s.split_id %s END',
                              string_agg(format('WHEN %s THEN (%s)', p.split_id,
                                                pg_get_partition_constraintdef(p.partition)),
                                         ' ' ORDER BY p.split_id))
                  INTO part_cases
                  FROM backfill.job_splits(j.job_id) p;
            END IF;
            covered := format('EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished '
                              'AND ((%2$L::text[])[s.split_id] IS NULL OR EXISTS (SELECT FROM '
                              '(SELECT ((%2$L::text[])[s.split_id])::%4$s AS %3$I) b WHERE %5$s)) '
                              'AND ((%2$L::text[])[s.split_id + 1] IS NULL OR EXISTS (SELECT FROM '
                              '(SELECT ((%2$L::text[])[s.split_id + 1])::%4$s AS %3$I) b WHERE %6$s))%7$s)',
                              j.state_table, coalesce(j.remote_splits, '{}'), j.pk_columns[1], first_type,
                              backfill._key_compare_sql(j.upstream, j.pk_columns[1:1], 'u', '>=', 'b'),
                              backfill._key_compare_sql(j.upstream, j.pk_columns[1:1], 'u', '<', 'b'),
                              part_cases);
            scan_d := format('(SELECT u.* FROM %s u WHERE %s)', j.downstream, covered);
        END IF;
        -- no fetch from here on; the source's snapshot, then what its slot
        -- holds after it, from the offset the comparison's snapshot sees.
        -- The snapshot is postgres_fdw's, one per server, taken by a first
        -- read of each foreign table as the job's owner, whose user mappings
        -- the comparison uses (a LIMIT over the partitioned table would
        -- read its first partition only)
        PERFORM backfill._lock_slot(j.job_id);
        PERFORM FROM backfill._verify_rows(j.job_id,
            (SELECT string_agg(format('(SELECT NULL::text, NULL::text FROM %s LIMIT 1)', p.p), ' UNION ALL ')
               FROM unnest(coalesce(j.remote_partitions, ARRAY[j.upstream])) p(p)));
        -- (a job over several servers reads each one's offset itself)
        decoded := format('SELECT ROW(%s) AS k FROM backfill._unfetched_keys(%s, '
                          '(SELECT CASE WHEN j.remote_partitions IS NULL THEN j.remote_lsn '
                          'ELSE ''0/0''::pg_lsn END FROM backfill.job j WHERE j.job_id = %s)) p(k)',
                          key_types, j.job_id, j.job_id);
        settled := format('NOT EXISTS (SELECT FROM %s c WHERE ROW(%s) = x.k) '
                          'AND NOT EXISTS (SELECT FROM w WHERE w.k = x.k)',
                          j.change_table, key_c);
    -- a backfilling job covers, per vnode, the keys up to its position
    -- (below it for the snapshot kind, whose position is the next row to
    -- read), and the keys captured since its last barrier are pending, not
    -- differences; a finished job covers every key and has nothing pending.
    -- A difference is settled when its key is pending nowhere: two
    -- anti-joins, which the planner merges (a key is an anonymous record,
    -- which it will not hash), so that a job with many keys pending and
    -- many differences is compared in n log n, not n times m
    ELSIF j.status <> 'finished' THEN
        IF j.kind = 'snapshot' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = %s '
                              'AND (s.is_epoch_finished OR %s))',
                              j.state_table, vnode_u,
                              backfill._key_compare_sql(j.upstream, j.pk_columns, 'u', '<', 's'));
        ELSIF j.kind = 'cdc' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.backfill_finished OR %s)',
                              j.state_table,
                              backfill._key_compare_sql(j.upstream, j.pk_columns, 'u', '<=', 's'));
            -- and the changes the slot has decoded but not delivered yet,
            -- up to the WAL flushed as the comparison peeks, after its
            -- snapshot: the slot decodes only flushed WAL, which an
            -- asynchronous commit may not have reached (_flush_wal)
            IF EXISTS (SELECT FROM pg_replication_slots
                        WHERE slot_name = format('backfill_%s_%s',
                                  (SELECT oid FROM pg_database WHERE datname = current_database()),
                                  j.job_id)) THEN
                -- one user of the slot at a time: the job's fetch waits
                PERFORM backfill._lock_slot(j.job_id);
                decoded := format(
                    'SELECT ROW((substr(p.data, strpos(p.data, E''\t'') + 1)::%s).*) AS k '
                    '  FROM pg_logical_slot_peek_changes(%L, backfill._flush_wal(), NULL, ''relid'', %L) p',
                    j.change_table,
                    format('backfill_%s_%s',
                           (SELECT oid FROM pg_database WHERE datname = current_database()),
                           j.job_id),
                    j.upstream::oid::text);
            END IF;
        ELSE
            covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = %s '
                              'AND (s.backfill_finished OR %s))',
                              j.state_table, vnode_u,
                              backfill._key_compare_sql(j.upstream, j.pk_columns, 'u', '<=', 's'));
        END IF;
        settled := format('NOT EXISTS (SELECT FROM %s c WHERE ROW(%s) = x.k) '
                          'AND NOT EXISTS (SELECT FROM w WHERE w.k = x.k)',
                          j.change_table, key_c);
    END IF;
    IF j.filter IS NOT NULL THEN
        covered := format('%s AND (%s)', covered, j.filter);
    END IF;

    -- one statement, one snapshot for all of it, run as the job's owner in
    -- a security-restricted operation: the filter and the computed columns
    -- are the owner's SQL
    RETURN QUERY SELECT v.pk, v.problem FROM backfill._verify_rows(j.job_id, format(
        'WITH w AS MATERIALIZED (%9$s), '
        '     x AS (SELECT coalesce(u.k, d.k) AS k, '
        '                  CASE WHEN d.k IS NULL THEN ''missing'' '
        '                       WHEN u.k IS NULL THEN ''extra'' ELSE ''different'' END AS problem '
        '             FROM (SELECT ROW(%1$s) AS k, ROW(%2$s) AS r FROM %3$s WHERE %4$s) u '
        '             FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d) d ON u.k = d.k '
        '            WHERE u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) '
        'SELECT x.k::text, x.problem FROM x '
        ' WHERE %8$s '
        ' ORDER BY x.k',
        key_u, cols_u, scan_u, covered,
        key_d, cols_d, scan_d, settled, decoded)) v;
END
$$;

-- ---- keys: enum values renamed under a job's range vnodes ----

-- ALTER TYPE ... RENAME VALUE of an enum that the key of an unfinished job
-- with range vnodes contains is refused (src/api/ddl.c): the bounds are keys
-- stored as text, which the renamed label would make unreadable.
CREATE EVENT TRIGGER backfill_ddl_type ON ddl_command_start
    WHEN TAG IN ('ALTER TYPE')
    EXECUTE FUNCTION backfill._on_ddl();


-- ---- a job's owner in pg_shdepend (src/catalog/catalog.c, src/api/ddl.c) ----

-- DROP OWNED drops a role's jobs as it drops its tables, and first gives a
-- job whose tables REASSIGN OWNED gave to another role to that role
CREATE EVENT TRIGGER backfill_ddl_owned ON ddl_command_start
    WHEN TAG IN ('DROP OWNED')
    EXECUTE FUNCTION backfill._on_ddl();
COMMENT ON FUNCTION backfill._on_ddl() IS
'Internal: event trigger that refuses dropping a job''s tables, triggers or owner''s policy, dropping, renaming or retyping the columns it reads, and an unlogged table under a cdc job; keeps its downstream right when partitions of its upstream are created, attached or detached; drops or moves a role''s jobs at DROP OWNED.';

-- each job records its owner with a policy on its state table, which DROP
-- ROLE sees and REASSIGN OWNED leaves alone: the jobs made by an older
-- library too (a newer one makes it even under an older catalog)
DO $$
DECLARE
    j record;
BEGIN
    FOR j IN SELECT job_id, state_table, owner FROM backfill.job
              WHERE state_table IS NOT NULL
                AND EXISTS (SELECT FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) state_table)
                AND NOT EXISTS (SELECT FROM pg_catalog.pg_policy p
                                 WHERE p.polrelid OPERATOR(pg_catalog.=) state_table
                                   AND p.polname OPERATOR(pg_catalog.=)
                                       pg_catalog.format('backfill_job_%s_owner', job_id)::pg_catalog.name)
              ORDER BY job_id
    LOOP
        EXECUTE pg_catalog.format('CREATE POLICY %I ON %s FOR SELECT TO %s USING (false)',
                                  pg_catalog.format('backfill_job_%s_owner', j.job_id),
                                  j.state_table, j.owner);
    END LOOP;
END
$$;

-- ---- search_path, owners' SQL, internal functions (1.3) ----

-- Every statement the extension runs is planned under a search_path of
-- pg_catalog then pg_temp, never the caller's, a role's default or a
-- database's: an operator or function of the same name in a schema put
-- first would otherwise run with the rights of whoever runs the statement.
-- The SQL and PL/pgSQL functions set it already; so do now the C functions
-- that run SQL of their own.  create_job and estimate_job read the caller's
-- names (the downstream's, the filter's and the expressions' functions)
-- under the caller's search_path and pin it themselves afterwards, as
-- run_job does (a procedure with a SET clause could not commit), and as
-- _on_ddl does (it looks up the names of the command that fired it under
-- the caller's search_path); the trigger functions pin it where they run
-- SQL; job_vnode and vnode run none (job_vnode pins it while it parses a
-- job's bounds, once per call site: a SET clause would cost a setting and
-- its undoing at every row of the statements that call it once a row).
ALTER FUNCTION backfill.job_workers() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._stop_and_lock_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._stop_workers(bigint, boolean) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._job_is_running(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill.start_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_slot(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._lock_slot(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._on_drop_extension() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._mark_cancelled(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._delete_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._set_foreground(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._set_rate_limit(bigint, integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._rebuild_actors(bigint, integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._copy_names(bigint, bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_triggers(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._check_reschedule(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_kind_objects(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._unfetched_keys(bigint, pg_catalog.pg_lsn) SET search_path = pg_catalog, pg_temp;

-- _flush_wal returns the position it flushed, up to which verify_job peeks
-- at a cdc job's slot (its return type changes: dropped and made again)
DROP FUNCTION backfill._flush_wal();
CREATE FUNCTION backfill._flush_wal()
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'backfill_flush_wal'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._flush_wal() IS
'Internal: flushes the WAL inserted so far and returns the position flushed (NULL on a standby), for verify_job().';

-- a vnode of no key is no vnode
ALTER FUNCTION backfill.vnode(VARIADIC "any") STRICT;

-- verify_job's comparison evaluates the job's filter and computed columns:
-- run as the job's owner, in a security-restricted operation
CREATE FUNCTION backfill._verify_rows(job_id bigint, query text)
RETURNS TABLE (pk text, problem text)
AS 'MODULE_PATHNAME', 'backfill_verify_rows'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._verify_rows(bigint, text) IS
'Internal: for verify_job, runs its comparison of a job the caller owns as the job''s owner, in a security-restricted operation.';


-- recreate_job makes the new job its owner's, not the caller's
CREATE FUNCTION backfill._create_job_as(from_job_id bigint, name text, upstream regclass,
                                        kind text, columns text[], parallelism integer,
                                        chunk_size integer, rate_limit integer,
                                        filter text, into_existing boolean,
                                        indexes boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job_as'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._create_job_as(bigint, text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) IS
'Internal: for recreate_job, create_job on behalf of the owner of a job the caller owns, in a security-restricted operation; the new job is that owner''s.';

CREATE OR REPLACE FUNCTION backfill.recreate_job(job_id bigint, kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    new_id bigint;
BEGIN
    IF j.status = 'finished' THEN
        RAISE EXCEPTION 'cannot recreate backfill job % because it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Use backfill.drop_job(%s), then backfill.create_job().', job_id);
    END IF;
    IF j.status <> 'cancelled' THEN
        PERFORM backfill.cancel_job(job_id);
    END IF;
    -- on behalf of the job's owner, who owns the new job and whose filter
    -- and expressions it runs, whoever recreates it; the columns again:
    -- "expression AS name" for a computed one
    new_id := backfill._create_job_as(j.job_id, j.downstream_name, j.upstream,
                                  coalesce(kind, j.kind),
                                  CASE WHEN j.expressions IS NULL THEN j.columns
                                       ELSE ARRAY(SELECT coalesce(t.e || ' AS ' || quote_ident(t.c), t.c)
                                                    FROM unnest(j.columns, j.expressions)
                                                         WITH ORDINALITY AS t(c, e, o)
                                                   ORDER BY t.o) END,
                                  j.parallelism, j.chunk_size, j.rate_limit,
                                  j.filter, j.into_existing, j.indexes);
    PERFORM backfill._copy_names(new_id, job_id);
    RETURN new_id;
END
$$;

-- the event trigger functions are called by no one: revoke EXECUTE (the
-- other internal functions are called by the SQL functions with the
-- caller's rights, and each checks that the caller owns the job)
REVOKE ALL ON FUNCTION backfill._on_ddl() FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill._on_drop_extension() FROM PUBLIC;

-- ---- expressions read under pinned settings ----

-- A job's filter and computed columns are stored as text written under
-- standard_conforming_strings = on, DateStyle = 'ISO, MDY' and IntervalStyle
-- = postgres (shape.c), and the C code reads them under the same settings
-- wherever it builds the job's SQL.  The two SQL functions that build SQL
-- from that text, verify_job (the comparison) and recreate_job (which hands
-- it back to create_job), read it under those settings too, whatever the
-- session's: their definitions above carry them.  Jobs made before 1.3 keep
-- their text as it is (shape.c says why).

-- ---------------------------------------------------------------------------
-- The switchover of a remote job (src/kinds/switchover.c): fence the source
-- table, take in the last of its changes, carry its sequences over, stop
-- following it.  backfill.cutover() calls the C function for a remote job;
-- this wrapper is its SQL face, owner-checked as run_job is.
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._remote_switchover(job_id bigint, fence boolean,
                                            lock_timeout interval, attempts integer)
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'backfill_remote_switchover_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._remote_switchover(bigint, boolean, interval, integer) IS
'Internal: switches a finished remote job the caller owns over from its source: optionally fences the source table (revokes its write privileges from every role but its owner), fetches and applies every change committed there, sets the local sequences to the source''s, stops following and drops the slot and the publication on the source; returns the source LSN it switched at.';
-- ---------------------------------------------------------------------------
-- Indexes built once (src/copy/index_build.c, doc/indexes.md)
-- ---------------------------------------------------------------------------

-- A snapshot job writes nothing into its downstream during its snapshot but
-- the snapshot's own rows, which are all different keys: it copies into a
-- downstream without indexes and builds them once, after the snapshot and
-- before it applies the changes it logged meanwhile.  Until then, each index
-- it is to build is a row here: the statement that builds it, split around
-- the downstream's name, which is read afresh when it runs (a rename of the
-- downstream disturbs nothing).
ALTER TABLE backfill.job ADD COLUMN indexes boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN backfill.job.indexes IS
'Whether create_job gave the downstream the upstream''s indexes besides its key (create_job''s "indexes").';

CREATE TABLE backfill.job_index (
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    position integer NOT NULL,
    index_name name NOT NULL,
    head text NOT NULL,
    tail text NOT NULL,
    PRIMARY KEY (job_id, position)
);
COMMENT ON TABLE backfill.job_index IS
'Indexes of the jobs'' downstreams still to build: each is built by head || the downstream''s name || tail, in position order, once the snapshot is copied.';
SELECT pg_catalog.pg_extension_config_dump('backfill.job_index', '');
GRANT SELECT ON backfill.job_index TO PUBLIC;
ALTER TABLE backfill.job_index ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_index_owner ON backfill.job_index FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) job_index.job_id));

-- create_job gains indexes: a new signature, with a C symbol of its own, so
-- that a 1.2 catalog keeps binding the old one until it is updated
CREATE FUNCTION backfill.create_job(name text, upstream regclass,
                                    kind text DEFAULT 'arrangement',
                                    columns text[] DEFAULT NULL,
                                    parallelism integer DEFAULT 1,
                                    chunk_size integer DEFAULT 256,
                                    rate_limit integer DEFAULT NULL,
                                    filter text DEFAULT NULL,
                                    into_existing boolean DEFAULT false,
                                    indexes boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) IS
'Creates a streaming job that fills the table "name" (a new one, or with into_existing an empty one of the user''s) from the rows of "upstream" that pass "filter", with indexes the upstream''s other indexes too; returns the job id.';

-- the old signature's privileges go to the new one
DO $$
DECLARE
    acl aclitem[] := (SELECT p.proacl FROM pg_catalog.pg_proc p
                       WHERE p.oid OPERATOR(pg_catalog.=) 'backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean)'::pg_catalog.regprocedure);
    a record;
BEGIN
    IF acl IS NULL THEN
        RETURN;                 -- the default: EXECUTE for PUBLIC
    END IF;
    REVOKE ALL ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) FROM PUBLIC;
    FOR a IN SELECT e.grantee, e.privilege_type, e.is_grantable FROM pg_catalog.aclexplode(acl) e LOOP
        EXECUTE pg_catalog.format('GRANT %s ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) TO %s%s',
                                  a.privilege_type,
                                  CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                       ELSE pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text) END,
                                  CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
DROP FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean);

-- a table of the user's gets back, when its job is cancelled or dropped, the
-- indexes the job had not built yet (each that a table of its name does not
-- have already); one that cannot be built draws a WARNING with its statement
CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ix record;
    stmt text;
BEGIN
    IF NOT drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        FOR ix IN SELECT i.index_name, i.head, i.tail FROM backfill.job_index i
                   WHERE i.job_id OPERATOR(pg_catalog.=) j.job_id ORDER BY i.position LOOP
            CONTINUE WHEN EXISTS (SELECT FROM pg_class c
                                   WHERE c.relname OPERATOR(pg_catalog.=) ix.index_name
                                     AND c.relnamespace OPERATOR(pg_catalog.=)
                                         (SELECT d.relnamespace FROM pg_class d WHERE d.oid OPERATOR(pg_catalog.=) j.downstream));
            stmt := ix.head || j.downstream::pg_catalog.text || ix.tail;
            BEGIN
                EXECUTE stmt;
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'index "%" of table % was not built again', ix.index_name, j.downstream
                    USING DETAIL = format('Backfill job %s had dropped it to build it after its snapshot: %s', j.job_id, SQLERRM),
                          HINT = format('Run %s', stmt);
            END;
        END LOOP;
    END IF;
    -- the upstream's owner may be another role than the job's
    PERFORM backfill._drop_triggers(j.job_id);
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.change_table) THEN
        EXECUTE format('DROP TABLE %s', j.change_table);
    END IF;
    IF to_regtype(format('backfill.%I', 'image_' || j.job_id)) IS NOT NULL THEN
        EXECUTE format('DROP TYPE backfill.%I', 'image_' || j.job_id);
    END IF;
    IF drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        EXECUTE format('DROP TABLE %s', j.downstream);
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.state_table) THEN
        EXECUTE format('DROP TABLE %s', j.state_table);
    END IF;
    -- what its kind owns outside its tables (src/kinds/kind.h, drop_objects):
    -- a cdc job's slot, dropped at commit; the slot and the publication of a
    -- job whose upstream is on another server
    PERFORM backfill._drop_kind_objects(j.job_id);
END
$$;
COMMENT ON FUNCTION backfill._drop_kind_objects(bigint) IS
'Internal: drops what the kind of a job the caller owns keeps outside its tables: a cdc job''s replication slot (when the transaction commits), the replication slot and publication on the source of a remote job.';

-- ---------------------------------------------------------------------------
-- Cut over (src/api/cutover.c, doc/cutover.md): a finished local job's
-- downstream takes its upstream's name and everything that names it, under
-- the upstream's lock taken with a short lock_timeout and retried; the job
-- turns around so that the old table follows the new one until
-- finish_cutover, and rollback_cutover swaps back the same way.
-- ---------------------------------------------------------------------------

CREATE TABLE backfill.job_cutover (
    job_id bigint PRIMARY KEY REFERENCES backfill.job ON DELETE CASCADE,
    state text NOT NULL
        CHECK (state OPERATOR(pg_catalog.=) ANY (ARRAY['cut_over', 'rolled_back', 'finished'])),
    attempts integer NOT NULL,
    old_table oid NOT NULL,
    new_table oid NOT NULL,
    old_name text NOT NULL,
    new_schema oid NOT NULL,
    new_name text NOT NULL,
    reversible boolean NOT NULL,
    into_existing boolean NOT NULL,
    lock_held_ms double precision,
    to_validate oid[],
    swapped_at timestamptz NOT NULL,
    finished_at timestamptz
);
COMMENT ON TABLE backfill.job_cutover IS
'Cutovers: per job, the last swap (cut_over, rolled_back) or its end (finished), the tables it swapped, the attempts and how long the lock was held, the foreign keys still to validate.';
COMMENT ON COLUMN backfill.job_cutover.old_table IS
'The table that had the name before the cutover (the job''s upstream then).';
COMMENT ON COLUMN backfill.job_cutover.new_table IS
'The table that took the name (the job''s downstream then).';
COMMENT ON COLUMN backfill.job_cutover.old_name IS
'The name the old table got, in its schema.';
COMMENT ON COLUMN backfill.job_cutover.new_name IS
'The name the new table had before the cutover, in schema new_schema: it gets it back at a rollback.';
COMMENT ON COLUMN backfill.job_cutover.reversible IS
'Whether the old table follows the new one (the job turned around), so that rollback_cutover may swap back.';
COMMENT ON COLUMN backfill.job_cutover.into_existing IS
'The job''s into_existing before the cutover, given back at a rollback.';
COMMENT ON COLUMN backfill.job_cutover.to_validate IS
'Foreign keys (pg_constraint OIDs) added NOT VALID by the last swap, validated by finish_cutover.';
SELECT pg_catalog.pg_extension_config_dump('backfill.job_cutover', '');
GRANT SELECT ON backfill.job_cutover TO PUBLIC;
ALTER TABLE backfill.job_cutover ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_cutover_owner ON backfill.job_cutover FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) job_cutover.job_id));

CREATE FUNCTION backfill._cutover_record(job_id bigint, state text, attempts integer,
                                         old_table oid, new_table oid, old_name text,
                                         new_schema oid, new_name text, reversible boolean,
                                         into_existing boolean, lock_held_ms double precision,
                                         to_validate oid[], finished boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_record'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_record(bigint, text, integer, oid, oid, text, oid, text, boolean, boolean, double precision, oid[], boolean) IS
'Internal: writes the cutover row of a job the caller owns.';

CREATE FUNCTION backfill._cutover_report(job_id bigint, what text)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_report'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_report(bigint, text) IS
'Internal: shows what a cutover is doing in pg_stat_activity.query of its backend.';

CREATE FUNCTION backfill._cutover_turn(job_id bigint, into_existing boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_turn'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_turn(bigint, boolean) IS
'Internal: turns a finished job the caller owns around under its tables'' lock: its apply triggers move to its downstream, which becomes its upstream.';

-- What refuses a swap of src (which has the name) for dst, before anything
-- is locked or changed: the objects that name src and cannot be carried.
CREATE FUNCTION backfill._cutover_check(j backfill.job, src regclass, dst regclass)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    d record;
    col text;
    other bigint;
BEGIN
    IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = src), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', src
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The cutover of backfill job %s renames table %s and carries its privileges, owner and dependent objects over to table %s.', j.job_id, src, dst);
    END IF;
    IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = dst), 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', dst
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('The cutover of backfill job %s renames table %s and gives it the owner of table %s.', j.job_id, dst, src);
    END IF;
    SELECT o.job_id INTO other FROM backfill.job o
     WHERE o.job_id <> j.job_id AND o.status <> 'cancelled'
       AND (o.upstream IN (src, dst) OR o.downstream IN (src, dst))
     ORDER BY o.job_id LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot cut over backfill job % because backfill job % uses its tables', j.job_id, other
            USING ERRCODE = 'object_in_use',
                  DETAIL = format('Backfill job %s copies table %s or %s, and would be left on the wrong one after the swap.', other, src, dst),
                  HINT = format('Drop backfill job %s first, or cut it over first.', other);
    END IF;

    -- every object that names src, from pg_depend
    FOR d IN
        SELECT dep.classid, dep.objid, dep.objsubid, dep.refobjsubid,
               pg_describe_object(dep.classid, dep.objid, dep.objsubid) AS what
          FROM pg_depend dep
         WHERE dep.refclassid = 'pg_class'::regclass AND dep.refobjid = src AND dep.deptype = 'n'
         ORDER BY 5
    LOOP
        IF d.classid = 'pg_rewrite'::regclass THEN
            DECLARE
                v regclass := (SELECT ev_class FROM pg_rewrite WHERE oid = d.objid);
                k "char" := (SELECT relkind FROM pg_class WHERE oid = v);
            BEGIN
                IF v = src THEN
                    CONTINUE;
                ELSIF k = 'm' THEN
                    RAISE EXCEPTION 'cannot carry materialized view % over to table %', v, dst
                        USING ERRCODE = 'feature_not_supported',
                              DETAIL = 'A materialized view would have to be refreshed from the new table while its lock is held.',
                              HINT = format('Drop materialized view %s before the cutover and create it again after it.', v);
                ELSIF k <> 'v' THEN
                    RAISE EXCEPTION 'cannot carry % over to table %', d.what, dst
                        USING ERRCODE = 'feature_not_supported',
                              DETAIL = 'Only views and materialized views are carried; a rule on another table is not.',
                              HINT = 'Drop the rule before the cutover and create it again after it.';
                END IF;
                IF d.refobjsubid > 0 THEN
                    col := (SELECT attname FROM pg_attribute WHERE attrelid = src AND attnum = d.refobjsubid);
                    IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = dst AND attname = col
                                                             AND attnum > 0 AND NOT attisdropped) THEN
                        RAISE EXCEPTION 'cannot carry view % over to table %', v, dst
                            USING ERRCODE = 'feature_not_supported',
                                  DETAIL = format('View %s selects column %I of table %s, which table %s does not have.', v, col, src, dst),
                                  HINT = format('Drop or redefine view %s before the cutover.', v);
                    END IF;
                END IF;
            END;
        ELSIF d.classid = 'pg_constraint'::regclass THEN
            IF (SELECT contype = 'f' AND conrelid = src FROM pg_constraint WHERE oid = d.objid) THEN
                RAISE EXCEPTION 'cannot carry % over to table %', d.what, dst
                    USING ERRCODE = 'feature_not_supported',
                          DETAIL = format('Table %s references itself; the foreign keys of the new table are its own.', src),
                          HINT = format('Add the foreign key to table %s before the cutover.', dst);
            END IF;
            -- foreign keys from other tables are carried; a table's own
            -- constraints are its own
        ELSIF d.classid = 'pg_policy'::regclass
              AND (SELECT polrelid FROM pg_policy WHERE oid = d.objid) = src THEN
            NULL;               -- src's own policies move
        ELSIF d.classid IN ('pg_trigger'::regclass, 'pg_attrdef'::regclass, 'pg_class'::regclass,
                            'pg_type'::regclass, 'pg_statistic_ext'::regclass) THEN
            NULL;               -- carried, or the table's own
        ELSE
            RAISE EXCEPTION 'cannot carry % over to table %', d.what, dst
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = format('Only views, foreign keys, triggers, policies, sequences and publications that name table %s are carried.', src),
                      HINT = 'Drop it before the cutover and create it again after it.';
        END IF;
    END LOOP;

    -- foreign keys from other tables need the referenced columns on dst
    FOR d IN
        SELECT c.oid, c.conrelid::regclass AS child, c.conname, a.attname
          FROM pg_constraint c
          CROSS JOIN LATERAL unnest(c.confkey) AS k(attnum)
          JOIN pg_attribute a ON a.attrelid = src AND a.attnum = k.attnum
         WHERE c.contype = 'f' AND c.confrelid = src AND c.conrelid <> src
           AND NOT EXISTS (SELECT FROM pg_attribute b WHERE b.attrelid = dst AND b.attname = a.attname
                                                       AND b.attnum > 0 AND NOT b.attisdropped)
    LOOP
        RAISE EXCEPTION 'cannot carry foreign key % of table % over to table %', d.conname, d.child, dst
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('It references column %I, which table %s does not have.', d.attname, dst);
    END LOOP;

    -- a column of src's row type elsewhere would keep the old table's type
    SELECT format('%s.%I', a.attrelid::regclass, a.attname) INTO col
      FROM pg_attribute a
     WHERE a.atttypid = (SELECT reltype FROM pg_class WHERE oid = src)
       AND a.attrelid <> src AND NOT a.attisdropped LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot cut over table % because column % is of its row type', src, col
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A column''s type cannot move from one table''s row type to another''s.';
    END IF;

    -- publications with a row filter or a column list are not carried
    SELECT p.pubname INTO col
      FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
     WHERE r.prrelid = src AND (r.prqual IS NOT NULL OR r.prattrs IS NOT NULL) LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'cannot carry the membership of table % in publication % over to table %', src, col, dst
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'The table is published with a row filter or a column list.',
                  HINT = format('Publish table %s as a whole before the cutover, and filter again after it.', src);
    END IF;

    -- replica identity through an index: dst needs one on the same columns
    IF (SELECT relreplident FROM pg_class WHERE oid = src) = 'i'
       AND backfill._cutover_identity_index(src, dst) IS NULL THEN
        RAISE EXCEPTION 'cannot carry the replica identity of table % over to table %', src, dst
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = format('Table %s has no unique index on the columns of the replica identity index of table %s.', dst, src),
                  HINT = format('Create such an index on table %s first.', dst);
    END IF;
END
$$;
COMMENT ON FUNCTION backfill._cutover_check(backfill.job, regclass, regclass) IS
'Internal: refuses a cutover whose dependent objects cannot be carried, before anything is locked or changed.';

-- dst's unique index on the columns (by name) of src's replica identity index
CREATE FUNCTION backfill._cutover_identity_index(src regclass, dst regclass)
RETURNS regclass
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT di.indexrelid::regclass
  FROM pg_index si, pg_index di
 WHERE si.indrelid = src AND si.indisreplident
   AND di.indrelid = dst AND di.indisunique AND di.indimmediate AND di.indpred IS NULL
   AND di.indexprs IS NULL
   AND ARRAY(SELECT a.attname FROM unnest(si.indkey::int2[]) WITH ORDINALITY k(n, o)
               JOIN pg_attribute a ON a.attrelid = src AND a.attnum = k.n ORDER BY k.o)
       = ARRAY(SELECT a.attname FROM unnest(di.indkey::int2[]) WITH ORDINALITY k(n, o)
                 JOIN pg_attribute a ON a.attrelid = dst AND a.attnum = k.n ORDER BY k.o)
 ORDER BY di.indisprimary DESC, 1
 LIMIT 1
$$;
COMMENT ON FUNCTION backfill._cutover_identity_index(regclass, regclass) IS
'Internal: the unique index of dst on the columns of the replica identity index of src.';

-- The swap itself, under the lock of both tables: src (which has the name)
-- becomes src_new_name in its schema, dst takes src's name and schema, and
-- what names src moves to dst.  Definitions are read before the renames, so
-- that the names they print resolve to dst afterwards.  Returns the foreign
-- keys added NOT VALID, to validate after the transaction.
CREATE FUNCTION backfill._cutover_swap(src regclass, dst regclass, src_new_name text)
RETURNS oid[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    src_name name := (SELECT relname FROM pg_class WHERE oid = src);
    src_schema name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE c.oid = src);
    dst_schema name := (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                         WHERE c.oid = dst);
    s pg_class := (SELECT c FROM pg_class c WHERE c.oid = src);
    dst_text text := dst::text;
    views text[];
    view_names regclass[];
    trigs text[];
    trig_states "char"[];
    trig_names name[];
    fks text[];
    fk_children regclass[];
    fk_names name[];
    added oid[] := '{}';
    src_indexes name[];
    dst_indexes name[];
    d pg_class := (SELECT c FROM pg_class c WHERE c.oid = dst);
    options text;
    r record;
    g record;
    i integer;
BEGIN
    -- each of dst's indexes defined as one of src's (the same method,
    -- columns, expressions, predicate and uniqueness), one to one
    SELECT array_agg(p.src_index ORDER BY p.n), array_agg(p.dst_index ORDER BY p.n)
      INTO src_indexes, dst_indexes
      FROM (SELECT si.relname AS src_index, di.relname AS dst_index,
                   row_number() OVER (ORDER BY si.oid) AS n,
                   row_number() OVER (PARTITION BY si.oid ORDER BY di.oid) AS nth_dst,
                   row_number() OVER (PARTITION BY di.oid ORDER BY si.oid) AS nth_src
              FROM pg_index sx JOIN pg_class si ON si.oid = sx.indexrelid,
                   pg_index dx JOIN pg_class di ON di.oid = dx.indexrelid
             WHERE sx.indrelid = src AND dx.indrelid = dst
               AND sx.indisunique = dx.indisunique AND sx.indisprimary = dx.indisprimary
               AND substr(pg_get_indexdef(si.oid), strpos(pg_get_indexdef(si.oid), ' USING '))
                 = substr(pg_get_indexdef(di.oid), strpos(pg_get_indexdef(di.oid), ' USING '))) p
     WHERE p.nth_dst = 1 AND p.nth_src = 1 AND p.src_index <> p.dst_index;

    -- definitions first, printed with src's name, which dst will have
    SELECT array_agg(format('CREATE OR REPLACE VIEW %s%s AS %s', v.oid::regclass,
                            CASE WHEN v.reloptions IS NOT NULL
                                 THEN format(' WITH (%s)', array_to_string(v.reloptions, ', ')) ELSE '' END,
                            pg_get_viewdef(v.oid)) ORDER BY v.oid),
           array_agg(v.oid::regclass ORDER BY v.oid)
      INTO views, view_names
      FROM pg_class v
     WHERE v.relkind = 'v'
       AND v.oid IN (SELECT rw.ev_class FROM pg_depend dep JOIN pg_rewrite rw ON rw.oid = dep.objid
                      WHERE dep.classid = 'pg_rewrite'::regclass AND dep.refclassid = 'pg_class'::regclass
                        AND dep.refobjid = src AND dep.deptype = 'n');
    -- the user's triggers (not those of a job, whose function is the extension's)
    SELECT array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), array_agg(t.tgenabled ORDER BY t.tgname),
           array_agg(t.tgname ORDER BY t.tgname)
      INTO trigs, trig_states, trig_names
      FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE t.tgrelid = src AND NOT t.tgisinternal AND t.tgparentid = 0
       AND p.pronamespace <> 'backfill'::regnamespace;
    SELECT array_agg(pg_get_constraintdef(c.oid) ORDER BY c.oid), array_agg(c.conrelid::regclass ORDER BY c.oid),
           array_agg(c.conname ORDER BY c.oid)
      INTO fks, fk_children, fk_names
      FROM pg_constraint c
     WHERE c.contype = 'f' AND c.confrelid = src AND c.conrelid <> src AND c.conparentid = 0;

    -- the names
    EXECUTE format('ALTER TABLE %s RENAME TO %I', src, src_new_name);
    IF dst_schema <> src_schema THEN
        EXECUTE format('ALTER TABLE %s SET SCHEMA %I', dst, src_schema);
    END IF;
    EXECUTE format('ALTER TABLE %s RENAME TO %I', dst, src_name);
    -- the indexes' names too, swapped (so a rollback swaps them back): the
    -- key's index of orders is orders_pkey again; a constraint's follows
    FOR i IN 1 .. coalesce(cardinality(src_indexes), 0) LOOP
        EXECUTE format('ALTER INDEX %I.%I RENAME TO %I', src_schema, src_indexes[i], 'backfill_cutover_' || src::oid || '_' || i);
        EXECUTE format('ALTER INDEX %I.%I RENAME TO %I', src_schema, dst_indexes[i], src_indexes[i]);
        EXECUTE format('ALTER INDEX %I.%I RENAME TO %I', src_schema, 'backfill_cutover_' || src::oid || '_' || i, dst_indexes[i]);
    END LOOP;

    -- the owner, then the privileges: exactly src's
    IF (SELECT relowner FROM pg_class WHERE oid = dst) <> s.relowner THEN
        EXECUTE format('ALTER TABLE %s OWNER TO %I', dst, s.relowner::regrole);
    END IF;
    FOR r IN SELECT DISTINCT a.grantee FROM pg_class c, aclexplode(c.relacl) a
              WHERE c.oid = dst AND a.grantee <> s.relowner LOOP
        EXECUTE format('REVOKE ALL ON TABLE %s FROM %s', dst,
                       CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END);
    END LOOP;
    FOR r IN SELECT a.grantee, a.privilege_type, a.is_grantable FROM aclexplode(s.relacl) a
              WHERE a.grantee <> s.relowner LOOP
        EXECUTE format('GRANT %s ON TABLE %s TO %s%s', r.privilege_type, dst,
                       CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END,
                       CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
    -- columns: privileges, comments, statistics targets, options (those a
    -- user sets: the server keeps entries of its own there), defaults,
    -- identity
    FOR r IN SELECT sa.attname, sa.attnum, sa.attacl, sa.attstattarget, sa.attidentity,
                    (SELECT string_agg(format('%s = %L', o.option_name, o.option_value), ', ')
                       FROM pg_options_to_table(sa.attoptions) o
                      WHERE o.option_name IN ('n_distinct', 'n_distinct_inherited')
                        AND o.option_name NOT IN (SELECT option_name FROM pg_options_to_table(da.attoptions))) AS options,
                    da.attidentity AS dst_identity, da.atthasdef AS dst_hasdef,
                    pg_get_expr(ad.adbin, ad.adrelid) AS default_expr, sa.attgenerated,
                    col_description(src, sa.attnum) AS comment
               FROM pg_attribute sa
               JOIN pg_attribute da ON da.attrelid = dst AND da.attname = sa.attname
                                   AND da.attnum > 0 AND NOT da.attisdropped
               LEFT JOIN pg_attrdef ad ON ad.adrelid = src AND ad.adnum = sa.attnum
              WHERE sa.attrelid = src AND sa.attnum > 0 AND NOT sa.attisdropped
              ORDER BY sa.attnum LOOP
        FOR g IN SELECT * FROM aclexplode(r.attacl) LOOP
            EXECUTE format('GRANT %s (%I) ON TABLE %s TO %s%s', g.privilege_type, r.attname, dst,
                           CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(g.grantee::regrole::text) END,
                           CASE WHEN g.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        IF r.comment IS NOT NULL THEN
            EXECUTE format('COMMENT ON COLUMN %s.%I IS %L', dst, r.attname, r.comment);
        END IF;
        IF r.attstattarget >= 0 THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET STATISTICS %s', dst, r.attname, r.attstattarget);
        END IF;
        IF r.options IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET (%s)', dst, r.attname, r.options);
        END IF;
        IF r.attidentity <> '' AND r.dst_identity = '' THEN
            -- the identity moves, its sequence going on where src's was
            DECLARE
                seq_src regclass := pg_get_serial_sequence(src::text, r.attname)::regclass;
                last bigint;
                called boolean;
            BEGIN
                EXECUTE format('SELECT last_value, is_called FROM %s', seq_src) INTO last, called;
                EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', src, r.attname);
                EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET NOT NULL, ALTER COLUMN %I ADD GENERATED %s AS IDENTITY',
                               dst, r.attname, r.attname,
                               CASE r.attidentity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END);
                PERFORM setval(pg_get_serial_sequence(dst::text, r.attname)::regclass, last, called);
            END;
        ELSIF r.default_expr IS NOT NULL AND NOT r.dst_hasdef AND r.attgenerated = '' THEN
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s', dst, r.attname, r.default_expr);
        END IF;
    END LOOP;
    -- sequences owned by src's columns follow them
    FOR r IN SELECT dep.objid::regclass AS seq, a.attname
               FROM pg_depend dep
               JOIN pg_class c ON c.oid = dep.objid AND c.relkind = 'S'
               JOIN pg_attribute a ON a.attrelid = src AND a.attnum = dep.refobjsubid
              WHERE dep.classid = 'pg_class'::regclass AND dep.refclassid = 'pg_class'::regclass
                AND dep.refobjid = src AND dep.deptype = 'a'
                AND EXISTS (SELECT FROM pg_attribute b WHERE b.attrelid = dst AND b.attname = a.attname
                                                        AND b.attnum > 0 AND NOT b.attisdropped) LOOP
        EXECUTE format('ALTER SEQUENCE %s OWNED BY %s.%I', r.seq, dst, r.attname);
    END LOOP;
    IF obj_description(src, 'pg_class') IS NOT NULL THEN
        EXECUTE format('COMMENT ON TABLE %s IS %L', dst, obj_description(src, 'pg_class'));
    END IF;
    -- storage parameters (fillfactor, autovacuum's, the TOAST table's as
    -- toast.*), each that dst has not set itself: between two tables of
    -- one access method, which validates the same parameters
    IF s.relkind = 'r' AND d.relkind = 'r' AND s.relam = d.relam THEN
        SELECT string_agg(format('%s = %L', o.name, o.value), ', ')
          INTO options
          FROM (SELECT option_name AS name, option_value AS value FROM pg_options_to_table(s.reloptions)
                UNION ALL
                SELECT 'toast.' || x.option_name, x.option_value
                  FROM pg_class t, pg_options_to_table(t.reloptions) x WHERE t.oid = s.reltoastrelid) o
         WHERE o.name NOT IN (SELECT option_name FROM pg_options_to_table(d.reloptions)
                              UNION ALL
                              SELECT 'toast.' || x.option_name
                                FROM pg_class t, pg_options_to_table(t.reloptions) x WHERE t.oid = d.reltoastrelid);
        IF options IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %s SET (%s)', dst, options);
        END IF;
    END IF;

    -- row-level security: the policies and the flags move
    FOR r IN SELECT p.polname,
                    format('CREATE POLICY %I ON %s AS %s FOR %s TO %s%s%s', p.polname, dst,
                           CASE WHEN p.polpermissive THEN 'PERMISSIVE' ELSE 'RESTRICTIVE' END,
                           CASE p.polcmd WHEN 'r' THEN 'SELECT' WHEN 'a' THEN 'INSERT' WHEN 'w' THEN 'UPDATE'
                                         WHEN 'd' THEN 'DELETE' ELSE 'ALL' END,
                           CASE WHEN p.polroles = '{0}' THEN 'PUBLIC'
                                ELSE (SELECT string_agg(quote_ident(rolname), ', ') FROM pg_roles
                                       WHERE oid = ANY (p.polroles)) END,
                           ' USING (' || pg_get_expr(p.polqual, p.polrelid) || ')',
                           ' WITH CHECK (' || pg_get_expr(p.polwithcheck, p.polrelid) || ')') AS ddl
               FROM pg_policy p WHERE p.polrelid = src ORDER BY p.polname LOOP
        EXECUTE r.ddl;
        EXECUTE format('DROP POLICY %I ON %s', r.polname, src);
    END LOOP;
    EXECUTE format('ALTER TABLE %s %s ROW LEVEL SECURITY, %s ROW LEVEL SECURITY', dst,
                   CASE WHEN s.relrowsecurity THEN 'ENABLE' ELSE 'DISABLE' END,
                   CASE WHEN s.relforcerowsecurity THEN 'FORCE' ELSE 'NO FORCE' END);
    IF s.relrowsecurity OR s.relforcerowsecurity THEN
        EXECUTE format('ALTER TABLE %s DISABLE ROW LEVEL SECURITY, NO FORCE ROW LEVEL SECURITY', src);
    END IF;

    -- replica identity
    EXECUTE format('ALTER TABLE %s REPLICA IDENTITY %s', dst,
                   CASE s.relreplident WHEN 'd' THEN 'DEFAULT' WHEN 'f' THEN 'FULL' WHEN 'n' THEN 'NOTHING'
                        ELSE 'USING INDEX ' || quote_ident((SELECT relname FROM pg_class
                                                             WHERE oid = backfill._cutover_identity_index(src, dst)))
                   END);

    -- publications: dst joins those src leaves
    FOR r IN SELECT p.pubname FROM pg_publication_rel pr JOIN pg_publication p ON p.oid = pr.prpubid
              WHERE pr.prrelid = src ORDER BY 1 LOOP
        EXECUTE format('ALTER PUBLICATION %I ADD TABLE %s', r.pubname, dst);
        EXECUTE format('ALTER PUBLICATION %I DROP TABLE %s', r.pubname, src);
    END LOOP;

    -- the user's triggers move, in the state they were in
    FOR i IN 1 .. coalesce(cardinality(trigs), 0) LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', trig_names[i], src);
        EXECUTE trigs[i];
        IF trig_states[i] <> 'O' THEN
            EXECUTE format('ALTER TABLE %s %s TRIGGER %I', dst,
                           CASE trig_states[i] WHEN 'D' THEN 'DISABLE' WHEN 'R' THEN 'ENABLE REPLICA'
                                               ELSE 'ENABLE ALWAYS' END, trig_names[i]);
        END IF;
    END LOOP;

    -- views select from dst now: same definition, same options, same OID
    FOR i IN 1 .. coalesce(cardinality(views), 0) LOOP
        BEGIN
            EXECUTE views[i];
        EXCEPTION WHEN OTHERS THEN
            DECLARE
                msg text;
            BEGIN
                GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
                RAISE EXCEPTION 'cannot carry view % over to table %', view_names[i], dst_text
                    USING ERRCODE = 'feature_not_supported',
                          DETAIL = format('Its definition does not fit table %s: %s.', dst_text, msg),
                          HINT = format('Drop or redefine view %s before the cutover.', view_names[i]);
            END;
        END;
    END LOOP;

    -- foreign keys from other tables: on dst, NOT VALID, validated after
    FOR i IN 1 .. coalesce(cardinality(fks), 0) LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk_children[i], fk_names[i]);
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s%s', fk_children[i], fk_names[i],
                       fks[i], CASE WHEN fks[i] LIKE '% NOT VALID' THEN '' ELSE ' NOT VALID' END);
        added := added || (SELECT oid FROM pg_constraint WHERE conrelid = fk_children[i] AND conname = fk_names[i]);
    END LOOP;
    RETURN added;
END
$$;
COMMENT ON FUNCTION backfill._cutover_swap(regclass, regclass, text) IS
'Internal: under the lock of both tables, renames src to src_new_name and dst to src''s name, swaps the names of their indexes of the same definition, and moves to dst what names src.';

-- Lock both tables ACCESS EXCLUSIVE, src first (the one writers queue on),
-- each attempt waiting at most lock_timeout: a writer queued behind the
-- attempt waits no longer than that.  A failed attempt is a NOTICE and a
-- line in the server log, then a pause that doubles each time (with
-- jitter, at most a second) lets the queued writers through.  Then the
-- swap, in the same subtransaction, so a lock it waits for (a child table
-- of a foreign key) is bounded alike.  Gives up with 55P03 after
-- "attempts" attempts, everything as it was.
CREATE FUNCTION backfill._cutover_attempts(job_id bigint, src regclass, dst regclass, src_new_name text,
                                           lock_timeout interval, attempts integer,
                                           OUT tries integer, OUT lock_held_ms double precision,
                                           OUT to_validate oid[])
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    saved text := current_setting('lock_timeout');
    timeout_ms bigint := (extract(epoch FROM lock_timeout) * 1000)::bigint;
    locked_at timestamptz;
    pause double precision;
BEGIN
    tries := 0;
    LOOP
        tries := tries + 1;
        PERFORM backfill._cutover_report(job_id,
                    format('waiting_for_lock (attempt %s of %s) on table %s', tries, attempts, src));
        BEGIN
            PERFORM set_config('lock_timeout', timeout_ms || 'ms', true);
            EXECUTE format('LOCK TABLE %s, %s IN ACCESS EXCLUSIVE MODE', src, dst);
            locked_at := clock_timestamp();
            -- again, under the lock: a view or key made while we waited
            PERFORM backfill._cutover_check(backfill._get_job(job_id), src, dst);
            PERFORM backfill._cutover_report(job_id, format('swapping table %s with table %s', src, dst));
            to_validate := backfill._cutover_swap(src, dst, src_new_name);
            PERFORM set_config('lock_timeout', saved, true);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM set_config('lock_timeout', saved, true);
            RAISE NOTICE 'cutover of backfill job %: attempt % of % could not lock table % within % ms',
                job_id, tries, attempts, src, timeout_ms;
            RAISE LOG 'cutover of backfill job %: attempt % of % could not lock table % within % ms',
                job_id, tries, attempts, src, timeout_ms;
            IF tries >= attempts THEN
                PERFORM backfill._cutover_report(job_id, 'gave up');
                RAISE EXCEPTION 'could not lock table % for the cutover of backfill job % in % attempts',
                    src, job_id, attempts
                    USING ERRCODE = 'lock_not_available',
                          DETAIL = format('Each attempt waited at most %s ms for the lock; another transaction held it or was ahead in the queue each time. Nothing was changed.', timeout_ms),
                          HINT = 'Find the long transaction on the table in pg_locks and pg_stat_activity, or try again with more attempts or a longer lock_timeout.';
            END IF;
            pause := least(0.01 * power(2, tries - 1), 1.0) * (0.5 + random() / 2);
            PERFORM pg_sleep(pause);
        END;
    END LOOP;
    lock_held_ms := extract(epoch FROM clock_timestamp() - locked_at) * 1000;
END
$$;
COMMENT ON FUNCTION backfill._cutover_attempts(bigint, regclass, regclass, text, interval, integer) IS
'Internal: locks both tables of a cutover with bounded waits and retries, then swaps them.';

-- the arguments every cutover function shares, checked alike
CREATE FUNCTION backfill._cutover_arguments(lock_timeout interval, attempts integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF lock_timeout IS NULL THEN
        RAISE EXCEPTION 'argument "lock_timeout" must not be null' USING ERRCODE = 'null_value_not_allowed';
    ELSIF attempts IS NULL THEN
        RAISE EXCEPTION 'argument "attempts" must not be null' USING ERRCODE = 'null_value_not_allowed';
    ELSIF lock_timeout < '1ms' OR lock_timeout > '1 hour' THEN
        RAISE EXCEPTION 'lock_timeout must be between 1 ms and 1 hour'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A writer queued behind the cutover''s lock waits up to this long at each attempt.';
    ELSIF attempts < 1 OR attempts > 1000 THEN
        RAISE EXCEPTION 'attempts must be between 1 and 1000' USING ERRCODE = 'invalid_parameter_value';
    END IF;
END
$$;
COMMENT ON FUNCTION backfill._cutover_arguments(interval, integer) IS
'Internal: checks the lock_timeout and attempts of a cutover or rollback.';

-- a job that can be turned around: its downstream maps back onto its
-- upstream, and its owner may write the upstream; NULL if so, else why not
CREATE FUNCTION backfill._cutover_irreversible(j backfill.job)
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    col text;
BEGIN
    IF j.filter IS NOT NULL THEN
        RETURN 'the job has a filter, so the new table lacks rows the old one has';
    ELSIF j.expressions IS NOT NULL AND EXISTS (SELECT FROM unnest(j.expressions) e WHERE e IS NOT NULL) THEN
        RETURN 'the job has computed columns, whose values cannot be turned back into the old table''s';
    END IF;
    SELECT a.attname INTO col FROM pg_attribute a
     WHERE a.attrelid = j.upstream AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = ''
       AND a.attname <> ALL (j.columns) LIMIT 1;
    IF FOUND THEN
        RETURN format('column %I of table %s is not copied, and is NOT NULL without a default', col, j.upstream);
    END IF;
    IF NOT has_table_privilege(j.owner, j.upstream, 'INSERT, UPDATE, DELETE') THEN
        RETURN format('the job''s owner %s may not write table %s', j.owner, j.upstream);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION backfill._cutover_irreversible(backfill.job) IS
'Internal: why a job''s downstream could not be followed back by its upstream after a cutover, or NULL.';

CREATE FUNCTION backfill.cutover(job_id bigint, old_name text DEFAULT NULL,
                                 lock_timeout interval DEFAULT '1s', attempts integer DEFAULT 20,
                                 fence boolean DEFAULT false,
                                 OUT state text, OUT attempts_made integer,
                                 OUT lock_held_ms double precision, OUT old_table regclass,
                                 OUT rollback_possible boolean, OUT source_lsn pg_lsn)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    c backfill.job_cutover;
    why text;
    src_name text;
    dst_name text;
    up_text text;
    down_text text;
    swapped record;
BEGIN
    PERFORM backfill._cutover_arguments(lock_timeout, attempts);
    IF fence IS NULL THEN
        RAISE EXCEPTION 'argument "fence" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- one cutover of a job at a time; rollback and finish take it too
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
    SELECT * INTO c FROM backfill.job_cutover WHERE backfill.job_cutover.job_id = cutover.job_id;
    IF c.state = 'cut_over' THEN
        RAISE EXCEPTION 'backfill job % has already been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Use backfill.rollback_cutover(%s) or backfill.finish_cutover(%s).', job_id, job_id);
    ELSIF c.state = 'finished' THEN
        RAISE EXCEPTION 'backfill job % has already been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Its cutover has been finished: the job no longer follows any table.';
    END IF;
    IF j.remote THEN
        -- a switchover (src/kinds/switchover.c): the source stops being
        -- followed, so the job lets go of the local table at once, as
        -- finish_cutover does; there is no rollback to keep it for
        source_lsn := backfill._remote_switchover(job_id, fence, lock_timeout, attempts);
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, false);
        PERFORM backfill._cutover_record(job_id, 'finished', 1, j.upstream, j.downstream,
                                         (SELECT relname FROM pg_class WHERE oid = j.upstream),
                                         (SELECT relnamespace FROM pg_class WHERE oid = j.downstream),
                                         (SELECT relname FROM pg_class WHERE oid = j.downstream),
                                         false, j.into_existing, NULL, NULL, true);
        state := 'finished';
        attempts_made := 1;
        RETURN;
    END IF;
    IF fence THEN
        RAISE EXCEPTION 'fence applies only to a job whose upstream is on another server'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A local cutover locks the upstream itself.';
    END IF;
    IF j.status <> 'finished' THEN
        RAISE EXCEPTION 'cannot cut over backfill job % because it has not finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its status is %s: its downstream table is not yet equal to its upstream table.', j.status),
                  HINT = format('Wait until it has finished: backfill.wait_job(%s).', job_id);
    END IF;
    src_name := (SELECT relname FROM pg_class WHERE oid = j.upstream);
    old_name := coalesce(old_name, format('%s_before_cutover_%s', src_name, job_id));
    IF old_name = '' OR octet_length(old_name) >= 64 THEN
        RAISE EXCEPTION 'old name "%" is not a valid table name', old_name
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'A table name is 1 to 63 bytes long.',
                  HINT = 'Give a shorter name as old_name.';
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE relname = old_name
                 AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = j.upstream)) THEN
        RAISE EXCEPTION 'relation "%" already exists in the schema of table %', old_name, j.upstream
            USING ERRCODE = 'duplicate_table',
                  HINT = 'Give another name as old_name.';
    END IF;
    PERFORM backfill._cutover_check(j, j.upstream, j.downstream);
    why := backfill._cutover_irreversible(j);
    IF why IS NOT NULL THEN
        RAISE NOTICE 'backfill job % cannot be rolled back after its cutover: %', job_id, why
            USING DETAIL = format('The old table, renamed %s, will no longer follow the new one.', old_name);
    END IF;

    dst_name := (SELECT relname FROM pg_class WHERE oid = j.downstream);
    up_text := j.upstream::text;
    down_text := j.downstream::text;
    swapped := backfill._cutover_attempts(job_id, j.upstream, j.downstream, old_name, lock_timeout, attempts);
    IF why IS NULL THEN
        PERFORM backfill._cutover_turn(job_id, true);
    ELSE
        -- the old table no longer takes writes: the job has nothing to follow
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, false);
    END IF;
    PERFORM backfill._cutover_record(job_id, 'cut_over', swapped.tries, j.upstream, j.downstream,
                                     old_name,
                                     (SELECT relnamespace FROM pg_class WHERE oid = j.downstream),
                                     dst_name, why IS NULL, j.into_existing,
                                     swapped.lock_held_ms, swapped.to_validate, false);
    RAISE LOG 'cutover of backfill job %: table % swapped with table % (renamed %) after % attempts, lock held % ms',
        job_id, down_text, up_text, old_name, swapped.tries, round(swapped.lock_held_ms::numeric, 1);
    PERFORM backfill._cutover_report(job_id, 'cut over');
    state := 'cut_over';
    attempts_made := swapped.tries;
    lock_held_ms := swapped.lock_held_ms;
    old_table := j.upstream;
    rollback_possible := why IS NULL;
END
$$;
COMMENT ON FUNCTION backfill.cutover(bigint, text, interval, integer, boolean) IS
'Gives a finished job''s downstream its upstream''s name and what names it (privileges, owner, sequences, defaults, identity, policies, comments, statistics targets, replica identity, publications, triggers, views, foreign keys), under the upstream''s lock taken with lock_timeout and retried; the old table then follows the new one until finish_cutover.';

CREATE FUNCTION backfill.rollback_cutover(job_id bigint, lock_timeout interval DEFAULT '1s',
                                          attempts integer DEFAULT 20,
                                          OUT state text, OUT attempts_made integer,
                                          OUT lock_held_ms double precision)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    c backfill.job_cutover;
    swapped record;
    up_text text;
    down_text text;
BEGIN
    PERFORM backfill._cutover_arguments(lock_timeout, attempts);
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
    SELECT * INTO c FROM backfill.job_cutover WHERE backfill.job_cutover.job_id = rollback_cutover.job_id;
    IF NOT FOUND OR c.state <> 'cut_over' THEN
        RAISE EXCEPTION 'backfill job % has not been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = CASE WHEN c.state IS NULL THEN 'It has no cutover to roll back.'
                                ELSE format('Its cutover is %s.', replace(c.state, '_', ' ')) END;
    ELSIF NOT c.reversible THEN
        RAISE EXCEPTION 'cannot roll back the cutover of backfill job %', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The old table has not followed the new one since the cutover: the job''s shape does not map back (the cutover said why).',
                  HINT = format('Use backfill.finish_cutover(%s, keep => true) and copy the table back with a new job.', job_id);
    END IF;
    -- the job is turned around: its upstream has the name, its downstream is the old table
    PERFORM backfill._cutover_check(j, j.upstream, j.downstream);
    IF EXISTS (SELECT FROM pg_class WHERE relname = c.new_name AND relnamespace = c.new_schema) THEN
        RAISE EXCEPTION 'relation "%" already exists in schema %', c.new_name, c.new_schema::regnamespace
            USING ERRCODE = 'duplicate_table',
                  DETAIL = 'The rollback gives the new table back the name it had before the cutover.';
    END IF;
    up_text := j.upstream::text;
    down_text := j.downstream::text;
    swapped := backfill._cutover_attempts(job_id, j.upstream, j.downstream, c.new_name, lock_timeout, attempts);
    IF c.new_schema <> (SELECT relnamespace FROM pg_class WHERE oid = j.upstream) THEN
        EXECUTE format('ALTER TABLE %s SET SCHEMA %I', j.upstream, c.new_schema::regnamespace);
    END IF;
    PERFORM backfill._cutover_turn(job_id, c.into_existing);
    PERFORM backfill._cutover_record(job_id, 'rolled_back', swapped.tries, c.old_table, c.new_table,
                                     c.old_name, c.new_schema, c.new_name, true, c.into_existing,
                                     swapped.lock_held_ms, swapped.to_validate, false);
    RAISE LOG 'rollback of the cutover of backfill job %: table % swapped back with table % (renamed %) after % attempts, lock held % ms',
        job_id, down_text, up_text, c.new_name, swapped.tries, round(swapped.lock_held_ms::numeric, 1);
    PERFORM backfill._cutover_report(job_id, 'rolled back');
    state := 'rolled_back';
    attempts_made := swapped.tries;
    lock_held_ms := swapped.lock_held_ms;
END
$$;
COMMENT ON FUNCTION backfill.rollback_cutover(bigint, interval, integer) IS
'Swaps the tables of a cutover back, with the same locking and carrying; the job follows its upstream again, and may be cut over again.';

CREATE FUNCTION backfill.finish_cutover(job_id bigint, keep boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    c backfill.job_cutover;
    fk record;
BEGIN
    IF keep IS NULL THEN
        RAISE EXCEPTION 'argument "keep" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
    SELECT * INTO c FROM backfill.job_cutover WHERE backfill.job_cutover.job_id = finish_cutover.job_id;
    IF NOT FOUND OR c.state <> 'cut_over' THEN
        RAISE EXCEPTION 'backfill job % has not been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = CASE WHEN c.state IS NULL THEN 'It has no cutover to finish.'
                                ELSE format('Its cutover is %s.', replace(c.state, '_', ' ')) END;
    END IF;
    -- the foreign keys the swap added NOT VALID
    FOR fk IN SELECT k.conrelid::regclass AS child, k.conname FROM pg_constraint k
               WHERE k.oid = ANY (c.to_validate) AND NOT k.convalidated LOOP
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', fk.child, fk.conname);
    END LOOP;
    -- the old table stops following the new one
    IF j.status <> 'cancelled' THEN
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, false);
    END IF;
    IF NOT keep AND EXISTS (SELECT FROM pg_class WHERE oid = c.old_table) THEN
        EXECUTE format('DROP TABLE %s', c.old_table::regclass);
    END IF;
    PERFORM backfill._cutover_record(job_id, 'finished', c.attempts, c.old_table, c.new_table,
                                     c.old_name, c.new_schema, c.new_name, false, c.into_existing,
                                     c.lock_held_ms, NULL, true);
    PERFORM backfill._cutover_report(job_id, 'finished');
END
$$;
COMMENT ON FUNCTION backfill.finish_cutover(bigint, boolean) IS
'Ends a cutover: validates the foreign keys it carried, stops the old table following the new one (the job is then cancelled) and drops the old table, unless keep.';

-- ---------------------------------------------------------------------------
-- Copy from several servers (src/kinds/kind_remote.c, doc/sharded.md): a cdc
-- job whose upstream is a partitioned table whose leaves are all foreign
-- tables of postgres_fdw reads each partition from its server, in splits of
-- its own, and follows each server through a slot and a publication there.
-- ---------------------------------------------------------------------------

-- the partitions, in the order of the splits' parts: remote_splits has a
-- NULL bound between two partitions' splits
ALTER TABLE backfill.job ADD COLUMN remote_partitions regclass[];
COMMENT ON COLUMN backfill.job.remote_partitions IS
'For a job over a partitioned table of foreign tables: its foreign partitions, in the order of its splits (a NULL bound in remote_splits ends one partition''s splits). NULL for any other job.';

-- the offset of the change stream on each server of such a job, as the
-- job's own columns keep it for a job of one server
CREATE TABLE backfill.job_source (
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    source integer NOT NULL,
    server name NOT NULL,
    remote_lsn pg_lsn,
    remote_source_lsn pg_lsn,
    remote_caught_up_at timestamptz,
    remote_last_commit timestamptz,
    PRIMARY KEY (job_id, source)
);
COMMENT ON TABLE backfill.job_source IS
'The servers of a job over foreign partitions of several servers (source: their order, that of their first partition): per server, the offset of its change stream (remote_lsn), the end of its flushed WAL at the last fetch, when a fetch last caught up with it and the commit time of the last transaction fetched.';
SELECT pg_catalog.pg_extension_config_dump('backfill.job_source', '');
GRANT SELECT ON backfill.job_source TO PUBLIC;
ALTER TABLE backfill.job_source ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_source_owner ON backfill.job_source FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) job_source.job_id));

-- each split of a remote job with its partition, its server and its range
-- of the first key column (NULL: the partition's start or end)
CREATE FUNCTION backfill.job_splits(job_id bigint)
RETURNS TABLE (split_id integer, partition regclass, server name,
               lower_bound text, upper_bound text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT sp.i::pg_catalog.int4,
           coalesce(j.remote_partitions[pt.part OPERATOR(pg_catalog.+) 1], j.upstream),
           s.srvname,
           j.remote_splits[sp.i],
           j.remote_splits[sp.i OPERATOR(pg_catalog.+) 1]
      FROM backfill.job j
      CROSS JOIN LATERAL pg_catalog.generate_series(0, coalesce(pg_catalog.cardinality(j.remote_splits), 0)) sp(i)
      CROSS JOIN LATERAL (SELECT pg_catalog.count(*) FILTER (WHERE b.b IS NULL)::pg_catalog.int4 AS part
                            FROM pg_catalog.unnest(j.remote_splits[1:sp.i]) b(b)) pt
      LEFT JOIN pg_catalog.pg_foreign_table f
        ON f.ftrelid OPERATOR(pg_catalog.=) coalesce(j.remote_partitions[pt.part OPERATOR(pg_catalog.+) 1], j.upstream)
      LEFT JOIN pg_catalog.pg_foreign_server s ON s.oid OPERATOR(pg_catalog.=) f.ftserver
     WHERE j.job_id OPERATOR(pg_catalog.=) job_splits.job_id AND j.remote
     ORDER BY sp.i;
END;
COMMENT ON FUNCTION backfill.job_splits(bigint) IS
'The splits of a job whose upstream is on other servers: each split''s foreign table (a partition of a sharded upstream), its server and its bounds on the first key column (NULL: unbounded).';

-- a foreign table created as a partition of a sharded upstream is refused,
-- as one attached (src/api/ddl_partitions.c): the DDL trigger of CREATE
-- TABLE ... PARTITION OF also fires for CREATE FOREIGN TABLE
DROP EVENT TRIGGER backfill_ddl_alter;
CREATE EVENT TRIGGER backfill_ddl_alter ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE FOREIGN TABLE')
    EXECUTE FUNCTION backfill._on_ddl();

-- ---------------------------------------------------------------------------
-- Cut over: backfill.jobs gains the column cutover (the view of 1.2, whole,
-- with one more column): waiting_for_lock (attempt n of m) while a cutover
-- or rollback waits for its lock, else the job's backfill.job_cutover state
-- (cut_over, rolled_back, finished), NULL for a job never cut over.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE VIEW backfill.jobs WITH (security_invoker = true) AS
SELECT j.job_id, j.job_name, j.kind, j.status, j.upstream,
       j.upstream::pg_catalog.oid AS upstream_table_id,
       j.downstream, j.fragment_id, j.parallelism, j.chunk_size,
       coalesce(p.epoch, 0) AS epoch, coalesce(p.row_count, 0)::bigint AS row_count,
       j.created_at, j.finished_at, j.last_error, j.state_table, j.rate_limit, j.run_mode,
       (SELECT pg_catalog.array_agg(w.pid ORDER BY w.actor_id)
          FROM backfill.job_workers() w
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id) AS worker_pids,
       j.snapshot_epoch,
       -- a remote job keeps its slot on the source after its finish
       CASE WHEN j.remote AND j.status OPERATOR(pg_catalog.<>) 'cancelled'
            THEN pg_catalog.format('backfill_%s_%s_%s',
                     (SELECT s.system_identifier FROM pg_catalog.pg_control_system() s),
                     d.oid, j.job_id)
            WHEN j.kind OPERATOR(pg_catalog.=) 'cdc'
                 AND j.status OPERATOR(pg_catalog.<>) ALL (ARRAY['finished', 'cancelled'])
            THEN pg_catalog.format('backfill_%s_%s', d.oid, j.job_id) END AS slot_name,
       j.owner,
       CASE WHEN r.running THEN p.throttled_by END AS throttled_by,
       CASE WHEN r.running THEN pg_catalog.round(p.rows_per_second) END AS rows_per_second,
       CASE WHEN r.running AND p.rows_per_second OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.make_interval(secs => pg_catalog.round(
                     GREATEST(j.total_rows OPERATOR(pg_catalog.-) coalesce(p.row_count, 0), 0)::double precision
                     OPERATOR(pg_catalog./) p.rows_per_second)) END AS eta,
       CASE
           WHEN j.status OPERATOR(pg_catalog.=) 'finished' THEN '100%'
           WHEN j.status OPERATOR(pg_catalog.=) 'cancelled' THEN NULL
           WHEN j.remote AND j.remote_partitions IS NOT NULL
           THEN (SELECT pg_catalog.format('%s [servers: %s/%s, splits: %s/%s]',
                            backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows),
                            pg_catalog.count(*) FILTER (WHERE v.finished OPERATOR(pg_catalog.=) v.splits),
                            pg_catalog.count(*), pg_catalog.sum(v.finished), pg_catalog.sum(v.splits))
                   FROM (SELECT sp.server, pg_catalog.count(*) AS splits,
                                pg_catalog.count(*) FILTER (WHERE s.backfill_finished) AS finished
                           FROM backfill.job_splits(j.job_id) sp
                           LEFT JOIN backfill.job_state(j.job_id) s
                             ON s.vnode OPERATOR(pg_catalog.=) sp.split_id
                          GROUP BY sp.server) v)
           WHEN j.remote
           THEN pg_catalog.format('%s [splits: %s/%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows),
                    (SELECT pg_catalog.count(*) FILTER (WHERE s.backfill_finished)
                       FROM backfill.job_state(j.job_id) s),
                    coalesce(pg_catalog.cardinality(j.remote_splits), 0) OPERATOR(pg_catalog.+) 1)
           WHEN j.kind OPERATOR(pg_catalog.<>) 'snapshot'
           THEN backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows)
           WHEN p.caught_up OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN 'Finishing [epoch lag: 0ns]'
           WHEN p.in_log_store OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN pg_catalog.format('LogStore [actor: %s/%s, avg lag %s]', p.caught_up, p.actors,
                    backfill._rw_duration(p.ongoing_lag_ms))
           WHEN p.in_log_store OPERATOR(pg_catalog.>) 0
                OR (SELECT pg_catalog.bool_and(s.backfill_finished)
                      FROM backfill.job_state(j.job_id) s)
           THEN 'Snapshot finished'
           ELSE pg_catalog.format('Snapshot [%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows))
       END AS progress,
       j.remote,
       -- over several servers: the sum of their lags, and the longest
       CASE WHEN j.remote_partitions IS NOT NULL
            THEN (SELECT pg_catalog.sum(o.remote_source_lsn OPERATOR(pg_catalog.-) o.remote_lsn)
                    FROM backfill.job_source o WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id)
            WHEN j.remote THEN j.remote_source_lsn OPERATOR(pg_catalog.-) j.remote_lsn END AS lag_bytes,
       CASE WHEN j.remote_partitions IS NOT NULL
            THEN (SELECT pg_catalog.max(CASE WHEN o.remote_lsn OPERATOR(pg_catalog.>=) o.remote_source_lsn
                                             THEN '0'::pg_catalog.interval
                                             ELSE pg_catalog.now() OPERATOR(pg_catalog.-)
                                                  coalesce(o.remote_caught_up_at, j.created_at) END)
                    FROM backfill.job_source o WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id)
            WHEN j.remote AND j.remote_lsn OPERATOR(pg_catalog.>=) j.remote_source_lsn
            THEN '0'::pg_catalog.interval
            WHEN j.remote
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) coalesce(j.remote_caught_up_at, j.created_at)
       END AS lag_time,
       (SELECT pg_catalog.min(a.query)
          FROM backfill.job_workers() w
          JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id
           AND pg_catalog.starts_with(a.query, 'waiting for the source')) AS waiting_for,
       -- a cutover in progress shows in its backend's activity (its
       -- transaction shows nothing else until it commits); then the last one
       coalesce((SELECT pg_catalog.min(pg_catalog.substr(a.query,
                            pg_catalog.length(pg_catalog.format('backfill cutover of job %s: ', j.job_id)) OPERATOR(pg_catalog.+) 1))
                   FROM pg_catalog.pg_stat_activity a
                  WHERE a.state OPERATOR(pg_catalog.=) 'active'
                    AND pg_catalog.starts_with(a.query, pg_catalog.format('backfill cutover of job %s: waiting_for_lock', j.job_id))),
                (SELECT c.state FROM backfill.job_cutover c
                  WHERE c.job_id OPERATOR(pg_catalog.=) j.job_id)) AS cutover
  FROM backfill.job j
  CROSS JOIN (SELECT oid FROM pg_catalog.pg_database
               WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count,
                            pg_catalog.sum(a.rows_per_second) AS rows_per_second,
                            (pg_catalog.array_agg(a.throttled_by ORDER BY a.actor_id)
                               FILTER (WHERE a.throttled_by IS NOT NULL))[1] AS throttled_by,
                            pg_catalog.count(*) AS actors,
                            pg_catalog.count(a.log_store_lag_ms) AS in_log_store,
                            pg_catalog.count(*) FILTER (WHERE a.log_store_caught_up) AS caught_up,
                            coalesce(pg_catalog.floor(pg_catalog.avg(a.log_store_lag_ms)
                                         FILTER (WHERE NOT a.log_store_caught_up)), 0)::bigint
                                AS ongoing_lag_ms
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true
  CROSS JOIN LATERAL (SELECT CASE WHEN j.status OPERATOR(pg_catalog.=) 'backfilling'
                                  THEN backfill._job_is_running(j.job_id)
                                  ELSE false END AS running) r;

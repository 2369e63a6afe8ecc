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
    pending text := 'false';
    decoded text := 'SELECT NULL::record AS k WHERE false';
    vnode_u text;
    key_types text;
    first_type text;
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
            covered := format('EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished '
                              'AND ((%2$L::text[])[s.split_id] IS NULL OR EXISTS (SELECT FROM '
                              '(SELECT ((%2$L::text[])[s.split_id])::%4$s AS %3$I) b WHERE %5$s)) '
                              'AND ((%2$L::text[])[s.split_id + 1] IS NULL OR EXISTS (SELECT FROM '
                              '(SELECT ((%2$L::text[])[s.split_id + 1])::%4$s AS %3$I) b WHERE %6$s)))',
                              j.state_table, coalesce(j.remote_splits, '{}'), j.pk_columns[1], first_type,
                              backfill._key_compare_sql(j.upstream, j.pk_columns[1:1], 'u', '>=', 'b'),
                              backfill._key_compare_sql(j.upstream, j.pk_columns[1:1], 'u', '<', 'b'));
            scan_d := format('(SELECT u.* FROM %s u WHERE %s)', j.downstream, covered);
        END IF;
        -- no fetch from here on; the source's snapshot, then what its slot
        -- holds after it, from the offset the comparison's snapshot sees
        PERFORM backfill._lock_slot(j.job_id);
        EXECUTE format('SELECT FROM %s LIMIT 1', scan_u);
        decoded := format('SELECT ROW(%s) AS k FROM backfill._unfetched_keys(%s, '
                          '(SELECT j.remote_lsn FROM backfill.job j WHERE j.job_id = %s)) p(k)',
                          key_types, j.job_id, j.job_id);
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    -- a backfilling job covers, per vnode, the keys up to its position
    -- (below it for the snapshot kind, whose position is the next row to
    -- read), and the keys captured since its last barrier are pending, not
    -- differences; a finished job covers every key and has nothing pending
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
            -- and the changes the slot has decoded but not delivered yet
            -- (flushed first: the slot decodes only flushed WAL, and an
            -- asynchronous commit may not have reached it)
            IF EXISTS (SELECT FROM pg_replication_slots
                        WHERE slot_name = format('backfill_%s_%s',
                                  (SELECT oid FROM pg_database WHERE datname = current_database()),
                                  j.job_id)) THEN
                PERFORM backfill._flush_wal();
                -- one user of the slot at a time: the job's fetch waits
                PERFORM backfill._lock_slot(j.job_id);
                decoded := format(
                    'SELECT ROW((substr(p.data, strpos(p.data, E''\t'') + 1)::%s).*) AS k '
                    '  FROM pg_logical_slot_peek_changes(%L, NULL, NULL, ''relid'', %L) p',
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
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    END IF;
    IF j.filter IS NOT NULL THEN
        covered := format('%s AND (%s)', covered, j.filter);
    END IF;

    -- one statement, one snapshot for all of it, run as the job's owner in
    -- a security-restricted operation: the filter and the computed columns
    -- are the owner's SQL
    RETURN QUERY SELECT v.pk, v.problem FROM backfill._verify_rows(j.job_id, format(
        'WITH w AS MATERIALIZED (%9$s) '
        'SELECT coalesce(u.k, d.k)::text, '
        '       CASE WHEN d.k IS NULL THEN ''missing'' '
        '            WHEN u.k IS NULL THEN ''extra'' ELSE ''different'' END '
        '  FROM (SELECT ROW(%1$s) AS k, ROW(%2$s) AS r FROM %3$s WHERE %4$s) u '
        '  FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d) d ON u.k = d.k '
        ' WHERE (u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) '
        '   AND NOT %8$s '
        ' ORDER BY coalesce(u.k, d.k)',
        key_u, cols_u, scan_u, covered,
        key_d, cols_d, scan_d, pending, decoded)) v;
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
-- SQL; vnode runs none.
ALTER FUNCTION backfill.job_workers() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._stop_and_lock_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._stop_workers(bigint, boolean) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._job_is_running(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill.start_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_slot(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._lock_slot(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._on_drop_extension() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._flush_wal() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._mark_cancelled(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._delete_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._set_foreground(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._set_rate_limit(bigint, integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._rebuild_actors(bigint, integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._copy_names(bigint, bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_triggers(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill.job_vnode(bigint, VARIADIC "any") SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._check_reschedule(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_kind_objects(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._unfetched_keys(bigint, pg_catalog.pg_lsn) SET search_path = pg_catalog, pg_temp;

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
-- ---- indexes built once (src/copy/index_build.c, doc/indexes.md) ----

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
    IF j.kind = 'cdc' AND NOT j.remote THEN
        PERFORM backfill._drop_slot(j.job_id);
    END IF;
    IF j.remote THEN
        PERFORM backfill._drop_kind_objects(j.job_id);
    END IF;
END
$$;

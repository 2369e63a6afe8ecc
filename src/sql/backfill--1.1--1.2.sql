/* backfill--1.1--1.2.sql: named internal catalog functions */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.2'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The catalog writes of the control functions, one function each (they
-- replace backfill._job_catalog(job_id, op, arg)); each checks that the
-- caller has the privileges of the job's owner (src/control.c)
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._mark_cancelled(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_mark_cancelled_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._mark_cancelled(bigint) IS
'Internal: marks a job the caller owns cancelled, without downstream, state or change table.';

CREATE FUNCTION backfill._delete_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_delete_job_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._delete_job(bigint) IS
'Internal: deletes the catalog rows of a job the caller owns.';

CREATE FUNCTION backfill._set_foreground(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_set_foreground_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._set_foreground(bigint) IS
'Internal: marks a job the caller owns as run in the foreground, so that the launcher leaves it alone.';

CREATE FUNCTION backfill._set_rate_limit(job_id bigint, rows_per_second integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_set_rate_limit_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._set_rate_limit(bigint, integer) IS
'Internal: sets the rate limit of a job the caller owns; NULL for none.';

CREATE FUNCTION backfill._rebuild_actors(job_id bigint, parallelism integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_rebuild_actors_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._rebuild_actors(bigint, integer) IS
'Internal: replaces the actors of a job the caller owns by parallelism new ones; the vnodes keep their progress.';

CREATE FUNCTION backfill._copy_names(job_id bigint, from_job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_copy_names_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._copy_names(bigint, bigint) IS
'Internal: gives a job the caller owns the name and statement of another job it owns.';

CREATE FUNCTION backfill._drop_triggers(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_triggers_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._drop_triggers(bigint) IS
'Internal: drops the triggers a job the caller owns has on its upstream.';

-- ---------------------------------------------------------------------------
-- The control functions, calling them (cancel_job, drop_job, recreate_job,
-- reschedule and _drop_job_objects call them too: each is defined once,
-- below, in its form of 1.2)
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.stop_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM backfill._get_job(job_id);
    IF NOT backfill._stop_workers(job_id, false) THEN
        RAISE NOTICE 'backfill job % is not running in the background', job_id;
    END IF;
    -- not restarted by the launcher any more
    PERFORM backfill._set_foreground(job_id);
END
$$;

CREATE OR REPLACE FUNCTION backfill.alter_rate_limit(job_id bigint, rows_per_second integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM backfill._get_job(job_id);
    IF rows_per_second < 0 THEN
        RAISE EXCEPTION 'rows_per_second must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL for no limit, or 0 to pause the snapshot.';
    END IF;
    PERFORM backfill._set_rate_limit(job_id, rows_per_second);
END
$$;

DROP FUNCTION backfill._job_catalog(bigint, text, bigint);

-- ---- pacing: what holds a job back, its rate and ETA; estimates ----

-- each actor's pace, recorded with its barriers (src/pacing.c)
ALTER TABLE backfill.actor
    ADD COLUMN throttled_by text,
    ADD COLUMN rows_per_second double precision;
COMMENT ON COLUMN backfill.actor.throttled_by IS
'What held the actor''s snapshot reads back in its last barrier: replica lag, retained WAL, WAL rate, rate limit or paused; NULL for nothing.';
COMMENT ON COLUMN backfill.actor.rows_per_second IS
'The actor''s snapshot rows per second over the minute before its last barrier, in the run that wrote it; 0 once its vnodes have finished.';

-- backfill.jobs shows the pace of the jobs that run now (throttled_by,
-- rows_per_second, eta): the view is defined once for 1.2, at the end

-- what a job would copy, write and take, before creating it (src/estimate.c)
CREATE FUNCTION backfill.estimate_job(upstream regclass, kind text DEFAULT 'arrangement',
                                      columns text[] DEFAULT NULL, parallelism integer DEFAULT 1)
RETURNS TABLE(rows bigint, downstream_bytes bigint, wal_bytes bigint, duration interval)
AS 'MODULE_PATHNAME', 'backfill_estimate_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.estimate_job(regclass, text, text[], integer) IS
'Estimates what a job over the upstream would copy: its rows (from the catalog), the size of its downstream, the WAL it writes and how long it takes (from a short timed copy of a sample, rolled back).';

-- ---- filters, computed columns, a downstream of the user's ----

-- what a job copies: its row filter, the expression of each computed
-- column (NULL for a column copied as it is), the upstream's columns it
-- reads, and whether the downstream is a table the user made
ALTER TABLE backfill.job
    ADD COLUMN filter text,
    ADD COLUMN expressions text[],
    ADD COLUMN source_columns text[],
    ADD COLUMN into_existing boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN backfill.job.filter IS
'The row filter: only upstream rows for which it is true are copied. NULL for none.';
COMMENT ON COLUMN backfill.job.expressions IS
'Per column of "columns", the expression over the upstream it is computed with, NULL for a column copied as it is; NULL when every column is copied.';
COMMENT ON COLUMN backfill.job.source_columns IS
'The upstream columns the job reads: the key, the copied columns and those the expressions and the filter use. NULL for a job made before version 1.2, which reads "columns".';
COMMENT ON COLUMN backfill.job.into_existing IS
'Whether the downstream is a table the user made, which cancel_job and drop_job leave in place.';

-- create_job gains filter and into_existing: a new signature, with a C
-- symbol of its own, so that a 1.0 or 1.1 catalog keeps binding the old
-- one until it is updated
CREATE FUNCTION backfill.create_job(name text, upstream regclass,
                                    kind text DEFAULT 'arrangement',
                                    columns text[] DEFAULT NULL,
                                    parallelism integer DEFAULT 1,
                                    chunk_size integer DEFAULT 256,
                                    rate_limit integer DEFAULT NULL,
                                    filter text DEFAULT NULL,
                                    into_existing boolean DEFAULT false)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean) IS
'Creates a streaming job that fills the table "name" (a new one, or with into_existing an empty one of the user''s) from the rows of "upstream" that pass "filter"; returns the job id.';

-- the old signature's privileges go to the new one
DO $$
DECLARE
    acl aclitem[] := (SELECT p.proacl FROM pg_catalog.pg_proc p
                       WHERE p.oid OPERATOR(pg_catalog.=) 'backfill.create_job(text, regclass, text, text[], integer, integer, integer)'::pg_catalog.regprocedure);
    a record;
BEGIN
    IF acl IS NULL THEN
        RETURN;                 -- the default: EXECUTE for PUBLIC
    END IF;
    REVOKE ALL ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean) FROM PUBLIC;
    FOR a IN SELECT e.grantee, e.privilege_type, e.is_grantable FROM pg_catalog.aclexplode(acl) e LOOP
        EXECUTE pg_catalog.format('GRANT %s ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean) TO %s%s',
                                  a.privilege_type,
                                  CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                                       ELSE pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::pg_catalog.text) END,
                                  CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END
$$;
DROP FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer);

CREATE OR REPLACE FUNCTION backfill.recreate_job(job_id bigint, kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
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
    -- the columns again: "expression AS name" for a computed one
    new_id := backfill.create_job(j.downstream_name, j.upstream,
                                  coalesce(kind, j.kind),
                                  CASE WHEN j.expressions IS NULL THEN j.columns
                                       ELSE ARRAY(SELECT coalesce(t.e || ' AS ' || quote_ident(t.c), t.c)
                                                    FROM unnest(j.columns, j.expressions)
                                                         WITH ORDINALITY AS t(c, e, o)
                                                   ORDER BY t.o) END,
                                  j.parallelism, j.chunk_size, j.rate_limit,
                                  j.filter, j.into_existing);
    PERFORM backfill._copy_names(new_id, job_id);
    RETURN new_id;
END
$$;

-- a table of the user's (into_existing) is left in place, with its rows
CREATE OR REPLACE FUNCTION backfill.cancel_job(job_id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    PERFORM backfill._stop_and_lock_job(job_id);
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = cancel_job.job_id;
    IF j.status = 'finished' THEN
        RAISE EXCEPTION 'cannot cancel backfill job % because it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'A finished job keeps its downstream table equal to its upstream table.',
                  HINT = format('Use backfill.drop_job(%s) to remove the job and its downstream table.', job_id);
    ELSIF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has already been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- out of the catalog first: the DDL event trigger guards a job's tables
    PERFORM backfill._mark_cancelled(job_id);
    PERFORM backfill._drop_job_objects(j, NOT j.into_existing);
    IF j.into_existing THEN
        RAISE NOTICE 'backfill job % leaves table % and its rows in place', job_id, j.downstream
            USING DETAIL = 'The job filled a table its user made, which only its user drops or empties.';
    END IF;
    RETURN job_id;
END
$$;

CREATE OR REPLACE FUNCTION backfill.drop_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    PERFORM backfill._stop_and_lock_job(job_id);
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = drop_job.job_id;
    IF j.status <> 'cancelled' THEN
        -- out of the catalog first: the DDL event trigger guards a job's tables
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, NOT j.into_existing);
        IF j.into_existing THEN
            RAISE NOTICE 'backfill job % leaves table % and its rows in place', job_id, j.downstream
                USING DETAIL = 'The job filled a table its user made, which only its user drops or empties.';
        END IF;
    END IF;
    PERFORM backfill._delete_job(job_id);
END
$$;

-- ---- partitioned upstreams ----

-- a partition created, attached or detached under a job's upstream
-- (ddl_command_end), and a concurrent detach, which is refused before it
-- starts (ddl_command_start); src/ddl.c
DROP EVENT TRIGGER backfill_ddl_alter;
CREATE EVENT TRIGGER backfill_ddl_alter ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE')
    EXECUTE FUNCTION backfill._on_ddl();
CREATE EVENT TRIGGER backfill_ddl_start ON ddl_command_start
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION backfill._on_ddl();
COMMENT ON FUNCTION backfill._on_ddl() IS
'Internal: event trigger that refuses dropping a job''s tables, and dropping, renaming or retyping the columns it reads; keeps its downstream right when partitions of its upstream are created, attached or detached.';

-- ---- range vnodes ----

-- How a job maps keys to vnodes (src/ranges.c, src/vnode.c): NULL or
-- 'hash' for a hash of the key, as every job made before 1.2; 'range' for
-- 255 bounds cut from a sample of the upstream at create_job, the lowest key
-- of vnodes 1 to 255 (one row of key columns each, written as text under
-- fixed settings), so that consecutive vnodes are one range of keys
ALTER TABLE backfill.job
    ADD COLUMN vnode_mapping text
        CHECK (vnode_mapping OPERATOR(pg_catalog.=) ANY (ARRAY['hash', 'range'])),
    ADD COLUMN vnode_bounds text[],
    ADD CHECK ((vnode_mapping IS NOT DISTINCT FROM 'range') OPERATOR(pg_catalog.=)
               (vnode_bounds IS NOT NULL));
COMMENT ON COLUMN backfill.job.vnode_mapping IS
'How the job maps keys to vnodes: range (vnode_bounds), or hash when NULL or hash.';
COMMENT ON COLUMN backfill.job.vnode_bounds IS
'Range vnodes: the lowest key of vnodes 1 to 255, one row of key columns (as text) each.';

CREATE FUNCTION backfill.job_vnode(job_id bigint, VARIADIC "any")
RETURNS smallint
AS 'MODULE_PATHNAME', 'backfill_job_vnode'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION backfill.job_vnode(bigint, "any") IS
'The vnode (0 to 255) of a primary key in a job, given its columns in key order: its range, or its hash for a job with hashed vnodes.';

-- (verify_job, which now reads a key's vnode with job_vnode, is defined once
-- for all of 1.2, with the remote jobs' rules: see the end of this script)

-- ---- RisingWave fidelity ----

-- reschedule: a job being created whose backfill cannot be rescheduled (a
-- legacy no-shuffle one, a snapshot one before it follows the upstream) is
-- refused with the text of RisingWave's meta (stream_manager.rs), which
-- refuses it for every creating job of those scan types
-- (StreamScanType::is_reschedulable); the job's kind says which (src/kind.h)
CREATE FUNCTION backfill._check_reschedule(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_check_reschedule_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._check_reschedule(bigint) IS
'Internal: refuses to reschedule a job the caller owns that its kind cannot reschedule before it has finished.';

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
    was_running := backfill._stop_and_lock_job(job_id);
    -- new actors, new ids, the vnodes in even contiguous ranges again; the
    -- vnodes keep their progress wherever they land
    PERFORM backfill._rebuild_actors(job_id, parallelism);
    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
END
$$;

-- Progress as RisingWave's meta prints it (barrier/progress.rs,
-- calculate_progress): {:.2}% of consumed/total as a float, forced to
-- 0.9999 only when more rows were consumed than counted, so N/N reads
-- 100.00% (N/N) until the job is done; a total of 0 reads 99.99%.
-- to_char of a float8 rounds as printf's %.2f does, as Rust's {:.2} does.
CREATE FUNCTION backfill._rw_progress(consumed bigint, total bigint)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN total OPERATOR(pg_catalog.=) 0 THEN '99.99%'
    ELSE pg_catalog.format('%s%% (%s/%s)',
             pg_catalog.to_char(
                 CASE WHEN consumed::pg_catalog.float8 OPERATOR(pg_catalog./) total::pg_catalog.float8
                           OPERATOR(pg_catalog.>) 1.0::pg_catalog.float8
                      THEN 0.9999::pg_catalog.float8
                      ELSE consumed::pg_catalog.float8 OPERATOR(pg_catalog./) total::pg_catalog.float8
                 END OPERATOR(pg_catalog.*) 100.0::pg_catalog.float8, 'FM990.00'),
             consumed, total)
END;
COMMENT ON FUNCTION backfill._rw_progress(bigint, bigint) IS
'Internal: RisingWave''s progress text of consumed rows out of a total, "42.17% (421700/1000000)".';

-- Rust's Debug of a Duration of whole milliseconds: 0ns, 800ms, 1.2s, 61s
CREATE FUNCTION backfill._rw_duration(ms bigint)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN ms OPERATOR(pg_catalog.<=) 0 THEN '0ns'
    WHEN ms OPERATOR(pg_catalog.<) 1000 THEN ms::pg_catalog.text OPERATOR(pg_catalog.||) 'ms'
    ELSE (ms OPERATOR(pg_catalog./) 1000)::pg_catalog.text
         OPERATOR(pg_catalog.||) pg_catalog.rtrim('.' OPERATOR(pg_catalog.||)
             pg_catalog.lpad((ms OPERATOR(pg_catalog.%) 1000)::pg_catalog.text, 3, '0'), '.0')
         OPERATOR(pg_catalog.||) 's'
END;
COMMENT ON FUNCTION backfill._rw_duration(bigint) IS
'Internal: a number of milliseconds as Rust''s Debug of a Duration prints it, "1.2s".';

-- ddl_progress becomes RisingWave's rw_ddl_progress, over backfill.jobs,
-- which gets each job's progress: both are defined at the end
DROP VIEW backfill.ddl_progress;

-- ---- copy from another server ----
-- A cdc job whose upstream is a foreign table of postgres_fdw reads the table
-- of another PostgreSQL server in splits and follows it through a logical
-- replication slot there (src/kind_remote.c).

ALTER TABLE backfill.job
    ADD COLUMN remote boolean NOT NULL DEFAULT false,
    ADD COLUMN remote_splits text[],
    ADD COLUMN remote_lsn pg_lsn,
    ADD COLUMN remote_source_lsn pg_lsn,
    ADD COLUMN remote_caught_up_at timestamptz,
    ADD COLUMN remote_last_commit timestamptz;
COMMENT ON COLUMN backfill.job.remote IS
'Whether the upstream is a foreign table, read from its server.';
COMMENT ON COLUMN backfill.job.remote_splits IS
'The inner bounds of the splits, values of the first key column as text.';
COMMENT ON COLUMN backfill.job.remote_lsn IS
'The offset of the change stream: the changes the source committed below it are fetched.';
COMMENT ON COLUMN backfill.job.remote_source_lsn IS
'The end of the source''s flushed WAL when the job last fetched.';
COMMENT ON COLUMN backfill.job.remote_caught_up_at IS
'When a fetch last reached the end of the source''s flushed WAL.';
COMMENT ON COLUMN backfill.job.remote_last_commit IS
'The commit time on the source of the last transaction fetched.';

CREATE FUNCTION backfill._drop_kind_objects(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_kind_objects'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._drop_kind_objects(bigint) IS
'Internal: drops what a job the caller owns has outside this database (the replication slot and publication on the source of a remote job).';

-- what a job leaves behind: the triggers (the upstream's owner may be
-- another role than the job's), the change table, the row type a snapshot
-- job's log may keep its images in, the downstream unless it is a table of
-- the user's, the state table, a cdc job's slot; a remote job's slot and
-- publication are on its source
CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
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


-- RisingWave's rw_catalog.rw_ddl_progress: the jobs being created, with


CREATE FUNCTION backfill._unfetched_keys(job_id bigint, since pg_lsn)
RETURNS SETOF text[]
AS 'MODULE_PATHNAME', 'backfill_unfetched_keys'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._unfetched_keys(bigint, pg_lsn) IS
'Internal: for verify_job, the keys (as text) of the changes the source of a remote job the caller owns committed from an offset on, which the job has not fetched.';

-- one row per split of a remote job: vnode is the split's id, current_pos
-- its range of the first key column, cdc_offset its low and high offsets
CREATE OR REPLACE FUNCTION backfill.job_state(job_id bigint)
RETURNS TABLE (actor_id integer, vnode integer, current_pos text,
               backfill_finished boolean, row_count bigint,
               epoch bigint, cdc_offset jsonb)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    pos text;
BEGIN
    IF j.state_table IS NULL THEN
        RAISE EXCEPTION 'backfill job % has no state table', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The job is %s.', j.status);
    END IF;
    SELECT string_agg('s.' || quote_ident(c), ', ' ORDER BY o) INTO pos
      FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o);
    IF j.remote THEN
        -- actor a of p reads splits a*n/p .. (a+1)*n/p - 1 (src/kind_remote.c)
        RETURN QUERY EXECUTE format(
            'WITH b AS (SELECT coalesce($2, ''{}''::text[]) AS b), '
            '     a AS (SELECT a.actor_id, (row_number() OVER (ORDER BY a.actor_id) - 1)::int AS i, '
            '                  count(*) OVER ()::int AS p '
            '             FROM backfill.actor a WHERE a.job_id = $1) '
            'SELECT a.actor_id, sp.split_id, '
            '       format(''[%%s,%%s)'', b.b[sp.split_id], b.b[sp.split_id + 1]), '
            '       coalesce(s.backfill_finished, false), coalesce(s.row_count, 0), NULL::bigint, '
            '       CASE WHEN s.split_id IS NOT NULL '
            '            THEN jsonb_build_object(''low'', s.cdc_offset_low, ''high'', s.cdc_offset_high) END '
            '  FROM b CROSS JOIN generate_series(0, cardinality(b.b)) AS sp(split_id) '
            '  JOIN a ON sp.split_id >= a.i * (cardinality(b.b) + 1) / a.p '
            '        AND sp.split_id < (a.i + 1) * (cardinality(b.b) + 1) / a.p '
            '  LEFT JOIN %s s ON s.split_id = sp.split_id '
            ' ORDER BY sp.split_id', j.state_table)
            USING job_id, j.remote_splits;
    ELSIF j.kind = 'cdc' THEN
        -- one split for the whole table
        RETURN QUERY EXECUTE format(
            'SELECT a.actor_id, NULL::integer, '
            '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
            '       coalesce(s.backfill_finished, false), coalesce(s.row_count, 0), '
            '       NULL::bigint, s.cdc_offset '
            '  FROM backfill.actor a LEFT JOIN %2$s s ON true '
            ' WHERE a.job_id = $1', pos, j.state_table)
            USING job_id;
    ELSIF j.kind = 'snapshot' THEN
        -- current_pos is the next row to read; finished is is_epoch_finished
        RETURN QUERY EXECUTE format(
            'SELECT a.actor_id, v.vnode, '
            '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
            '       coalesce(s.is_epoch_finished, false), coalesce(s.row_count, 0), '
            '       s.epoch, NULL::jsonb '
            '  FROM generate_series(0, 255) AS v(vnode) '
            '  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end '
            '  LEFT JOIN %2$s s ON s.vnode = v.vnode '
            ' ORDER BY v.vnode', pos, j.state_table)
            USING job_id;
    ELSE
        -- a vnode without a row decodes as RisingWave decodes it: not started
        RETURN QUERY EXECUTE format(
            'SELECT a.actor_id, v.vnode, '
            '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
            '       CASE WHEN s.vnode IS NULL THEN false ELSE s.backfill_finished END, '
            '       CASE WHEN s.vnode IS NULL THEN 0 ELSE s.row_count END, '
            '       NULL::bigint, NULL::jsonb '
            '  FROM generate_series(0, 255) AS v(vnode) '
            '  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end '
            '  LEFT JOIN %2$s s ON s.vnode = v.vnode '
            ' ORDER BY v.vnode', pos, j.state_table)
            USING job_id;
    END IF;
END
$$;
COMMENT ON FUNCTION backfill.job_state(bigint) IS
'The state rows of a job, decoded: one per vnode with its actor; for a cdc job its one split; for a remote job one per split (vnode is its id, current_pos its range of the first key column, cdc_offset its low and high offsets).';


-- verify_job: the upstream's side of the comparison is the filtered
-- projection, computed columns as the job computes them, and a key's vnode
-- is the job's (range vnodes).
-- A remote job is compared with its source through the foreign table (one
-- snapshot of the source for all of it: postgres_fdw's remote transaction).
-- The keys of splits not finished yet are not compared, on either side (a
-- split's position lives in its actor's memory); the keys of changes the job
-- fetched and has not applied (its change table) and of those the source
-- committed that it has not fetched (its slot, read after the source's
-- snapshot was taken) are pending, also after the finish, since the job
-- follows its source asynchronously.  The function is VOLATILE now: the
-- comparison is one statement, whose snapshot comes after the slot lock, so
-- that no fetch commits between what it sees of the job and the slot.
CREATE OR REPLACE FUNCTION backfill.verify_job(job_id bigint)
RETURNS TABLE (pk text, problem text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
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
            covered := format('EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished '
                              'AND ((%2$L::text[])[s.split_id] IS NULL OR u.%3$I >= ((%2$L::text[])[s.split_id])::%4$s) '
                              'AND ((%2$L::text[])[s.split_id + 1] IS NULL OR u.%3$I < ((%2$L::text[])[s.split_id + 1])::%4$s))',
                              j.state_table, coalesce(j.remote_splits, '{}'), j.pk_columns[1], first_type);
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
                              'AND (s.is_epoch_finished OR (%s) < (%s)))',
                              j.state_table, vnode_u, key_u, key_s);
        ELSIF j.kind = 'cdc' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.backfill_finished OR (%s) <= (%s))',
                              j.state_table, key_u, key_s);
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
                              'AND (s.backfill_finished OR (%s) <= (%s)))',
                              j.state_table, vnode_u, key_u, key_s);
        END IF;
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    END IF;
    IF j.filter IS NOT NULL THEN
        covered := format('%s AND (%s)', covered, j.filter);
    END IF;

    -- one statement, one snapshot for all of it
    RETURN QUERY EXECUTE format(
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
        key_d, cols_d, scan_d, pending, decoded);
END
$$;

-- ---- backfill.jobs and ddl_progress, as of 1.2 ----

-- backfill.jobs of 1.2: the columns of 1.1, then the pace of the jobs that
-- run now: what holds them back (the first actor's that is held back), their
-- rows per second (over their actors), and when they will have read their
-- rows at that rate; then each job's progress: RisingWave's text while it is
-- being created, "100%" once finished.  A snapshot job shows its phase as
-- RisingWave's creating jobs do (creating_job/mod.rs): "Snapshot [...]"
-- while it reads its snapshot, "Snapshot finished" once every vnode has read
-- it until every actor has entered the log store, "LogStore [actor: caught
-- up/actors, avg lag ...]" with the lag averaged over the actors not caught
-- up yet, then "Finishing [epoch lag: 0ns]" until its final barrier: its
-- barriers are the upstream's own, so it never lags in epochs.  Then, for a
-- job whose upstream is on another server, how far behind its source it is
-- (the source's WAL it has not fetched yet, and since when it has not caught
-- up) and why it waits; its progress adds its finished splits.
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
       CASE WHEN j.remote THEN j.remote_source_lsn OPERATOR(pg_catalog.-) j.remote_lsn END AS lag_bytes,
       CASE WHEN j.remote AND j.remote_lsn OPERATOR(pg_catalog.>=) j.remote_source_lsn
            THEN '0'::pg_catalog.interval
            WHEN j.remote
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) coalesce(j.remote_caught_up_at, j.created_at)
       END AS lag_time,
       (SELECT pg_catalog.min(a.query)
          FROM backfill.job_workers() w
          JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id
           AND pg_catalog.starts_with(a.query, 'waiting for the source')) AS waiting_for
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

-- RisingWave's rw_catalog.rw_ddl_progress: the jobs being created, with
-- RisingWave's columns; finished, failed and cancelled jobs are in
-- backfill.jobs
CREATE VIEW backfill.ddl_progress WITH (security_invoker = true) AS
SELECT s.job_id AS ddl_id,
       j.ddl_statement,
       CASE s.run_mode WHEN 'background' THEN 'BACKGROUND' ELSE 'FOREGROUND' END AS create_type,
       s.progress,
       s.created_at AS initialized_at,
       false AS is_serverless_backfill,
       CASE s.kind WHEN 'snapshot' THEN 'SNAPSHOT_BACKFILL' ELSE 'NORMAL_BACKFILL' END AS backfill_type
  FROM backfill.jobs s
  JOIN backfill.job j ON j.job_id OPERATOR(pg_catalog.=) s.job_id
 WHERE s.status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling']);
COMMENT ON VIEW backfill.ddl_progress IS 'Progress of the jobs being created, as RisingWave''s rw_ddl_progress shows it.';
GRANT SELECT ON backfill.ddl_progress TO PUBLIC;

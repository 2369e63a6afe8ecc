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
-- The control functions, calling them
-- ---------------------------------------------------------------------------

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
    IF drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        EXECUTE format('DROP TABLE %s', j.downstream);
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.state_table) THEN
        EXECUTE format('DROP TABLE %s', j.state_table);
    END IF;
    IF j.kind = 'cdc' THEN
        PERFORM backfill._drop_slot(j.job_id);
    END IF;
END
$$;

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
    PERFORM backfill._drop_job_objects(j, true);
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
        PERFORM backfill._drop_job_objects(j, true);
    END IF;
    PERFORM backfill._delete_job(job_id);
END
$$;

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
    new_id := backfill.create_job(j.downstream_name, j.upstream,
                                  coalesce(kind, j.kind), j.columns, j.parallelism,
                                  j.chunk_size, j.rate_limit);
    PERFORM backfill._copy_names(new_id, job_id);
    RETURN new_id;
END
$$;

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
    IF j.kind = 'snapshot' AND j.status <> 'finished' THEN
        RAISE EXCEPTION 'cannot reschedule backfill job % of kind "snapshot" before it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'As in RisingWave, a snapshot backfill keeps its vnodes on their actors until it follows the upstream directly.';
    END IF;
    was_running := backfill._stop_and_lock_job(job_id);
    -- new actors, new ids, the vnodes in even contiguous ranges again; the
    -- vnodes keep their progress wherever they land
    PERFORM backfill._rebuild_actors(job_id, parallelism);
    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
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

-- the same columns, and the pace of the jobs that run now: what holds them
-- back (the first actor's that is held back), their rows per second (over
-- their actors), and when they will have read their rows at that rate
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
       CASE WHEN j.kind OPERATOR(pg_catalog.=) 'cdc'
                 AND j.status OPERATOR(pg_catalog.<>) ALL (ARRAY['finished', 'cancelled'])
            THEN pg_catalog.format('backfill_%s_%s', d.oid, j.job_id) END AS slot_name,
       j.owner,
       CASE WHEN r.running THEN p.throttled_by END AS throttled_by,
       CASE WHEN r.running THEN pg_catalog.round(p.rows_per_second) END AS rows_per_second,
       CASE WHEN r.running AND p.rows_per_second OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.make_interval(secs => pg_catalog.round(
                     GREATEST(j.total_rows OPERATOR(pg_catalog.-) coalesce(p.row_count, 0), 0)::double precision
                     OPERATOR(pg_catalog./) p.rows_per_second)) END AS eta
  FROM backfill.job j
  CROSS JOIN (SELECT oid FROM pg_catalog.pg_database
               WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count,
                            pg_catalog.sum(a.rows_per_second) AS rows_per_second,
                            (pg_catalog.array_agg(a.throttled_by ORDER BY a.actor_id)
                               FILTER (WHERE a.throttled_by IS NOT NULL))[1] AS throttled_by
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true
  CROSS JOIN LATERAL (SELECT CASE WHEN j.status OPERATOR(pg_catalog.=) 'backfilling'
                                  THEN backfill._job_is_running(j.job_id)
                                  ELSE false END AS running) r;

-- what a job would copy, write and take, before creating it (src/estimate.c)
CREATE FUNCTION backfill.estimate_job(upstream regclass, kind text DEFAULT 'arrangement',
                                      columns text[] DEFAULT NULL, parallelism integer DEFAULT 1)
RETURNS TABLE(rows bigint, downstream_bytes bigint, wal_bytes bigint, duration interval)
AS 'MODULE_PATHNAME', 'backfill_estimate_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.estimate_job(regclass, text, text[], integer) IS
'Estimates what a job over the upstream would copy: its rows (from the catalog), the size of its downstream, the WAL it writes and how long it takes (from a short timed copy of a sample, rolled back).';

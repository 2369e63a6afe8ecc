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

CREATE FUNCTION backfill._drop_kind_objects(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_kind_objects'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._drop_kind_objects(bigint) IS
'Internal: drops what a job the caller owns has outside this database (the replication slot and publication on the source of a remote job).';

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
    IF j.kind = 'cdc' AND NOT j.remote THEN
        PERFORM backfill._drop_slot(j.job_id);
    END IF;
    IF j.remote THEN
        PERFORM backfill._drop_kind_objects(j.job_id);
    END IF;
END
$$;

-- how far behind its source a remote job is: the source's WAL it has not
-- fetched yet, and since when it has not caught up
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
            THEN CASE WHEN j.remote
                      THEN pg_catalog.format('backfill_%s_%s_%s',
                               (SELECT s.system_identifier FROM pg_catalog.pg_control_system() s),
                               d.oid, j.job_id)
                      ELSE pg_catalog.format('backfill_%s_%s', d.oid, j.job_id) END
       END AS slot_name,
       j.owner,
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
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true;

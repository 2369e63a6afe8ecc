/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Caps on background workers (src/shmem.c): reschedule checks the new
-- parallelism against backfill.max_workers and backfill.max_workers_per_role
-- before it stops the job's workers, so that a refused reschedule leaves the
-- job running as it was.
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._check_workers(job_id bigint, parallelism integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_check_workers_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
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
-- progress that run_job and wait_job send to their client (src/progress.c,
-- src/shmem.c)
-- ---------------------------------------------------------------------------

-- the failures of each job, counted: a failed job may run again, and its
-- last_error tells only the last one (src/catalog.c counts them)
ALTER TABLE backfill.job ADD COLUMN failures integer NOT NULL DEFAULT 0;

CREATE FUNCTION backfill._live_actors(
    OUT pid integer, OUT job_id bigint, OUT actor_id integer, OUT run_mode text,
    OUT phase text, OUT rows_done bigint, OUT "position" text, OUT barriers bigint,
    OUT epoch bigint, OUT rows_per_second double precision, OUT throttled_by text,
    OUT started_at timestamptz, OUT last_barrier_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_live_actors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION backfill._live_actors() IS
'Internal: the actors running now, as their processes published them in shared memory after their last barrier; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats.';

CREATE FUNCTION backfill._report_progress(job_id bigint, since timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'backfill_report_progress'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
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

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

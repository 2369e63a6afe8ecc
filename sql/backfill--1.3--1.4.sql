/* backfill--1.3--1.4.sql: from version 1.3 to 1.4 */

-- CREATE EXTENSION backfill installs 1.3 (backfill--1.3.sql) and runs this
-- script; ALTER EXTENSION backfill UPDATE runs it on a 1.3 catalog.  Every
-- object it changes is defined here once, in its final form.

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.4'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Internal functions: what each checks before it touches anything
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- A job's own tables: the extension's, not a place for its owner's code
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- Copies that row-level security would filter, and what indexes => true copies
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- cancel_job and drop_job wait for a cutover of the same job: a cutover
-- that commits while they wait for the job's lock has turned the job around
-- (its downstream is then the old table), and they read the job's row only
-- once it has
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.cancel_job(job_id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    -- a cutover of the job commits first: it turns the job around, and the
    -- row read below must be the one it left
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
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
    -- a cutover of the job commits first: it turns the job around, and the
    -- row read below must be the one it left
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
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

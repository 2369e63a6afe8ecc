/*
 * src/sql/functions/job_rows.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- A job's catalog row, and the checks and catalog writes of the control
-- functions, one function each: the C ones check that the caller has the
-- privileges of the job's owner (src/api/control.c)
-- ---------------------------------------------------------------------------

-- the job row, or an error that says why there is none
CREATE OR REPLACE FUNCTION backfill._get_job(job_id bigint)
RETURNS backfill.job
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job;
BEGIN
    IF job_id IS NULL THEN
        RAISE EXCEPTION 'argument "job_id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = _get_job.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'backfill job % does not exist', job_id
            USING ERRCODE = 'undefined_object';
    END IF;
    RETURN j;
END
$$;
COMMENT ON FUNCTION backfill._get_job(bigint) IS 'Internal: the catalog row of a job.';
REVOKE ALL ON FUNCTION backfill._get_job(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._mark_cancelled(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_mark_cancelled_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._mark_cancelled(bigint) IS
'Internal: marks a job the caller owns cancelled, without downstream, state or change table.';
REVOKE ALL ON FUNCTION backfill._mark_cancelled(bigint) FROM PUBLIC;

-- recreate_job makes the new job its owner's, not the caller's
CREATE OR REPLACE FUNCTION backfill._create_job_as(from_job_id bigint, name text, upstream regclass,
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
REVOKE ALL ON FUNCTION backfill._create_job_as(bigint, text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) FROM PUBLIC;

/*
 * src/sql/catalog/job_settings.sql
 *	  The type of a job's settings, which alter_job returns.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql).
 */

-- alter_job: PostgreSQL's ALTER beside RisingWave's verbs.  Each setting
-- given goes through its verb (alter_rate_limit, reschedule: their checks,
-- the owner's among them); NULL leaves it as it is, so a rate limit is
-- lifted with alter_rate_limit(job, NULL).  A parallelism equal to the
-- job's leaves its actors and workers alone.  Returns the settings after.
CREATE TYPE backfill.job_settings AS (
    job_id bigint,
    job_name text,
    status text,
    run_mode text,
    rate_limit integer,
    parallelism integer
);
COMMENT ON TYPE backfill.job_settings IS
'What backfill.alter_job() returns: the job''s settings after the change.';

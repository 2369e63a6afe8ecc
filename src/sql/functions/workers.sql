/*
 * src/sql/functions/workers.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Background workers and the actors running now
-- ---------------------------------------------------------------------------

-- the background workers that run jobs now, from shared memory
CREATE OR REPLACE FUNCTION backfill.job_workers(OUT job_id bigint, OUT actor_id integer, OUT pid integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_job_workers'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_workers() IS
'The background workers running jobs: job, actor and process id; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats.';

CREATE OR REPLACE FUNCTION backfill._stop_and_lock_job(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_stop_and_lock_job'
LANGUAGE C STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._stop_and_lock_job(bigint) IS
'Internal: stops the job''s background workers at once, then takes the job lock for this transaction; fails if a session runs the job.';
REVOKE ALL ON FUNCTION backfill._stop_and_lock_job(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._job_is_running(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_job_is_running'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._job_is_running(bigint) IS
'Internal: whether background workers or a session run a job the caller owns now; any job of the database for a member of pg_read_all_stats, which sees every job in backfill.jobs.';

CREATE OR REPLACE FUNCTION backfill._live_actors(
    OUT pid integer, OUT job_id bigint, OUT actor_id integer, OUT run_mode text,
    OUT phase text, OUT rows_done bigint, OUT "position" text, OUT barriers bigint,
    OUT epoch bigint, OUT rows_per_second double precision, OUT throttled_by text,
    OUT started_at timestamptz, OUT last_barrier_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_live_actors'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._live_actors() IS
'Internal: the actors running now, as their processes published them in shared memory after their last barrier; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats, whose members see the position (a key of the upstream) only of the jobs of roles whose privileges they have.';

CREATE OR REPLACE FUNCTION backfill._report_progress(job_id bigint, since timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'backfill_report_progress'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._report_progress(bigint, timestamptz) IS
'Internal: for wait_job, sends the job''s line of progress to the client as an INFO message when backfill.client_progress_interval has passed since "since"; returns when it sent it, or "since".';
REVOKE ALL ON FUNCTION backfill._report_progress(bigint, timestamptz) FROM PUBLIC;

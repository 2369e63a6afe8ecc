/*
 * src/sql/functions/background.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Jobs in background workers
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.start_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_start_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.start_job(bigint) IS
'Runs a job in background workers, one per actor; returns at once. Needs the library in shared_preload_libraries.';

CREATE OR REPLACE FUNCTION backfill.alter_rate_limit(job_id bigint, rows_per_second integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_alter_rate_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.alter_rate_limit(bigint, integer) IS
'Limits the snapshot rows each actor reads per second from the next barrier: NULL no limit, 0 paused.';

-- reschedule checks everything before the workers stop (a refused
-- reschedule leaves them running): the parallelism, which its kind may
-- restrict, and, for a job being created, whether its kind can be
-- rescheduled before it finishes (a legacy no-shuffle one, a snapshot one
-- before it follows the upstream cannot, with the text of RisingWave's
-- meta, stream_manager.rs); then the caps on background workers
CREATE OR REPLACE FUNCTION backfill.reschedule(job_id bigint, parallelism integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_reschedule_1_4'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.reschedule(bigint, integer) IS
'Spreads the vnodes of a job over a new set of actors; restarts its background workers if it had any.';

-- wait_job also sends the job's line of progress every
-- backfill.client_progress_interval while it waits.  Its statement's
-- snapshot holds the session's xmin until it returns: wait_for_job does
-- not.  Both look at the job the same way (src/runtime/wait.c)
CREATE OR REPLACE FUNCTION backfill.wait_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_wait_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.wait_job(bigint) IS
'Waits until a job has finished; raises its error if it fails; sends its progress to the client every backfill.client_progress_interval. Holds its statement''s snapshot while it waits: CALL backfill.wait_for_job() does not.';

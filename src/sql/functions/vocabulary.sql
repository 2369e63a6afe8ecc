/*
 * src/sql/functions/vocabulary.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- PostgreSQL's vocabulary beside RisingWave's: jobs by name, alter_job, the
-- upstream's size
-- ---------------------------------------------------------------------------

-- A job by its name, as a regclass names a table: backfill.job_id() finds
-- the one job of that name among those the caller sees (row-level security
-- applies: another role's job is unknown), or errors (undefined_object
-- when there is none, ambiguous_function when there are several);
-- src/catalog/job_names.c.  Each function that takes a job's id has an
-- overload that takes its name and only passes on the id: CALL
-- backfill.run_job('orders_mv').  A call with an integer or bigint keeps
-- the function of the id (an integer has no implicit cast to text); a
-- quoted literal goes to the name.
CREATE OR REPLACE FUNCTION backfill.job_id(job_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_job_id'
LANGUAGE C STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_id(text) IS
'The id of the job of that name among the jobs the caller sees; an error when it sees none or several.';

-- The procedures commit, which a procedure with a SET clause or in
-- LANGUAGE sql cannot: C entry points that put the id in the name's place
CREATE OR REPLACE PROCEDURE backfill.run_job(job_name text, max_barriers integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run_job_by_name'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run_job(text, integer) IS
'Runs the job of that name (backfill.job_id) in this session, as run_job(job_id) does.';

CREATE OR REPLACE PROCEDURE backfill.wait_for_job(job_name text)
AS 'MODULE_PATHNAME', 'backfill_wait_for_job_by_name'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.wait_for_job(text) IS
'Waits until the job of that name (backfill.job_id) has finished, as wait_for_job(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.start_job(job_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.start_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.start_job(text) IS
'Runs the job of that name (backfill.job_id) in background workers, as start_job(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.stop_job(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_stop_job_1_4'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.stop_job(bigint) IS
'Stops the background workers of a job at their next barrier, and waits until they have exited; returns whether it had any.';

CREATE OR REPLACE FUNCTION backfill.stop_job(job_name text)
RETURNS boolean
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.stop_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.stop_job(text) IS
'Stops the background workers of the job of that name (backfill.job_id), as stop_job(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.wait_job(job_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.wait_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.wait_job(text) IS
'Waits until the job of that name (backfill.job_id) has finished, as wait_job(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.cancel_job(job_name text)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.cancel_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.cancel_job(text) IS
'Cancels the job of that name (backfill.job_id), as cancel_job(job_id) does; returns its id.';

CREATE OR REPLACE FUNCTION backfill.drop_job(job_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.drop_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.drop_job(text) IS
'Removes the job of that name (backfill.job_id), as drop_job(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.recreate_job(job_name text, kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.recreate_job(backfill.job_id(job_name), kind) $$;
COMMENT ON FUNCTION backfill.recreate_job(text, text) IS
'Creates the job of that name (backfill.job_id) again, as recreate_job(job_id) does; returns the new job id.';

CREATE OR REPLACE FUNCTION backfill.reschedule(job_name text, parallelism integer)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.reschedule(backfill.job_id(job_name), parallelism) $$;
COMMENT ON FUNCTION backfill.reschedule(text, integer) IS
'Spreads the vnodes of the job of that name (backfill.job_id) over a new set of actors, as reschedule(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.alter_rate_limit(job_name text, rows_per_second integer)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.alter_rate_limit(backfill.job_id(job_name), rows_per_second) $$;
COMMENT ON FUNCTION backfill.alter_rate_limit(text, integer) IS
'Limits the snapshot rows of the job of that name (backfill.job_id), as alter_rate_limit(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.verify_job(job_name text, method text DEFAULT 'auto', range_rows integer DEFAULT 1000)
RETURNS TABLE(pk text, problem text)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.verify_job(backfill.job_id(job_name), method, range_rows) $$;
COMMENT ON FUNCTION backfill.verify_job(text, text, integer) IS
'Compares the downstream of the job of that name (backfill.job_id) with its upstream, as verify_job(job_id) does.';

CREATE OR REPLACE PROCEDURE backfill.repair_job(job_name text, range_rows integer DEFAULT 1000,
                                     INOUT ranges bigint DEFAULT NULL,
                                     INOUT missing bigint DEFAULT NULL,
                                     INOUT extra bigint DEFAULT NULL,
                                     INOUT different bigint DEFAULT NULL,
                                     INOUT clean boolean DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_repair_job_by_name'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.repair_job(text, integer, bigint, bigint, bigint, bigint, boolean) IS
'Repairs the downstream of the job of that name (backfill.job_id), as repair_job(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.job_state(job_name text)
RETURNS TABLE(actor_id integer, vnode integer, current_pos text, backfill_finished boolean,
              row_count bigint, epoch bigint, cdc_offset jsonb)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.job_state(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.job_state(text) IS
'The state of the job of that name (backfill.job_id), as job_state(job_id) shows it.';

CREATE OR REPLACE FUNCTION backfill.job_splits(job_name text)
RETURNS TABLE(split_id integer, partition regclass, server name, lower_bound text, upper_bound text)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.job_splits(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.job_splits(text) IS
'The splits of the job of that name (backfill.job_id), as job_splits(job_id) shows them.';

CREATE OR REPLACE FUNCTION backfill.cutover(job_name text, old_name text DEFAULT NULL,
                                 lock_timeout interval DEFAULT '1s', attempts integer DEFAULT 20,
                                 fence boolean DEFAULT false, accept text[] DEFAULT NULL,
                                 verify boolean DEFAULT false,
                                 OUT state text, OUT attempts_made integer,
                                 OUT lock_held_ms double precision, OUT old_table regclass,
                                 OUT rollback_possible boolean, OUT source_lsn pg_lsn)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.cutover(backfill.job_id(job_name), old_name, lock_timeout, attempts, fence, accept, verify) $$;
COMMENT ON FUNCTION backfill.cutover(text, text, interval, integer, boolean, text[], boolean) IS
'Swaps in the downstream of the job of that name (backfill.job_id), as cutover(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.rollback_cutover(job_name text, lock_timeout interval DEFAULT '1s',
                                          attempts integer DEFAULT 20,
                                          OUT state text, OUT attempts_made integer,
                                          OUT lock_held_ms double precision)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.rollback_cutover(backfill.job_id(job_name), lock_timeout, attempts) $$;
COMMENT ON FUNCTION backfill.rollback_cutover(text, interval, integer) IS
'Swaps back the tables of the cutover of the job of that name (backfill.job_id), as rollback_cutover(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.finish_cutover(job_name text, keep boolean DEFAULT false)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.finish_cutover(backfill.job_id(job_name), keep) $$;
COMMENT ON FUNCTION backfill.finish_cutover(text, boolean) IS
'Ends the cutover of the job of that name (backfill.job_id), as finish_cutover(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.unfence(job_name text)
RETURNS integer
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.unfence(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.unfence(text) IS
'Gives back the write privileges the fences of the job of that name (backfill.job_id) revoked, as unfence(job_id) does.';

CREATE OR REPLACE FUNCTION backfill.alter_job(job_id bigint, rate_limit integer DEFAULT NULL,
                                   parallelism integer DEFAULT NULL)
RETURNS backfill.job_settings
AS 'MODULE_PATHNAME', 'backfill_alter_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.alter_job(bigint, integer, integer) IS
'Changes the rate limit and the parallelism of a job, as alter_rate_limit and reschedule do; NULL leaves a setting as it is; returns the job''s settings after.';

CREATE OR REPLACE FUNCTION backfill.alter_job(job_name text, rate_limit integer DEFAULT NULL,
                                   parallelism integer DEFAULT NULL)
RETURNS backfill.job_settings
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.alter_job(backfill.job_id(job_name), rate_limit, parallelism) $$;
COMMENT ON FUNCTION backfill.alter_job(text, integer, integer) IS
'Changes the settings of the job of that name (backfill.job_id), as alter_job(job_id) does.';

/*
 * src/sql/functions/monitoring.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Background jobs in every database; waits and monitoring
-- ---------------------------------------------------------------------------

-- A procedure, so that it may commit: no SET clause (a procedure with one
-- cannot commit); the C code pins the search_path of its statements
CREATE OR REPLACE PROCEDURE backfill.wait_for_job(job_id bigint)
AS 'MODULE_PATHNAME', 'backfill_wait_for_job'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.wait_for_job(bigint) IS
'Waits until a job has finished, as wait_job does, but commits after each look at the job and holds no snapshot between two: the xmin horizon moves on while it waits. Only with CALL outside a transaction block.';

-- Monitoring roles: a member of pg_read_all_stats (pg_monitor is one) sees
-- every job of the database in the views, as it sees every session in
-- pg_stat_activity; of another role's job, without the values of its
-- upstream (src/runtime/monitoring.c): the views read the jobs that
-- row-level security hides from it from backfill._monitored_jobs(), and
-- policies show it the actors, the cutovers and the servers' offsets of
-- every job, which hold no such value.
CREATE OR REPLACE FUNCTION backfill._monitored_jobs()
RETURNS SETOF backfill.job
AS 'MODULE_PATHNAME', 'backfill_monitored_jobs'
LANGUAGE C STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._monitored_jobs() IS
'Internal: for a member of pg_read_all_stats, the jobs of the roles whose privileges it does not have, with the columns that hold values of their upstreams (filter, expressions, vnode_bounds, remote_splits, last_error, last_error_detail, ddl_statement) NULL; no row for anyone else.';

-- backfill.jobs: the columns of 1.1, then the pace of the jobs that
-- run now: what holds them back (the first actor's that is held back), their
-- rows per second (over their actors), and when they will have read their
-- rows at that rate; then each job's progress: RisingWave's text while it is
-- being created, "100%" once finished.  A snapshot job shows its phase as
-- RisingWave's creating jobs do (creating_job/mod.rs): "Snapshot [...]"
-- while it reads its snapshot, "Snapshot finished" once every vnode has read
-- it until every actor has entered the log store, "LogStore [actor: caught
-- up/actors, avg lag ...]" with the lag averaged over the actors not caught
-- up yet, then "Finishing [epoch lag: 0ns]" until its final barrier: its
-- barriers are the upstream's own, so it never lags in epochs.  Then, for a
-- job whose upstream is on another server, how far behind its source it is
-- (the source's WAL it has not fetched yet, and since when it has not caught
-- up) and why it waits; its progress adds its finished splits.  Its cutover:
-- waiting_for_lock (attempt n of m) while a cutover or rollback waits for
-- its lock, else its backfill.job_cutover state, NULL if never cut over.
-- What the views show of a job's kind, from the kind's routine
-- (src/api/kind_columns.c): they read nothing but their arguments
CREATE OR REPLACE FUNCTION backfill._kind_slot_name(kind text, remote boolean, job_id bigint, status text)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_kind_slot_name_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._kind_slot_name(text, boolean, bigint, text) IS
'Internal: for backfill.jobs, the replication slot a job of a kind holds in a status, by name; NULL when it holds none.';

CREATE OR REPLACE FUNCTION backfill._kind_is_snapshot_backfill(kind text, remote boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_kind_is_snapshot_backfill_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._kind_is_snapshot_backfill(text, boolean) IS
'Internal: for backfill.jobs and backfill.ddl_progress, whether a kind is RisingWave''s snapshot backfill, whose progress goes through the Snapshot, LogStore and Finishing phases.';

-- The upstream's size for backfill.progress (src/copy/size.c): what
-- pg_class and pg_relation_size() show anyone, so no privilege is checked
CREATE OR REPLACE FUNCTION backfill._upstream_size(upstream regclass, OUT blocks bigint, OUT tuples bigint)
AS 'MODULE_PATHNAME', 'backfill_upstream_size'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._upstream_size(regclass) IS
'Internal: for backfill.progress, the blocks of a table (and of its partitions) and the catalog''s estimate of its rows; NULL each when unknown or when a lock on it would have to be waited for.';

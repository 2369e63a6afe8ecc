/*
 * src/sql/functions/observe.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Observing jobs
-- ---------------------------------------------------------------------------

-- each split of a job whose kind cuts its own (its upstream is on other
-- servers) with its partition, its server and its range of the first key
-- column (NULL: the partition's start or end); no rows for another job
CREATE OR REPLACE FUNCTION backfill.job_splits(job_id bigint)
RETURNS TABLE (split_id integer, partition regclass, server name,
               lower_bound text, upper_bound text)
AS 'MODULE_PATHNAME', 'backfill_job_splits_1_4'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_splits(bigint) IS
'The splits of a job whose upstream is on other servers: each split''s foreign table (a partition of a sharded upstream), its server and its bounds on the first key column (NULL: unbounded).';

-- job_state reads with the caller's rights (a superuser's, who reads every
-- job's state through backfill.jobs) the job's row, its actors and its
-- state table, which must first carry nothing of its owner's that a read
-- would run: an ordinary table, without rules (which could make it a view)
-- or row-level security, each of whose columns has the type the extension
-- gave it: a type of the system's, or the upstream's column of that name
-- (the key's).  A column retyped to a type of its owner's, whose implicit
-- casts would run in the reader's comparisons, is an error, not a cast.
-- Its kind decodes the rows (src/api/observe.c).
CREATE OR REPLACE FUNCTION backfill.job_state(job_id bigint)
RETURNS TABLE (actor_id integer, vnode integer, current_pos text,
               backfill_finished boolean, row_count bigint,
               epoch bigint, cdc_offset jsonb)
AS 'MODULE_PATHNAME', 'backfill_job_state_1_4'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_state(bigint) IS
'The state rows of a job, decoded: one per vnode with its actor; for a cdc job its one split; for a remote job one per split (vnode is its id, current_pos its range of the first key column, cdc_offset its low and high offsets).';

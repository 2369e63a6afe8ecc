/*
 * src/sql/functions/slots.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Replication slots, and what a job leaves behind
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill._drop_slot(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_slot'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._drop_slot(bigint) IS
'Internal: drops the replication slot of a cdc job the caller owns, if it exists, when the transaction commits.  Not executable by PUBLIC: nothing calls it.';

-- The PL/pgSQL functions of the API run with their caller's rights and call
-- the internal ones, which therefore stay executable by every role and check
-- every argument themselves (doc/security.md): the job is one of this
-- database whose owner's privileges the caller has, a relation exists and
-- the caller may read it or has the privileges of its owner, no argument
-- the function needs is NULL, an array has one dimension and no NULL, a
-- query returns the columns and types the function reads.  What nothing
-- calls, or only the server calls (triggers, event triggers), no role may
-- call.
REVOKE ALL ON FUNCTION backfill._drop_slot(bigint) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._lock_slot(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_lock_slot'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._lock_slot(bigint) IS
'Internal: waits for, then holds until the end of the transaction, the lock that guards a cdc job''s replication slot.';
REVOKE ALL ON FUNCTION backfill._lock_slot(bigint) FROM PUBLIC;

-- cdc kind: verify_job() flushes the WAL as it peeks at a slot, so that
-- an asynchronous commit is decoded, hence pending, too, and peeks up to
-- the position flushed
CREATE OR REPLACE FUNCTION backfill._flush_wal()
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'backfill_flush_wal'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._flush_wal() IS
'Internal: flushes the WAL inserted so far and returns the position flushed (NULL on a standby), for verify_job().';
REVOKE ALL ON FUNCTION backfill._flush_wal() FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._unfetched_keys(job_id bigint, since pg_lsn)
RETURNS SETOF text[]
AS 'MODULE_PATHNAME', 'backfill_unfetched_keys'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._unfetched_keys(bigint, pg_lsn) IS
'Internal: for verify_job, the keys (as text) of the changes the source of a remote job the caller owns committed from an offset on, which the job has not fetched.';
REVOKE ALL ON FUNCTION backfill._unfetched_keys(bigint, pg_lsn) FROM PUBLIC;

-- The job row it is given must be of a job the caller owns: its tables are
-- dropped with the caller's rights, but the indexes named in the job's
-- catalog are built on its downstream, and only that job's.  The cutover
-- functions call it; cancel_job and drop_job make the same drop in C
-- (src/api/job_drop.c)
CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_job_objects_1_4'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._drop_job_objects(backfill.job, boolean) IS
'Internal: drops the triggers and tables of a job the caller owns, given its row as the caller read it.';
REVOKE ALL ON FUNCTION backfill._drop_job_objects(backfill.job, boolean) FROM PUBLIC;

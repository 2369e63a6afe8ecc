/*
 * src/sql/functions/switchover.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- The switchover of a remote job (src/kinds/remote/switchover.c, after
-- src/api/switchover.c has stopped its workers): fence the source
-- table, take in the last of its changes, carry its sequences over, stop
-- following it.  backfill.cutover() calls the C function for a remote job;
-- this wrapper is its SQL face, owner-checked as run_job is.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill._remote_switchover(job_id bigint, fence boolean,
                                            lock_timeout interval, attempts integer)
RETURNS pg_lsn
AS 'MODULE_PATHNAME', 'backfill_remote_switchover_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._remote_switchover(bigint, boolean, interval, integer) IS
'Internal: switches a finished remote job the caller owns, not cut over, over from its source, for a caller with the privileges of the owner of its local table: optionally fences the source table (revokes its write privileges from every role but its owner, and records them on the source), fetches and applies every change committed there, sets the local sequences to the source''s, stops following; drops the slot and the publication on the source once the transaction has committed, and gives the fence back if it aborts; returns the source LSN it switched at.';
REVOKE ALL ON FUNCTION backfill._remote_switchover(bigint, boolean, interval, integer) FROM PUBLIC;

-- ---------------------------------------------------------------------------
-- Remote switchover: nothing on the source before the local commit
-- ---------------------------------------------------------------------------

-- The switchover of a remote job drops the job's slot and publication on the
-- source once the local transaction has committed, and records what its
-- fence revokes on the source, in the fence's own transaction there (the
-- comment of the job's publication), so that a fence whose switchover died
-- with its backend can be given back, by unfence (src/kinds/remote/switchover.c;
-- the comment of _remote_switchover is with the other internal functions', above).
CREATE OR REPLACE FUNCTION backfill.unfence(job_id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'backfill_unfence'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.unfence(bigint) IS
'Gives back the write privileges on the source table(s) of a remote job that a switchover''s fence revoked and that no switchover kept (one killed or crashed before its commit, or whose source did not answer when it failed), as the source records them; returns how many grants were given back.  A fence whose switchover committed stays.';

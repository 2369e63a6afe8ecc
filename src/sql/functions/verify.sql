/*
 * src/sql/functions/verify.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Verifying by range checksums
-- ---------------------------------------------------------------------------

-- verify_job (src/api/verify_job.c): the upstream's side of the comparison
-- is the filtered projection, computed columns as the job computes them;
-- the job's kind says which keys its downstream covers now and which are
-- pending (kind.h, verify_source).  A remote job is compared with its
-- source through the foreign table (one snapshot of the source for all of
-- it: postgres_fdw's remote transaction).  The function is VOLATILE: each
-- comparison is one statement, whose snapshot comes after the slot lock, so
-- that no fetch commits between what it sees of the job and the slot.  It
-- reads the job's filter and expressions under the settings they were
-- written under (see create_job), as the job's owner in a
-- security-restricted operation.  It reads the upstream through the
-- policies that would have filtered the copy: a job whose owner row-level
-- security applies to is refused, not found equal.  Method changed keeps
-- what it compared in backfill.verification_state and verification_range
-- (src/api/verify_changed.c).
CREATE OR REPLACE FUNCTION backfill.verify_job(job_id bigint, method text DEFAULT 'auto',
                                    range_rows integer DEFAULT 1000)
RETURNS TABLE (pk text, problem text)
AS 'MODULE_PATHNAME', 'backfill_verify_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres;
COMMENT ON FUNCTION backfill.verify_job(bigint, text, integer) IS
'Compares the downstream of a job with its upstream, by checksums of ranges of keys (method checksum; the ranges that differ are compared row by row, range_rows rows at most), by checksums of the ranges written since the last such call only (method changed, a finished job of this server), or row by row (method rows), or the one that reads less (method auto, the default: rows for a job from another server, or several, not finished yet); returns one row per missing, extra or different row.';

-- repair_job: a re-snapshot of the keys verify_job finds different, range
-- after range, each in a committed transaction, through the statements a
-- barrier forwards captured keys with (src/api/repair.c).  A procedure, as
-- run_job: it commits, which a procedure with a SET clause cannot, so its
-- C entry point pins the search_path of its statements itself.  Its INOUT
-- arguments are its result: CALL backfill.repair_job(7) returns one row.
CREATE OR REPLACE PROCEDURE backfill.repair_job(job_id bigint, range_rows integer DEFAULT 1000,
                                     INOUT ranges bigint DEFAULT NULL,
                                     INOUT missing bigint DEFAULT NULL,
                                     INOUT extra bigint DEFAULT NULL,
                                     INOUT different bigint DEFAULT NULL,
                                     INOUT clean boolean DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_repair_job'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.repair_job(bigint, integer, bigint, bigint, bigint, bigint, boolean) IS
'Makes the rows that verify_job finds missing, extra or different in the downstream of a job equal to the upstream''s again, one committed transaction per range of range_rows keys, then verifies again; returns the ranges repaired, the rows per kind, and whether verify_job finds the job clean after.';

/*
 * src/sql/functions/jobs.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Jobs
-- ---------------------------------------------------------------------------

-- The signature of 1.3, with filter, into_existing and indexes, and a C
-- symbol of its own, so that an older catalog keeps binding its own until it
-- is updated
CREATE OR REPLACE FUNCTION backfill.create_job(name text, upstream regclass,
                                    kind text DEFAULT 'arrangement',
                                    columns text[] DEFAULT NULL,
                                    parallelism integer DEFAULT 1,
                                    chunk_size integer DEFAULT 256,
                                    rate_limit integer DEFAULT NULL,
                                    filter text DEFAULT NULL,
                                    into_existing boolean DEFAULT false,
                                    indexes boolean DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) IS
'Creates a streaming job that fills the table "name" (a new one, or with into_existing an empty one of the user''s) from the rows of "upstream" that pass "filter"; returns the job id.  With indexes NULL, a copy of a whole table gets its NOT NULL columns, CHECK, UNIQUE and EXCLUDE constraints and other indexes; with true, its other indexes; with false, neither.';

CREATE OR REPLACE PROCEDURE backfill.run_job(job_id bigint, max_barriers integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run_job'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run_job(bigint, integer) IS
'Runs a job in this session, one transaction per barrier, until it has finished or for max_barriers barriers.';

-- a table of the user's (into_existing) is left in place, with its rows
CREATE OR REPLACE FUNCTION backfill.cancel_job(job_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_cancel_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.cancel_job(bigint) IS
'Cancels an unfinished job: drops its downstream, state and capture; returns the job id.';

CREATE OR REPLACE FUNCTION backfill.drop_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.drop_job(bigint) IS
'Removes a job in any status, with its downstream table.';

-- The job's filter and computed columns go back to create_job as text
-- written under fixed settings (src/copy/shape.c), read under the same ones
CREATE OR REPLACE FUNCTION backfill.recreate_job(job_id bigint, kind text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_recreate_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres;
COMMENT ON FUNCTION backfill.recreate_job(bigint, text) IS
'Cancels a job if needed and creates it again, of the same kind or of the given one; returns the new job id.';

-- what a job would copy, write and take, before creating it (src/api/estimate.c)
CREATE OR REPLACE FUNCTION backfill.estimate_job(upstream regclass, kind text DEFAULT 'arrangement',
                                      columns text[] DEFAULT NULL, parallelism integer DEFAULT 1)
RETURNS TABLE(rows bigint, downstream_bytes bigint, wal_bytes bigint, duration interval)
AS 'MODULE_PATHNAME', 'backfill_estimate_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.estimate_job(regclass, text, text[], integer) IS
'Estimates what a job over the upstream would copy: its rows (from the catalog), the size of its downstream, the WAL it writes and how long it takes (from a short timed copy of a sample, rolled back).';

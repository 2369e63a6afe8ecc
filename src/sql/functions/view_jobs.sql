/*
 * src/sql/functions/view_jobs.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Jobs over a query (src/views/): what a view job over a query would be,
-- shown before it is made, as RisingWave's EXPLAIN CREATE MATERIALIZED VIEW
-- ---------------------------------------------------------------------------

-- No SET search_path: the query is the caller's SQL, whose names resolve
-- on the caller's path, as create_job's filter does
CREATE OR REPLACE FUNCTION backfill.explain_view_job(query text, backfill_order text DEFAULT 'auto')
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'backfill_explain_view_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.explain_view_job(text, text) IS
'What a view job over the query would be: the shape of the query, its tables in the order they would be scanned with their keys, and the downstream''s key; or the error that names what the query cannot use. Analyzes the query as the caller; makes nothing.';

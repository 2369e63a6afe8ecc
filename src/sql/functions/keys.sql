/*
 * src/sql/functions/keys.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Keys and vnodes
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.vnode(VARIADIC "any")
RETURNS smallint
AS 'MODULE_PATHNAME', 'backfill_vnode'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION backfill.vnode("any") IS 'The vnode (0 to 255) of a primary key, given its columns in key order.';

-- no SET clause: it runs no SQL, and pins the search_path itself while it
-- parses a job's bounds, once per call site, not at every row of the
-- statements that call it once a row
CREATE OR REPLACE FUNCTION backfill.job_vnode(job_id bigint, VARIADIC "any")
RETURNS smallint
AS 'MODULE_PATHNAME', 'backfill_job_vnode'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION backfill.job_vnode(bigint, "any") IS
'The vnode (0 to 255) of a primary key in a job, given its columns in key order: its range, or its hash for a job with hashed vnodes.';

-- The comparison of two keys of a job's upstream, written with the
-- operators of the key types' default btree operator classes
-- (OPERATOR(schema.name), looked up by strategy), for SQL that builds
-- statements over a job's key: the order of the primary key's index
-- whatever the operators are named (hstore's #<#, #<=#, ...), whatever the
-- search_path.
CREATE OR REPLACE FUNCTION backfill._key_compare_sql(upstream regclass, pk_columns text[], "left" text,
                                          op text, "right" text)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_key_compare_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._key_compare_sql(regclass, text[], text, text, text) IS
'Internal: the SQL comparing the key columns pk_columns of upstream under alias left with those under alias right (op: <, <=, =, >=, >), through the key types'' btree operator classes; pk_columns a list of columns of upstream, one dimension, no NULL, that the caller may read.';
REVOKE ALL ON FUNCTION backfill._key_compare_sql(regclass, text[], text, text, text) FROM PUBLIC;

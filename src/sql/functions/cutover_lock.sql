/*
 * src/sql/functions/cutover_lock.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- The lock step: everything the swap alters, locked before the swap, in one
-- order, each wait bounded; partitions renamed with their tables
-- ---------------------------------------------------------------------------

-- one relation ACCESS EXCLUSIVE, a view without its tables, a sequence as
-- a table (src/cutover/lock_one.c)
CREATE OR REPLACE FUNCTION backfill._cutover_lock_relation(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_lock_relation'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_lock_relation(regclass) IS
'Internal: locks one relation whose owner''s privileges the caller has ACCESS EXCLUSIVE, under the caller''s lock_timeout, and nothing else with it (not the tables of a view).';
REVOKE ALL ON FUNCTION backfill._cutover_lock_relation(regclass) FROM PUBLIC;

-- What the swap alters, locked in this order before it starts: the tables
-- whose foreign keys reference src, the views and materialized views that
-- select from it, the sequences of its columns, then src and dst with
-- their partitions.  An application holds the first ones before it touches
-- src (it wrote a child row, it updated through a view, it drew a value
-- from a sequence and then inserts): the cutover waits for them while it
-- holds nothing the application needs next, and the swap, which holds
-- src, never waits for a lock.  Each wait is bounded by the caller's
-- lock_timeout.  PostgreSQL checks the caller's right to each lock.
CREATE OR REPLACE FUNCTION backfill._cutover_lock_dependents(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_lock_dependents'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_lock_dependents(regclass, regclass) IS
'Internal: locks ACCESS EXCLUSIVE, in this order, the tables whose foreign keys reference src, the views over src, the sequences of its columns, then src and dst with their partitions; each wait bounded by the caller''s lock_timeout.';
REVOKE ALL ON FUNCTION backfill._cutover_lock_dependents(regclass, regclass) FROM PUBLIC;

-- A CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY on either table (or
-- a partition of either) holds it SHARE UPDATE EXCLUSIVE until it ends, and
-- before it ends waits for every transaction older than its snapshot: the
-- cutover's among them.  The cutover could never take its lock, and would
-- keep the index build waiting through every attempt.  The process and the
-- table, from what pg_locks and pg_stat_progress_create_index show every
-- role; nothing if there is none.
CREATE OR REPLACE FUNCTION backfill._cutover_index_build(src regclass, dst regclass)
RETURNS TABLE (pid integer, rel regclass)
AS 'MODULE_PATHNAME', 'backfill_cutover_index_build'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_index_build(regclass, regclass) IS
'Internal: a process building an index concurrently (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY) on src, dst or one of their partitions, and that table; no row if none.';
REVOKE ALL ON FUNCTION backfill._cutover_index_build(regclass, regclass) FROM PUBLIC;

-- ends the cutover at once when an index is being built concurrently on
-- one of its tables (_cutover_index_build)
CREATE OR REPLACE FUNCTION backfill._cutover_refuse_index_build(job_id bigint, src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_refuse_index_build'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_refuse_index_build(bigint, regclass, regclass) IS
'Internal: for a caller who owns job job_id, fails with 55P03 when a process builds an index concurrently on src, dst or one of their partitions.';
REVOKE ALL ON FUNCTION backfill._cutover_refuse_index_build(bigint, regclass, regclass) FROM PUBLIC;

-- The partitions of two partitioned tables that take each other's place:
-- each of src's with the one of dst's of the same bounds, one to one, both
-- partitioned by the same key; anything else is refused, before anything
-- is locked or changed
CREATE OR REPLACE FUNCTION backfill._cutover_partition_pairs(src regclass, dst regclass,
                                                  OUT old_part regclass, OUT new_part regclass)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_cutover_partition_pairs'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_partition_pairs(regclass, regclass) IS
'Internal: each partition of the partitioned table src with the partition of the partitioned table dst of the same bounds; an error unless both are partitioned by the same key and their partitions match one to one.';
REVOKE ALL ON FUNCTION backfill._cutover_partition_pairs(regclass, regclass) FROM PUBLIC;

-- After the swap, under its lock: src was src_name and has its new name,
-- dst was dst_name and has src_name.  A partition of src is renamed as
-- src was; the partition of dst of the same bounds takes its name and
-- schema, so that what names a partition (a writer, a grant, a report)
-- names the one that takes the writes.  The rollback, the same swap the
-- other way, gives the old partitions their names back.  Where only one
-- table is partitioned, its partitions follow its name
-- (src/cutover/carry_partitions.c).
CREATE OR REPLACE FUNCTION backfill._cutover_rename_partitions(src regclass, dst regclass, src_name name, dst_name name)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_rename_partitions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_rename_partitions(regclass, regclass, name, name) IS
'Internal: after the swap of src (once src_name) and dst (once dst_name, now src_name), gives each partition of dst the name and schema of the partition of src of the same bounds, and the names of its indexes, and src''s partitions names that follow src''s new name.';
REVOKE ALL ON FUNCTION backfill._cutover_rename_partitions(regclass, regclass, name, name) FROM PUBLIC;

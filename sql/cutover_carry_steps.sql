-- The steps of the swap that carry a materialized view and the partitions'
-- names, each called by itself as the swap calls it, after the renames:
-- a materialized view whose definition no longer fits the new table, an
-- array that names no materialized view over the old table, and
-- partitions in a schema whose name is not lower case.
\set VERBOSITY default
\set SHOW_CONTEXT never

CREATE TABLE cs_src (id int PRIMARY KEY, a int, b text);
CREATE TABLE cs_dst (id int PRIMARY KEY, a int);
INSERT INTO cs_src VALUES (1, 1, 'x');
CREATE MATERIALIZED VIEW cs_mv AS SELECT id, b FROM cs_src;

-- the definition, printed before the renames, names a column the new
-- table lacks: CREATE's error is the cutover's
BEGIN;
SELECT backfill._cutover_matviews('cs_src') AS mvs \gset
ALTER TABLE cs_src RENAME TO cs_src_old;
ALTER TABLE cs_dst RENAME TO cs_src;
SELECT backfill._cutover_carry_matviews('cs_src_old', 'cs_src', :'mvs');
ROLLBACK;

-- only a materialized view over the old table, as _cutover_matviews found it
SELECT backfill._cutover_carry_matviews('cs_src', 'cs_dst',
                                        '[{"mv": 1259, "schema": "pg_catalog", "name": "pg_class"}]');
SELECT relname FROM pg_class WHERE oid = 'cs_mv'::regclass;

-- partitions in schema "CsParts": the new table's partition takes the
-- name and the schema of the old one's
CREATE SCHEMA "CsParts";
CREATE TABLE cs_p (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE "CsParts".cs_p_1 PARTITION OF cs_p FOR VALUES FROM (0) TO (10);
CREATE TABLE cs_q (id int PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE cs_q_1 PARTITION OF cs_q FOR VALUES FROM (0) TO (10);
BEGIN;
ALTER TABLE cs_p RENAME TO cs_p_old;
ALTER TABLE cs_q RENAME TO cs_p;
SELECT backfill._cutover_rename_partitions('cs_p_old', 'cs_p', 'cs_p', 'cs_q');
SELECT i.inhparent::regclass AS parent, n.nspname, c.relname,
       (SELECT string_agg(x.indexrelid::regclass::text, ', ') FROM pg_index x WHERE x.indrelid = c.oid) AS indexes
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE i.inhparent IN ('cs_p'::regclass, 'cs_p_old'::regclass) AND c.relkind = 'r'
 ORDER BY 1::text, 3;
ROLLBACK;

DROP TABLE cs_p, cs_q;
DROP SCHEMA "CsParts";
DROP MATERIALIZED VIEW cs_mv;
DROP TABLE cs_src, cs_dst;

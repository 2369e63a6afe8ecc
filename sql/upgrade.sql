-- ALTER EXTENSION backfill UPDATE from every released version: install the
-- oldest, run a job on it, walk the chain, and finish the job on the newest.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
DROP EXTENSION backfill;

-- the versions a user can come from, and the path to the newest
SELECT version FROM pg_available_extension_versions WHERE name = 'backfill' ORDER BY version;
SELECT path FROM pg_extension_update_paths('backfill') WHERE source = '1.0' AND path IS NOT NULL;

CREATE EXTENSION backfill VERSION '1.0';
CREATE TABLE up (id int PRIMARY KEY, v text);
INSERT INTO up SELECT g, 'v' || g FROM generate_series(1, 300) g;

-- a job begun under 1.0, with the newest library
SELECT backfill.create_job('up_mv', 'up', chunk_size => 50) AS job \gset
CALL backfill.run_job(:job, 1);
UPDATE up SET v = 'during 1.0' WHERE id IN (1, 299);
SELECT job_id, kind, status, row_count FROM backfill.jobs;

-- the new kinds need the new catalog
SELECT backfill.create_job('up_snap', 'up', kind => 'snapshot');
SELECT backfill.create_job('up_cdc', 'up', kind => 'cdc');
-- and so do computed columns (a filter the old signature cannot even pass)
-- and partitioned upstreams
SELECT backfill.create_job('up_upper', 'up', columns => ARRAY['upper(v) AS v']);
CREATE TABLE up_parted (id int PRIMARY KEY) PARTITION BY RANGE (id);
SELECT backfill.create_job('up_parted_mv', 'up_parted');
DROP TABLE up_parted;
SELECT to_regclass('up_snap') IS NULL AND to_regclass('up_upper') IS NULL
       AND to_regclass('up_parted_mv') IS NULL AS nothing_left;

ALTER EXTENSION backfill UPDATE TO '1.1';
SELECT extversion FROM pg_extension WHERE extname = 'backfill';

-- a cdc job from another server needs 1.2 (refused before any connection)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
RESET client_min_messages;
CREATE SERVER up_nowhere FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port '1');
CREATE FOREIGN TABLE up_remote (id int, v text) SERVER up_nowhere;
SELECT backfill.create_job('up_remote_mv', 'up_remote', kind => 'cdc');
DROP FOREIGN TABLE up_remote;
DROP SERVER up_nowhere;

-- the job carries on where it stopped, one barrier under 1.1
UPDATE up SET v = 'during 1.1' WHERE id IN (2, 298);
CALL backfill.run_job(:job, 1);
SELECT job_id, status, row_count FROM backfill.jobs;

ALTER EXTENSION backfill UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'backfill';

-- one barrier under 1.2
UPDATE up SET v = 'during 1.2' WHERE id IN (3, 297);
CALL backfill.run_job(:job, 1);
SELECT job_id, status, row_count FROM backfill.jobs;

ALTER EXTENSION backfill UPDATE TO '1.3';
SELECT extversion FROM pg_extension WHERE extname = 'backfill';

-- one barrier under 1.3
UPDATE up SET v = 'during 1.3' WHERE id IN (4, 296);
CALL backfill.run_job(:job, 1);
SELECT job_id, status, row_count FROM backfill.jobs;

ALTER EXTENSION backfill UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'backfill';

-- and finishes under the newest
UPDATE up SET v = 'during 1.4' WHERE id IN (5, 295);
CALL backfill.run_job(:job);
SELECT s.job_id, s.kind, s.status, s.row_count, j.runs
  FROM backfill.jobs s JOIN backfill.job j USING (job_id);
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM up) AS upstream, (SELECT count(*) FROM up_mv) AS downstream;
SELECT progress FROM backfill.jobs WHERE job_id = :job;
-- job_state has the new columns
SELECT actor_id, vnode, current_pos, backfill_finished, epoch, cdc_offset
  FROM backfill.job_state(:job) WHERE vnode = 0;

-- and the new kinds work
SELECT backfill.create_job('up_snap', 'up', kind => 'snapshot') AS snap \gset
CALL backfill.run_job(:snap);
SELECT * FROM backfill.verify_job(:snap);
SELECT job_id, kind, status, snapshot_epoch > 0 AS has_epoch FROM backfill.jobs WHERE job_id = :snap;
-- and filters and computed columns
SELECT backfill.create_job('up_upper', 'up', columns => ARRAY['upper(v) AS v'],
                           filter => 'id % 3 = 0') AS upper \gset
CALL backfill.run_job(:upper);
SELECT * FROM backfill.verify_job(:upper);
SELECT count(*), min(v) FROM up_upper;
-- the job made under 1.0 kept its hashed vnodes; the jobs made now have
-- ranges of keys
SELECT job_id, kind, vnode_mapping, array_dims(vnode_bounds) AS bounds
  FROM backfill.job ORDER BY job_id;
SELECT count(*) AS keys_off_the_hash FROM up WHERE backfill.job_vnode(:job, id) <> backfill.vnode(id);

-- an upgraded catalog is the catalog a new install makes
CREATE TEMP TABLE upgraded AS
SELECT pg_catalog.pg_describe_object(classid, objid, objsubid) AS object
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill');
CREATE TEMP TABLE upgraded_columns AS
SELECT attrelid::regclass::text AS rel, attname, format_type(atttypid, atttypmod) AS type, attnotnull
  FROM pg_attribute
 WHERE attrelid IN ('backfill.job'::regclass, 'backfill.actor'::regclass,
                    'backfill.jobs'::regclass, 'backfill.ddl_progress'::regclass)
   AND attnum > 0 AND NOT attisdropped;
-- and every object's full definition: functions (body, settings,
-- volatility, strictness, security, comment, privileges), views, tables'
-- privileges, options, row security and comments, columns (place, type,
-- default, comment), constraints, indexes, triggers, sequences, the tables
-- pg_dump keeps, policies, event triggers.  The new install reads
-- backfill--1.4.sql, assembled from the parts of src/sql/; the upgrade
-- walks the released scripts up to 1.3, then reads backfill--1.3--1.4.sql,
-- assembled from a part of its own and those same parts: this is what
-- holds the two together
CREATE TEMP VIEW ext_definitions AS
WITH members AS (
  SELECT classid, objid FROM pg_depend
   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill'))
SELECT 'function ' || p.oid::regprocedure::text AS object,
       concat_ws(E'\n', pg_get_functiondef(p.oid), p.proacl::text,
                 obj_description(p.oid, 'pg_proc')) AS definition
  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
 WHERE p.prokind IN ('f', 'p', 'w')
UNION ALL
SELECT 'aggregate ' || p.oid::regprocedure::text,
       concat_ws(E'\n', p.proacl::text, obj_description(p.oid, 'pg_proc'))
  FROM members m JOIN pg_proc p ON m.classid = 'pg_proc'::regclass AND p.oid = m.objid
 WHERE p.prokind = 'a'
UNION ALL
SELECT 'relation ' || c.oid::regclass::text,
       concat_ws(E'\n', c.relkind::text, c.relacl::text, c.reloptions::text,
                 c.relrowsecurity::text, c.relforcerowsecurity::text, c.relpersistence::text,
                 obj_description(c.oid, 'pg_class'),
                 CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid) END)
  FROM members m JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid
UNION ALL
-- each column in its place (counting the columns not dropped), with its
-- type, default and comment
SELECT 'column ' || a.attrelid::regclass::text || '.' || a.attname,
       concat_ws(E'\n', (SELECT count(*) FROM pg_attribute b
                            WHERE b.attrelid = a.attrelid AND b.attnum > 0
                              AND NOT b.attisdropped AND b.attnum <= a.attnum)::text,
                 format_type(a.atttypid, a.atttypmod), a.attnotnull::text,
                 a.attidentity, a.attgenerated, a.attcollation::regcollation::text,
                 pg_get_expr(d.adbin, d.adrelid), col_description(a.attrelid, a.attnum))
  FROM members m
  JOIN pg_class c ON m.classid = 'pg_class'::regclass AND c.oid = m.objid AND c.relkind IN ('r', 'v', 'p')
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
UNION ALL
SELECT 'constraint ' || con.conname || ' on ' || con.conrelid::regclass::text,
       concat_ws(E'\n', pg_get_constraintdef(con.oid), con.condeferrable::text,
                 con.condeferred::text, con.convalidated::text)
  FROM members m JOIN pg_constraint con ON m.classid = 'pg_class'::regclass AND con.conrelid = m.objid
UNION ALL
SELECT 'index ' || i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
  FROM members m JOIN pg_index i ON m.classid = 'pg_class'::regclass AND i.indrelid = m.objid
UNION ALL
SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass::text, pg_get_triggerdef(t.oid)
  FROM members m JOIN pg_trigger t ON m.classid = 'pg_class'::regclass AND t.tgrelid = m.objid
 WHERE NOT t.tgisinternal
UNION ALL
SELECT 'sequence ' || s.seqrelid::regclass::text,
       concat_ws(E'\n', s.seqtypid::regtype::text, s.seqstart::text, s.seqincrement::text,
                 s.seqmax::text, s.seqmin::text, s.seqcache::text, s.seqcycle::text)
  FROM members m JOIN pg_sequence s ON m.classid = 'pg_class'::regclass AND s.seqrelid = m.objid
UNION ALL
-- the tables and sequences pg_dump keeps, and the extension's settings
SELECT 'extension ' || e.extname,
       concat_ws(E'\n', e.extrelocatable::text, e.extnamespace::regnamespace::text,
                 e.extconfig::regclass[]::text, e.extcondition::text)
  FROM pg_extension e WHERE e.extname = 'backfill'
UNION ALL
SELECT 'policy ' || pol.polname || ' on ' || pol.polrelid::regclass::text,
       concat_ws(E'\n', pol.polcmd::text, pol.polpermissive::text, pol.polroles::text,
                 pg_get_expr(pol.polqual, pol.polrelid),
                 pg_get_expr(pol.polwithcheck, pol.polrelid))
  FROM pg_policy pol
 WHERE pol.polrelid IN (SELECT objid FROM members WHERE classid = 'pg_class'::regclass)
UNION ALL
SELECT 'event trigger ' || e.evtname,
       concat_ws(E'\n', e.evtevent, e.evtfoid::regprocedure::text, e.evtenabled::text,
                 e.evttags::text, obj_description(e.oid, 'pg_event_trigger'))
  FROM members m JOIN pg_event_trigger e ON m.classid = 'pg_event_trigger'::regclass AND e.oid = m.objid
UNION ALL
SELECT 'schema ' || n.nspname,
       concat_ws(E'\n', n.nspacl::text, obj_description(n.oid, 'pg_namespace'))
  FROM pg_namespace n WHERE n.nspname = 'backfill';
CREATE TEMP TABLE upgraded_definitions AS SELECT * FROM ext_definitions;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP EXTENSION backfill;
CREATE EXTENSION backfill;
SELECT object AS only_after_upgrade FROM upgraded
EXCEPT SELECT pg_catalog.pg_describe_object(classid, objid, objsubid) FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill');
SELECT pg_catalog.pg_describe_object(classid, objid, objsubid) AS only_in_new_install FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'backfill')
EXCEPT SELECT object FROM upgraded;
(SELECT * FROM upgraded_columns EXCEPT
 SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull
   FROM pg_attribute
  WHERE attrelid IN ('backfill.job'::regclass, 'backfill.actor'::regclass,
                     'backfill.jobs'::regclass, 'backfill.ddl_progress'::regclass)
    AND attnum > 0 AND NOT attisdropped)
UNION ALL
(SELECT attrelid::regclass::text, attname, format_type(atttypid, atttypmod), attnotnull
   FROM pg_attribute
  WHERE attrelid IN ('backfill.job'::regclass, 'backfill.actor'::regclass,
                     'backfill.jobs'::regclass, 'backfill.ddl_progress'::regclass)
    AND attnum > 0 AND NOT attisdropped
 EXCEPT SELECT * FROM upgraded_columns);
-- one row per object whose definition differs (empty when none)
SELECT object AS defined_otherwise FROM
 ((SELECT * FROM upgraded_definitions EXCEPT SELECT * FROM ext_definitions)
  UNION
  (SELECT * FROM ext_definitions EXCEPT SELECT * FROM upgraded_definitions)) d
 ORDER BY 1;
-- the comparison saw each kind of object
SELECT split_part(object, ' ', 1) AS kind, count(*) > 0 AS compared
  FROM ext_definitions GROUP BY 1 ORDER BY 1;
DROP TABLE up;

-- What a job's upstream must keep for the job to stay right, guarded at
-- create_job and against DDL: logged changes for a cdc job (an unlogged
-- table's never reach the write-ahead log), the job's triggers, no cycle of
-- jobs copying tables into each other, an owner that exists.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

-- ---- a cdc job takes its changes from the WAL: nothing unlogged ----
CREATE UNLOGGED TABLE g_unlogged (id int PRIMARY KEY, v text);
SELECT backfill.create_job('g_unlogged_mv', 'g_unlogged', kind => 'cdc');
-- a logged partitioned table with an unlogged partition, at any level
CREATE TABLE g_parts (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE g_parts_a PARTITION OF g_parts FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id);
CREATE UNLOGGED TABLE g_parts_a1 PARTITION OF g_parts_a FOR VALUES FROM (0) TO (50);
SELECT backfill.create_job('g_parts_mv', 'g_parts', kind => 'cdc');
-- the kinds that capture by trigger take them
SELECT backfill.create_job('g_unlogged_mv', 'g_unlogged', kind => 'arrangement') AS unlogged_job \gset
SELECT backfill.drop_job(:unlogged_job);
ALTER TABLE g_parts_a1 SET LOGGED;
SELECT backfill.create_job('g_parts_mv', 'g_parts', kind => 'cdc') AS cdc_job \gset
-- while it backfills: no partition made unlogged, none attached or created unlogged
ALTER TABLE g_parts_a1 SET UNLOGGED;
CREATE UNLOGGED TABLE g_parts_b (id int PRIMARY KEY, v text);
ALTER TABLE g_parts ATTACH PARTITION g_parts_b FOR VALUES FROM (100) TO (200);
ALTER TABLE g_parts_a ATTACH PARTITION g_parts_b FOR VALUES FROM (50) TO (100);
CREATE UNLOGGED TABLE g_parts_c PARTITION OF g_parts FOR VALUES FROM (200) TO (300);
SELECT relname, relpersistence FROM pg_class WHERE relname LIKE 'g\_parts%' AND relkind IN ('r', 'p')
 ORDER BY relname;
SELECT inhrelid::regclass AS partition, inhparent::regclass AS parent FROM pg_inherits
 WHERE inhparent IN ('g_parts'::regclass, 'g_parts_a'::regclass) ORDER BY inhrelid::regclass::text;
-- logged ones join as ever
ALTER TABLE g_parts_b SET LOGGED;
ALTER TABLE g_parts ATTACH PARTITION g_parts_b FOR VALUES FROM (100) TO (200);
INSERT INTO g_parts VALUES (1, 'a'), (150, 'b');
CALL backfill.run_job(:cdc_job);
SELECT status, last_error FROM backfill.jobs WHERE job_id = :cdc_job;
SELECT * FROM backfill.verify_job(:cdc_job);
-- finished, it follows its upstream by trigger: unlogged is fine now
ALTER TABLE g_parts_b SET UNLOGGED;
INSERT INTO g_parts VALUES (151, 'c');
SELECT * FROM g_parts_mv ORDER BY id;
SELECT backfill.drop_job(:cdc_job);

-- ---- a job's triggers are its own ----
CREATE TABLE g_trig (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE g_trig_a PARTITION OF g_trig FOR VALUES FROM (0) TO (100);
INSERT INTO g_trig SELECT g, 'v' || g FROM generate_series(1, 20) g;
SELECT backfill.create_job('g_trig_mv', 'g_trig') AS trig_job \gset
CALL backfill.run_job(:trig_job);
SELECT tgrelid::regclass, tgname, tgenabled FROM pg_trigger
 WHERE tgrelid IN ('g_trig'::regclass, 'g_trig_a'::regclass) ORDER BY 1, 2;
ALTER TABLE g_trig DISABLE TRIGGER ALL;
ALTER TABLE g_trig_a DISABLE TRIGGER USER;
ALTER TABLE g_trig DISABLE TRIGGER backfill_apply_3;
ALTER TABLE g_trig_a DISABLE TRIGGER backfill_apply_3;
ALTER TABLE g_trig ENABLE REPLICA TRIGGER backfill_apply_3;
ALTER TABLE g_trig ENABLE TRIGGER backfill_capture_3;
DROP TRIGGER backfill_apply_3 ON g_trig;
DROP TRIGGER backfill_apply_truncate_3 ON g_trig;
DROP TRIGGER backfill_partition_truncate_3 ON g_trig_a;
-- the upstream's owner is refused too
CREATE ROLE regress_guard_owner;
ALTER TABLE g_trig OWNER TO regress_guard_owner;
ALTER TABLE g_trig_a OWNER TO regress_guard_owner;
SET ROLE regress_guard_owner;
ALTER TABLE g_trig DISABLE TRIGGER ALL;
DROP TRIGGER backfill_apply_3 ON g_trig;
RESET ROLE;
ALTER TABLE g_trig OWNER TO CURRENT_ROLE;
ALTER TABLE g_trig_a OWNER TO CURRENT_ROLE;
DROP ROLE regress_guard_owner;
-- all as they were, and the copy follows
SELECT tgrelid::regclass, tgname, tgenabled FROM pg_trigger
 WHERE tgrelid IN ('g_trig'::regclass, 'g_trig_a'::regclass) ORDER BY 1, 2;
UPDATE g_trig SET v = 'after' WHERE id = 5;
SELECT * FROM backfill.verify_job(:trig_job);
-- a user's own triggers, and ENABLE TRIGGER ALL (how a data-only restore ends)
CREATE FUNCTION g_noop() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$;
CREATE TRIGGER g_mine AFTER INSERT ON g_trig FOR EACH ROW EXECUTE FUNCTION g_noop();
ALTER TABLE g_trig DISABLE TRIGGER g_mine;
DROP TRIGGER g_mine ON g_trig;
ALTER TABLE g_trig ENABLE TRIGGER ALL;
-- a restore, as a superuser with check_function_bodies = off, may (the next run puts them back)
SET check_function_bodies = off;
ALTER TABLE g_trig DISABLE TRIGGER ALL;
ALTER TABLE g_trig ENABLE TRIGGER ALL;
RESET check_function_bodies;
-- once the job is dropped, they go with it
SELECT backfill.drop_job(:trig_job);
SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'backfill%';

-- ---- no cycle of jobs ----
CREATE TABLE g_c1 (id int PRIMARY KEY, v text);
CREATE TABLE g_c2 (id int PRIMARY KEY, v text);
CREATE TABLE g_c3 (id int PRIMARY KEY, v text);
SELECT backfill.create_job('g_c2', 'g_c1', into_existing => true) AS c1_job \gset
SELECT backfill.create_job('g_c1', 'g_c1', into_existing => true);
SELECT backfill.create_job('g_c1', 'g_c2', into_existing => true);
SELECT backfill.create_job('g_c3', 'g_c2', into_existing => true) AS c2_job \gset
SELECT backfill.create_job('g_c1', 'g_c3', into_existing => true);
SELECT backfill.create_job('g_c2', 'g_c3', into_existing => true);
-- through partitions: a job over a partition of another's downstream
CREATE TABLE g_p (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE g_p1 PARTITION OF g_p FOR VALUES FROM (0) TO (100);
SELECT backfill.create_job('g_p', 'g_c3', into_existing => true) AS c3_job \gset
SELECT backfill.create_job('g_c1', 'g_p1', into_existing => true);
SELECT backfill.create_job('g_p1', 'g_p', into_existing => true);
-- a chain is fine, and writes go down it
SELECT count(*) FROM backfill.job WHERE status <> 'cancelled';
CALL backfill.run_job(:c1_job);
CALL backfill.run_job(:c2_job);
CALL backfill.run_job(:c3_job);
INSERT INTO g_c1 VALUES (1, 'down the chain');
SELECT * FROM g_p;
-- a cancelled job closes no cycle
SELECT backfill.drop_job(:c3_job);
SELECT backfill.drop_job(:c2_job);
DELETE FROM g_c1;
SELECT backfill.create_job('g_c1', 'g_c3', into_existing => true) AS c4_job \gset
SELECT backfill.drop_job(:c4_job);
SELECT backfill.drop_job(:c1_job);

-- ---- a job's owner: DROP ROLE, REASSIGN OWNED, DROP OWNED ----
CREATE ROLE regress_guard_alice;
CREATE ROLE regress_guard_bob;
CREATE ROLE regress_guard_carol;
GRANT CREATE ON SCHEMA public TO regress_guard_alice, regress_guard_bob, regress_guard_carol;
SET ROLE regress_guard_alice;
CREATE TABLE g_own (id int PRIMARY KEY, v text);
INSERT INTO g_own SELECT g, 'v' || g FROM generate_series(1, 10) g;
CREATE TABLE g_own2 (id int PRIMARY KEY, v text);
SELECT backfill.create_job('g_own_mv', 'g_own') AS own_job \gset
SELECT backfill.create_job('g_own2_mv', 'g_own2') AS own2_job \gset
CALL backfill.run_job(:own_job);
RESET ROLE;
SELECT polname, polrelid::regclass, polroles::regrole[] FROM pg_policy
 WHERE polname LIKE 'backfill\_job\_%' ORDER BY 1;
-- refused while the role owns the jobs' tables
\set VERBOSITY terse
DROP ROLE regress_guard_alice;
\set VERBOSITY default
-- and the policy that records the owner goes only with the job
DROP POLICY backfill_job_8_owner ON backfill.state_8;
-- REASSIGN OWNED in a session that has not loaded the library moves the
-- tables, not the jobs: DROP ROLE is still refused, naming the jobs
\c
REASSIGN OWNED BY regress_guard_alice TO regress_guard_bob;
REVOKE CREATE ON SCHEMA public FROM regress_guard_alice;
SELECT job_id, owner FROM backfill.job ORDER BY job_id;
DROP ROLE regress_guard_alice;
-- DROP OWNED gives them to the role that has their tables
DROP OWNED BY regress_guard_alice;
DROP ROLE regress_guard_alice;
SELECT job_id, owner FROM backfill.job ORDER BY job_id;
SELECT polname, polrelid::regclass, polroles::regrole[] FROM pg_policy
 WHERE polname LIKE 'backfill\_job\_%' ORDER BY 1;
-- the new owner's job works: writes follow, and bob runs his other job
SET backfill.barrier_interval_ms = 0;
UPDATE g_own SET v = 'by bob' WHERE id = 1;
SET ROLE regress_guard_bob;
SELECT * FROM backfill.verify_job(:own_job);
CALL backfill.run_job(:own2_job);
SELECT job_id, status, last_error FROM backfill.jobs ORDER BY job_id;
RESET ROLE;
-- with the library loaded, REASSIGN OWNED moves the jobs at once
REASSIGN OWNED BY regress_guard_bob TO regress_guard_carol;
SELECT job_id, owner FROM backfill.job ORDER BY job_id;
DROP OWNED BY regress_guard_bob;
DROP ROLE regress_guard_bob;
-- DROP OWNED drops a role's jobs, cancelled ones too, with their tables
SET ROLE regress_guard_carol;
CREATE TABLE g_own3 (id int PRIMARY KEY, v text);
SELECT backfill.create_job('g_own3_mv', 'g_own3') AS own3_job \gset
SELECT backfill.cancel_job(:own3_job);
RESET ROLE;
SELECT job_id, owner, status FROM backfill.job ORDER BY job_id;
DROP OWNED BY regress_guard_carol;
SELECT count(*) AS jobs FROM backfill.job;
SELECT count(*) AS policies FROM pg_policy WHERE polname LIKE 'backfill\_job\_%';
SELECT count(*) AS triggers FROM pg_trigger WHERE tgname LIKE 'backfill%';
SELECT relname FROM pg_class WHERE relname LIKE 'g\_own%';
DROP ROLE regress_guard_carol;

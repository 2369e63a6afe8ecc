-- repair_job: the rows verify_job finds different made equal to the
-- upstream's again, range by range.
SET backfill.barrier_interval_ms = 0;

-- an arrangement job with a filter and a computed column; a difference of
-- each kind, spread over the key range
CREATE TABLE rp_up (id int PRIMARY KEY, n numeric, t text, keep bool);
INSERT INTO rp_up SELECT g, g / 10.0, 't' || g, g <> 1700 FROM generate_series(1, 3000) g;
SELECT backfill.create_job('rp_mv', 'rp_up', columns => ARRAY['id', 'n', 'upper(t) AS t'],
                           filter => 'keep') AS job \gset
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
UPDATE rp_mv SET t = 'changed' WHERE id = 10;        -- a changed value
DELETE FROM rp_mv WHERE id = 700;                    -- a missing row
INSERT INTO rp_mv VALUES (5000, 1, 'EXTRA');         -- an extra row
INSERT INTO rp_mv VALUES (1700, 170, 'T1700');       -- extra: out of the filter
UPDATE rp_mv SET t = NULL WHERE id = 1200;           -- a NULL against a value
UPDATE rp_mv SET n = 150.00 WHERE id = 1500;         -- equal to 150.0, not the same
SELECT * FROM backfill.verify_job(:job);
CALL backfill.repair_job(:job, 100);
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM backfill.verify_job(:job, 'rows');
-- repaired as the copy makes them: computed, 150.0 as the upstream has it
SELECT id, n::text, t FROM rp_mv WHERE id IN (10, 700, 1200, 1500, 1700, 5000) ORDER BY id;
-- nothing to repair: no range, clean
CALL backfill.repair_job(:job);
-- by name; range_rows 1: one range per row
DELETE FROM rp_mv WHERE id IN (1, 2, 3);
CALL backfill.repair_job('rp_mv', range_rows => 1);
-- (the lines of progress, which name the job by its id, are in
-- t/046_repair_kill.pl)

-- a snapshot job, finished
CREATE TABLE rp_up2 (a int, b text, v numeric, PRIMARY KEY (a, b));
INSERT INTO rp_up2 SELECT g % 50, 'k' || (g / 50), g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('rp_mv2', 'rp_up2', kind => 'snapshot') AS job2 \gset
CALL backfill.run_job(:job2);
UPDATE rp_mv2 SET v = v + 1 WHERE a = 7 AND b = 'k3';
DELETE FROM rp_mv2 WHERE a = 0;
INSERT INTO rp_mv2 VALUES (99, 'zz', 1);
UPDATE rp_mv2 SET v = NULL WHERE a = 8 AND b = 'k9';
SELECT * FROM backfill.verify_job(:job2) LIMIT 5;
SELECT count(*) FROM backfill.verify_job(:job2);
CALL backfill.repair_job(:job2, 10);
SELECT count(*) FROM backfill.verify_job(:job2, 'rows');

-- a cdc job, finished
CREATE TABLE rp_up3 (id bigint PRIMARY KEY, v text);
INSERT INTO rp_up3 SELECT g, 'v' || g FROM generate_series(1, 500) g;
SELECT backfill.create_job('rp_mv3', 'rp_up3', kind => 'cdc') AS job3 \gset
CALL backfill.run_job(:job3);
UPDATE rp_mv3 SET v = 'x' WHERE id = 5;
DELETE FROM rp_mv3 WHERE id = 6;
SELECT * FROM backfill.verify_job(:job3);
CALL backfill.repair_job(:job3);
SELECT count(*) FROM backfill.verify_job(:job3);

-- a downstream a foreign key references is repaired in place: no row it
-- references leaves it, and the referencing rows stay
CREATE TABLE rp_child (id int PRIMARY KEY, parent int REFERENCES rp_mv ON DELETE CASCADE);
INSERT INTO rp_child VALUES (1, 30), (2, 31);
UPDATE rp_mv SET t = 'changed' WHERE id IN (30, 31);
CALL backfill.repair_job(:job);
SELECT * FROM rp_child ORDER BY id;
SELECT t FROM rp_mv WHERE id IN (30, 31) ORDER BY id;
DROP TABLE rp_child;

-- a plain role's job, repaired by a superuser: its statements run as the
-- role (a computed column calls a function that says who runs it)
CREATE ROLE regress_rp_owner;
GRANT CREATE ON SCHEMA public TO regress_rp_owner;
SET ROLE regress_rp_owner;
-- (immutable in name only: it shows who evaluates it)
CREATE FUNCTION rp_who(int) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT current_user || ':' || $1 $$;
CREATE TABLE rp_up4 (id int PRIMARY KEY, v int);
INSERT INTO rp_up4 SELECT g, g FROM generate_series(1, 100) g;
SELECT backfill.create_job('rp_mv4', 'rp_up4', columns => ARRAY['id', 'public.rp_who(v) AS v']) AS job4 \gset
CALL backfill.run_job(:job4);
DELETE FROM rp_mv4 WHERE id = 50;
RESET ROLE;
CALL backfill.repair_job(:job4);
SELECT v FROM rp_mv4 WHERE id = 50;
-- and by the role itself
SET ROLE regress_rp_owner;
UPDATE rp_mv4 SET v = 'changed' WHERE id = 60;
CALL backfill.repair_job(:job4);
SELECT v FROM rp_mv4 WHERE id = 60;
RESET ROLE;
-- the plain role on the superuser's job: it does not exist for it
SET ROLE regress_rp_owner;
SELECT job_error(format('CALL backfill.repair_job(%s)', :job), :job);
SELECT job_error('CALL backfill.repair_job(''rp_mv'')', :job);
SELECT job_error(format('SELECT * FROM backfill.verify_job(%s)', :job), :job);
RESET ROLE;

-- bad arguments
SELECT job_error('CALL backfill.repair_job(NULL::bigint)', :job);
SELECT job_error(format('CALL backfill.repair_job(%s, NULL)', :job), :job);
SELECT job_error(format('CALL backfill.repair_job(%s, 0)', :job), :job);
SELECT job_error('CALL backfill.repair_job(-1)', :job);
SELECT job_error('CALL backfill.repair_job(''rp_none'')', :job);
SELECT job_error(format('CALL backfill.repair_job(%s)', :job), :job);
-- a cancelled job
CREATE TABLE rp_up5 (id int PRIMARY KEY);
SELECT backfill.create_job('rp_mv5', 'rp_up5') AS job5 \gset
SELECT backfill.cancel_job(:job5) = :job5 AS cancelled;
SELECT job_error(format('CALL backfill.repair_job(%s)', :job5), :job5);

SELECT backfill.drop_job(:job);
SELECT backfill.drop_job(:job2);
SELECT backfill.drop_job(:job3);
SELECT backfill.drop_job(:job4);
SELECT backfill.drop_job(:job5);
DROP TABLE rp_up, rp_up2, rp_up3, rp_up4, rp_up5;
DROP FUNCTION rp_who(int);
REVOKE CREATE ON SCHEMA public FROM regress_rp_owner;
DROP ROLE regress_rp_owner;

-- verify_job(method => 'checksum'): range checksums, bisection, the same
-- rows as method => 'rows'; cutover(verify => true).
SET backfill.barrier_interval_ms = 0;
SET client_min_messages = warning;
CREATE COLLATION vc_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
RESET client_min_messages;

CREATE TABLE vc_up (id int PRIMARY KEY, n numeric, f float8, t text, ci text COLLATE vc_ci, b bool);
INSERT INTO vc_up SELECT g, g / 10.0, g, 't' || g, 'Name' || g, g % 2 = 0 FROM generate_series(1, 3000) g;
SELECT backfill.create_job('vc_mv', 'vc_up') AS job \gset
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;

-- equal copies: nothing, whichever the method
SELECT count(*) FROM backfill.verify_job(:job);
SELECT count(*) FROM backfill.verify_job(:job, 'rows');
SELECT count(*) FROM backfill.verify_job(:job, range_rows => 10);

-- one difference of each kind, spread over the key range
UPDATE vc_mv SET t = 'changed' WHERE id = 10;
DELETE FROM vc_mv WHERE id = 700;
INSERT INTO vc_mv VALUES (5000, 1, 1, 'extra', 'extra', true);
UPDATE vc_mv SET t = NULL WHERE id = 1200;          -- a NULL against a value
UPDATE vc_up SET f = NULL WHERE id = 1300;           -- (reaches the downstream)
UPDATE vc_mv SET f = 1300 WHERE id = 1300;           -- a value against a NULL
UPDATE vc_mv SET n = 150.00 WHERE id = 1500;         -- equal to 150.0, not the same
UPDATE vc_mv SET ci = 'NAME2000' WHERE id = 2000;    -- equal under vc_ci, not the same
UPDATE vc_up SET f = 0 WHERE id = 2500;
UPDATE vc_mv SET f = '-0' WHERE id = 2500;           -- equal to 0, not the same
UPDATE vc_mv SET b = NOT b WHERE id = 2999;
SELECT (SELECT n FROM vc_up WHERE id = 1500) = (SELECT n FROM vc_mv WHERE id = 1500) AS numeric_equal,
       (SELECT ci FROM vc_up WHERE id = 2000) = (SELECT ci FROM vc_mv WHERE id = 2000) AS collation_equal;
SELECT * FROM backfill.verify_job(:job, 'rows');
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM backfill.verify_job(:job, range_rows => 1);
-- the same rows in the same order, whatever the ranges
SELECT (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job, 'rows') v)
     = (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job, range_rows => r) v) AS same, r
  FROM unnest('{1, 7, 100, 1000, 100000}'::int[]) r;

-- paced by the job's rate limit: 3000 rows of the upstream at 2000 a
-- second take more than a second, and find the same rows
SELECT backfill.alter_rate_limit(:job, 2000);
SELECT clock_timestamp() AS t0 \gset
SELECT (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job, 'rows') v)
     = (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job) v) AS same;
SELECT clock_timestamp() - :'t0' >= '1 s' AS paced;
SELECT backfill.alter_rate_limit(:job, NULL);

-- the gate: refused over the differences, what it found in the DETAIL
SELECT job_error(format('SELECT backfill.cutover(%s, verify => true)', :job), :job);
SELECT job_error(format('SELECT backfill.cutover(%s, verify => NULL)', :job), :job);
SELECT relname FROM pg_class WHERE relname IN ('vc_up', 'vc_mv') ORDER BY 1;
-- mended: the gate lets it through
DELETE FROM vc_mv;
INSERT INTO vc_mv SELECT * FROM vc_up;
SELECT count(*) FROM backfill.verify_job(:job);
SELECT state, rollback_possible FROM backfill.cutover(:job, verify => true);
SELECT backfill.finish_cutover(:job);

-- a backfilling arrangement job: pending keys are no difference, in a
-- range that differs or not
CREATE TABLE vc_up2 (id int PRIMARY KEY, v text);
INSERT INTO vc_up2 SELECT g, 'v' || g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('vc_mv2', 'vc_up2', chunk_size => 300) AS job2 \gset
CALL backfill.run_job(:job2, 2);
SELECT status FROM backfill.jobs WHERE job_id = :job2;
UPDATE vc_up2 SET v = 'pending' WHERE id IN (5, 250, 1900);
DELETE FROM vc_up2 WHERE id = 6;
UPDATE vc_mv2 SET v = 'planted' WHERE id IN (7, 251);
DELETE FROM vc_mv2 WHERE id = 8;
SELECT * FROM backfill.verify_job(:job2, 'rows');
SELECT (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job2, 'rows') v)
     = (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job2, range_rows => r) v) AS same, r
  FROM unnest('{1, 10, 1000}'::int[]) r;
CALL backfill.run_job(:job2);
SELECT * FROM backfill.verify_job(:job2);

-- a cdc job: the keys its slot holds are pending too
CREATE TABLE vc_up3 (id int PRIMARY KEY, v text);
INSERT INTO vc_up3 SELECT g, 'v' || g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('vc_mv3', 'vc_up3', kind => 'cdc', chunk_size => 500) AS job3 \gset
CALL backfill.run_job(:job3, 2);
UPDATE vc_up3 SET v = 'pending' WHERE id IN (5, 1500);
UPDATE vc_mv3 SET v = 'planted' WHERE id IN (7, 600);
INSERT INTO vc_mv3 VALUES (9000, 'extra');
SELECT * FROM backfill.verify_job(:job3, 'rows');
SELECT (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job3, 'rows') v)
     = (SELECT array_agg(v.pk || ' ' || v.problem) FROM backfill.verify_job(:job3, range_rows => r) v) AS same, r
  FROM unnest('{1, 10, 1000}'::int[]) r;

-- arguments
\set VERBOSITY terse
SELECT * FROM backfill.verify_job(:job, 'bogus');
SELECT * FROM backfill.verify_job(:job, NULL);
SELECT * FROM backfill.verify_job(:job, range_rows => 0);
SELECT * FROM backfill.verify_job(:job, range_rows => NULL);
\set VERBOSITY default

SELECT backfill.drop_job(:job3);
SELECT backfill.drop_job(:job2);
DROP TABLE vc_up, vc_up2, vc_up3;

-- a plain role's job, its filter its own SQL, verified by a superuser: the
-- checksums are computed as the job's owner, as the rows are compared
CREATE ROLE regress_vc_owner;
GRANT CREATE ON SCHEMA public TO regress_vc_owner;
SET ROLE regress_vc_owner;
CREATE TABLE vc_own (id int PRIMARY KEY, v text);
INSERT INTO vc_own SELECT g, 'v' || g FROM generate_series(1, 1500) g;
CREATE FUNCTION vc_keep(int) RETURNS boolean LANGUAGE sql IMMUTABLE
    AS 'SELECT $1 % 3 <> 0 AND current_user = ''regress_vc_owner''';
SELECT backfill.create_job('vc_own_mv', 'vc_own', filter => 'vc_keep(id)') AS job4 \gset
CALL backfill.run_job(:job4);
DELETE FROM vc_own_mv WHERE id = 1000;
RESET ROLE;
SELECT * FROM backfill.verify_job(:job4, range_rows => 100);
SELECT * FROM backfill.verify_job(:job4, 'rows');
-- and a plain role verifying a superuser's job: refused, as with rows
CREATE TABLE vc_su (id int PRIMARY KEY);
SELECT backfill.create_job('vc_su_mv', 'vc_su') AS job5 \gset
SET ROLE regress_vc_owner;
SELECT job_error(format('SELECT backfill.verify_job(%s)', :job5), :job5);
SELECT job_error(format('SELECT backfill.cutover(%s, verify => true)', :job5), :job5);
RESET ROLE;
SELECT backfill.drop_job(:job5);
SELECT backfill.drop_job(:job4);
DROP TABLE vc_su, vc_own;
DROP FUNCTION vc_keep(int);
REVOKE CREATE ON SCHEMA public FROM regress_vc_owner;
DROP ROLE regress_vc_owner;
DROP COLLATION vc_ci;

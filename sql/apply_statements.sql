-- The apply trigger and statements of many rows: once a job has finished, the
-- rows of a statement are applied together as it ends.  What that must get
-- right: rows moving into and out of the filter, keys moved, a key deleted
-- and written again by one statement, a key of two columns, writes through a
-- partitioned table and straight into its partitions, a statement that fails
-- after the trigger fired, a statement run by a trigger of the statement,
-- COPY (applied row by row), TRUNCATE.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE ms (id int PRIMARY KEY, v int NOT NULL, t text);
INSERT INTO ms SELECT g, g, 't' || g FROM generate_series(1, 100) g;
SELECT backfill.create_job('ms_down', 'ms', columns => ARRAY['id', 'v', 'upper(t) AS big'],
                           filter => 'v % 3 <> 0') AS job \gset
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;

-- rows that differ between the downstream and the filtered projection
CREATE FUNCTION ms_diff() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM (
        (SELECT id, v, upper(t) FROM ms WHERE v % 3 <> 0 EXCEPT ALL SELECT id, v, big FROM ms_down)
        UNION ALL
        (SELECT id, v, big FROM ms_down EXCEPT ALL SELECT id, v, upper(t) FROM ms WHERE v % 3 <> 0)) x $$;

-- the session's first row makes the trigger's plans (applied at once)
UPDATE ms SET t = 'first' WHERE id = 1;
SELECT big FROM ms_down WHERE id = 1;

-- many rows updated: a third of them leave the filter, a third join it
UPDATE ms SET v = v + 1 WHERE id BETWEEN 2 AND 40;
SELECT ms_diff(), count(*) AS down_rows FROM ms_down;

-- keys moved, to keys that were free
UPDATE ms SET id = id + 1000 WHERE id BETWEEN 41 AND 60;
SELECT ms_diff(), count(*) FILTER (WHERE id > 1000) AS moved FROM ms_down;

-- inserted, passing the filter or not; then upserted, new keys and old
INSERT INTO ms SELECT g, g, 'n' || g FROM generate_series(200, 260) g;
SELECT ms_diff();
INSERT INTO ms SELECT g, g * 2, 'u' || g FROM generate_series(250, 270) g
    ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v, t = EXCLUDED.t;
SELECT ms_diff();

-- keys deleted and written again by one statement
WITH d AS (DELETE FROM ms WHERE id BETWEEN 200 AND 210 RETURNING *)
INSERT INTO ms SELECT id, v + 1, 'again' FROM d;
SELECT ms_diff(), count(*) FILTER (WHERE big = 'AGAIN') AS again FROM ms_down;

-- a key moved onto a key that one statement deletes
WITH d AS (DELETE FROM ms WHERE id = 1041 RETURNING id)
UPDATE ms SET id = 1041, t = 'moved' FROM d WHERE ms.id = 1044;
SELECT ms_diff();
SELECT * FROM ms_down WHERE id IN (1041, 1044);

-- deleted
DELETE FROM ms WHERE id >= 250;
SELECT ms_diff();

-- a statement that fails after the trigger has fired on its rows (a trigger
-- fires after it): it is rolled back, and the next statement of the
-- transaction is applied alone
CREATE FUNCTION ms_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.t = 'refused' THEN
        RAISE EXCEPTION 'refused row %', NEW.id;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER zz_refuse AFTER UPDATE ON ms FOR EACH ROW EXECUTE FUNCTION ms_refuse();
BEGIN;
SAVEPOINT s;
UPDATE ms SET t = CASE WHEN id = 30 THEN 'refused' ELSE 'not kept' END WHERE id BETWEEN 20 AND 40;
ROLLBACK TO SAVEPOINT s;
UPDATE ms SET v = v + 3 WHERE id BETWEEN 2 AND 5;
COMMIT;
SELECT ms_diff(), count(*) FILTER (WHERE big = 'NOT KEPT') AS not_kept FROM ms_down;
DROP TRIGGER zz_refuse ON ms;

-- a statement run by a trigger of a statement: applied as it ends, and the
-- outer statement's rows after it
CREATE FUNCTION ms_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ms SET v = v * 2, t = 'cascaded' WHERE id BETWEEN NEW.id + 1 AND NEW.id + 5;
    RETURN NULL;
END $$;
CREATE TRIGGER ms_cascade AFTER INSERT ON ms FOR EACH ROW EXECUTE FUNCTION ms_cascade();
INSERT INTO ms VALUES (59, 59, 'outer'), (60, 60, 'outer');
SELECT ms_diff();
SELECT * FROM ms_down WHERE id BETWEEN 59 AND 66 ORDER BY id;
DROP TRIGGER ms_cascade ON ms;

-- COPY fires the triggers itself: its rows are applied one by one
COPY ms FROM STDIN;
300	300	copied
301	301	copied
302	302	copied
\.
SELECT ms_diff(), count(*) FILTER (WHERE big = 'COPIED') AS copied FROM ms_down;

-- the same statements inside a function: each one applied as it ends
CREATE FUNCTION ms_steps() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    UPDATE ms SET v = v + 1 WHERE id < 50;
    SELECT ms_diff() INTO n;
    DELETE FROM ms WHERE id < 10;
    RETURN n + ms_diff();
END $$;
SELECT ms_steps();

TRUNCATE ms;
SELECT count(*) AS down_rows FROM ms_down;

-- a key of two columns
CREATE TABLE m2 (a int, b text, v int, PRIMARY KEY (a, b));
INSERT INTO m2 SELECT g / 10, 'k' || (g % 10), g FROM generate_series(0, 199) g;
SELECT backfill.create_job('m2_down', 'm2', filter => 'v % 4 <> 0') AS job2 \gset
CALL backfill.run_job(:job2);
UPDATE m2 SET v = v + 1 WHERE a = 0;
UPDATE m2 SET v = v + 1 WHERE a < 10;
UPDATE m2 SET b = b || 'x' WHERE a BETWEEN 5 AND 7;
DELETE FROM m2 WHERE a > 15;
SELECT count(*) AS differences FROM backfill.verify_job(:job2);
SELECT count(*) AS down_rows FROM m2_down;

-- a partitioned upstream: through the partitioned table, rows moving from
-- one partition to another, and straight into a partition
CREATE TABLE mp (id int PRIMARY KEY, v int NOT NULL) PARTITION BY RANGE (id);
CREATE TABLE mp_a PARTITION OF mp FOR VALUES FROM (0) TO (100);
CREATE TABLE mp_b PARTITION OF mp FOR VALUES FROM (100) TO (200);
INSERT INTO mp SELECT g, g FROM generate_series(0, 149) g;
SELECT backfill.create_job('mp_down', 'mp', filter => 'v % 2 = 0') AS jobp \gset
CALL backfill.run_job(:jobp);
UPDATE mp SET v = v + 1 WHERE id < 5;
UPDATE mp SET v = v + 1 WHERE id BETWEEN 5 AND 120;
UPDATE mp SET id = id + 100 WHERE id BETWEEN 50 AND 60;
UPDATE mp_a SET v = v + 1 WHERE id < 30;
INSERT INTO mp_b SELECT g, g FROM generate_series(170, 189) g;
DELETE FROM mp_b WHERE id > 180;
SELECT count(*) AS differences FROM backfill.verify_job(:jobp);
SELECT count(*) AS down_rows, count(*) FILTER (WHERE id BETWEEN 150 AND 160) AS moved FROM mp_down;

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;
DROP TABLE ms, m2, mp;
DROP FUNCTION ms_diff(), ms_refuse(), ms_cascade(), ms_steps();

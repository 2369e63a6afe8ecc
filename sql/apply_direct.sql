-- A finished job whose downstream create_job made with the upstream's
-- columns, unfiltered, has the rows of a statement applied without SQL
-- (src/capture/apply_direct.c): the row each key's write left, found where the statement
-- wrote it, or by its key when something wrote it again since.  The same
-- cases as apply_statements, and what would make the SQL do more: a CHECK
-- constraint, a trigger on the downstream, a job owner without the rights.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE ad (id int PRIMARY KEY, v int NOT NULL, t text);
INSERT INTO ad SELECT g, g, 't' || g FROM generate_series(1, 100) g;
SELECT backfill.create_job('ad_down', 'ad') AS job \gset
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;

-- rows that differ between the downstream and the upstream
CREATE FUNCTION ad_diff() RETURNS bigint LANGUAGE sql AS $$
    SELECT count(*) FROM (
        (SELECT * FROM ad EXCEPT ALL SELECT * FROM ad_down)
        UNION ALL
        (SELECT * FROM ad_down EXCEPT ALL SELECT * FROM ad)) x $$;

-- the session's first row makes the plans; then statements of one row and many
UPDATE ad SET t = 'first' WHERE id = 1;
UPDATE ad SET t = 'second' WHERE id = 2;
UPDATE ad SET v = v + 1000 WHERE id BETWEEN 10 AND 40;
SELECT ad_diff(), (SELECT t FROM ad_down WHERE id = 2) AS t2,
       (SELECT v FROM ad_down WHERE id = 40) AS v40;

-- keys moved, to keys that were free; inserted, then upserted
UPDATE ad SET id = id + 1000 WHERE id BETWEEN 41 AND 50;
INSERT INTO ad SELECT g, g, 'new' FROM generate_series(101, 110) g;
INSERT INTO ad SELECT g, -g, 'upserted' FROM generate_series(105, 115) g
    ON CONFLICT (id) DO UPDATE SET v = excluded.v, t = excluded.t;
SELECT ad_diff(), count(*) FILTER (WHERE t = 'upserted') AS upserted,
       count(*) FILTER (WHERE id > 1000) AS moved FROM ad_down;

-- keys deleted and written again by one statement; a key moved onto a key
-- that the same statement deletes
WITH d AS (DELETE FROM ad WHERE id BETWEEN 60 AND 64 RETURNING id)
INSERT INTO ad SELECT id, 0, 'again' FROM d;
WITH d AS (DELETE FROM ad WHERE id = 70 RETURNING id)
UPDATE ad SET id = 70, t = 'moved' FROM d WHERE ad.id = 71;
SELECT ad_diff(), (SELECT count(*) FROM ad_down WHERE t = 'again') AS again,
       (SELECT t FROM ad_down WHERE id = 70) AS t70,
       (SELECT count(*) FROM ad_down WHERE id = 71) AS at71;

-- a trigger's statement writes the statement's rows again: the outer
-- statement's rows are no longer where it wrote them, and are found by key
CREATE FUNCTION ad_again() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE ad SET v = v * 2, t = 'rewritten' WHERE id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER ad_again AFTER INSERT ON ad FOR EACH ROW EXECUTE FUNCTION ad_again();
INSERT INTO ad VALUES (200, 21, 'outer'), (201, 22, 'outer');
SELECT ad_diff(), * FROM ad_down WHERE id BETWEEN 200 AND 201 ORDER BY id;
DROP TRIGGER ad_again ON ad;

-- a statement that fails after the trigger has fired is rolled back whole
BEGIN;
SAVEPOINT s;
CREATE FUNCTION ad_fail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'refused after the row';
END $$;
CREATE TRIGGER ad_fail AFTER UPDATE ON ad FOR EACH ROW EXECUTE FUNCTION ad_fail();
UPDATE ad SET v = 0 WHERE id = 3;
ROLLBACK TO SAVEPOINT s;
UPDATE ad SET v = 33 WHERE id = 3;
COMMIT;
SELECT ad_diff(), (SELECT v FROM ad_down WHERE id = 3) AS v3;

-- deleted
DELETE FROM ad WHERE id BETWEEN 80 AND 99;
SELECT ad_diff(), (SELECT count(*) FROM ad) AS up_rows, count(*) AS down_rows FROM ad_down;

-- a CHECK constraint of the downstream: checked as an UPDATE would, and the
-- writer's statement fails with it
ALTER TABLE ad_down ADD CONSTRAINT ad_down_v_small CHECK (v < 100000);
UPDATE ad SET v = 100000 WHERE id = 5;
UPDATE ad SET v = 99999 WHERE id BETWEEN 5 AND 6;
SELECT ad_diff(), (SELECT v FROM ad_down WHERE id = 5) AS v5;
ALTER TABLE ad_down DROP CONSTRAINT ad_down_v_small;

-- a trigger on the downstream: applied through SQL, which fires it
CREATE TABLE ad_seen (id int, op text);
CREATE FUNCTION ad_seen() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.ad_seen VALUES (coalesce(NEW.id, OLD.id), TG_OP);
    RETURN NULL;
END $$;
CREATE TRIGGER ad_seen AFTER INSERT OR UPDATE OR DELETE ON ad_down
    FOR EACH ROW EXECUTE FUNCTION ad_seen();
UPDATE ad SET v = v + 1 WHERE id BETWEEN 7 AND 8;
DELETE FROM ad WHERE id = 9;
SELECT ad_diff(), (SELECT string_agg(id || ' ' || op, ', ' ORDER BY id) FROM ad_seen) AS seen;
DROP TRIGGER ad_seen ON ad_down;

-- an owner who may not update the downstream any more: the SQL says so
CREATE ROLE ad_owner;
CREATE TABLE ad_o (id int PRIMARY KEY, v int);
INSERT INTO ad_o SELECT g, g FROM generate_series(1, 10) g;
ALTER TABLE ad_o OWNER TO ad_owner;
GRANT CREATE ON SCHEMA public TO ad_owner;
SET ROLE ad_owner;
SELECT backfill.create_job('ad_o_down', 'ad_o') AS job_o \gset
CALL backfill.run_job(:job_o);
RESET ROLE;
UPDATE ad_o SET v = v + 1 WHERE id BETWEEN 1 AND 2;
REVOKE UPDATE ON ad_o_down FROM ad_owner;
UPDATE ad_o SET v = v + 1 WHERE id BETWEEN 1 AND 2;
GRANT UPDATE ON ad_o_down TO ad_owner;
UPDATE ad_o SET v = v + 1 WHERE id BETWEEN 1 AND 2;
SELECT count(*) AS differences FROM backfill.verify_job(:job_o);

SELECT backfill.drop_job(:job_o);
SELECT backfill.drop_job(:job);
DROP TABLE ad, ad_o, ad_seen;
DROP FUNCTION ad_diff(), ad_again(), ad_seen();
REVOKE CREATE ON SCHEMA public FROM ad_owner;
DROP ROLE ad_owner;

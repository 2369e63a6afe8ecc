-- Keys of types that the generated SQL must treat with care, for every kind
-- that runs here: the copy is right, then writes after the finish reach the
-- downstream, in statements of one row and of many.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
SET client_min_messages = error;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

-- one job of each kind that runs here, on upstream up
CREATE FUNCTION make_jobs(up regclass) RETURNS SETOF bigint LANGUAGE sql AS $$
  SELECT backfill.create_job(up::text || '_' || k, up, kind => k, parallelism => CASE k WHEN 'cdc' THEN 1 ELSE 2 END, chunk_size => 30)
    FROM unnest(ARRAY['no_shuffle', 'arrangement', 'snapshot', 'cdc']) WITH ORDINALITY AS x(k, i) ORDER BY i $$;
CREATE PROCEDURE run_jobs(up regclass) LANGUAGE plpgsql AS $$
DECLARE j bigint;
BEGIN
  FOR j IN SELECT job_id FROM backfill.job WHERE upstream = up ORDER BY job_id LOOP
    COMMIT;
    CALL backfill.run_job(j);
  END LOOP;
END $$;
CREATE FUNCTION jobs_of(up regclass) RETURNS TABLE (job bigint, kind text, status text, diffs bigint, last_error text)
LANGUAGE sql AS $$
  SELECT j.job_id, j.kind, j.status, (SELECT count(*) FROM backfill.verify_job(j.job_id)), j.last_error
    FROM backfill.jobs j WHERE j.upstream = up ORDER BY j.job_id $$;

-- a composite key stays one column: unnest() of an array of a composite
-- type returns its fields as columns, and writers after the finish failed
-- with "subquery has too many columns"
CREATE TYPE pair AS (a int, b text);
CREATE TABLE ck (id pair PRIMARY KEY, v int);
INSERT INTO ck SELECT ROW(g % 7, 'b' || g)::pair, g FROM generate_series(1, 200) g;
SELECT count(*) AS jobs FROM make_jobs('ck');
CALL run_jobs('ck');
SELECT * FROM jobs_of('ck');
INSERT INTO ck VALUES (ROW(100, 'x'), 1);
INSERT INTO ck VALUES (ROW(101, 'x'), 1), (ROW(102, 'y'), 2);
UPDATE ck SET v = -v WHERE (id).a = 3;
UPDATE ck SET v = 7 WHERE id = ROW(100, 'x')::pair;
DELETE FROM ck WHERE (id).a = 4;
DELETE FROM ck WHERE id = ROW(101, 'x')::pair;
SELECT * FROM jobs_of('ck');

-- a composite key whose fields may be NULL (the key is NOT NULL, not its
-- fields: ROW(1, NULL) IS NULL is false, and so is IS NOT NULL), read by a
-- snapshot job from its log of images
CREATE TABLE ck4 (id pair PRIMARY KEY, v int);
INSERT INTO ck4 SELECT ROW(g, CASE WHEN g % 2 = 0 THEN NULL ELSE 'b' END)::pair, g FROM generate_series(1, 200) g;
INSERT INTO ck4 VALUES (ROW(NULL, NULL)::pair, 0);
SELECT backfill.create_job('ck4_snapshot', 'ck4', kind => 'snapshot', chunk_size => 30) AS sj \gset
CALL backfill.run_job(:sj, 1);
-- a row written after the snapshot epoch is read from its image, as of the
-- epoch (it was taken for an image of no row, and left out)
UPDATE ck4 SET v = -v WHERE id = ROW(40, NULL)::pair;
CALL backfill.run_job(:sj, 1);
SELECT * FROM ck4_snapshot WHERE (id).a BETWEEN 39 AND 41 ORDER BY id;
UPDATE ck4 SET v = -v WHERE (id).a % 3 = 0 OR (id).a IS NULL;
DELETE FROM ck4 WHERE (id).a % 5 = 0;
INSERT INTO ck4 VALUES (ROW(1000, NULL)::pair, 1);
CALL backfill.run_job(:sj);
SELECT * FROM jobs_of('ck4');

-- a composite with a dropped attribute, one field left: writers failed with
-- "operator does not exist: ct3 = integer"
CREATE TYPE ct3 AS (a int, gone int);
ALTER TYPE ct3 DROP ATTRIBUTE gone;
CREATE TABLE dk3 (id ct3 PRIMARY KEY, v int);
INSERT INTO dk3 SELECT ROW(g)::ct3, g FROM generate_series(1, 200) g;
SELECT count(*) AS jobs FROM make_jobs('dk3');
CALL run_jobs('dk3');
SELECT * FROM jobs_of('dk3');
INSERT INTO dk3 VALUES (ROW(1000), 1);
INSERT INTO dk3 VALUES (ROW(1001), 1), (ROW(1002), 2);
UPDATE dk3 SET v = -v WHERE (id).a % 7 = 3;
UPDATE dk3 SET v = 7 WHERE id = ROW(1000)::ct3;
DELETE FROM dk3 WHERE (id).a % 7 = 4;
DELETE FROM dk3 WHERE id = ROW(1001)::ct3;

-- a key of two columns, one of them composite
CREATE TABLE ck2 (p pair, n int, v int, PRIMARY KEY (p, n));
INSERT INTO ck2 SELECT ROW(g % 3, 'b' || g % 5)::pair, g, g FROM generate_series(1, 200) g;
SELECT count(*) AS jobs FROM make_jobs('ck2');
CALL run_jobs('ck2');
SELECT * FROM jobs_of('ck2');
-- and while they backfill: keys captured and forwarded at the barriers
-- (no_shuffle cannot resume a run that stopped)
CREATE TABLE ck3 (LIKE ck2 INCLUDING ALL);
INSERT INTO ck3 SELECT * FROM ck2;
SELECT count(*) AS jobs FROM make_jobs('ck3');
SELECT backfill.drop_job(job_id) FROM backfill.job WHERE upstream = 'ck3'::regclass AND kind = 'no_shuffle';
CREATE PROCEDURE run_jobs_once(up regclass) LANGUAGE plpgsql AS $$
DECLARE j bigint;
BEGIN
  FOR j IN SELECT job_id FROM backfill.job WHERE upstream = up ORDER BY job_id LOOP
    COMMIT;
    CALL backfill.run_job(j, 2);
  END LOOP;
END $$;
CALL run_jobs_once('ck3');
SELECT job, kind, status, diffs FROM jobs_of('ck3');
INSERT INTO ck3 VALUES (ROW(-1, 'first'), 1, 1), (ROW(100, 'last'), 1, 1);
UPDATE ck3 SET v = -v WHERE n % 5 = 0;
UPDATE ck3 SET p = ROW((p).a + 10, (p).b)::pair WHERE n % 7 = 0;
DELETE FROM ck3 WHERE n % 11 = 0;
SELECT job, kind, status, diffs FROM jobs_of('ck3');
CALL run_jobs('ck3');
SELECT * FROM jobs_of('ck3');
INSERT INTO ck2 VALUES (ROW(100, 'x'), 1, 1);
INSERT INTO ck2 VALUES (ROW(101, 'x'), 1, 1), (ROW(102, 'y'), 2, 2);
UPDATE ck2 SET v = -v WHERE (p).a = 1;
UPDATE ck2 SET n = n + 1000 WHERE (p).a = 2;
DELETE FROM ck2 WHERE n % 2 = 0;
SELECT * FROM jobs_of('ck2');
SELECT * FROM jobs_of('dk3');


-- a DEFERRABLE primary key is refused as such, not reported as missing
CREATE TABLE dfk (id int PRIMARY KEY DEFERRABLE, v int);
SELECT backfill.create_job('dfk_mv', 'dfk');
SELECT backfill.create_job('dfk_mv', 'dfk', kind => 'cdc');
SELECT count(*) AS downstreams FROM pg_class WHERE relname = 'dfk_mv';

-- keys of types without an extended hash function (money, varbit) are
-- mapped to vnodes by ranges, like any other key
CREATE TABLE mk (id money PRIMARY KEY, v int);
SELECT backfill.create_job('mk_empty', 'mk');    -- no row to cut ranges from
INSERT INTO mk SELECT g::numeric::money, g FROM generate_series(1, 200) g;
SET backfill.vnode_mapping = 'hash';
SELECT backfill.create_job('mk_hashed', 'mk');
RESET backfill.vnode_mapping;
SELECT rows FROM backfill.estimate_job('mk', 'arrangement', NULL, 1);   -- it hashes
SELECT count(*) AS jobs FROM make_jobs('mk');
CALL run_jobs('mk');
SELECT * FROM jobs_of('mk');
INSERT INTO mk VALUES (1000, 1), (1001, 2);
UPDATE mk SET v = -v WHERE id < 10::money;
DELETE FROM mk WHERE id BETWEEN 20::money AND 30::money;
SELECT * FROM jobs_of('mk');
CREATE TABLE vbk (id varbit PRIMARY KEY, v int);
INSERT INTO vbk SELECT g::bit(12)::varbit, g FROM generate_series(1, 200) g;
SELECT count(*) AS jobs FROM make_jobs('vbk');
CALL run_jobs('vbk');
UPDATE vbk SET v = -v WHERE v % 3 = 0;
SELECT * FROM jobs_of('vbk');

-- a key whose btree operators are not named < <= > >= (hstore's are #<#,
-- #<=#, ...): positions are compared through the operators of the type's
-- btree operator class, so runs and verify_job no longer fail with
-- "operator does not exist: hstore <= hstore"
CREATE EXTENSION hstore;
CREATE TABLE hk (id hstore PRIMARY KEY, v int);
INSERT INTO hk SELECT hstore('k', g::text), g FROM generate_series(1, 200) g;
SELECT count(*) AS jobs FROM make_jobs('hk');
-- halfway, then writes on both sides of the positions
SELECT job_id AS hj FROM backfill.job WHERE upstream = 'hk'::regclass AND kind = 'arrangement' \gset
CALL backfill.run_job(:hj, 2);
SELECT status, (SELECT count(*) FROM backfill.verify_job(:hj)) AS diffs FROM backfill.jobs WHERE job_id = :hj;
UPDATE hk SET v = -v WHERE v % 10 = 0;
INSERT INTO hk VALUES (hstore('k', '0'), 0), (hstore('z', '1'), 1);
DELETE FROM hk WHERE v BETWEEN 50 AND 60;
CALL run_jobs('hk');
SELECT * FROM jobs_of('hk');
INSERT INTO hk VALUES (hstore('new', '1'), 1);
INSERT INTO hk VALUES (hstore('new', '2'), 2), (hstore('new', '3'), 3);
UPDATE hk SET v = v + 1000 WHERE v % 7 = 0;
UPDATE hk SET id = id || hstore('moved', 'yes') WHERE v % 11 = 0;
DELETE FROM hk WHERE v % 13 = 0;
SELECT * FROM jobs_of('hk');
-- a key of an int and an hstore: compared column by column
CREATE TABLE hk2 (n int, h hstore, v int, PRIMARY KEY (n, h));
INSERT INTO hk2 SELECT g % 5, hstore('k', g::text), g FROM generate_series(1, 200) g;
SELECT count(*) AS jobs FROM make_jobs('hk2');
CALL run_jobs('hk2');
UPDATE hk2 SET v = -v WHERE v % 3 = 0;
INSERT INTO hk2 VALUES (1, hstore('x', '1'), 1), (9, hstore('x', '1'), 1);
DELETE FROM hk2 WHERE v % 4 = 0;
SELECT * FROM jobs_of('hk2');
-- the statements name the operators with their schema and run under
-- search_path pg_catalog, pg_temp: nothing on the caller's path is read
SELECT backfill._key_compare_sql('hk', '{id}', 'a', '<=', 'b') AS one_column,
       backfill._key_compare_sql('hk2', '{n,h}', 'a', '>', 'b') AS two_columns,
       backfill._key_compare_sql('ck2', '{p,n}', 'a', '<', 'b') AS same_operators;

-- a run in the foreground that fails records its error on the job, as a
-- worker's does, in a transaction of its own (it was lost with the failed
-- one, the job left backfilling with no last_error)
CREATE TABLE fr (id int PRIMARY KEY, v int);
INSERT INTO fr SELECT g, g FROM generate_series(1, 200) g;
SELECT backfill.create_job('fr_mv', 'fr', filter => '100 / v <> 7', chunk_size => 30) AS fj \gset
UPDATE fr SET v = 0 WHERE id = 150;    -- the filter fails on this row
CALL backfill.run_job(:fj, 1);
SELECT status, last_error, (SELECT last_sqlstate FROM backfill.job j WHERE j.job_id = :fj) AS sqlstate FROM backfill.jobs WHERE job_id = :fj;
-- another role's call is not the job's failure: nothing recorded
CREATE ROLE regress_kt_other;
GRANT USAGE ON SCHEMA backfill TO regress_kt_other;
SET ROLE regress_kt_other;
CALL backfill.run_job(:fj);
RESET ROLE;
SELECT status, last_error FROM backfill.job WHERE job_id = :fj;
REVOKE USAGE ON SCHEMA backfill FROM regress_kt_other;
DROP ROLE regress_kt_other;
CALL backfill.run_job(:fj);
SELECT status, last_error, (SELECT last_sqlstate FROM backfill.job j WHERE j.job_id = :fj) AS sqlstate, (SELECT count(*) FROM fr_mv) AS copied
  FROM backfill.jobs WHERE job_id = :fj;
-- run again (from a procedure's loop): it fails again, recorded again
CALL run_jobs('fr');
SELECT status, last_error, (SELECT last_sqlstate FROM backfill.job j WHERE j.job_id = :fj) AS sqlstate FROM backfill.jobs WHERE job_id = :fj;
-- the session can go on: no lock, no snapshot, no role left behind
SELECT current_user, count(*) AS locks FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
UPDATE fr SET v = 150 WHERE id = 150;
CALL backfill.run_job(:fj);
SELECT status, last_error, (SELECT count(*) FROM backfill.verify_job(:fj)) AS diffs
  FROM backfill.jobs WHERE job_id = :fj;

-- an enum key: the bounds of range vnodes are keys stored as text, so
-- renaming a label is refused while an unfinished job has them (the rename
-- made every later run and verify_job fail with "invalid input value for
-- enum"); adding a value is not
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'ecstatic');
CREATE TABLE ek (m mood, n int, v int, PRIMARY KEY (m, n));
INSERT INTO ek SELECT (enum_range(NULL::mood))[1 + g % 4], g, g FROM generate_series(1, 400) g;
SELECT backfill.create_job('ek_mv', 'ek', parallelism => 2, chunk_size => 50) AS ej \gset
SELECT count(*) FILTER (WHERE b LIKE '%ok%') > 0 AS ok_in_bounds
  FROM backfill.job j, unnest(j.vnode_bounds) b WHERE j.job_id = :ej;
CALL backfill.run_job(:ej, 1);
ALTER TYPE mood RENAME VALUE 'ok' TO 'fine';
CALL backfill.run_job(:ej, 1);
SELECT status, (SELECT count(*) FROM backfill.verify_job(:ej)) AS diffs FROM backfill.jobs WHERE job_id = :ej;
CREATE TYPE mood_pair AS (a mood, b int);
CREATE TABLE ek2 (p mood_pair PRIMARY KEY);
INSERT INTO ek2 SELECT ROW((enum_range(NULL::mood))[1 + g % 4], g)::mood_pair FROM generate_series(1, 50) g;
SELECT backfill.create_job('ek2_mv', 'ek2') AS ej2 \gset
ALTER TYPE mood RENAME VALUE 'sad' TO 'blue';   -- the first job is named
SELECT backfill.drop_job(:ej);
ALTER TYPE mood RENAME VALUE 'sad' TO 'blue';   -- through a composite
ALTER TYPE mood ADD VALUE 'meh' AFTER 'ok';
SELECT backfill.cancel_job(:ej2) IS NOT NULL AS cancelled;
ALTER TYPE mood RENAME VALUE 'sad' TO 'blue';
SELECT backfill.create_job('ek_mv', 'ek', parallelism => 2, chunk_size => 50) AS ej \gset
CALL backfill.run_job(:ej);
SELECT status, (SELECT count(*) FROM backfill.verify_job(:ej)) AS diffs FROM backfill.jobs WHERE job_id = :ej;
-- once finished, the bounds are no longer read: the rename is free
ALTER TYPE mood RENAME VALUE 'ok' TO 'fine';
UPDATE ek SET v = -v WHERE m = 'fine';
SELECT status, (SELECT count(*) FROM backfill.verify_job(:ej)) AS diffs FROM backfill.jobs WHERE job_id = :ej;

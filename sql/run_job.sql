-- CALL backfill.run_job(): barriers, forwarding of changes, finishing.
SET backfill.barrier_interval_ms = 0;   -- one chunk per actor per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE items (id int PRIMARY KEY, v text, w int);
INSERT INTO items SELECT g, 'v' || g, g FROM generate_series(1, 100) g;
SELECT backfill.create_job('items_mv', 'items', columns => '{v}', chunk_size => 30) AS job \gset

-- barrier 1 reads keys 1..30
CALL backfill.run_job(:job, 1);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :job;
SELECT current_pos, backfill_finished, count(*) AS vnodes, sum(row_count) AS rows
  FROM backfill.job_state(:job) GROUP BY 1, 2;
SELECT count(*), min(id), max(id) FROM items_mv;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;

-- changes below, at and above the position; w is not an output column
UPDATE items SET v = 'changed' WHERE id IN (5, 30, 31, 90);
DELETE FROM items WHERE id IN (6, 32);
INSERT INTO items VALUES (0, 'new below', 0), (1000, 'new above', 0);
UPDATE items SET w = -1 WHERE id = 7;
-- captured, not yet forwarded: pending, not differences
SELECT count(*) AS captured_keys FROM backfill.changes_1;
SELECT * FROM items_mv WHERE id IN (0, 5, 6, 30) ORDER BY id;
SELECT * FROM backfill.verify_job(:job);

-- barrier 2 forwards the changes at or below 30, then reads 31..60
CALL backfill.run_job(:job, 1);
SELECT count(*) AS captured_keys FROM backfill.changes_1;
SELECT * FROM items_mv WHERE id IN (0, 5, 6, 30, 31, 32) ORDER BY id;
SELECT DISTINCT current_pos FROM backfill.job_state(:job);
SELECT * FROM backfill.verify_job(:job);

-- keys move: below to above, above to below, out and back in, onto itself
UPDATE items SET id = 2000 WHERE id = 10;
UPDATE items SET id = 6 WHERE id = 1000;
UPDATE items SET id = 3000 WHERE id = 20;
UPDATE items SET id = 20 WHERE id = 3000;
UPDATE items SET id = 8 WHERE id = 8;
CALL backfill.run_job(:job, 1);
SELECT * FROM items_mv WHERE id IN (6, 8, 10, 20, 1000, 2000) ORDER BY id;
SELECT * FROM backfill.verify_job(:job);

-- the rest: read to the end, then the final barrier switches the triggers
CALL backfill.run_job(:job);
SELECT status, row_count, finished_at IS NOT NULL AS has_finished_at FROM backfill.jobs WHERE job_id = :job;
SELECT DISTINCT current_pos, backfill_finished FROM backfill.job_state(:job);
-- no longer being created: not in ddl_progress, 100% in backfill.jobs
SELECT progress FROM backfill.jobs WHERE job_id = :job;
SELECT count(*) AS in_ddl_progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'items'::regclass ORDER BY tgname;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM items) AS upstream, (SELECT count(*) FROM items_mv) AS downstream;

-- finished: every write reaches the downstream in the writer's transaction
BEGIN;
INSERT INTO items VALUES (500, 'in a transaction', 1);
UPDATE items SET v = 'moved' , id = 501 WHERE id = 1;
DELETE FROM items WHERE id = 2;
SELECT * FROM items_mv WHERE id IN (1, 2, 500, 501) ORDER BY id;
ROLLBACK;
SELECT * FROM items_mv WHERE id IN (1, 2, 500, 501) ORDER BY id;
UPDATE items SET id = id + 10000 WHERE id <= 20;   -- one statement, many keys
DELETE FROM items WHERE id % 7 = 0;
SELECT count(*) AS captured_keys FROM backfill.changes_1;
SELECT * FROM backfill.verify_job(:job);
-- a finished job runs again without doing anything
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;

-- parallelism 4: each actor keeps its own position
CREATE TABLE wide (id bigint PRIMARY KEY, payload text);
INSERT INTO wide SELECT g, repeat('x', g % 50) FROM generate_series(1, 2000) g;
SELECT backfill.create_job('wide_mv', 'wide', parallelism => 4, chunk_size => 100) AS job4 \gset
CALL backfill.run_job(:job4, 2);
SELECT actor_id, count(DISTINCT current_pos) AS positions, bool_or(backfill_finished) AS finished
  FROM backfill.job_state(:job4) GROUP BY actor_id ORDER BY actor_id;
SELECT row_count FROM backfill.jobs WHERE job_id = :job4;
SELECT count(*) FROM wide_mv;
UPDATE wide SET payload = 'p' WHERE id % 13 = 0;
DELETE FROM wide WHERE id % 17 = 0;
INSERT INTO wide SELECT g, 'late' FROM generate_series(2001, 2100) g;
CALL backfill.run_job(:job4, 1);
SELECT * FROM backfill.verify_job(:job4);
CALL backfill.run_job(:job4);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :job4;
SELECT * FROM backfill.verify_job(:job4);

-- an empty upstream: every vnode finishes at once, with no position
CREATE TABLE empty_up (k text PRIMARY KEY);
SELECT backfill.create_job('empty_mv', 'empty_up', parallelism => 2) AS job5 \gset
CALL backfill.run_job(:job5, 1);
SELECT DISTINCT current_pos, backfill_finished, row_count FROM backfill.job_state(:job5);
SELECT status FROM backfill.jobs WHERE job_id = :job5;
CALL backfill.run_job(:job5, 1);
SELECT status, progress FROM backfill.jobs WHERE job_id = :job5;
INSERT INTO empty_up VALUES ('a'), ('b');
SELECT * FROM empty_mv ORDER BY k;

-- barrier interval: at least one chunk per actor, more until it has passed
CREATE TABLE timed (id int PRIMARY KEY);
INSERT INTO timed SELECT generate_series(1, 5000);
SELECT backfill.create_job('timed_mv', 'timed', chunk_size => 10) AS job6 \gset
SET backfill.barrier_interval_ms = 200;
CALL backfill.run_job(:job6, 1);
SELECT row_count > 10 AS read_more_than_one_chunk, row_count % 10 = 0 AS whole_chunks
  FROM backfill.jobs WHERE job_id = :job6;
SET backfill.barrier_interval_ms = 0;

-- bad calls
CALL backfill.run_job(NULL);
CALL backfill.run_job(999);
CALL backfill.run_job(:job6, 0);
CALL backfill.run_job(:job6, -1);
BEGIN;
CALL backfill.run_job(:job6);
ROLLBACK;
SET backfill.barrier_interval_ms = -1;

-- Observing jobs: backfill.jobs, backfill.ddl_progress, job_state, verify_job.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE obs (id int PRIMARY KEY, v text, n numeric);
INSERT INTO obs SELECT g, 'v' || g, g / 3.0 FROM generate_series(1, 3000) g;
SELECT backfill.create_job('obs_mv', 'obs', chunk_size => 7) AS job \gset

-- progress as RisingWave formats it: two decimals, consumed/total
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
CALL backfill.run_job(:job, 1);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
CALL backfill.run_job(:job, 2);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
-- capped at 99.99% until finished, even when more rows were read than counted
UPDATE backfill.job SET total_rows = 21 WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
UPDATE backfill.job SET total_rows = 0 WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
-- a restart counts the upstream again
INSERT INTO obs SELECT g, 'late', 0 FROM generate_series(3001, 3500) g;
CALL backfill.run_job(:job, 1);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;

-- epochs: RisingWave's layout (milliseconds since 2021-04-01 << 16), increasing
SELECT epoch > (((extract(epoch FROM now() - interval '1 day') * 1000)::bigint - 1617235200000) << 16) AS epoch_is_recent
  FROM backfill.jobs WHERE job_id = :job;
CREATE TEMP TABLE e1 AS SELECT epoch FROM backfill.jobs WHERE job_id = :job;
CALL backfill.run_job(:job, 1);
SELECT j.epoch > e1.epoch AS epoch_increased FROM backfill.jobs j, e1 WHERE j.job_id = :job;

-- job_state: one row per vnode, the actor that owns it
SELECT count(*), count(DISTINCT actor_id), min(vnode), max(vnode) FROM backfill.job_state(:job);
SELECT DISTINCT current_pos, backfill_finished FROM backfill.job_state(:job);

-- verify_job finds every kind of difference
UPDATE obs_mv SET v = 'tampered' WHERE id = 3;
DELETE FROM obs_mv WHERE id = 4;
INSERT INTO obs_mv VALUES (2999, 'beyond the position', 0);
UPDATE obs_mv SET n = n + 0.0 WHERE id = 5;     -- 5/3.0 kept exactly: no difference
SELECT * FROM backfill.verify_job(:job);
-- keys written since the last barrier are pending, not differences
UPDATE obs SET v = 'pending' WHERE id IN (3, 10);
SELECT * FROM backfill.verify_job(:job);
UPDATE obs_mv SET v = 'v3' WHERE id = 3;
INSERT INTO obs_mv VALUES (4, 'v4', 4 / 3.0);
DELETE FROM obs_mv WHERE id = 2999;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);
-- once finished, every row is covered
DELETE FROM obs_mv WHERE id = 3500;
SELECT * FROM backfill.verify_job(:job);
INSERT INTO obs_mv SELECT * FROM obs WHERE id = 3500;
SELECT * FROM backfill.verify_job(:job);

-- the views' columns
\d backfill.jobs
\d backfill.ddl_progress
SELECT job_id, job_name, kind, status, upstream, downstream, parallelism, chunk_size, row_count, last_error, state_table
  FROM backfill.jobs;

-- bad calls
SELECT * FROM backfill.verify_job(NULL);
SELECT * FROM backfill.verify_job(42);
SELECT * FROM backfill.job_state(42);

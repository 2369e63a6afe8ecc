-- cancel_job, drop_job, recreate_job: what they remove, and when they refuse.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE src (id int PRIMARY KEY, v text);
INSERT INTO src SELECT g, 'v' || g FROM generate_series(1, 500) g;

-- cancel a backfilling job: downstream, state, change table and triggers go
SELECT backfill.create_job('src_mv', 'src', chunk_size => 100) AS job \gset
CALL backfill.run_job(:job, 1);
SELECT backfill.cancel_job(:job);
SELECT status, downstream, state_table FROM backfill.jobs WHERE job_id = :job;
SELECT to_regclass('src_mv') AS downstream, to_regclass('backfill.state_1') AS state,
       to_regclass('backfill.changes_1') AS changes;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'src'::regclass;
SELECT count(*) AS actors FROM backfill.actor WHERE job_id = :job;
-- writers are unaffected
INSERT INTO src VALUES (1000, 'after cancel');
-- a cancelled job cannot run, be verified or be cancelled again
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);
SELECT backfill.cancel_job(:job);
-- recreate: a new job, same definition, new ids
SELECT backfill.recreate_job(:job) AS job2 \gset
SELECT job_id, job_name, kind, status, fragment_id <> 1 AS new_fragment FROM backfill.jobs ORDER BY job_id;
SELECT count(*) AS actors FROM backfill.actor WHERE job_id = :job2;
CALL backfill.run_job(:job2);
SELECT * FROM backfill.verify_job(:job2);
-- a finished job cannot be cancelled or recreated: drop it
SELECT backfill.cancel_job(:job2);
SELECT backfill.recreate_job(:job2);
SELECT backfill.drop_job(:job2);
SELECT to_regclass('src_mv') AS downstream;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'src'::regclass;
-- the cancelled job's row stays until it is dropped
SELECT job_id, status FROM backfill.jobs ORDER BY job_id;
SELECT backfill.drop_job(:job);
SELECT count(*) AS jobs FROM backfill.jobs;

-- recreate a pending job, changing its kind; cancel a failed one
SELECT backfill.create_job('public.src_mv', 'src', kind => 'no_shuffle', columns => '{v}', parallelism => 2) AS job \gset
SELECT backfill.recreate_job(:job, 'arrangement') AS job2 \gset
SELECT job_id, job_name, kind, status, parallelism FROM backfill.jobs ORDER BY job_id;
\d src_mv
SELECT backfill.cancel_job(:job2);
SELECT backfill.create_job('src_mv', 'src', kind => 'no_shuffle', chunk_size => 50) AS job3 \gset
CALL backfill.run_job(:job3, 1);
\set VERBOSITY sqlstate
CALL backfill.run_job(:job3);
\set VERBOSITY default
SELECT status FROM backfill.jobs WHERE job_id = :job3;
SELECT backfill.cancel_job(:job3);
SELECT to_regclass('src_mv') AS downstream;
-- a bad kind leaves the cancelled job as it was
SELECT backfill.recreate_job(:job3, 'nonsense');
SELECT job_id, kind, status FROM backfill.jobs ORDER BY job_id;

-- drop a job in each status
SELECT backfill.create_job('pending_mv', 'src') AS p \gset
SELECT backfill.create_job('running_mv', 'src', chunk_size => 10) AS r \gset
CALL backfill.run_job(:r, 1);
SELECT backfill.drop_job(:p), backfill.drop_job(:r);
SELECT to_regclass('pending_mv'), to_regclass('running_mv');
SELECT backfill.drop_job(job_id) FROM backfill.job;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'src'::regclass;
SELECT relname FROM pg_class WHERE relnamespace = 'backfill'::regnamespace AND relkind = 'r' ORDER BY relname;

-- a job's downstream cannot be dropped by hand (see ddl.sql); with the
-- event trigger disabled it can, and the job can still be dropped
SELECT backfill.create_job('gone_mv', 'src') AS g \gset
ALTER EVENT TRIGGER backfill_ddl_drop DISABLE;
DROP TABLE gone_mv;
ALTER EVENT TRIGGER backfill_ddl_drop ENABLE;
SELECT backfill.drop_job(:g);

-- bad calls
SELECT backfill.cancel_job(NULL);
SELECT backfill.cancel_job(99);
SELECT backfill.drop_job(99);
SELECT backfill.recreate_job(99);

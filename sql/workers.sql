-- Rate limits, reschedule, and the background-worker functions in a server
-- that does not preload the library.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);

CREATE TABLE w (id int PRIMARY KEY, v text);
INSERT INTO w SELECT g, 'v' || g FROM generate_series(1, 1000) g;

-- a rate limit set at creation shrinks chunks to the limit
SELECT backfill.create_job('w_mv', 'w', chunk_size => 100, rate_limit => 7) AS job \gset
SELECT rate_limit FROM backfill.jobs WHERE job_id = :job;
CALL backfill.run_job(:job, 1);
SELECT row_count, (SELECT DISTINCT current_pos FROM backfill.job_state(:job)) FROM backfill.jobs WHERE job_id = :job;

-- paused: no snapshot rows, but barriers and changes below the position go on
SELECT backfill.alter_rate_limit(:job, 0);
SELECT epoch AS epoch_before FROM backfill.jobs WHERE job_id = :job \gset
UPDATE w SET v = 'changed while paused' WHERE id = 3;
CALL backfill.run_job(:job, 3);
SELECT row_count, epoch > :epoch_before AS barriers_went_on FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM w_mv WHERE id = 3;
SELECT * FROM backfill.verify_job(:job);
-- unlimited again
SELECT backfill.alter_rate_limit(:job, NULL);
CALL backfill.run_job(:job, 1);
SELECT row_count FROM backfill.jobs WHERE job_id = :job;

-- reschedule: new actors, new ids, even ranges; every vnode keeps its progress
CREATE TEMP TABLE before_reschedule AS SELECT vnode, current_pos, row_count FROM backfill.job_state(:job);
SELECT backfill.reschedule(:job, 3);
SELECT actor_id, fragment_id, vnode_start, vnode_end, row_count FROM backfill.actor WHERE job_id = :job ORDER BY actor_id;
SELECT parallelism, row_count FROM backfill.jobs WHERE job_id = :job;
SELECT count(*) AS vnodes_unchanged
  FROM backfill.job_state(:job) s JOIN before_reschedule b USING (vnode)
 WHERE s.current_pos = b.current_pos AND s.row_count = b.row_count;
SELECT backfill.reschedule(:job, 2);
SELECT actor_id, vnode_start, vnode_end FROM backfill.actor WHERE job_id = :job ORDER BY actor_id;
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);

-- a legacy job cannot be rescheduled before it has finished, as in
-- RisingWave: pending, backfilling or failed, the actors stay as they are
SELECT backfill.create_job('w_legacy', 'w', kind => 'no_shuffle', parallelism => 4, chunk_size => 50) AS legacy \gset
CREATE TEMP TABLE legacy_actors AS SELECT actor_id, vnode_start, vnode_end FROM backfill.actor WHERE job_id = :legacy;
SELECT backfill.reschedule(:legacy, 2);
CALL backfill.run_job(:legacy, 1);
SELECT backfill.reschedule(:legacy, 2);
SELECT min(actor_id) AS first_actor FROM backfill.actor WHERE job_id = :legacy \gset
\set VERBOSITY sqlstate
CALL backfill.run_job(:legacy);
\set VERBOSITY default
SELECT status, last_error LIKE '%, actor_id=' || :first_actor || ', %' AS names_first_actor
  FROM backfill.jobs WHERE job_id = :legacy;
\set VERBOSITY sqlstate
SELECT backfill.reschedule(:legacy, 8);
\set VERBOSITY default
SELECT (SELECT count(*) FROM legacy_actors) AS actors,
       (SELECT count(*) FROM (SELECT actor_id, vnode_start, vnode_end FROM backfill.actor WHERE job_id = :legacy
                              EXCEPT SELECT * FROM legacy_actors) x) AS changed;

-- wait_job: returns once finished, raises the error of a failed job
SELECT backfill.wait_job(:job);
\set VERBOSITY sqlstate
SELECT backfill.wait_job(:legacy);
\set VERBOSITY default
SELECT backfill.create_job('w_idle', 'w') AS idle \gset
SELECT backfill.wait_job(:idle);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT backfill.wait_job(:job);
ROLLBACK;

-- without shared_preload_libraries there are no workers
SELECT backfill.start_job(:idle);
SELECT backfill.stop_job(:idle);
SELECT * FROM backfill.workers;
SELECT worker_pids FROM backfill.jobs WHERE job_id = :idle;

-- bad input
SELECT backfill.create_job('x', 'w', rate_limit => -1);
SELECT backfill.alter_rate_limit(:idle, -5);
SELECT backfill.alter_rate_limit(999, 5);
SELECT backfill.reschedule(:idle, 0);
SELECT backfill.reschedule(:idle, 257);
SELECT backfill.reschedule(:idle, NULL);
SELECT backfill.reschedule(999, 2);
SELECT backfill.cancel_job(:idle);
SELECT backfill.reschedule(:idle, 2);
SELECT backfill.start_job(:idle);
SELECT backfill.wait_job(:idle);
SELECT backfill.stop_job(999);
SELECT backfill.wait_job(NULL);

-- a legacy job that has finished may be rescheduled
SELECT backfill.create_job('w_legacy_done', 'w', kind => 'no_shuffle', parallelism => 2) AS done \gset
CALL backfill.run_job(:done);
SELECT backfill.reschedule(:done, 3);
SELECT status, parallelism FROM backfill.jobs WHERE job_id = :done;
UPDATE w SET v = 'after the reschedule' WHERE id = 1;
SELECT * FROM backfill.verify_job(:done);
SELECT backfill.drop_job(:done);

-- backfill.rate_limit: the limit of jobs created without one, as RisingWave's
-- session variable backfill_rate_limit (-1, the default, is none; 0 pauses)
SHOW backfill.rate_limit;
SET backfill.rate_limit = 5;
SELECT backfill.create_job('w_default', 'w', chunk_size => 100) AS dflt \gset
SELECT backfill.create_job('w_explicit', 'w', rate_limit => 9) AS explicit \gset
SET backfill.rate_limit = 0;
SELECT backfill.create_job('w_paused', 'w') AS paused \gset
SET backfill.rate_limit = -1;
SELECT backfill.create_job('w_unlimited', 'w') AS unlimited \gset
SELECT job_name, rate_limit FROM backfill.jobs WHERE job_id IN (:dflt, :explicit, :paused, :unlimited) ORDER BY job_id;
-- the default is the job's own limit: chunks of 5, and the paused one reads nothing
CALL backfill.run_job(:dflt, 1);
CALL backfill.run_job(:paused, 2);
SELECT job_name, row_count FROM backfill.jobs WHERE job_id IN (:dflt, :paused) ORDER BY job_id;
SET backfill.rate_limit = -2;
RESET backfill.rate_limit;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job WHERE job_name LIKE 'w\_%' AND job_id > 4; END$$;

-- Restarts: the recovery check, resuming, and state rows that cannot be decoded.
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);

CREATE TABLE legacy_up (id int PRIMARY KEY, v text);
INSERT INTO legacy_up SELECT g, 'v' || g FROM generate_series(1, 1000) g;

-- a legacy job interrupted after one barrier cannot resume
SELECT backfill.create_job('legacy_mv', 'legacy_up', kind => 'no_shuffle', parallelism => 2, chunk_size => 100);
CALL backfill.run_job(1, 1);
-- every vnode row of an actor holds the actor's position and total
SELECT actor_id, count(*) AS vnodes, count(DISTINCT current_pos) AS positions,
       min(row_count) AS row_count, bool_or(backfill_finished) AS finished
  FROM backfill.job_state(1) GROUP BY actor_id ORDER BY actor_id;
SELECT row_count FROM backfill.jobs WHERE job_id = 1;
-- the restart: the upstream's OID varies, so the message is checked below
\set VERBOSITY sqlstate
CALL backfill.run_job(1);
\set VERBOSITY default
SELECT j.status,
       j.last_error = format('legacy no-shuffle backfill recovered unfinished progress; cancel and recreate the streaming job. upstream_table_id=%s, fragment_id=%s, actor_id=%s, current_pos=Some(OwnedRow([Some(Int32(%s))])), row_count=%s',
                             'legacy_up'::regclass::oid, j.fragment_id, s.actor_id, btrim(s.current_pos, '()'), s.row_count) AS exact_message,
       replace(j.last_error, 'upstream_table_id=' || 'legacy_up'::regclass::oid, 'upstream_table_id=<oid>') AS last_error,
       j2.last_error_detail, j2.last_sqlstate
  FROM backfill.jobs j
  JOIN backfill.job j2 USING (job_id)
  JOIN backfill.job_state(1) s ON s.vnode = 0
 WHERE j.job_id = 1;
-- the downstream holds exactly what the last committed barrier wrote
SELECT count(*) FROM legacy_mv;
SELECT * FROM backfill.verify_job(1);
-- every later run fails the same way
\set VERBOSITY sqlstate
CALL backfill.run_job(1);
\set VERBOSITY default
SELECT status, last_error LIKE 'legacy no-shuffle backfill recovered unfinished progress; %' AS same_error
  FROM backfill.jobs WHERE job_id = 1;
-- the way out: cancel and recreate, here migrating to arrangement
SELECT backfill.recreate_job(1, 'arrangement');
SELECT job_id, job_name, kind, status FROM backfill.jobs ORDER BY job_id;
CALL backfill.run_job(2);
SELECT status FROM backfill.jobs WHERE job_id = 2;
SELECT * FROM backfill.verify_job(2);

-- an actor with no state rows at all: current_pos=None, row_count=0
SELECT backfill.drop_job(2);
SELECT backfill.create_job('legacy_mv', 'legacy_up', kind => 'no_shuffle', chunk_size => 100) AS job \gset
CALL backfill.run_job(:job, 1);
DELETE FROM backfill.state_3;
DELETE FROM legacy_mv;
\set VERBOSITY sqlstate
CALL backfill.run_job(:job);
\set VERBOSITY default
SELECT replace(last_error, 'upstream_table_id=' || 'legacy_up'::regclass::oid, 'upstream_table_id=<oid>') AS last_error
  FROM backfill.jobs WHERE job_id = :job;

-- a legacy job that finished restarts fine
SELECT backfill.drop_job(:job);
SELECT backfill.create_job('legacy_mv', 'legacy_up', kind => 'no_shuffle', chunk_size => 500) AS job \gset
CALL backfill.run_job(:job);
CALL backfill.run_job(:job);
SELECT status, row_count, last_error FROM backfill.jobs WHERE job_id = :job;
-- ... and so does one killed after its snapshot ended, before its final barrier
SELECT backfill.drop_job(:job);
SELECT backfill.create_job('legacy_mv', 'legacy_up', kind => 'no_shuffle', chunk_size => 500) AS job \gset
CALL backfill.run_job(:job, 3);
SELECT status, (SELECT bool_and(backfill_finished) FROM backfill.job_state(:job)) AS all_finished
  FROM backfill.jobs WHERE job_id = :job;
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT backfill.drop_job(:job);

-- an arrangement job resumes where its last barrier left it
CREATE TABLE arr_up (a int, b text, PRIMARY KEY (a, b));
INSERT INTO arr_up SELECT g % 40, 'k' || g FROM generate_series(1, 2000) g;
SELECT backfill.create_job('arr_mv', 'arr_up', parallelism => 3, chunk_size => 64) AS arr \gset
CALL backfill.run_job(:arr, 2);
CREATE TABLE positions AS SELECT vnode, current_pos, row_count FROM backfill.job_state(:arr);
SELECT row_count FROM backfill.jobs WHERE job_id = :arr;
DELETE FROM arr_up WHERE a = 0;
UPDATE arr_up SET a = a + 100 WHERE a = 1;
-- the restart resumes after each vnode's position, exclusive: one more chunk per actor
CALL backfill.run_job(:arr, 1);
SELECT count(*) AS vnodes_moved_forward
  FROM backfill.job_state(:arr) s JOIN positions p USING (vnode)
 WHERE s.current_pos::text <> p.current_pos AND s.row_count >= p.row_count;
SELECT row_count FROM backfill.jobs WHERE job_id = :arr;
SELECT * FROM backfill.verify_job(:arr);
CALL backfill.run_job(:arr);
SELECT status FROM backfill.jobs WHERE job_id = :arr;
SELECT * FROM backfill.verify_job(:arr);
SELECT backfill.drop_job(:arr);
DROP TABLE positions;

-- state rows that cannot be decoded: DATA_CORRUPTED, recorded on the job
SELECT backfill.create_job('arr_mv', 'arr_up', chunk_size => 64) AS bad \gset
CALL backfill.run_job(:bad, 1);
\set st 'backfill.state_' :bad
UPDATE :st SET row_count = NULL WHERE vnode = 5;
CALL backfill.run_job(:bad);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
UPDATE :st SET row_count = -1 WHERE vnode = 5;
CALL backfill.run_job(:bad);
-- both broken: row_count is checked first, as RisingWave does
UPDATE :st SET backfill_finished = NULL WHERE vnode = 5;
CALL backfill.run_job(:bad);
UPDATE :st SET row_count = 7 WHERE vnode = 5;
CALL backfill.run_job(:bad);
UPDATE :st SET backfill_finished = false WHERE vnode = 5;
-- a position that is only half there, and a vnode out of range
UPDATE :st SET a = NULL WHERE vnode = 6;
CALL backfill.run_job(:bad);
UPDATE :st SET a = (SELECT a FROM :st WHERE vnode = 7) WHERE vnode = 6;
INSERT INTO :st VALUES (300, 1, 'x', false, 0);
CALL backfill.run_job(:bad);
DELETE FROM :st WHERE vnode = 300;
-- repaired: the job runs again and finishes consistent
CALL backfill.run_job(:bad);
SELECT status, last_error FROM backfill.jobs WHERE job_id = :bad;
SELECT * FROM backfill.verify_job(:bad);
SELECT backfill.drop_job(:bad);

-- legacy vnodes of one actor that disagree
SELECT backfill.create_job('legacy_mv', 'legacy_up', kind => 'no_shuffle', chunk_size => 100) AS job \gset
CALL backfill.run_job(:job, 1);
\set st 'backfill.state_' :job
UPDATE :st SET backfill_finished = true WHERE vnode = 17;
CALL backfill.run_job(:job);
SELECT status, last_error FROM backfill.jobs WHERE job_id = :job;
SELECT backfill.drop_job(:job);

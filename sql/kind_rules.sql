-- job_state, job_splits and reschedule, which ask a job's kind (its
-- routine's callbacks) rather than branch on it: each local kind's state
-- rows, in their order; splits only for a kind that cuts its own; the
-- reschedule rule of a cdc job; who sees another role's job, both ways.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
CREATE ROLE regress_kr_plain;
CREATE ROLE regress_kr_member IN ROLE regress_kr_plain;
CREATE SCHEMA regress_kr AUTHORIZATION regress_kr_plain;

-- the superuser's jobs: one of each kind that reads a local table
CREATE TABLE kr_up (id int PRIMARY KEY, v text);
INSERT INTO kr_up SELECT g, 'v' || g FROM generate_series(1, 40) g;
SELECT backfill.create_job('kr_arr', 'kr_up', kind => 'arrangement', parallelism => 2, chunk_size => 10) AS arr \gset
SELECT backfill.create_job('kr_snap', 'kr_up', kind => 'snapshot', chunk_size => 10) AS snap \gset
SELECT backfill.create_job('kr_cdc', 'kr_up', kind => 'cdc', chunk_size => 10) AS cdc \gset

-- before any run: every vnode on its actor, in vnode order, not started
SELECT count(*) AS vnodes, count(DISTINCT actor_id) AS actors,
       bool_and(vnode = o - 1) AS in_order, bool_or(backfill_finished) AS any_finished,
       sum(row_count) AS rows, count(current_pos) AS positions,
       count(epoch) AS epochs, count(cdc_offset) AS offsets
  FROM backfill.job_state(:arr) WITH ORDINALITY
       s(actor_id, vnode, current_pos, backfill_finished, row_count, epoch, cdc_offset, o);
-- each actor holds one contiguous half
SELECT min(vnode), max(vnode), count(*) FROM backfill.job_state(:arr)
 GROUP BY actor_id ORDER BY min(vnode);
SELECT count(*) AS vnodes, count(DISTINCT actor_id) AS actors, bool_and(vnode = o - 1) AS in_order,
       bool_or(backfill_finished) AS any_finished, sum(row_count) AS rows
  FROM backfill.job_state(:snap) WITH ORDINALITY
       s(actor_id, vnode, current_pos, backfill_finished, row_count, epoch, cdc_offset, o);
-- a cdc job: one split for the whole table, no vnode
SELECT vnode, current_pos, backfill_finished, row_count, epoch, cdc_offset
  FROM backfill.job_state(:cdc);

-- run to the end: finished everywhere, every row counted once
CALL backfill.run_job(:arr);
CALL backfill.run_job(:snap);
CALL backfill.run_job(:cdc);
SELECT count(*) AS vnodes, bool_and(backfill_finished) AS finished, sum(row_count) AS rows
  FROM backfill.job_state(:arr);
SELECT count(*) AS vnodes, bool_and(backfill_finished) AS finished,
       count(epoch) > 0 AS has_epochs, count(cdc_offset) AS offsets
  FROM backfill.job_state(:snap);
SELECT vnode, backfill_finished, row_count, epoch, cdc_offset IS NOT NULL AS has_offset
  FROM backfill.job_state(:cdc);

-- splits: only a job whose upstream is on other servers cuts its own
SELECT count(*) AS splits FROM backfill.job_splits(:arr);
SELECT count(*) AS splits FROM backfill.job_splits(:cdc);
SELECT count(*) AS splits FROM backfill.job_splits(NULL::bigint);
SELECT count(*) AS splits FROM backfill.job_splits(-1);

-- reschedule: a cdc job reads with one actor, whatever it is rescheduled to
SELECT backfill.reschedule(:cdc, 2);
SELECT backfill.reschedule(:cdc, 1);
SELECT count(*) AS actors FROM backfill.actor WHERE job_id = :cdc;
-- the others spread their vnodes anew, keeping their progress
SELECT backfill.reschedule(:arr, 4);
SELECT backfill.reschedule(:snap, 3);
SELECT count(DISTINCT actor_id) AS actors, bool_and(backfill_finished) AS finished, sum(row_count) AS rows
  FROM backfill.job_state(:arr);
SELECT count(DISTINCT actor_id) AS actors, bool_and(backfill_finished) AS finished
  FROM backfill.job_state(:snap);
SELECT backfill.reschedule(:arr, 0);
SELECT backfill.reschedule(:arr, NULL);

-- a plain role sees nothing of the superuser's jobs
SET ROLE regress_kr_plain;
\set VERBOSITY sqlstate
SELECT count(*) FROM backfill.job_state(:arr);
SELECT backfill.reschedule(:arr, 2);
\set VERBOSITY default
SELECT count(*) AS splits FROM backfill.job_splits(:arr);
-- its own job: its state, and a reschedule
CREATE TABLE regress_kr.up (id int PRIMARY KEY, v text);
INSERT INTO regress_kr.up SELECT g, 'v' || g FROM generate_series(1, 20) g;
SELECT backfill.create_job('regress_kr.up_mv', 'regress_kr.up', chunk_size => 5) AS plain_job \gset
CALL backfill.run_job(:plain_job);
SELECT count(*) AS vnodes, bool_and(backfill_finished) AS finished, sum(row_count) AS rows
  FROM backfill.job_state(:plain_job);
SELECT backfill.reschedule(:plain_job, 2);
-- a member of the owner's role sees it too
SET ROLE regress_kr_member;
SELECT count(*) AS vnodes, count(DISTINCT actor_id) AS actors, sum(row_count) AS rows
  FROM backfill.job_state(:plain_job);
RESET ROLE;
-- and a superuser, against the plain role's job
SELECT count(*) AS vnodes, count(DISTINCT actor_id) AS actors, sum(row_count) AS rows
  FROM backfill.job_state(:plain_job);
SELECT backfill.reschedule(:plain_job, 1);
SELECT count(DISTINCT actor_id) AS actors FROM backfill.job_state(:plain_job);

-- a cancelled job has no state left to read
SELECT backfill.create_job('kr_cancelled', 'kr_up') AS cancelled \gset
SELECT backfill.cancel_job(:cancelled) = :cancelled AS cancelled;
\set VERBOSITY sqlstate
SELECT count(*) FROM backfill.job_state(:cancelled);
SELECT backfill.reschedule(:cancelled, 2);
\set VERBOSITY default
SELECT count(*) AS splits FROM backfill.job_splits(:cancelled);
SELECT backfill.drop_job(:cancelled);

SELECT backfill.drop_job(:arr);
SELECT backfill.drop_job(:snap);
SELECT backfill.drop_job(:cdc);
SELECT backfill.drop_job(:plain_job);
DROP TABLE kr_up;
DROP SCHEMA regress_kr CASCADE;
DROP ROLE regress_kr_member;
DROP ROLE regress_kr_plain;

-- kind "snapshot": the upstream as of create_job, then the log store, then
-- the upstream itself; restarts, the progress table's checks, refusals.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;   -- one chunk per actor per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);

CREATE TABLE snap (id int PRIMARY KEY, v text, w int);
INSERT INTO snap SELECT g, 'v' || g, g FROM generate_series(1, 100) g;
SELECT backfill.create_job('snap_mv', 'snap', kind => 'snapshot', columns => '{v}', chunk_size => 30) AS job \gset
\set st 'backfill.state_' :job
\set log 'backfill.changes_' :job

-- the progress table, in RisingWave's layout; the log with the before-images
SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull
  FROM pg_attribute WHERE attrelid = :'st'::regclass AND attnum > 0 ORDER BY attnum;
SELECT indexrelid::regclass AS index, indisprimary, pg_get_indexdef(indexrelid) LIKE '%(vnode)' AS on_vnode
  FROM pg_index WHERE indrelid = :'st'::regclass;
SELECT attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute WHERE attrelid = :'log'::regclass AND attnum > 0 ORDER BY attnum;
SELECT regexp_replace(pg_get_indexdef(indexrelid), 'INDEX \S+ ON', 'INDEX <name> ON') AS log_index
  FROM pg_index WHERE indrelid = :'log'::regclass;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'snap'::regclass ORDER BY tgname;
-- the snapshot epoch: create_job's time, in RisingWave's epoch format
SELECT kind, status, epoch,
       snapshot_epoch & 65535 = 0 AS whole_ms,
       abs((snapshot_epoch >> 16) - extract(epoch FROM created_at - '2021-04-01 00:00:00+00') * 1000) < 60000
           AS at_create_job
  FROM backfill.jobs WHERE job_id = :job;
SELECT snapshot_epoch FROM backfill.job WHERE job_id = :job \gset
SELECT count(*) AS state_rows FROM :st;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;

-- the upstream as it was at create_job, then writes after it: changes, deletes,
-- inserts, keys that move, a change to a column that is not copied
CREATE TABLE snap_at_create AS SELECT id, v FROM snap;
UPDATE snap SET v = 'changed' WHERE id IN (5, 40, 90);
DELETE FROM snap WHERE id IN (6, 41, 91);
INSERT INTO snap VALUES (0, 'new below', 0), (1000, 'new above', 0);
DELETE FROM snap WHERE id = 95;             -- deleted, then inserted again
INSERT INTO snap VALUES (95, 'reinserted', 0);
UPDATE snap SET id = 2000 WHERE id = 10;    -- a key moves away
UPDATE snap SET id = 41 WHERE id = 50;      -- onto a key deleted above
UPDATE snap SET w = -1 WHERE id = 8;
-- the log: every write, the first entry of a key holding its image at create_job
SELECT id, backfill_old_row, backfill_captured_at IS NOT NULL AS has_time
  FROM :log ORDER BY id, backfill_seq;

-- barrier 1 reads keys 1..30 as of create_job, and stops at 31, the next key to read
CALL backfill.run_job(:job, 1);
SELECT status, row_count, epoch > snapshot_epoch AS barrier_epoch_after_snapshot
  FROM backfill.jobs WHERE job_id = :job;
SELECT current_pos, backfill_finished, epoch = :snapshot_epoch AS at_snapshot_epoch,
       count(*) AS vnodes, sum(row_count) AS rows
  FROM backfill.job_state(:job) GROUP BY 1, 2, 3;
SELECT DISTINCT id, epoch = :snapshot_epoch AS at_snapshot_epoch, is_epoch_finished FROM :st;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT count(*), min(id), max(id) FROM snap_mv;
-- none of the writes: 0 missing, 5 and 8 as they were, 6 and 10 still there
SELECT * FROM snap_mv WHERE id IN (0, 5, 6, 8, 10) ORDER BY id;
SELECT count(*) AS not_at_create FROM (SELECT * FROM snap_mv EXCEPT SELECT * FROM snap_at_create) x;
-- nothing consumed from the log in phase 1
SELECT count(*) AS log_entries FROM :log;
-- the keys read and not logged are equal upstream; the logged ones are pending
SELECT * FROM backfill.verify_job(:job);

-- more writes between barriers: below the position, at it, above it
UPDATE snap SET v = 'changed again' WHERE id IN (5, 20, 31, 60);
DELETE FROM snap WHERE id IN (25, 32, 70);
INSERT INTO snap VALUES (33, 'was there', 0) ON CONFLICT (id) DO UPDATE SET v = 'upserted';
UPDATE snap SET id = 3000 WHERE id = 61;
CALL backfill.run_job(:job, 1);
SELECT DISTINCT current_pos FROM backfill.job_state(:job);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT * FROM snap_mv WHERE id IN (5, 20, 25, 31, 32, 33, 41, 50, 60, 61, 70) ORDER BY id;
SELECT count(*) AS not_at_create FROM (SELECT * FROM snap_mv EXCEPT SELECT * FROM snap_at_create) x;
SELECT count(*) AS log_entries FROM :log;

-- barriers 3 and 4: the end of the snapshot, exactly the upstream at create_job
CALL backfill.run_job(:job, 1);
SELECT DISTINCT current_pos, backfill_finished FROM backfill.job_state(:job);
-- 61 moved away and 70 was deleted after create_job: read as they were
SELECT * FROM snap_mv WHERE id IN (61, 70, 90, 91) ORDER BY id;
CALL backfill.run_job(:job, 1);
SELECT current_pos, backfill_finished, epoch = :snapshot_epoch AS at_snapshot_epoch,
       count(*) AS vnodes, sum(row_count) AS rows
  FROM backfill.job_state(:job) GROUP BY 1, 2, 3;
-- 91 deleted, 95 deleted and inserted again: as they were; 0, 1000, 2000, 3000 came later
SELECT * FROM snap_mv WHERE id IN (0, 91, 95, 1000, 2000, 3000) ORDER BY id;
SELECT status, row_count FROM backfill.jobs WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
(SELECT 'missing' AS problem, * FROM snap_at_create EXCEPT SELECT 'missing', * FROM snap_mv)
UNION ALL
(SELECT 'extra', * FROM snap_mv EXCEPT SELECT 'extra', * FROM snap_at_create);
SELECT count(*) AS log_entries FROM :log;

-- phase 2, the log store: more than chunk_size log entries, so not caught up
UPDATE snap SET w = w + 1 WHERE id BETWEEN 11 AND 50;
SELECT (SELECT count(*) FROM snap_mv WHERE id IN (SELECT id FROM :log))
     + (SELECT count(*) FROM snap WHERE id IN (SELECT id FROM :log)) AS expected_changes \gset
CALL backfill.run_job(:job, 1);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT log_store_caught_up, log_store_lag_ms >= 0 AS has_lag FROM backfill.actor WHERE job_id = :job;
SELECT regexp_replace(progress, 'avg lag [0-9.]+(ns|ms|s)]', 'avg lag <lag>]') AS progress
  FROM backfill.ddl_progress WHERE ddl_id = :job;
-- the log is consumed: the downstream is the upstream now
SELECT count(*) AS log_entries FROM :log;
SELECT * FROM backfill.verify_job(:job);
(SELECT 'missing' AS problem, id, v FROM snap EXCEPT SELECT 'missing', * FROM snap_mv)
UNION ALL
(SELECT 'extra', * FROM snap_mv EXCEPT SELECT 'extra', id, v FROM snap);
-- consumed at the barrier's previous epoch, with the rows changed per vnode
SELECT DISTINCT current_pos, backfill_finished, epoch > :snapshot_epoch AS after_snapshot_epoch
  FROM backfill.job_state(:job);
SELECT sum(row_count) = :expected_changes AS deleted_and_inserted, sum(row_count) AS rows_changed
  FROM backfill.job_state(:job);
-- a barrier with nothing in the log: caught up, no lag
CALL backfill.run_job(:job, 1);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT log_store_caught_up, log_store_lag_ms FROM backfill.actor WHERE job_id = :job;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT sum(row_count) AS rows_changed FROM backfill.job_state(:job);

-- to the end: the final barrier switches to the apply trigger
INSERT INTO snap VALUES (4000, 'before the final barrier', 0);
CALL backfill.run_job(:job);
SELECT status, row_count, finished_at IS NOT NULL AS has_finished_at, progress FROM backfill.jobs WHERE job_id = :job;
SELECT count(*) AS in_ddl_progress FROM backfill.ddl_progress WHERE ddl_id = :job;
SELECT DISTINCT current_pos, backfill_finished FROM backfill.job_state(:job);
SELECT count(*) AS log_entries FROM :log;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'snap'::regclass ORDER BY tgname;
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM snap_mv WHERE id = 4000;
-- finished: writes reach the downstream in the writer's transaction
INSERT INTO snap VALUES (5000, 'after the finish', 0);
UPDATE snap SET v = 'updated after the finish' WHERE id = 1;
UPDATE snap SET id = 5001 WHERE id = 2;
DELETE FROM snap WHERE id = 3;
SELECT * FROM snap_mv WHERE id IN (1, 2, 3, 5000, 5001) ORDER BY id;
SELECT count(*) AS log_entries FROM :log;
SELECT * FROM backfill.verify_job(:job);
(SELECT 'missing' AS problem, id, v FROM snap EXCEPT SELECT 'missing', * FROM snap_mv)
UNION ALL
(SELECT 'extra', * FROM snap_mv EXCEPT SELECT 'extra', id, v FROM snap);
-- a finished snapshot job may be rescheduled
SELECT backfill.reschedule(:job, 2);
SELECT parallelism FROM backfill.jobs WHERE job_id = :job;
UPDATE snap SET v = 'after the reschedule' WHERE id = 4;
SELECT * FROM snap_mv WHERE id = 4;

-- parallelism 2, a composite key, a restart in phase 1
CREATE TABLE snap_comp (a int, b text, x numeric, PRIMARY KEY (a, b));
INSERT INTO snap_comp SELECT g % 30, 'k' || g, g * 1.5 FROM generate_series(1, 600) g;
SELECT backfill.create_job('snap_comp_mv', 'snap_comp', kind => 'snapshot', parallelism => 2, chunk_size => 50) AS comp \gset
\set cst 'backfill.state_' :comp
SELECT attname, format_type(atttypid, atttypmod) AS type
  FROM pg_attribute WHERE attrelid = :'cst'::regclass AND attnum > 0 ORDER BY attnum;
CREATE TABLE snap_comp_at_create AS SELECT * FROM snap_comp;
DELETE FROM snap_comp WHERE a = 0;
UPDATE snap_comp SET x = -x WHERE a = 1;
UPDATE snap_comp SET a = a + 100 WHERE a = 2;
INSERT INTO snap_comp SELECT 3, 'late' || g, 0 FROM generate_series(1, 20) g;
CALL backfill.run_job(:comp, 3);
SELECT runs, status FROM backfill.job WHERE job_id = :comp;
SELECT row_count FROM backfill.jobs WHERE job_id = :comp;
SELECT actor_id, count(DISTINCT current_pos) AS positions, bool_or(backfill_finished) AS finished,
       sum(row_count) AS rows
  FROM backfill.job_state(:comp) GROUP BY actor_id ORDER BY actor_id;
SELECT count(*) AS downstream, count(DISTINCT (a, b)) AS keys FROM snap_comp_mv;
SELECT count(*) AS not_at_create FROM (SELECT * FROM snap_comp_mv EXCEPT SELECT * FROM snap_comp_at_create) x;
CREATE TABLE snap_comp_positions AS SELECT vnode, current_pos, row_count FROM backfill.job_state(:comp);
-- written while no one runs the job, then a restart: it resumes from each
-- vnode's next row, inclusive, and still reads as of create_job
UPDATE snap_comp SET x = 0 WHERE a = 4;
DELETE FROM snap_comp WHERE a = 5;
CALL backfill.run_job(:comp, 2);
SELECT runs FROM backfill.job WHERE job_id = :comp;
SELECT row_count FROM backfill.jobs WHERE job_id = :comp;
SELECT count(*) AS downstream, count(DISTINCT (a, b)) AS keys FROM snap_comp_mv;
-- the total is the snapshot's, not recounted at the restart
SELECT (SELECT count(*) FROM snap_comp) AS upstream_now, progress FROM backfill.ddl_progress WHERE ddl_id = :comp;
-- each vnode's saved position was the next row to read: the restart read it
SELECT count(*) AS positions_not_read
  FROM snap_comp_positions p
 WHERE NOT EXISTS (SELECT FROM snap_comp_mv m WHERE ROW(m.a, m.b)::text = p.current_pos);
SELECT count(*) AS not_at_create FROM (SELECT * FROM snap_comp_mv EXCEPT SELECT * FROM snap_comp_at_create) x;
SELECT * FROM backfill.verify_job(:comp);
-- to the end of phase 1, then one log store barrier that does not catch up
CALL backfill.run_job(:comp, 2);
SELECT DISTINCT current_pos, backfill_finished FROM backfill.job_state(:comp);
SELECT row_count FROM backfill.jobs WHERE job_id = :comp;
SELECT count(*) AS missing FROM (SELECT * FROM snap_comp_at_create EXCEPT SELECT * FROM snap_comp_mv) x;
UPDATE snap_comp SET x = x + 1 WHERE a BETWEEN 10 AND 20;
CALL backfill.run_job(:comp, 1);
SELECT status FROM backfill.jobs WHERE job_id = :comp;
SELECT regexp_replace(progress, 'avg lag [0-9.]+(ns|ms|s)]', 'avg lag <lag>]') AS progress
  FROM backfill.ddl_progress WHERE ddl_id = :comp;
-- the lag is averaged over the actors not caught up yet, and printed as
-- Rust prints a Duration; an actor not yet in the log store: the snapshot
-- has finished, the log store has not begun everywhere (set by hand here)
CREATE TEMP TABLE comp_actors AS SELECT * FROM backfill.actor WHERE job_id = :comp;
UPDATE backfill.actor SET log_store_caught_up = (actor_id = (SELECT min(actor_id) FROM comp_actors)),
       log_store_lag_ms = CASE WHEN actor_id = (SELECT min(actor_id) FROM comp_actors) THEN 5 ELSE 1200 END
 WHERE job_id = :comp;
SELECT progress, backfill_type FROM backfill.ddl_progress WHERE ddl_id = :comp;
UPDATE backfill.actor SET log_store_caught_up = false, log_store_lag_ms = 800 WHERE job_id = :comp;
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :comp;
UPDATE backfill.actor SET log_store_lag_ms = NULL WHERE actor_id = (SELECT min(actor_id) FROM comp_actors);
SELECT progress FROM backfill.ddl_progress WHERE ddl_id = :comp;
UPDATE backfill.actor a SET log_store_caught_up = c.log_store_caught_up, log_store_lag_ms = c.log_store_lag_ms
  FROM comp_actors c WHERE a.actor_id = c.actor_id;
-- a restart in phase 2 goes on with the log store, then finishes
UPDATE snap_comp SET x = 0 WHERE a = 21;
CALL backfill.run_job(:comp);
SELECT runs, status FROM backfill.job WHERE job_id = :comp;
SELECT status, row_count FROM backfill.jobs WHERE job_id = :comp;
SELECT * FROM backfill.verify_job(:comp);
SELECT count(*) AS downstream, count(DISTINCT (a, b)) AS keys FROM snap_comp_mv;
(SELECT 'missing' AS problem, * FROM snap_comp EXCEPT SELECT 'missing', * FROM snap_comp_mv)
UNION ALL
(SELECT 'extra', * FROM snap_comp_mv EXCEPT SELECT 'extra', * FROM snap_comp);

-- a progress table that cannot be decoded: DATA_CORRUPTED, recorded on the job
CREATE TABLE snap_bad (id int PRIMARY KEY, v text);
INSERT INTO snap_bad SELECT g, 'v' || g FROM generate_series(1, 300) g;
SELECT backfill.create_job('snap_bad_mv', 'snap_bad', kind => 'snapshot', chunk_size => 20) AS bad \gset
\set bst 'backfill.state_' :bad
CALL backfill.run_job(:bad, 1);
SELECT id, is_epoch_finished, count(*) AS vnodes FROM :bst GROUP BY 1, 2;
-- a column too many
ALTER TABLE :bst ADD COLUMN extra int;
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
-- (a state table's columns are guarded by the DDL event trigger)
ALTER EVENT TRIGGER backfill_ddl_drop DISABLE;
ALTER TABLE :bst DROP COLUMN extra;
ALTER EVENT TRIGGER backfill_ddl_drop ENABLE;
-- a column of another type
ALTER TABLE :bst ALTER COLUMN row_count TYPE int;
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
ALTER TABLE :bst ALTER COLUMN row_count TYPE bigint;
-- a vnode out of range
INSERT INTO :bst SELECT 300, snapshot_epoch, 0, false, 1 FROM backfill.job WHERE job_id = :bad;
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
DELETE FROM :bst WHERE vnode = 300;
-- epoch NULL, then below the snapshot epoch (the detail names both epochs)
UPDATE :bst SET epoch = NULL WHERE vnode = 5;
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
UPDATE :bst SET epoch = (SELECT snapshot_epoch - 1 FROM backfill.job WHERE job_id = :bad) WHERE vnode = 5;
\set VERBOSITY terse
CALL backfill.run_job(:bad, 1);
\set VERBOSITY default
SELECT status, last_error, last_sqlstate,
       regexp_replace(last_error_detail, '\d{10,}', '<epoch>', 'g') AS last_error_detail,
       last_error_detail LIKE format('%% epoch %s, before the job''s snapshot epoch %s.',
                                     snapshot_epoch - 1, snapshot_epoch) AS exact_epochs
  FROM backfill.job WHERE job_id = :bad;
-- epoch is checked before row_count
UPDATE :bst SET row_count = NULL WHERE vnode = 5;
\set VERBOSITY terse
CALL backfill.run_job(:bad, 1);
\set VERBOSITY default
UPDATE :bst SET epoch = (SELECT snapshot_epoch FROM backfill.job WHERE job_id = :bad) WHERE vnode = 5;
-- row_count NULL, then negative
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
UPDATE :bst SET row_count = -1 WHERE vnode = 5;
CALL backfill.run_job(:bad, 1);
UPDATE :bst SET row_count = 0 WHERE vnode = 5;
-- is_epoch_finished NULL
UPDATE :bst SET is_epoch_finished = NULL WHERE vnode = 5;
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
UPDATE :bst SET is_epoch_finished = false WHERE vnode = 5;
-- an unfinished row without its next row to read
UPDATE :bst SET id = NULL WHERE vnode = 5;
CALL backfill.run_job(:bad, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
UPDATE :bst SET id = (SELECT id FROM :bst WHERE vnode = 6) WHERE vnode = 5;
-- repaired: it runs again, through phase 1
CALL backfill.run_job(:bad, 15);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :bad;
SELECT DISTINCT id, is_epoch_finished FROM :bst;
-- a finished row with a key: a warning, the key is ignored
UPDATE :bst SET id = 7 WHERE vnode = 5;
CALL backfill.run_job(:bad);
SELECT status, last_error FROM backfill.jobs WHERE job_id = :bad;
SELECT * FROM backfill.verify_job(:bad);
SELECT count(*) FROM snap_bad_mv;

-- a composite key half there
SELECT backfill.create_job('snap_comp2_mv', 'snap_comp', kind => 'snapshot', chunk_size => 10) AS comp2 \gset
CALL backfill.run_job(:comp2, 1);
\set c2st 'backfill.state_' :comp2
UPDATE :c2st SET b = NULL;
CALL backfill.run_job(:comp2, 1);
SELECT status, last_error, last_sqlstate FROM backfill.job WHERE job_id = :comp2;

-- refusals: reschedule before the end, a key named like a state column, TRUNCATE
SELECT backfill.reschedule(:comp2, 2);
SELECT parallelism FROM backfill.jobs WHERE job_id = :comp2;
CREATE TABLE snap_ep (epoch int PRIMARY KEY, v text);
SELECT backfill.create_job('snap_ep_mv', 'snap_ep', kind => 'snapshot');
SELECT to_regclass('snap_ep_mv') AS downstream;
-- the arrangement kind's state table has no such column; it has no snapshot epoch
SELECT backfill.create_job('snap_ep_mv', 'snap_ep') AS ep_job \gset
SELECT kind, snapshot_epoch FROM backfill.jobs WHERE job_id = :ep_job;
SELECT backfill.drop_job(:ep_job);
CREATE TABLE snap_tr (id int PRIMARY KEY, v text);
INSERT INTO snap_tr SELECT g, 'v' || g FROM generate_series(1, 30) g;
SELECT backfill.create_job('snap_tr_mv', 'snap_tr', kind => 'snapshot', chunk_size => 10) AS tjob \gset
TRUNCATE snap_tr;
CALL backfill.run_job(:tjob, 1);
TRUNCATE snap_tr;
SELECT count(*) FROM snap_tr;
CALL backfill.run_job(:tjob);
SELECT status FROM backfill.jobs WHERE job_id = :tjob;
SELECT * FROM backfill.verify_job(:tjob);
-- finished: TRUNCATE is followed
TRUNCATE snap_tr;
SELECT count(*) FROM snap_tr_mv;

-- cancel and drop leave no table and no trigger behind
SELECT tgname FROM pg_trigger WHERE tgrelid = 'snap_comp'::regclass ORDER BY tgname;
SELECT backfill.cancel_job(:comp2);
SELECT status FROM backfill.jobs WHERE job_id = :comp2;
SELECT to_regclass('snap_comp2_mv') AS downstream, to_regclass(:'c2st') AS state,
       to_regclass('backfill.changes_' || :comp2) AS log;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'snap_comp'::regclass ORDER BY tgname;
SELECT backfill.create_job('snap_comp3_mv', 'snap_comp', kind => 'snapshot', chunk_size => 10) AS comp3 \gset
CALL backfill.run_job(:comp3, 1);
UPDATE snap_comp SET x = 1 WHERE a = 6;
\set c3log 'backfill.changes_' :comp3
SELECT count(*) AS log_entries FROM :c3log;
SELECT backfill.drop_job(:comp3);
SELECT backfill.drop_job(:comp);
SELECT to_regclass('snap_comp3_mv') AS downstream, to_regclass('backfill.state_' || :comp3) AS state,
       to_regclass('backfill.changes_' || :comp3) AS log,
       to_regclass('snap_comp_mv') AS downstream, to_regclass(:'cst') AS state,
       to_regclass('backfill.changes_' || :comp) AS log;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'snap_comp'::regclass;
SELECT backfill.drop_job(job_id) FROM backfill.job ORDER BY job_id;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid IN ('snap'::regclass, 'snap_bad'::regclass, 'snap_tr'::regclass);
SELECT relname FROM pg_class WHERE relnamespace = 'backfill'::regnamespace AND relname ~ '^(state|changes)_';
DROP TABLE snap, snap_at_create, snap_comp, snap_comp_at_create, snap_comp_positions, snap_bad, snap_ep, snap_tr;

-- Kind "cdc": the job's replication slot, forwarding decoded changes, restarts, its state errors.
-- Needs wal_level = logical and backfill in output_plugin_libraries.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;   -- one chunk per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.fragment_id_seq', 1, false);
SELECT pg_catalog.setval('backfill.actor_id_seq', 1, false);
SELECT oid AS dboid FROM pg_database WHERE datname = current_database() \gset
SELECT count(*) AS slots FROM pg_replication_slots;

CREATE TABLE cdc_up (id int PRIMARY KEY, v text, w int);
INSERT INTO cdc_up SELECT g, 'v' || g, g FROM generate_series(1, 100) g;

-- create_job: the state table is RisingWave's cdc layout, one row per split
SELECT backfill.create_job('cdc_mv', 'cdc_up', kind => 'cdc', columns => '{v}', chunk_size => 30) AS job \gset
SELECT kind, status, parallelism, replace(slot_name, :'dboid', '<dboid>') AS slot_name
  FROM backfill.jobs WHERE job_id = :job;
SELECT attname, format_type(atttypid, atttypmod) AS type, attnotnull
  FROM pg_attribute WHERE attrelid = 'backfill.state_1'::regclass AND attnum > 0 AND NOT attisdropped
 ORDER BY attnum;
SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
 WHERE i.indrelid = 'backfill.state_1'::regclass AND i.indisprimary;
-- no capture trigger: writers pay nothing, the changes come from the WAL
SELECT tgname, tgenabled, (tgtype & 1) = 1 AS for_each_row
  FROM pg_trigger WHERE tgrelid = 'cdc_up'::regclass ORDER BY tgname;
-- the slot is created by the first run
SELECT count(*) AS slots FROM pg_replication_slots;
INSERT INTO cdc_up VALUES (200, 'before the slot', 0);
CALL backfill.run_job(:job, 1);
SELECT replace(slot_name, :'dboid', '<dboid>') AS slot_name, plugin, slot_type,
       database = current_database() AS this_database, temporary
  FROM pg_replication_slots;
SELECT j.slot_name = s.slot_name AS same_slot, j.slot_name = format('backfill_%s_%s', :'dboid', :job) AS named
  FROM backfill.jobs j, pg_replication_slots s WHERE j.job_id = :job;
SELECT slot_name AS slot FROM backfill.jobs WHERE job_id = :job \gset
SELECT restart_lsn AS restart1 FROM pg_replication_slots WHERE slot_name = :'slot' \gset

-- barrier 1 read keys 1..30; the offset is the LSN the slot was read to
SELECT actor_id, vnode, current_pos, backfill_finished, row_count,
       regexp_replace(cdc_offset::text, '"[0-9A-F]+/[0-9A-F]+"', '"<lsn>"') AS cdc_offset
  FROM backfill.job_state(:job);
SELECT split_id = 'cdc_up'::regclass::oid::text AS split_is_table_oid, id, backfill_finished, row_count,
       (cdc_offset->>'lsn')::pg_lsn <= pg_current_wal_insert_lsn() AS lsn_in_wal
  FROM backfill.state_1;
SELECT cdc_offset->>'lsn' AS offset1 FROM backfill.state_1 \gset
SELECT status, row_count FROM backfill.jobs WHERE job_id = :job;
SELECT count(*), min(id), max(id) FROM cdc_mv;

-- writes below, at and above the position; w is not an output column
UPDATE cdc_up SET v = 'changed' WHERE id IN (5, 30, 31, 90);
DELETE FROM cdc_up WHERE id IN (6, 32);
INSERT INTO cdc_up VALUES (0, 'new below', 0), (1000, 'new above', 0);
UPDATE cdc_up SET w = -1 WHERE id = 7;
-- nothing is captured by a trigger: the keys are in the slot, decoded from the WAL
SELECT count(*) AS change_table_rows FROM backfill.changes_1;
SELECT array_agg(trim(both '()' from split_part(data, E'\t', 2))::int ORDER BY trim(both '()' from split_part(data, E'\t', 2))::int) AS decoded_keys,
       bool_and(split_part(data, E'\t', 1)::pg_lsn >= :'offset1') AS after_offset
  FROM pg_logical_slot_peek_changes(:'slot', NULL, NULL, 'relid', 'cdc_up'::regclass::oid::text);
-- at or below the position the downstream differs, but the keys are pending in the slot
SELECT * FROM cdc_mv WHERE id IN (0, 5, 6, 7, 30) ORDER BY id;
SELECT count(*) AS differing_rows
  FROM (SELECT id, v FROM cdc_up WHERE id <= 30) u FULL JOIN cdc_mv d USING (id)
 WHERE u.v IS DISTINCT FROM d.v;
SELECT * FROM backfill.verify_job(:job);
-- a difference whose key is pending nowhere is reported next to them, and only it
UPDATE cdc_mv SET v = 'tampered' WHERE id = 20;
DELETE FROM cdc_mv WHERE id = 21;
SELECT * FROM backfill.verify_job(:job);
INSERT INTO cdc_mv SELECT id, v FROM cdc_up WHERE id = 21;
UPDATE cdc_mv SET v = u.v FROM cdc_up u WHERE u.id = 20 AND cdc_mv.id = 20;
SELECT * FROM backfill.verify_job(:job);

-- barrier 2 forwards the keys at or below 30, drops those above, then reads the next 30 rows, 31..61
CALL backfill.run_job(:job, 1);
SELECT * FROM cdc_mv WHERE id IN (0, 5, 6, 7, 30, 90, 200, 1000) ORDER BY id;
SELECT count(*) AS change_table_rows FROM backfill.changes_1;
SELECT current_pos, backfill_finished, row_count,
       regexp_replace(cdc_offset::text, '"[0-9A-F]+/[0-9A-F]+"', '"<lsn>"') AS cdc_offset,
       (cdc_offset->>'lsn')::pg_lsn > :'offset1' AS offset_moved
  FROM backfill.job_state(:job);
-- the fetch advanced the slot to the offset barrier 1 committed
SELECT confirmed_flush_lsn = :'offset1' AS slot_at_offset1 FROM pg_replication_slots WHERE slot_name = :'slot';
SELECT * FROM backfill.verify_job(:job);
-- a key below the position moves above it; one above changes again
UPDATE cdc_up SET v = 'changed again' WHERE id = 90;
UPDATE cdc_up SET id = 2000 WHERE id = 10;
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job, 1);
SELECT * FROM cdc_mv WHERE id IN (10, 90, 2000) ORDER BY id;
-- decoding restarts from a point that follows the offset: each fetch logs
-- the transactions running, and the next fetch's advance passes that record
SELECT restart_lsn > :'restart1' AS restart_point_moved FROM pg_replication_slots WHERE slot_name = :'slot';
SELECT current_pos, row_count FROM backfill.job_state(:job);
SELECT * FROM backfill.verify_job(:job);

-- to the end: the final barrier switches to the apply trigger and drops the slot
CALL backfill.run_job(:job);
SELECT status, row_count, finished_at IS NOT NULL AS has_finished_at, slot_name
  FROM backfill.jobs WHERE job_id = :job;
SELECT current_pos, backfill_finished, cdc_offset IS NOT NULL AS has_offset FROM backfill.job_state(:job);
SELECT progress FROM backfill.jobs WHERE job_id = :job;
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT tgname, tgenabled FROM pg_trigger WHERE tgrelid = 'cdc_up'::regclass ORDER BY tgname;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (SELECT id, v FROM cdc_up EXCEPT SELECT id, v FROM cdc_mv) x) AS only_up,
       (SELECT count(*) FROM (SELECT id, v FROM cdc_mv EXCEPT SELECT id, v FROM cdc_up) x) AS only_down,
       (SELECT count(*) FROM cdc_mv) AS downstream;
-- finished: every write reaches the downstream in the writer's transaction
INSERT INTO cdc_up VALUES (3000, 'after finish', 0);
UPDATE cdc_up SET v = 'updated after finish' WHERE id = 1;
UPDATE cdc_up SET id = 3001 WHERE id = 2;
DELETE FROM cdc_up WHERE id = 3;
SELECT * FROM cdc_mv WHERE id IN (1, 2, 3, 3000, 3001) ORDER BY id;
SELECT * FROM backfill.verify_job(:job);
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT backfill.drop_job(:job);

-- refused at create_job
CREATE TABLE cdc_ri (id int PRIMARY KEY, v text);
SELECT backfill.create_job('x', 'cdc_ri', kind => 'cdc', parallelism => 2);
ALTER TABLE cdc_ri REPLICA IDENTITY NOTHING;
SELECT backfill.create_job('x', 'cdc_ri', kind => 'cdc');
-- the full row carries the key too
ALTER TABLE cdc_ri REPLICA IDENTITY FULL;
SELECT backfill.create_job('cdc_ri_mv', 'cdc_ri', kind => 'cdc') AS rjob \gset
SELECT backfill.drop_job(:rjob);
CREATE TABLE cdc_split (split_id int PRIMARY KEY, v text);
SELECT backfill.create_job('x', 'cdc_split', kind => 'cdc');
CREATE TABLE cdc_off (k int, cdc_offset text, PRIMARY KEY (k, cdc_offset));
SELECT backfill.create_job('x', 'cdc_off', kind => 'cdc');
-- split_id and cdc_offset are reserved by kind cdc only
SELECT backfill.create_job('cdc_split_mv', 'cdc_split') AS sjob \gset
SELECT backfill.drop_job(:sjob);
-- a role without REPLICATION may not own a slot
CREATE ROLE regress_cdc_user LOGIN;
GRANT SELECT, TRIGGER ON cdc_ri TO regress_cdc_user;
GRANT USAGE ON SCHEMA backfill TO regress_cdc_user;
SET ROLE regress_cdc_user;
SELECT backfill.create_job('x', 'cdc_ri', kind => 'cdc');
RESET ROLE;
SELECT count(*) AS jobs FROM backfill.job;
REVOKE ALL ON cdc_ri FROM regress_cdc_user;
REVOKE USAGE ON SCHEMA backfill FROM regress_cdc_user;
DROP ROLE regress_cdc_user;

-- a restart resumes from the committed position and offset
CREATE TABLE cdc_rs (id int PRIMARY KEY, v text);
INSERT INTO cdc_rs SELECT g, 'v' || g FROM generate_series(1, 200) g;
SELECT backfill.create_job('cdc_rs_mv', 'cdc_rs', kind => 'cdc', chunk_size => 40) AS rs \gset
CALL backfill.run_job(:rs, 2);
SELECT current_pos, row_count FROM backfill.job_state(:rs);
-- the slot outlives the run; written while no run is going on, only the slot has these
SELECT count(*) AS slots FROM pg_replication_slots;
UPDATE cdc_rs SET v = 'between runs' WHERE id IN (10, 50, 100);
DELETE FROM cdc_rs WHERE id IN (11, 150);
INSERT INTO cdc_rs VALUES (0, 'between runs');
UPDATE cdc_rs SET id = 500 WHERE id = 12;
SELECT * FROM backfill.verify_job(:rs);
-- the restart forwards them and reads on after 80
CALL backfill.run_job(:rs, 1);
SELECT current_pos, row_count FROM backfill.job_state(:rs);
SELECT * FROM cdc_rs_mv WHERE id IN (0, 10, 11, 12, 50, 100, 150, 500) ORDER BY id;
SELECT * FROM backfill.verify_job(:rs);
UPDATE cdc_rs SET v = 'between runs again' WHERE id IN (20, 199);
CALL backfill.run_job(:rs);
-- every row was read once: 80 + 40 + 79 of 121..200 + 500
SELECT status, row_count, slot_name FROM backfill.jobs WHERE job_id = :rs;
SELECT * FROM backfill.verify_job(:rs);
SELECT (SELECT count(*) FROM (SELECT * FROM cdc_rs EXCEPT SELECT * FROM cdc_rs_mv) x) AS only_up,
       (SELECT count(*) FROM (SELECT * FROM cdc_rs_mv EXCEPT SELECT * FROM cdc_rs) x) AS only_down,
       (SELECT count(*) FROM cdc_rs_mv) AS downstream, (SELECT count(*) FROM cdc_rs) AS upstream;
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT backfill.drop_job(:rs);

-- state rows that cannot be decoded: DATA_CORRUPTED, recorded on the job, in RisingWave's order
CREATE TABLE cdc_bad (id int PRIMARY KEY, v text);
INSERT INTO cdc_bad SELECT g, 'v' || g FROM generate_series(1, 100) g;
SELECT backfill.create_job('cdc_bad_mv', 'cdc_bad', kind => 'cdc', chunk_size => 30) AS bad \gset
CALL backfill.run_job(:bad, 1);
\set st 'backfill.state_' :bad
CREATE TEMP TABLE good AS SELECT * FROM :st;
CREATE TEMP VIEW failure AS
SELECT j.status, j.last_error, replace(k.last_error_detail, 'cdc_bad'::regclass::oid::text, '<oid>') AS detail,
       k.last_sqlstate
  FROM backfill.jobs j JOIN backfill.job k USING (job_id) WHERE j.job_name = 'cdc_bad_mv';
\set VERBOSITY sqlstate
-- row_count first, even with backfill_finished broken too (and negative counts)
UPDATE :st SET row_count = NULL, backfill_finished = NULL;
CALL backfill.run_job(:bad);
SELECT * FROM failure;
UPDATE :st SET row_count = -1;
CALL backfill.run_job(:bad);
SELECT * FROM failure;
UPDATE :st SET row_count = 30;
CALL backfill.run_job(:bad);
SELECT * FROM failure;
-- an unfinished row needs its offset
UPDATE :st SET backfill_finished = false, cdc_offset = NULL;
CALL backfill.run_job(:bad);
SELECT * FROM failure;
-- an offset must be an object whose "lsn" is an LSN
UPDATE :st SET cdc_offset = '"junk"';
CALL backfill.run_job(:bad);
SELECT * FROM failure;
UPDATE :st SET cdc_offset = '{"lsn": "zz"}';
CALL backfill.run_job(:bad);
SELECT * FROM failure;
UPDATE :st SET cdc_offset = '{"offset": "0/0"}';
CALL backfill.run_job(:bad);
SELECT * FROM failure;
UPDATE :st SET cdc_offset = (SELECT cdc_offset FROM good);
-- one split only, the table's
INSERT INTO :st VALUES ('0', 1, false, 0, (SELECT cdc_offset FROM good));
CALL backfill.run_job(:bad);
SELECT * FROM failure;
DELETE FROM :st WHERE split_id = '0';
UPDATE :st SET split_id = 'x';
CALL backfill.run_job(:bad);
SELECT * FROM failure;
\set VERBOSITY default
-- the error in full, once
CALL backfill.run_job(:bad);
UPDATE :st SET split_id = (SELECT split_id FROM good);
-- repaired: the job runs again, its slot kept everything since the offset
SELECT count(*) AS slots FROM pg_replication_slots;
UPDATE cdc_bad SET v = 'during the failure' WHERE id IN (1, 99);
CALL backfill.run_job(:bad, 3);
SELECT status, last_error FROM backfill.jobs WHERE job_id = :bad;
SELECT current_pos, backfill_finished, row_count FROM backfill.job_state(:bad);
SELECT * FROM backfill.verify_job(:bad);
-- a finished row without an offset is fine: the slot's position is the offset
UPDATE cdc_bad SET v = 'before the final barrier' WHERE id IN (2, 98);
UPDATE :st SET backfill_finished = true, cdc_offset = NULL;
CALL backfill.run_job(:bad);
SELECT status, last_error, slot_name FROM backfill.jobs WHERE job_id = :bad;
SELECT * FROM backfill.verify_job(:bad);
SELECT * FROM cdc_bad_mv WHERE id IN (1, 2, 98, 99) ORDER BY id;
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT backfill.drop_job(:bad);

-- the slot dropped behind the job's back: the changes since the offset are lost
SELECT backfill.create_job('cdc_bad_mv', 'cdc_bad', kind => 'cdc', chunk_size => 30) AS lost \gset
CALL backfill.run_job(:lost, 1);
SELECT slot_name AS slot FROM backfill.jobs WHERE job_id = :lost \gset
SELECT pg_drop_replication_slot(:'slot');
-- (the DETAIL gives the offset, the HINT says to cancel and recreate)
\set VERBOSITY sqlstate
CALL backfill.run_job(:lost);
\set VERBOSITY default
SELECT replace(:'LAST_ERROR_MESSAGE', :'dboid', '<dboid>') AS message, :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT count(*) AS slots FROM pg_replication_slots;
-- the way out: cancel and recreate
SELECT backfill.recreate_job(:lost) AS lost2 \gset
CALL backfill.run_job(:lost2);
SELECT status FROM backfill.jobs WHERE job_id = :lost2;
SELECT * FROM backfill.verify_job(:lost2);
SELECT backfill.drop_job(:lost);
SELECT backfill.drop_job(:lost2);

-- cancel_job and drop_job of an unfinished job drop its slot
SELECT backfill.create_job('cdc_bad_mv', 'cdc_bad', kind => 'cdc', chunk_size => 30) AS c1 \gset
CALL backfill.run_job(:c1, 1);
SELECT state_table::text AS c1_state FROM backfill.jobs WHERE job_id = :c1 \gset
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT backfill.cancel_job(:c1);
SELECT status, slot_name FROM backfill.jobs WHERE job_id = :c1;
SELECT to_regclass('cdc_bad_mv') AS downstream, to_regclass(:'c1_state') AS state,
       to_regclass('backfill.changes_' || :c1) AS changes;
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT backfill.drop_job(:c1);
SELECT backfill.create_job('cdc_bad_mv', 'cdc_bad', kind => 'cdc', chunk_size => 30) AS c2 \gset
CALL backfill.run_job(:c2, 2);
SELECT state_table::text AS c2_state FROM backfill.jobs WHERE job_id = :c2 \gset
SELECT count(*) AS slots FROM pg_replication_slots;
SELECT backfill.drop_job(:c2);
SELECT to_regclass('cdc_bad_mv') AS downstream, to_regclass(:'c2_state') AS state,
       to_regclass('backfill.changes_' || :c2) AS changes;
SELECT count(*) AS jobs FROM backfill.job;
-- a job that never ran has no slot to drop
SELECT backfill.create_job('cdc_bad_mv', 'cdc_bad', kind => 'cdc') AS c3 \gset
SELECT backfill.drop_job(:c3);

DROP VIEW failure;
DROP TABLE good, cdc_up, cdc_ri, cdc_split, cdc_off, cdc_rs, cdc_bad;
SELECT * FROM pg_replication_slots;
-- nor a replication origin (each job's own transactions carry one, named as
-- its slot, which the slot skips)
SELECT * FROM pg_replication_origin;

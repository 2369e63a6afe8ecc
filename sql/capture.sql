-- The capture trigger between one session's writes: what it must notice of
-- the job, its change table and the upstream's key, whether the change
-- comes between two statements, inside a transaction or inside a
-- statement, after it has already captured in this session.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;   -- one chunk per actor per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE cc (id int PRIMARY KEY, v text);
INSERT INTO cc SELECT g, 'v' || g FROM generate_series(1, 20) g;
SELECT backfill.create_job('cc_mv', 'cc', chunk_size => 5) AS job \gset
\set changes 'backfill.changes_' :job
SELECT 'changes_' || :job AS changes_name \gset

-- renamed (the DDL guard allows it): found by name, so refused; renamed
-- back, captured again
INSERT INTO cc VALUES (21, 'a');
ALTER TABLE :changes RENAME TO cc_changes_moved;
INSERT INTO cc VALUES (22, 'b');
ALTER TABLE backfill.cc_changes_moved RENAME TO :changes_name;
INSERT INTO cc VALUES (22, 'b');
SELECT id FROM :changes ORDER BY id;

-- moved to another schema and back
ALTER TABLE :changes SET SCHEMA public;
INSERT INTO cc VALUES (23, 'c');
ALTER TABLE :changes_name SET SCHEMA backfill;
INSERT INTO cc VALUES (23, 'c');

-- the extension's schema renamed: no change table by that name
BEGIN;
INSERT INTO cc VALUES (24, 'd');
ALTER SCHEMA backfill RENAME TO backfill_moved;
INSERT INTO cc VALUES (25, 'e');
ROLLBACK;

-- dropped and created again under its name, in one transaction: the
-- trigger writes into the new table
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_drop DISABLE;
INSERT INTO cc VALUES (24, 'd');
DROP TABLE :changes;
CREATE TABLE :changes (id int);
INSERT INTO cc VALUES (25, 'e');
UPDATE cc SET id = 26 WHERE id = 25;
SELECT id FROM :changes ORDER BY id;
-- created with another layout: refused
DROP TABLE :changes;
CREATE TABLE :changes (id bigint);
INSERT INTO cc VALUES (27, 'f');
ROLLBACK;
SELECT id FROM :changes ORDER BY id;

-- an index on it (the DDL guard allows it): refused; dropped, and once
-- VACUUM has cleared the table's relhasindex, captured again
INSERT INTO cc VALUES (27, 'f');
CREATE INDEX cc_changes_idx ON :changes (id);
INSERT INTO cc VALUES (28, 'g');
DROP INDEX backfill.cc_changes_idx;
VACUUM :changes;
INSERT INTO cc VALUES (28, 'g');

-- the upstream's key changed where the DDL guard does not fire: refused
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
INSERT INTO cc VALUES (29, 'h');
ALTER TABLE cc ALTER COLUMN id TYPE bigint;
INSERT INTO cc VALUES (30, 'i');
ROLLBACK;
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
INSERT INTO cc VALUES (29, 'h');
ALTER TABLE cc RENAME COLUMN id TO key;
INSERT INTO cc VALUES (30, 'i');
ROLLBACK;
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
INSERT INTO cc VALUES (29, 'h');
ALTER TABLE cc DROP CONSTRAINT cc_pkey;
INSERT INTO cc VALUES (30, 'i');
ROLLBACK;
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
INSERT INTO cc VALUES (29, 'h');
ALTER TABLE cc DROP CONSTRAINT cc_pkey, ADD PRIMARY KEY (v);
INSERT INTO cc VALUES (30, 'i');
ROLLBACK;
-- a column that is not in the key: nothing changes for the trigger
BEGIN;
INSERT INTO cc VALUES (29, 'h');
ALTER TABLE cc ADD COLUMN w int;
INSERT INTO cc VALUES (30, 'i', 1);
ROLLBACK;

-- both triggers enabled, as a data-only restore leaves them: while the job
-- backfills, the capture is in charge
ALTER TABLE cc ENABLE TRIGGER ALL;
INSERT INTO cc VALUES (29, 'h');
SELECT count(*) AS captured FROM :changes WHERE id = 29;
SELECT count(*) AS applied FROM cc_mv WHERE id = 29;

-- the job finishes in this session: from the next statement on, the apply
-- trigger keeps the downstream; with both enabled again, the apply trigger
-- is in charge and nothing more is captured
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
INSERT INTO cc VALUES (30, 'i');
ALTER TABLE cc ENABLE TRIGGER ALL;
INSERT INTO cc VALUES (31, 'j');
UPDATE cc SET v = 'k' WHERE id = 30;
SELECT count(*) AS captured FROM :changes WHERE id >= 30;
SELECT * FROM cc_mv WHERE id >= 29 ORDER BY id;
SELECT * FROM backfill.verify_job(:job);
SELECT backfill.drop_job(:job);

-- a job dropped or cancelled in the transaction that writes: captured
-- before, nothing after
CREATE TABLE cd (id int PRIMARY KEY, v text);
INSERT INTO cd SELECT g, 'v' || g FROM generate_series(1, 20) g;
SELECT backfill.create_job('cd_mv', 'cd', chunk_size => 5) AS job \gset
\set changes 'backfill.changes_' :job
INSERT INTO cd VALUES (21, 'a');
BEGIN;
INSERT INTO cd VALUES (22, 'b');
SELECT count(*) AS captured FROM :changes;
SELECT backfill.drop_job(:job);
INSERT INTO cd VALUES (23, 'c');
UPDATE cd SET v = 'd' WHERE id = 1;
COMMIT;
SELECT to_regclass(:'changes') AS changes, to_regclass('cd_mv') AS downstream;

SELECT backfill.create_job('cd_mv', 'cd', chunk_size => 5) AS job \gset
\set changes 'backfill.changes_' :job
INSERT INTO cd VALUES (24, 'e');
BEGIN;
INSERT INTO cd VALUES (25, 'f');
SELECT backfill.cancel_job(:job);
INSERT INTO cd VALUES (26, 'g');
DELETE FROM cd WHERE id = 2;
COMMIT;
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'cd'::regclass;
SELECT backfill.drop_job(:job);

-- dropped or cancelled inside the statement whose rows it would capture:
-- the row triggers fire at the end of the statement, once the change table
-- is gone, and refuse; the statement rolls back, the job with it
SELECT backfill.create_job('cd_mv', 'cd', chunk_size => 5) AS job \gset
INSERT INTO cd VALUES (27, 'h');
WITH w AS (INSERT INTO cd VALUES (28, 'i') RETURNING id)
SELECT backfill.drop_job(:job) FROM w;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'cd'::regclass;
\set changes 'backfill.changes_' :job
INSERT INTO cd VALUES (29, 'j');
WITH w AS (INSERT INTO cd VALUES (30, 'k') RETURNING id)
SELECT backfill.cancel_job(:job) FROM w;
SELECT count(*) AS triggers FROM pg_trigger WHERE tgrelid = 'cd'::regclass;
SELECT count(*) AS captured FROM :changes;
SELECT backfill.drop_job(:job);

-- two jobs on one table: each trigger writes its own job's change table
SELECT backfill.create_job('cd_mv1', 'cd', chunk_size => 5) AS job1 \gset
SELECT backfill.create_job('cd_mv2', 'cd', chunk_size => 5) AS job2 \gset
INSERT INTO cd VALUES (31, 'l');
SELECT backfill.drop_job(:job1);
INSERT INTO cd VALUES (32, 'm');
SELECT id FROM backfill.changes_:job2 ORDER BY id;
SELECT backfill.drop_job(:job2);

-- the snapshot kind's log: the row image follows the downstream's columns
CREATE TABLE cs (id int PRIMARY KEY, v text, w int);
INSERT INTO cs SELECT g, 'v' || g, g FROM generate_series(1, 20) g;
SELECT backfill.create_job('cs_mv', 'cs', kind => 'snapshot', columns => '{v}', chunk_size => 5) AS job \gset
\set changes 'backfill.changes_' :job
UPDATE cs SET v = 'a' WHERE id = 1;
ALTER TABLE cs_mv ADD COLUMN x int;
UPDATE cs SET v = 'b' WHERE id = 2;
ALTER EVENT TRIGGER backfill_ddl_drop DISABLE;
ALTER TABLE cs_mv DROP COLUMN x;
ALTER EVENT TRIGGER backfill_ddl_drop ENABLE;
UPDATE cs SET v = 'b' WHERE id = 2;
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
ALTER TABLE cs RENAME COLUMN v TO vv;
UPDATE cs SET vv = 'c' WHERE id = 3;
ROLLBACK;
BEGIN;
ALTER EVENT TRIGGER backfill_ddl_alter DISABLE;
ALTER TABLE cs ALTER COLUMN v TYPE varchar;
UPDATE cs SET v = 'c' WHERE id = 3;
ROLLBACK;
-- a second index on the log: refused
CREATE INDEX cs_log_idx ON :changes (backfill_seq);
UPDATE cs SET v = 'c' WHERE id = 3;
DROP INDEX backfill.cs_log_idx;
UPDATE cs SET v = 'c' WHERE id = 3;
-- the log's index rebuilt: still maintained, the first entry of a key found
REINDEX TABLE :changes;
UPDATE cs SET v = 'd' WHERE id = 3;
SET enable_seqscan = off;
SELECT id, (backfill_old_row).v FROM :changes WHERE id = 3 ORDER BY backfill_seq;
RESET enable_seqscan;
SELECT id, (backfill_old_row).v FROM :changes ORDER BY backfill_seq;
CALL backfill.run_job(:job);
SELECT * FROM backfill.verify_job(:job);
SELECT backfill.drop_job(:job);
DROP TABLE cc, cd, cs;

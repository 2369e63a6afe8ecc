-- Tables whose foreign key references the table itself (org charts,
-- category trees): a barrier writes a downstream that a foreign key
-- references in place, so that no referenced row leaves it and ON DELETE
-- CASCADE or SET NULL acts on it as on the upstream; the cutover gives the
-- new table its own foreign key to itself (NOT VALID, validated by
-- finish_cutover), and the rollback takes it away again.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;   -- one chunk per barrier
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

-- an org chart whose subtrees go with their root: ON DELETE CASCADE
CREATE TABLE sr_org (id int PRIMARY KEY,
                     boss int REFERENCES sr_org (id) ON DELETE CASCADE,
                     name text NOT NULL);
INSERT INTO sr_org SELECT g, CASE WHEN g > 1 THEN g / 2 END, 'e' || g FROM generate_series(1, 60) g;
SELECT backfill.create_job('sr_org_new', 'sr_org', chunk_size => 10) AS job \gset
CALL backfill.run_job(:job, 2);
-- across barriers: re-parenting, a subtree deleted, a boss renamed, new hires
UPDATE sr_org SET boss = 1 WHERE id IN (6, 35);
DELETE FROM sr_org WHERE id = 5;                      -- 5, 10, 11, 20..23, 40..47
UPDATE sr_org SET name = 'the boss' WHERE id = 1;
INSERT INTO sr_org VALUES (100, 3, 'new'), (101, 100, 'newer');
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job, 2);
DELETE FROM sr_org WHERE id = 7;
UPDATE sr_org SET boss = 100 WHERE id = 12;
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (TABLE sr_org EXCEPT TABLE sr_org_new) x) AS only_up,
       (SELECT count(*) FROM (TABLE sr_org_new EXCEPT TABLE sr_org) x) AS only_down,
       (SELECT count(*) FROM sr_org_new) AS downstream;
-- the new table has no foreign key of its own: the cutover gives it one
SELECT count(*) AS foreign_keys FROM pg_constraint WHERE conrelid = 'sr_org_new'::regclass AND contype = 'f';
SELECT kind, detail FROM backfill._cutover_weaker('sr_org', 'sr_org_new');
SELECT state, old_table, rollback_possible FROM backfill.cutover(:job);
SELECT conrelid::regclass AS tab, conname, pg_get_constraintdef(oid) AS def, convalidated
  FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('sr_org'::regclass, 'sr_org_before_cutover_1'::regclass)
 ORDER BY 1, 2;
SELECT array_length(to_validate, 1) AS to_validate FROM backfill.job_cutover WHERE job_id = :job;
-- the new table's key enforces itself, and a deleted subtree leaves the old table too
INSERT INTO sr_org VALUES (200, 9999, 'no such boss');
DELETE FROM sr_org WHERE id = 3;                      -- 3, 6's old subtree stays: 6 reports to 1
UPDATE sr_org SET boss = 2 WHERE id = 35;
SELECT (SELECT count(*) FROM (TABLE sr_org EXCEPT TABLE sr_org_before_cutover_1) x) AS only_new,
       (SELECT count(*) FROM (TABLE sr_org_before_cutover_1 EXCEPT TABLE sr_org) x) AS only_old;
-- rolled back: the old table has its own foreign key, the new one none again
SELECT state FROM backfill.rollback_cutover(:job);
SELECT conrelid::regclass AS tab, conname, convalidated
  FROM pg_constraint WHERE contype = 'f' AND conrelid IN ('sr_org'::regclass, 'sr_org_new'::regclass)
 ORDER BY 1, 2;
DELETE FROM sr_org WHERE id = 2;
INSERT INTO sr_org VALUES (300, 1, 'rehired');
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (TABLE sr_org EXCEPT TABLE sr_org_new) x) AS only_up,
       (SELECT count(*) FROM (TABLE sr_org_new EXCEPT TABLE sr_org) x) AS only_down;
-- cut over again, then finished: the foreign key is there, validated
SELECT state FROM backfill.cutover(:job);
SELECT backfill.finish_cutover(:job);
SELECT conname, pg_get_constraintdef(oid) AS def, convalidated
  FROM pg_constraint WHERE contype = 'f' AND conrelid = 'sr_org'::regclass;
SELECT to_regclass('sr_org_before_cutover_1') AS old_table;
DELETE FROM sr_org WHERE id = 1;
SELECT count(*) AS left_after_root FROM sr_org;

-- a category tree whose orphans stay: ON DELETE SET NULL, into a table of
-- the user's that has the same foreign key to itself during the backfill
CREATE TABLE sr_cat (id int PRIMARY KEY,
                     parent int REFERENCES sr_cat (id) ON DELETE SET NULL,
                     label text);
INSERT INTO sr_cat SELECT g, CASE WHEN g > 1 THEN (g + 1) / 3 END, 'c' || g FROM generate_series(1, 40) g;
CREATE TABLE sr_cat_new (id int PRIMARY KEY,
                         parent int REFERENCES sr_cat_new (id) ON DELETE SET NULL,
                         label text);
SELECT backfill.create_job('sr_cat_new', 'sr_cat', chunk_size => 10, into_existing => true) AS job \gset
CALL backfill.run_job(:job, 3);
-- a parent rewritten in place keeps its children; a deleted one orphans them
UPDATE sr_cat SET label = 'renamed' WHERE id IN (1, 2, 3);
DELETE FROM sr_cat WHERE id = 4;                      -- 11, 12, 13 lose their parent
UPDATE sr_cat SET parent = 1 WHERE id = 15;
CALL backfill.run_job(:job, 1);
SELECT * FROM sr_cat_new WHERE id <= 15 ORDER BY id;
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT (SELECT count(*) FROM (TABLE sr_cat EXCEPT TABLE sr_cat_new) x) AS only_up,
       (SELECT count(*) FROM (TABLE sr_cat_new EXCEPT TABLE sr_cat) x) AS only_down;
-- the new table has that foreign key already: the cutover adds none
SELECT state FROM backfill.cutover(:job);
SELECT array_length(to_validate, 1) AS to_validate FROM backfill.job_cutover WHERE job_id = :job;
DELETE FROM sr_cat WHERE id = 1;                      -- 2, 3 and 15 lose theirs
SELECT count(*) AS orphans_old FROM sr_cat_before_cutover_2 WHERE parent IS NULL;
SELECT backfill.finish_cutover(:job);
SELECT conname, pg_get_constraintdef(oid) AS def, convalidated
  FROM pg_constraint WHERE contype = 'f' AND conrelid = 'sr_cat'::regclass;
SELECT count(*) AS orphans FROM sr_cat WHERE parent IS NULL;

-- a plain role's tree, cut over, rolled back and finished by the superuser
CREATE ROLE sr_plain LOGIN;
GRANT CREATE ON SCHEMA public TO sr_plain;
SET ROLE sr_plain;
CREATE TABLE sr_team (id int PRIMARY KEY, lead int REFERENCES sr_team (id), name text);
INSERT INTO sr_team SELECT g, CASE WHEN g > 1 THEN g - 1 END, 't' || g FROM generate_series(1, 15) g;
SELECT backfill.create_job('sr_team_new', 'sr_team', chunk_size => 5) AS job \gset
CALL backfill.run_job(:job, 1);
UPDATE sr_team SET name = 'first' WHERE id = 1;
CALL backfill.run_job(:job);
RESET ROLE;
SELECT * FROM backfill.verify_job(:job);
SELECT state FROM backfill.cutover(:job);
SELECT conname, convalidated, (SELECT relowner::regrole FROM pg_class WHERE oid = conrelid) AS owner
  FROM pg_constraint WHERE contype = 'f' AND conrelid = 'sr_team'::regclass;
-- NO ACTION: a lead with a team stays, on both tables
DELETE FROM sr_team WHERE id = 3;
SELECT state FROM backfill.rollback_cutover(:job);
SELECT count(*) AS new_table_foreign_keys FROM pg_constraint WHERE contype = 'f' AND conrelid = 'sr_team_new'::regclass;
SELECT state FROM backfill.cutover(:job);
SELECT backfill.finish_cutover(:job);
SELECT conname, convalidated FROM pg_constraint WHERE contype = 'f' AND conrelid = 'sr_team'::regclass;
SELECT backfill.drop_job(:job);
DROP TABLE sr_team;
REVOKE CREATE ON SCHEMA public FROM sr_plain;
DROP ROLE sr_plain;

DROP TABLE sr_org, sr_cat;

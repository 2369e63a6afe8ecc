-- The cutover of a partitioned table whose downstream is partitioned alike:
-- each partition takes the name of the partition of the same bounds, with
-- its parent and under the same lock, so that writes to a partition by
-- name reach the table that has the name; the rollback gives the names
-- back.  Partitions that do not match one to one are refused before
-- anything changes.  A partition, an inheritance parent or child is never
-- cut over on its own.
SET client_min_messages = warning;

-- a refusal: its SQLSTATE, message, detail and hint, job ids left out
CREATE FUNCTION pg_temp.refused(sql text) RETURNS TABLE (code text, message text, detail text, hint text)
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RETURN QUERY SELECT 'ok', NULL::text, NULL::text, NULL::text;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT,
                            detail = PG_EXCEPTION_DETAIL, hint = PG_EXCEPTION_HINT;
    message := regexp_replace(message, 'job \d+', 'job N');
    RETURN NEXT;
END
$$;

-- every write by a partition's name, recorded: none may be lost
CREATE TABLE cpt_ledger (id int PRIMARY KEY, note text);
CREATE TABLE cpt (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE cpt_1 PARTITION OF cpt FOR VALUES FROM (1) TO (100);
CREATE TABLE cpt_2 PARTITION OF cpt FOR VALUES FROM (100) TO (200);
CREATE TABLE cpt_3 PARTITION OF cpt FOR VALUES FROM (200) TO (300);
INSERT INTO cpt SELECT g, 'r' || g FROM generate_series(1, 299, 7) g;
INSERT INTO cpt_ledger SELECT id, 'initial' FROM cpt;
CREATE TABLE cpt_new (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE cpt_new_3 PARTITION OF cpt_new FOR VALUES FROM (200) TO (300);
CREATE TABLE cpt_new_1 PARTITION OF cpt_new FOR VALUES FROM (1) TO (100);
CREATE TABLE cpt_new_2 PARTITION OF cpt_new FOR VALUES FROM (100) TO (200);
SELECT backfill.create_job('cpt_new', 'cpt', into_existing => true) AS job \gset
CALL backfill.run_job(:job);

-- a write by name before the cutover
INSERT INTO cpt_2 VALUES (150, 'before');
INSERT INTO cpt_ledger VALUES (150, 'before the cutover');

SELECT state, rollback_possible FROM backfill.cutover(:job, old_name => 'cpt_old');
-- each name names the new table's partition of those bounds
SELECT c.relname, p.relname AS parent, pg_get_expr(c.relpartbound, c.oid) AS bounds,
       c.oid = ANY (SELECT relid FROM pg_partition_tree((SELECT upstream FROM backfill.job WHERE job_id = :job)))
           AS of_the_new_table
  FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid JOIN pg_class p ON p.oid = i.inhparent
 WHERE p.relname IN ('cpt', 'cpt_old') ORDER BY 1;

-- writes by name after the cutover reach the new table, and the old one
-- through the job
INSERT INTO cpt_1 VALUES (52, 'after');
UPDATE cpt_3 SET v = 'after' WHERE id = 204;
INSERT INTO cpt_ledger VALUES (52, 'after the cutover');
SELECT (SELECT count(*) FROM cpt_old WHERE id IN (52, 150)) AS old_table_follows;

-- the rollback gives the names back
SELECT state FROM backfill.rollback_cutover(:job);
SELECT c.relname, p.relname AS parent, pg_get_expr(c.relpartbound, c.oid) AS bounds
  FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid JOIN pg_class p ON p.oid = i.inhparent
 WHERE p.relname IN ('cpt', 'cpt_new') ORDER BY 1;
INSERT INTO cpt_3 VALUES (250, 'after the rollback');
INSERT INTO cpt_ledger VALUES (250, 'after the rollback');

-- cut over again, write by name, finish: the old table is dropped
SELECT state FROM backfill.cutover(:job, old_name => 'cpt_old');
INSERT INTO cpt_2 VALUES (199, 'before the finish');
INSERT INTO cpt_ledger VALUES (199, 'before the finish');
SELECT backfill.finish_cutover(:job);
INSERT INTO cpt_1 VALUES (98, 'after the finish');
INSERT INTO cpt_ledger VALUES (98, 'after the finish');
SELECT relname FROM pg_class WHERE relname LIKE 'cpt%' AND relkind IN ('r', 'p') ORDER BY 1;
-- the partitions' indexes have the old ones' names too
SELECT indrelid::regclass, indexrelid::regclass FROM pg_index
 WHERE indrelid IN (SELECT relid FROM pg_partition_tree('cpt'))
 ORDER BY indrelid::regclass::text, indexrelid::regclass::text;
-- nothing lost
SELECT l.id, l.note FROM cpt_ledger l WHERE NOT EXISTS (SELECT FROM cpt WHERE cpt.id = l.id);
SELECT (SELECT count(*) FROM cpt_ledger) AS written, (SELECT count(*) FROM cpt) AS rows,
       (SELECT v FROM cpt WHERE id = 204) AS updated;
SELECT backfill.drop_job(:job);

-- partitions that do not match one to one: refused, nothing changed
CREATE TABLE cpm (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE cpm_1 PARTITION OF cpm FOR VALUES FROM (1) TO (100);
CREATE TABLE cpm_2 PARTITION OF cpm FOR VALUES FROM (100) TO (200);
INSERT INTO cpm SELECT g, 'r' FROM generate_series(1, 199, 9) g;
CREATE TABLE cpm_new (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE cpm_new_1 PARTITION OF cpm_new FOR VALUES FROM (1) TO (150);
CREATE TABLE cpm_new_2 PARTITION OF cpm_new FOR VALUES FROM (150) TO (200);
SELECT backfill.create_job('cpm_new', 'cpm', into_existing => true) AS job \gset
CALL backfill.run_job(:job);
\x on
SELECT * FROM pg_temp.refused(format('SELECT backfill.cutover(%s)', :job));
-- partitioned by another key
CREATE TABLE cpk (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (id);
CREATE TABLE cpk_1 PARTITION OF cpk FOR VALUES FROM (1) TO (100);
CREATE TABLE cpk_new (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE cpk_new_1 PARTITION OF cpk_new FOR VALUES FROM (1) TO (100);
SELECT backfill.create_job('cpk_new', 'cpk', into_existing => true) AS job2 \gset
CALL backfill.run_job(:job2);
-- a partitioning the new table lacks is a loss the cutover lists; accepted,
-- the partitions still cannot take the old ones' names
SELECT code, message, detail FROM pg_temp.refused(format('SELECT backfill.cutover(%s)', :job2));
SELECT * FROM pg_temp.refused(format('SELECT backfill.cutover(%s, accept => ''{partitioning}'')', :job2));
\x off
SELECT relname FROM pg_class WHERE relname ~ '^cp[mk]' AND relkind IN ('r', 'p') ORDER BY 1;
SELECT backfill.drop_job(:job);
SELECT backfill.drop_job(:job2);

-- a partition, an inheritance parent, an inheritance child: refused
CREATE TABLE cpi (id int PRIMARY KEY, v int);
CREATE TABLE cpi_child (id int PRIMARY KEY, v int) INHERITS (cpi);
INSERT INTO cpi SELECT g, g FROM generate_series(1, 5) g;
INSERT INTO cpi_child SELECT g, g FROM generate_series(6, 10) g;
SELECT backfill.create_job('cpi_new', 'cpi') AS job \gset
SELECT backfill.create_job('cpi_child_new', 'cpi_child') AS job2 \gset
SELECT backfill.create_job('cpm_1_new', 'cpm_1') AS job3 \gset
CALL backfill.run_job(:job);
CALL backfill.run_job(:job2);
CALL backfill.run_job(:job3);
SELECT code, message FROM pg_temp.refused(format('SELECT backfill.cutover(%s)', :job));
SELECT code, message FROM pg_temp.refused(format('SELECT backfill.cutover(%s)', :job2));
SELECT code, message FROM pg_temp.refused(format('SELECT backfill.cutover(%s)', :job3));
SELECT backfill.drop_job(:job);
SELECT backfill.drop_job(:job2);
SELECT backfill.drop_job(:job3);

-- a partitioned table's foreign key to the table: refused before anything
-- changes (it could be added only by checking every row under the swap's
-- lock); the same key on each partition is carried
CREATE TABLE cpf_parent (id int PRIMARY KEY);
INSERT INTO cpf_parent SELECT generate_series(1, 10);
CREATE TABLE cpf_child (id int, parent_id int NOT NULL REFERENCES cpf_parent) PARTITION BY RANGE (id);
CREATE TABLE cpf_child_1 PARTITION OF cpf_child FOR VALUES FROM (0) TO (100);
INSERT INTO cpf_child SELECT g, g FROM generate_series(1, 10) g;
SELECT backfill.create_job('cpf_parent_new', 'cpf_parent') AS job \gset
CALL backfill.run_job(:job);
SELECT code, message, detail, hint FROM pg_temp.refused(format('SELECT backfill.cutover(%s)', :job));
SELECT relname FROM pg_class WHERE relname ~ '^cpf_parent' AND relkind = 'r' ORDER BY 1;
ALTER TABLE cpf_child DROP CONSTRAINT cpf_child_parent_id_fkey;
ALTER TABLE cpf_child_1 ADD FOREIGN KEY (parent_id) REFERENCES cpf_parent;
SELECT state FROM backfill.cutover(:job);
SELECT backfill.finish_cutover(:job);
SELECT conrelid::regclass, confrelid::regclass, convalidated FROM pg_constraint
 WHERE contype = 'f' AND conrelid = 'cpf_child_1'::regclass;
SELECT backfill.drop_job(:job);

DROP TABLE cpt, cpt_ledger, cpm, cpm_new, cpk, cpk_new, cpi_child, cpi, cpf_child, cpf_parent;

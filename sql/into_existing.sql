-- create_job(..., into_existing => true): filling a table the user made,
-- what such a table may be, what cancel_job and drop_job leave of it, and
-- every table refused.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE TABLE ie_up (id int PRIMARY KEY, a int, b text, c numeric);
INSERT INTO ie_up SELECT g, g % 10, 'b' || g, g * 1.5 FROM generate_series(1, 100) g;

-- the user's table: its own column order, more columns with defaults, a
-- wider type for a, another index, a trigger
CREATE TABLE ie_mine (
    note text DEFAULT 'default note',
    b varchar(20),
    a bigint,
    id int PRIMARY KEY,
    made_at date NOT NULL DEFAULT '2026-01-01',
    upper_b text
);
CREATE INDEX ie_mine_b ON ie_mine (b);
CREATE FUNCTION ie_mine_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN NEW.upper_b := upper(NEW.b); RETURN NEW; END
$$;
CREATE TRIGGER ie_mine_fill BEFORE INSERT OR UPDATE ON ie_mine FOR EACH ROW EXECUTE FUNCTION ie_mine_fill();
SELECT backfill.create_job('ie_mine', 'ie_up', columns => '{a,b}', filter => 'a <> 3',
                           into_existing => true, chunk_size => 20) AS job \gset
SELECT downstream, into_existing FROM backfill.job WHERE job_id = :job;
-- the table is not changed
\d ie_mine
CALL backfill.run_job(:job, 1);
UPDATE ie_up SET a = 3 WHERE id = 5;       -- out of the filter, below the position
UPDATE ie_up SET a = 4 WHERE id = 3;       -- into it
UPDATE ie_up SET b = 'changed' WHERE id = 1;
SELECT * FROM backfill.verify_job(:job);
CALL backfill.run_job(:job);
SELECT status FROM backfill.jobs WHERE job_id = :job;
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM ie_mine WHERE id <= 5 ORDER BY id;
-- it follows the upstream, its other columns left to it
UPDATE ie_mine SET note = 'the user''s' WHERE id = 2;
UPDATE ie_up SET a = 3, b = 'out' WHERE id = 4;
UPDATE ie_up SET b = 'moved' WHERE id = 2;
INSERT INTO ie_up VALUES (101, 1, 'new', 0);
SELECT * FROM backfill.verify_job(:job);
SELECT * FROM ie_mine WHERE id IN (2, 4, 101) ORDER BY id;
SELECT count(*) AS rows, (SELECT count(*) FROM ie_up WHERE a <> 3) AS expected FROM ie_mine;

-- what may change in it, and what may not
ALTER TABLE ie_mine DROP COLUMN note;
ALTER TABLE ie_mine ALTER COLUMN a TYPE numeric;
ALTER TABLE ie_mine ALTER COLUMN a TYPE point USING point(a, a);
ALTER TABLE ie_mine RENAME COLUMN b TO bb;
ALTER TABLE ie_mine DROP COLUMN b;
UPDATE ie_up SET a = 7 WHERE id = 6;
SELECT a FROM ie_mine WHERE id = 6;

-- drop_job leaves the table and its rows
SELECT backfill.drop_job(:job);
SELECT count(*) AS rows_left FROM ie_mine;
SELECT tgname FROM pg_trigger WHERE tgrelid = 'ie_mine'::regclass;

-- a partitioned table of the user's, for a snapshot job
CREATE TABLE ie_parts (id int PRIMARY KEY, a int, b text) PARTITION BY HASH (id);
CREATE TABLE ie_parts_0 PARTITION OF ie_parts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE ie_parts_1 PARTITION OF ie_parts FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT backfill.create_job('ie_parts', 'ie_up', kind => 'snapshot', columns => '{a,b}',
                           into_existing => true, chunk_size => 30) AS parts \gset
CALL backfill.run_job(:parts, 2);
UPDATE ie_up SET b = 'during' WHERE id IN (1, 90);
CALL backfill.run_job(:parts);
SELECT * FROM backfill.verify_job(:parts);
UPDATE ie_up SET b = 'after' WHERE id IN (2, 91);
SELECT * FROM backfill.verify_job(:parts);
SELECT (SELECT count(*) FROM ie_parts_0) > 0 AND (SELECT count(*) FROM ie_parts_1) > 0 AS both_filled,
       (SELECT count(*) FROM ie_parts) = (SELECT count(*) FROM ie_up) AS all_rows;

-- cancel_job leaves what it had copied; recreating needs the table empty
CREATE TABLE ie_again (id int PRIMARY KEY, b text);
SELECT backfill.create_job('ie_again', 'ie_up', columns => '{b}', into_existing => true,
                           chunk_size => 10) AS again \gset
CALL backfill.run_job(:again, 1);
SELECT backfill.cancel_job(:again);
SELECT count(*) AS rows_left FROM ie_again;
SELECT backfill.recreate_job(:again);
TRUNCATE ie_again;
SELECT backfill.recreate_job(:again) AS again2 \gset
CALL backfill.run_job(:again2);
SELECT * FROM backfill.verify_job(:again2);

-- refused: no such table, not empty, a key without a unique index, a key
-- missing from the table, a type that does not fit
SELECT backfill.create_job('ie_nosuch', 'ie_up', into_existing => true);
SELECT backfill.create_job('ie_mine', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_nokey (id int, a int);
SELECT backfill.create_job('ie_nokey', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_partial (id int, a int);
CREATE UNIQUE INDEX ON ie_partial (id) WHERE id > 0;
CREATE UNIQUE INDEX ON ie_partial ((id + 0));
SELECT backfill.create_job('ie_partial', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_deferred (id int PRIMARY KEY DEFERRABLE, a int);
SELECT backfill.create_job('ie_deferred', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_widekey (id int, a int, PRIMARY KEY (id, a));
SELECT backfill.create_job('ie_widekey', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_nokeycol (a int PRIMARY KEY);
SELECT backfill.create_job('ie_nokeycol', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_keytype (id bigint PRIMARY KEY, a int);
SELECT backfill.create_job('ie_keytype', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_type (id int PRIMARY KEY, a int, b point);
SELECT backfill.create_job('ie_type', 'ie_up', columns => '{a,b}', into_existing => true);
SELECT backfill.create_job('ie_type', 'ie_up', columns => ARRAY['b AS a'], into_existing => true);
CREATE TABLE ie_nocol (id int PRIMARY KEY, a int);
SELECT backfill.create_job('ie_nocol', 'ie_up', columns => '{a,b}', into_existing => true);
CREATE TABLE ie_notnull (id int PRIMARY KEY, a int, must int NOT NULL);
SELECT backfill.create_job('ie_notnull', 'ie_up', columns => '{a}', into_existing => true);
CREATE TABLE ie_generated (id int PRIMARY KEY, a int GENERATED ALWAYS AS (id * 2) STORED);
SELECT backfill.create_job('ie_generated', 'ie_up', columns => '{a}', into_existing => true);
-- an identity key GENERATED ALWAYS takes no value from INSERT: refused;
-- BY DEFAULT takes the upstream's
CREATE TABLE ie_identity (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY, a int);
SELECT backfill.create_job('ie_identity', 'ie_up', columns => '{a}', into_existing => true);
ALTER TABLE ie_identity ALTER COLUMN id SET GENERATED BY DEFAULT;
SELECT backfill.create_job('ie_identity', 'ie_up', columns => '{a}', into_existing => true) AS identity_job \gset
CALL backfill.run_job(:identity_job);
SELECT count(*), sum(id) FROM ie_identity;
SELECT backfill.drop_job(:identity_job);
-- refused: what is no table of one's own to fill
CREATE VIEW ie_view AS SELECT * FROM ie_up;
SELECT backfill.create_job('ie_view', 'ie_up', into_existing => true);
CREATE TEMP TABLE ie_temp (id int PRIMARY KEY, a int);
SELECT backfill.create_job('ie_temp', 'ie_up', columns => '{a}', into_existing => true);
SELECT backfill.create_job('ie_up', 'ie_up', into_existing => true);
SELECT backfill.create_job('ie_parts', 'ie_up', columns => '{a,b}', into_existing => true);
SELECT backfill.create_job('backfill.job', 'ie_up', into_existing => true);
-- refused: a role that may not write the table
CREATE ROLE regress_ie_reader;
GRANT SELECT, TRIGGER ON ie_up TO regress_ie_reader;
CREATE TABLE ie_readonly (id int PRIMARY KEY, a int);
GRANT SELECT ON ie_readonly TO regress_ie_reader;
SET ROLE regress_ie_reader;
SELECT backfill.create_job('public.ie_readonly', 'ie_up', columns => '{a}', into_existing => true);
RESET ROLE;
-- nothing was left behind by the refusals
SELECT count(*) AS jobs FROM backfill.job WHERE status <> 'cancelled' AND job_id NOT IN (:parts, :again2);

DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM (SELECT job_id FROM backfill.job ORDER BY job_id) j; END$$;
DROP VIEW ie_view;
DROP TABLE ie_up, ie_mine, ie_parts, ie_again, ie_nokey, ie_partial, ie_deferred, ie_widekey,
    ie_nokeycol, ie_keytype, ie_type, ie_nocol, ie_notnull, ie_generated, ie_identity, ie_readonly, ie_temp;
DROP FUNCTION ie_mine_fill();
DROP ROLE regress_ie_reader;

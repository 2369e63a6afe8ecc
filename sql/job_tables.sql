-- A job's own tables (its state and change tables) and its image type are
-- the extension's: their owner, a plain role, may put no trigger, rule,
-- policy or index on them nor alter them; what an older version let it
-- leave there runs as it only, never as the extension's owner nor as a
-- superuser who reads the views.  The owner of a partitioned upstream
-- creates, attaches and detaches its partitions under its job.
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job; END$$;   -- earlier files' jobs
SELECT pg_catalog.setval('backfill.job_id_seq', 1, false);

CREATE ROLE regress_jt_mallory;
CREATE SCHEMA regress_jt AUTHORIZATION regress_jt_mallory;
SET ROLE regress_jt_mallory;
-- what the role's code notes of who runs it
CREATE TABLE regress_jt.seen (what text, who name, super boolean);
GRANT INSERT ON regress_jt.seen TO PUBLIC;
CREATE FUNCTION regress_jt.note(what text) RETURNS void LANGUAGE sql AS $$
    INSERT INTO regress_jt.seen
    SELECT what, current_user, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user
$$;
CREATE FUNCTION regress_jt.note_trigger() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM regress_jt.note(TG_NAME);
    RETURN NULL;
END $$;

-- its own partitioned upstream, partitions created and attached under its
-- job, their rows captured
CREATE TABLE regress_jt.up (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE regress_jt.up_a PARTITION OF regress_jt.up FOR VALUES FROM (0) TO (100);
CREATE TABLE regress_jt.up_c PARTITION OF regress_jt.up FOR VALUES FROM (200) TO (300);
INSERT INTO regress_jt.up SELECT g, 'a' || g FROM generate_series(1, 20) g;
INSERT INTO regress_jt.up SELECT g, 'c' || g FROM generate_series(201, 205) g;
SELECT backfill.create_job('regress_jt.down', 'regress_jt.up', chunk_size => 5) AS job \gset
SELECT state_table AS state, change_table AS changes FROM backfill.job WHERE job_id = :job \gset
CREATE TABLE regress_jt.up_b PARTITION OF regress_jt.up FOR VALUES FROM (100) TO (200);
INSERT INTO regress_jt.up SELECT g, 'b' || g FROM generate_series(101, 103) g;
CREATE TABLE regress_jt.up_d (id int PRIMARY KEY, v text);
INSERT INTO regress_jt.up_d SELECT g, 'd' || g FROM generate_series(301, 302) g;
ALTER TABLE regress_jt.up ATTACH PARTITION regress_jt.up_d FOR VALUES FROM (300) TO (400);
SELECT pg_catalog.count(*) AS triggers FROM pg_catalog.pg_trigger
 WHERE tgrelid IN ('regress_jt.up_b'::regclass, 'regress_jt.up_d'::regclass) AND tgname LIKE 'backfill%';
SELECT count(*) AS captured FROM :changes;

-- triggers, rules, policies and indexes on its job's tables, tables
-- inheriting from them or referencing them (whose foreign keys put triggers
-- on them), and any ALTER TABLE: refused
CREATE TRIGGER note AFTER INSERT ON :changes FOR EACH ROW EXECUTE FUNCTION regress_jt.note_trigger();
CREATE TRIGGER note AFTER UPDATE ON :state FOR EACH STATEMENT EXECUTE FUNCTION regress_jt.note_trigger();
CREATE RULE note AS ON INSERT TO :changes DO ALSO SELECT regress_jt.note('rule');
CREATE RULE "_RETURN" AS ON SELECT TO :state DO INSTEAD SELECT * FROM :state;
CREATE POLICY mine ON :state USING (true);
ALTER TABLE :state ENABLE ROW LEVEL SECURITY;
ALTER TABLE :state ALTER COLUMN row_count TYPE numeric;
ALTER TABLE :changes ADD COLUMN extra int;
ALTER TABLE :changes RENAME TO mine;
CREATE INDEX ON :changes ((regress_jt.note('index') IS NULL));
CREATE TABLE regress_jt.child () INHERITS (:state);
CREATE TABLE regress_jt.referencing (vnode int2 REFERENCES :state (vnode) ON DELETE CASCADE);
-- a COMMENT changes nothing
COMMENT ON TABLE :state IS 'mine';
SELECT obj_description(:'state'::regclass);
RESET ROLE;

-- what 1.3 let the role leave there, put back by a superuser (whom the
-- event trigger lets through): a trigger on the change table, and the state
-- table's vnode retyped to a type of the role's with an implicit cast back
-- to integer
CREATE TRIGGER note AFTER INSERT ON :changes FOR EACH STATEMENT EXECUTE FUNCTION regress_jt.note_trigger();
SET ROLE regress_jt_mallory;
CREATE TYPE regress_jt.vn AS (n int2);
CREATE FUNCTION regress_jt.vn_int(regress_jt.vn) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    PERFORM regress_jt.note('cast');
    RETURN $1.n;
END $$;
CREATE CAST (regress_jt.vn AS integer) WITH FUNCTION regress_jt.vn_int(regress_jt.vn) AS IMPLICIT;
RESET ROLE;

-- a partition detached by the role: its rows' keys go to the change table
-- as the job's owner, whose trigger runs as it, not as the extension's owner
SET ROLE regress_jt_mallory;
ALTER TABLE regress_jt.up DETACH PARTITION regress_jt.up_c;
RESET ROLE;
SELECT count(*) AS captured FROM :changes;
SELECT what, who, super, count(*) FROM regress_jt.seen GROUP BY 1, 2, 3;

-- a snapshot job over a partitioned upstream, of the role's: its log takes
-- the rows of partitions created, attached and detached, with their
-- images when they leave
SET ROLE regress_jt_mallory;
CREATE TABLE regress_jt.sp (id int PRIMARY KEY, v text) PARTITION BY RANGE (id);
CREATE TABLE regress_jt.sp_a PARTITION OF regress_jt.sp FOR VALUES FROM (0) TO (10);
INSERT INTO regress_jt.sp SELECT g, 'a' || g FROM generate_series(1, 3) g;
SELECT backfill.create_job('regress_jt.sp_down', 'regress_jt.sp', kind => 'snapshot') AS logjob \gset
SELECT change_table AS log FROM backfill.job WHERE job_id = :logjob \gset
CREATE TABLE regress_jt.sp_b PARTITION OF regress_jt.sp FOR VALUES FROM (10) TO (20);
INSERT INTO regress_jt.sp VALUES (11, 'b11');
CREATE TABLE regress_jt.sp_c (id int PRIMARY KEY, v text);
INSERT INTO regress_jt.sp_c VALUES (21, 'c21'), (22, 'c22');
ALTER TABLE regress_jt.sp ATTACH PARTITION regress_jt.sp_c FOR VALUES FROM (20) TO (30);
ALTER TABLE regress_jt.sp DETACH PARTITION regress_jt.sp_a;
SELECT id, backfill_old_row FROM :log ORDER BY backfill_seq;
SELECT count(DISTINCT backfill_seq) AS seqs FROM :log;
RESET ROLE;

-- a snapshot job, whose state backfill.jobs reads, with an image type of
-- its own (its filter reads a column the downstream has not); the role
-- may not retype its state table, nor alter the type
SET ROLE regress_jt_mallory;
CREATE TABLE regress_jt.t (id int PRIMARY KEY, v text, w text);
INSERT INTO regress_jt.t SELECT g, 'v' || g, 'w' || g FROM generate_series(1, 6) g;
SELECT backfill.create_job('regress_jt.t_down', 'regress_jt.t', kind => 'snapshot', filter => 'w IS NOT NULL',
                           chunk_size => 2) AS snap \gset
SELECT state_table AS snap_state, 'backfill.image_' || job_id AS snap_image
  FROM backfill.job WHERE job_id = :snap \gset
CALL backfill.run_job(:snap, 1);
ALTER TABLE :snap_state ALTER COLUMN vnode TYPE regress_jt.vn USING ROW(vnode)::regress_jt.vn;
ALTER TYPE :snap_image ADD ATTRIBUTE x regress_jt.vn;
RESET ROLE;

-- as 1.3 let the role do: then a superuser reads the job's state, in
-- backfill.jobs and ddl_progress too: the retyped column is refused, the
-- role's cast never runs
ALTER TABLE :snap_state ALTER COLUMN vnode TYPE regress_jt.vn USING ROW(vnode)::regress_jt.vn;
SELECT count(*) FROM backfill.job_state(:snap);
SELECT progress FROM backfill.jobs WHERE job_id = :snap;
SELECT ddl_id, progress FROM backfill.ddl_progress WHERE ddl_id = :snap;
SELECT what, who, super, count(*) FROM regress_jt.seen WHERE what = 'cast' GROUP BY 1, 2, 3;

-- the jobs' tables go with them; the grants that let the role clone the
-- jobs' triggers go with DROP OWNED
DO $$BEGIN PERFORM backfill.drop_job(job_id) FROM backfill.job WHERE owner = 'regress_jt_mallory'::regrole; END$$;
DROP SCHEMA regress_jt CASCADE;
DROP OWNED BY regress_jt_mallory;
DROP ROLE regress_jt_mallory;

-- The checks a cutover makes before anything is locked or changed, each
-- branch with its message, DETAIL and HINT, called directly: the objects
-- that name the old table and cannot be carried, tables not whole on their
-- own, owners that do not trust each other, another job over a table,
-- functions of the row type, what the new table would enforce less, and
-- the arguments a caller could pass (a NULL job row, an "accept" of two
-- dimensions).  Job ids are left out of the output.
\set VERBOSITY default
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;
CREATE ROLE regress_ck_plain;
CREATE ROLE regress_ck_owner;
GRANT CREATE ON SCHEMA public TO regress_ck_plain;
-- PUBLIC may not execute the internal functions: the plain role may here,
-- so that what is tested is each one's own check
GRANT EXECUTE ON FUNCTION backfill._cutover_check_matview(regclass, regclass),
    backfill._cutover_check(backfill.job, regclass, regclass) TO regress_ck_plain;

-- one statement in a subtransaction: "ok", or its error in full
CREATE FUNCTION pg_temp.ck(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
    msg text;
    det text;
    hnt text;
BEGIN
    EXECUTE sql;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT,
                            det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RETURN regexp_replace(concat_ws(E'\n', st || ': ' || msg, 'DETAIL: ' || nullif(det, ''),
                                    'HINT: ' || nullif(hnt, '')),
                          '(job |cutover\()\d+', '\1N', 'g');
END
$$;

-- a finished job, whose row the checks are given; src and dst are any two
-- tables of the caller's
CREATE TABLE ck_src (id int PRIMARY KEY, v text);
INSERT INTO ck_src SELECT g, 'v' || g FROM generate_series(1, 20) g;
SELECT backfill.create_job('ck_src_new', 'ck_src') AS ck_job \gset
CALL backfill.run_job(:ck_job);
CREATE TABLE ck_a (id int PRIMARY KEY, v text, n int NOT NULL UNIQUE);
CREATE TABLE ck_b (id int PRIMARY KEY, v text);
CREATE TABLE ck_same (id int PRIMARY KEY, v text, n int NOT NULL UNIQUE);
CREATE TEMP TABLE ck_j AS SELECT row_to_json(j) AS js FROM backfill.job j WHERE job_id = :ck_job;
GRANT SELECT ON ck_j TO regress_ck_plain;
CREATE FUNCTION pg_temp.check(src regclass, dst regclass) RETURNS text LANGUAGE sql AS $$
SELECT pg_temp.ck(format('SELECT backfill._cutover_check(json_populate_record(NULL::backfill.job, js), %L, %L) FROM ck_j',
                         src, dst))
$$;
\pset format unaligned
\pset tuples_only on
SELECT pg_temp.check('ck_src', 'ck_src_new');
SELECT pg_temp.check('ck_a', 'ck_b');

-- what names src and cannot be carried, one at a time
BEGIN;
CREATE VIEW ck_v AS SELECT id, n FROM ck_a;
SELECT pg_temp.check('ck_a', 'ck_b');
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE VIEW ck_w AS SELECT id, v FROM ck_b;
CREATE RULE ck_w_ins AS ON INSERT TO ck_w DO INSTEAD INSERT INTO ck_a (id, v) VALUES (NEW.id, NEW.v);
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE TABLE ck_t (id int);
CREATE RULE ck_t_ins AS ON INSERT TO ck_t DO ALSO INSERT INTO ck_a (id) VALUES (NEW.id);
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE RULE ck_a_upd AS ON UPDATE TO ck_a DO ALSO NOTHING;
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE MATERIALIZED VIEW ck_mv AS SELECT id, v FROM ck_a;
SELECT pg_temp.check('ck_a', 'ck_same');
CREATE VIEW ck_over_mv AS SELECT * FROM ck_mv;
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE MATERIALIZED VIEW ck_mv AS SELECT id, v FROM ck_a;
ALTER MATERIALIZED VIEW ck_mv OWNER TO regress_ck_plain;
GRANT SELECT ON ck_mv TO regress_ck_plain;
SET LOCAL ROLE regress_ck_plain;
SELECT pg_temp.ck('SELECT backfill._cutover_check_matview(''ck_mv'', ''ck_same'')');
RESET ROLE;
ALTER MATERIALIZED VIEW ck_mv OWNER TO CURRENT_USER;
SET LOCAL ROLE regress_ck_plain;
SELECT pg_temp.ck('SELECT backfill._cutover_check_matview(''ck_mv'', ''ck_same'')');
SELECT pg_temp.ck('SELECT backfill._cutover_check_matview(NULL, ''ck_same'')');
ROLLBACK;
BEGIN;
CREATE TABLE ck_parted (id int REFERENCES ck_a) PARTITION BY RANGE (id);
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE TABLE ck_child (n int REFERENCES ck_a (n));
SELECT pg_temp.check('ck_a', 'ck_same');
SELECT pg_temp.check('ck_a', 'ck_b');
ROLLBACK;
BEGIN;
CREATE FUNCTION ck_count() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT count(*) FROM ck_a; END;
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE TABLE ck_holder (r ck_a);
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
CREATE PUBLICATION ck_pub FOR TABLE ck_a WHERE (id > 0);
SELECT pg_temp.check('ck_a', 'ck_same');
ROLLBACK;
BEGIN;
ALTER TABLE ck_a REPLICA IDENTITY USING INDEX ck_a_n_key;
SELECT pg_temp.check('ck_a', 'ck_b');
ROLLBACK;

-- functions of src's row type: SQL ones follow when the columns are the
-- same, a C one never
BEGIN;
CREATE FUNCTION ck_f(ck_a) RETURNS int LANGUAGE sql AS 'SELECT 1';
SELECT pg_temp.check('ck_a', 'ck_b');
SELECT pg_temp.check('ck_a', 'ck_same');
CREATE FUNCTION ck_fc(ck_a) RETURNS cstring LANGUAGE internal STRICT AS 'record_out';
SELECT pg_temp.check('ck_a', 'ck_same');
SELECT pg_temp.ck('SELECT backfill._cutover_check_schema(NULL, ''ck_a'', ''ck_same'')');
ROLLBACK;

-- tables not whole on their own
BEGIN;
CREATE TABLE ck_p (id int) PARTITION BY RANGE (id);
CREATE TABLE ck_p1 PARTITION OF ck_p FOR VALUES FROM (0) TO (10);
CREATE TABLE ck_parent (id int);
CREATE TABLE ck_heir (id int) INHERITS (ck_parent);
CREATE TABLE ck_heir2 (id int) INHERITS (ck_parent);
SELECT pg_temp.check('ck_p1', 'ck_b');
SELECT pg_temp.check('ck_a', 'ck_heir');
SELECT pg_temp.check('ck_parent', 'ck_b');
SELECT pg_temp.ck('SELECT backfill._cutover_whole_table(NULL, ''ck_p1'')');
SELECT pg_temp.ck('SELECT backfill._cutover_whole_table(NULL, NULL)');
SELECT pg_temp.ck('SELECT backfill._cutover_whole_table(json_populate_record(NULL::backfill.job, js), ''ck_p'') FROM ck_j');
ROLLBACK;

-- owners: the caller must have the privileges of both, and the owner of
-- src must trust the owner of dst
BEGIN;
CREATE TABLE ck_theirs (id int PRIMARY KEY, v text, n int NOT NULL UNIQUE);
ALTER TABLE ck_theirs OWNER TO regress_ck_plain;
CREATE TABLE ck_mine (id int PRIMARY KEY, v text, n int NOT NULL UNIQUE);
ALTER TABLE ck_mine OWNER TO regress_ck_owner;
SELECT pg_temp.check('ck_mine', 'ck_theirs');
SELECT backfill._cutover_trusts('ck_mine', 'ck_theirs'), backfill._cutover_trusts('ck_theirs', 'ck_a'),
       backfill._cutover_trusts('ck_a', NULL) IS NULL, backfill._cutover_trusts(NULL, 'ck_a');
GRANT regress_ck_plain TO regress_ck_owner;
SELECT backfill._cutover_trusts('ck_mine', 'ck_theirs');
SELECT pg_temp.check('ck_mine', 'ck_theirs');
SET LOCAL ROLE regress_ck_plain;
SELECT pg_temp.check('ck_a', 'ck_theirs');
SELECT pg_temp.check('ck_theirs', 'ck_a');
ROLLBACK;

-- another job over either table
BEGIN;
SELECT backfill.create_job('ck_other', 'ck_a') IS NOT NULL;
SELECT pg_temp.check('ck_b', 'ck_a');
ROLLBACK;

-- row-level security that filtered what the job's owner read
BEGIN;
ALTER TABLE ck_a ENABLE ROW LEVEL SECURITY;
SELECT backfill._cutover_filtered_by_rls(json_populate_record(NULL::backfill.job,
           json_build_object('upstream', 'ck_a', 'owner', o)))
  FROM unnest(ARRAY[current_user, 'regress_ck_plain']) o;
ALTER TABLE ck_a FORCE ROW LEVEL SECURITY;
SELECT backfill._cutover_filtered_by_rls(json_populate_record(NULL::backfill.job,
           json_build_object('upstream', 'ck_a', 'owner', current_user)));
SELECT backfill._cutover_filtered_by_rls(NULL) IS NULL;
ROLLBACK;

-- what the new table would enforce less, and the words that accept it
CREATE TABLE ck_strong (a int NOT NULL, b int CHECK (b > 0), c int UNIQUE,
                        d int GENERATED ALWAYS AS (a * 2) STORED, e int DEFAULT 5,
                        f int GENERATED BY DEFAULT AS IDENTITY, g int REFERENCES ck_a,
                        EXCLUDE USING btree (a WITH =));
CREATE TABLE ck_weak (a int, b int, c int, d int, e int DEFAULT 6, f int DEFAULT 7, g int);
SELECT kind || ': ' || detail FROM backfill._cutover_weaker('ck_strong', 'ck_weak');
SELECT count(*) FROM backfill._cutover_weaker('ck_strong', 'ck_strong');
SELECT count(*) FROM backfill._cutover_weaker(NULL, 'ck_strong');
CREATE TEMP TABLE ck_jw AS
SELECT json_populate_record(NULL::backfill.job,
           json_build_object('job_id', 7, 'upstream', 'ck_strong', 'downstream', 'ck_weak')) AS j;
CREATE FUNCTION pg_temp.accepts(accept text) RETURNS text LANGUAGE sql AS $$
SELECT pg_temp.ck(format('SELECT backfill._cutover_accepts(j, %s) FROM ck_jw', accept))
$$;
SELECT pg_temp.accepts('NULL');
SELECT pg_temp.accepts('''{{check}}''');
SELECT pg_temp.accepts('ARRAY[''check'', NULL]');
SELECT pg_temp.accepts('ARRAY[''check'', ''bogus'', ''other'']');
SELECT pg_temp.accepts('ARRAY[''not_null'', ''check'', ''unique'', ''exclusion'', ''foreign_key'', ''generated'']');
SELECT pg_temp.accepts('ARRAY[''not_null'', ''check'', ''unique'', ''exclusion'', ''foreign_key'', ''generated'', ''default'', ''identity'']');
SELECT pg_temp.ck('SELECT backfill._cutover_accepts(NULL, ARRAY[''check''])');
\pset format aligned
\pset tuples_only off

DROP TABLE ck_strong, ck_weak, ck_a, ck_b, ck_same, ck_j, ck_jw;
SELECT backfill.drop_job(:ck_job);
DROP TABLE ck_src;
REVOKE CREATE ON SCHEMA public FROM regress_ck_plain;
REVOKE EXECUTE ON FUNCTION backfill._cutover_check_matview(regclass, regclass),
    backfill._cutover_check(backfill.job, regclass, regclass) FROM regress_ck_plain;
DROP ROLE regress_ck_plain, regress_ck_owner;

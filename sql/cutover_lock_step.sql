-- The cutover's lock step, function by function: the checks of its
-- arguments, why a job cannot be turned around, the pairs of partitions,
-- the locks it takes and in whose name, the refusal of an index built
-- concurrently.  Each message, its DETAIL, HINT and SQLSTATE as a user
-- sees them; as a plain role against a superuser's tables, and as a superuser
-- against a plain role's.
SET client_min_messages = warning;
CREATE ROLE regress_ls_plain LOGIN;
-- PUBLIC may not execute the internal functions: the plain role may here,
-- so that what is tested is each one's own check
GRANT EXECUTE ON FUNCTION backfill._cutover_lock_dependents(regclass, regclass),
    backfill._cutover_lock_relation(regclass),
    backfill._cutover_refuse_index_build(bigint, regclass, regclass),
    backfill._cutover_attempts(bigint, regclass, regclass, text, interval, integer) TO regress_ls_plain;
GRANT CREATE ON SCHEMA public TO regress_ls_plain;

-- an error shows its message, DETAIL and HINT, then its SQLSTATE
\set SHOW_CONTEXT never

-- lock_timeout and attempts: their bounds, both ends included
SELECT backfill._cutover_arguments('1ms', 1), backfill._cutover_arguments('1 hour', 1000);
SELECT backfill._cutover_arguments('0.999ms', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments('3600.001 s', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments('1 day', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments('-1 s', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments('1s', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments('1s', 1001);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_arguments('1s', NULL);
\echo :LAST_ERROR_SQLSTATE

-- why a job could not be followed back: a filter, a computed column, a
-- column not copied that is NOT NULL without a default, an owner that may
-- not write the upstream; NULL when nothing stands in the way, or when
-- the owner or the upstream is unknown
CREATE TABLE ls_up (id int PRIMARY KEY, "Odd Col" text NOT NULL, extra int NOT NULL DEFAULT 0, v text);
CREATE FUNCTION pg_temp.job(upstream regclass, owner regrole, columns text[],
                            filter text DEFAULT NULL, expressions text[] DEFAULT NULL)
RETURNS backfill.job LANGUAGE sql AS $$
SELECT json_populate_record(NULL::backfill.job,
                            json_build_object('upstream', upstream, 'owner', owner, 'columns', columns,
                                              'filter', filter, 'expressions', expressions))
$$;
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'postgres', '{id,Odd Col}', filter => 'id > 1'));
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'postgres', '{id,Odd Col}', expressions => '{NULL,NULL}'));
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'postgres', '{id,Odd Col}', expressions => '{NULL,"v || 1"}'));
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'postgres', '{id,v}'));
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'postgres', NULL));
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'regress_ls_plain', '{id,Odd Col}'));
GRANT UPDATE ON ls_up TO regress_ls_plain;
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', 'regress_ls_plain', '{id,Odd Col}')) IS NULL AS may_write;
SELECT backfill._cutover_irreversible(pg_temp.job('ls_up', NULL, '{id,Odd Col}')) IS NULL AS no_owner;
SELECT backfill._cutover_irreversible(pg_temp.job(NULL, 'postgres', '{id,Odd Col}')) IS NULL AS no_upstream;
SELECT backfill._cutover_irreversible(NULL) IS NULL AS no_job;

-- the pairs of partitions, by bounds, whatever their names and order
CREATE TABLE ls_p (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE ls_p_a PARTITION OF ls_p FOR VALUES FROM (1) TO (10);
CREATE TABLE ls_p_b PARTITION OF ls_p FOR VALUES FROM (10) TO (20);
CREATE TABLE ls_q (id int, v text) PARTITION BY RANGE (id);
CREATE TABLE ls_q_z PARTITION OF ls_q FOR VALUES FROM (10) TO (20);
CREATE TABLE ls_q_y PARTITION OF ls_q FOR VALUES FROM (1) TO (10);
SELECT * FROM backfill._cutover_partition_pairs('ls_p', 'ls_q');
-- one more on either side, and another key: refused
CREATE TABLE ls_q_x PARTITION OF ls_q FOR VALUES FROM (20) TO (30);
SELECT backfill._cutover_partition_pairs('ls_p', 'ls_q');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_partition_pairs('ls_q', 'ls_p');
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE ls_r (id int, v text) PARTITION BY LIST (id);
SELECT backfill._cutover_partition_pairs('ls_p', 'ls_r');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_partition_pairs('ls_p', 'ls_up');
\echo :LAST_ERROR_SQLSTATE
-- two tables not partitioned: no pair
SELECT count(*) FROM backfill._cutover_partition_pairs('ls_up', 'ls_up');

-- no index is being built: no row, and no refusal
SELECT count(*) FROM backfill._cutover_index_build('ls_p', 'ls_q');

-- the locks: the tables that reference src, its views, its sequences,
-- then both tables with their partitions, ACCESS EXCLUSIVE, and nothing
-- else (not the tables of a view that selects from another table too)
CREATE TABLE ls_other (id int);
CREATE TABLE ls_src (id serial PRIMARY KEY, v text);
CREATE TABLE ls_child (id int REFERENCES ls_src);
CREATE VIEW ls_view AS SELECT s.id FROM ls_src s, ls_other o;
CREATE MATERIALIZED VIEW ls_mv AS SELECT id FROM ls_src;
CREATE FUNCTION pg_temp.held(pattern text) RETURNS TABLE (relation regclass, mode text)
LANGUAGE sql AS $$
SELECT l.relation::regclass, l.mode FROM pg_locks l
 WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND l.relation::regclass::text LIKE pattern
 ORDER BY l.relation::regclass::text
$$;
BEGIN;
SELECT backfill._cutover_lock_dependents('ls_src', 'ls_p');
SELECT * FROM pg_temp.held('ls\_%');
ROLLBACK;

-- a plain role may take no lock on what it may not alter: the table that
-- references src (LOCK TABLE's check), a view or a sequence (its owner's
-- privileges), as in its cutover
GRANT SELECT, UPDATE ON ls_src, ls_p TO regress_ls_plain;
GRANT SELECT ON ls_child TO regress_ls_plain;
SET ROLE regress_ls_plain;
CREATE TABLE ls_mine (id int);
SELECT backfill._cutover_lock_dependents('ls_src', 'ls_mine');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT UPDATE ON ls_child TO regress_ls_plain;
SET ROLE regress_ls_plain;
SELECT backfill._cutover_lock_dependents('ls_src', 'ls_mine');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_lock_relation('ls_view');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_lock_relation('ls_src_id_seq');
\echo :LAST_ERROR_SQLSTATE
SELECT backfill._cutover_lock_relation(0);
\echo :LAST_ERROR_SQLSTATE
-- nor refuse, report or attempt a cutover of a job it does not own
CREATE TABLE ls_t (id int PRIMARY KEY, v text);
RESET ROLE;
SELECT backfill.create_job('ls_t_new', 'ls_t') AS su_job \gset
SET ROLE regress_ls_plain;
\set VERBOSITY sqlstate
SELECT backfill._cutover_refuse_index_build(:su_job, 'ls_t', 'ls_t_new');
SELECT backfill._cutover_attempts(:su_job, 'ls_t', 'ls_t_new', 'ls_t_old', '1s', 1);
\set VERBOSITY default
RESET ROLE;

-- a superuser against a plain role's job and tables: the locks are had
SET ROLE regress_ls_plain;
CREATE TABLE ls_plain (id int PRIMARY KEY, v text);
CREATE TABLE ls_plain_child (id int REFERENCES ls_plain);
CREATE VIEW ls_plain_view AS SELECT id FROM ls_plain;
SELECT backfill.create_job('ls_plain_new', 'ls_plain') AS plain_job \gset
RESET ROLE;
BEGIN;
SELECT backfill._cutover_refuse_index_build(:plain_job, 'ls_plain', 'ls_plain_new');
SELECT backfill._cutover_lock_dependents('ls_plain', 'ls_plain_new');
SELECT * FROM pg_temp.held('ls\_plain%');
ROLLBACK;

-- the cutover through the lock step: one attempt, the tables swapped
CALL backfill.run_job(:plain_job);
SELECT state, attempts_made, old_table, rollback_possible
  FROM backfill.cutover(:plain_job, old_name => 'ls_plain_old', attempts => 1);
SELECT relname, relowner::regrole FROM pg_class WHERE relname LIKE 'ls\_plain%' AND relkind = 'r' ORDER BY 1;
SELECT backfill.finish_cutover(:plain_job);

SELECT backfill.drop_job(:su_job);
DROP TABLE ls_up, ls_p, ls_q, ls_r, ls_child, ls_t, ls_src, ls_other CASCADE;
DROP OWNED BY regress_ls_plain;
DROP ROLE regress_ls_plain;

-- What a job copies is all of its upstream, and the indexes it gives its
-- downstream run no other role's code with the owner's rights.
--
-- Row-level security that applies to the job's owner on the upstream would
-- make the copy the rows the policies show the owner, and verify_job, which
-- reads through the same policies, would find nothing missing: create_job,
-- every run and verify_job refuse such a job (42501), whoever calls them.
-- It applies to a role that is not the table's owner, nor a superuser, nor
-- has BYPASSRLS, and to the owner under FORCE ROW LEVEL SECURITY.
--
-- create_job(indexes => true) gives the downstream the upstream's indexes,
-- whose expressions and predicates run as the downstream's owner: an index
-- calling a function (or an operator's function) of a role that does not
-- have the job owner's privileges is refused (42501).
\set SHOW_CONTEXT never
SET backfill.barrier_interval_ms = 0;

CREATE ROLE regress_rs_alice;              -- SELECT and TRIGGER on others' tables
CREATE ROLE regress_rs_owner;              -- owns tables, functions, operators
CREATE ROLE regress_rs_bypass BYPASSRLS;   -- sees every row of a table it may read
CREATE ROLE regress_rs_super SUPERUSER;    -- creates the superuser's jobs
CREATE SCHEMA regress_rs AUTHORIZATION regress_rs_owner;
GRANT USAGE, CREATE ON SCHEMA regress_rs TO regress_rs_alice, regress_rs_bypass;

-- a superuser's table: ten rows, of which alice's policy shows three
CREATE TABLE regress_rs.su_t (id int PRIMARY KEY, v text);
INSERT INTO regress_rs.su_t SELECT g, 'v' || g FROM generate_series(1, 10) g;
CREATE POLICY alice_three ON regress_rs.su_t FOR SELECT TO regress_rs_alice USING (id <= 3);
GRANT SELECT, TRIGGER ON regress_rs.su_t TO regress_rs_alice, regress_rs_bypass;

-- ---------------------------------------------------------------------------
-- create_job
-- ---------------------------------------------------------------------------

-- with row-level security enabled: alice is refused, and nothing is left
ALTER TABLE regress_rs.su_t ENABLE ROW LEVEL SECURITY;
SET ROLE regress_rs_alice;
SELECT count(*) AS alice_sees FROM regress_rs.su_t;
SELECT backfill.create_job('regress_rs.alice_copy', 'regress_rs.su_t');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_regclass('regress_rs.alice_copy') AS downstream;
SELECT count(*) AS alice_jobs FROM backfill.job;
-- row_security = off turns PostgreSQL's own filtering into an error; the
-- job is refused all the same
SET row_security = off;
SELECT backfill.create_job('regress_rs.alice_copy', 'regress_rs.su_t');
RESET row_security;
RESET ROLE;
SELECT count(*) AS triggers_on_su_t FROM pg_trigger WHERE tgrelid = 'regress_rs.su_t'::regclass;

-- forced as well: alice is still refused; a superuser and a role with
-- BYPASSRLS copy all ten rows
ALTER TABLE regress_rs.su_t FORCE ROW LEVEL SECURITY;
SET ROLE regress_rs_alice;
SELECT backfill.create_job('regress_rs.alice_copy', 'regress_rs.su_t');
SET ROLE regress_rs_bypass;
SELECT backfill.create_job('regress_rs.bypass_copy', 'regress_rs.su_t') AS bypass_job \gset
CALL backfill.run_job(:bypass_job);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :bypass_job;
SELECT count(*) AS copied FROM regress_rs.bypass_copy;
SELECT * FROM backfill.verify_job(:bypass_job);
RESET ROLE;
SELECT backfill.create_job('regress_rs.su_copy', 'regress_rs.su_t') AS su_job \gset
CALL backfill.run_job(:su_job);
SELECT count(*) AS copied FROM regress_rs.su_copy;

-- the table's owner: its own policies do not apply to it unless forced
SET ROLE regress_rs_owner;
CREATE TABLE regress_rs.own_t (id int PRIMARY KEY, v text);
INSERT INTO regress_rs.own_t SELECT g, 'v' || g FROM generate_series(1, 10) g;
CREATE POLICY owner_two ON regress_rs.own_t USING (id <= 2);
ALTER TABLE regress_rs.own_t ENABLE ROW LEVEL SECURITY;
SELECT backfill.create_job('regress_rs.own_copy', 'regress_rs.own_t') AS own_job \gset
CALL backfill.run_job(:own_job);
SELECT count(*) AS copied FROM regress_rs.own_copy;
SELECT * FROM backfill.verify_job(:own_job);
ALTER TABLE regress_rs.own_t FORCE ROW LEVEL SECURITY;
SELECT count(*) AS owner_sees FROM regress_rs.own_t;
SELECT backfill.create_job('regress_rs.own_copy2', 'regress_rs.own_t');
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
RESET ROLE;

-- ---------------------------------------------------------------------------
-- a policy that applies to the owner after create_job: runs and verify_job
-- ---------------------------------------------------------------------------

CREATE TABLE regress_rs.late_t (id int PRIMARY KEY, v text);
INSERT INTO regress_rs.late_t SELECT g, 'v' || g FROM generate_series(1, 10) g;
GRANT SELECT, TRIGGER ON regress_rs.late_t TO regress_rs_alice;
SET ROLE regress_rs_alice;
SELECT backfill.create_job('regress_rs.late_copy', 'regress_rs.late_t', chunk_size => 2) AS late_job \gset
CALL backfill.run_job(:late_job, 1);
SELECT count(*) AS copied FROM regress_rs.late_copy;
RESET ROLE;
CREATE POLICY alice_three ON regress_rs.late_t FOR SELECT TO regress_rs_alice USING (id <= 3);
ALTER TABLE regress_rs.late_t ENABLE ROW LEVEL SECURITY;
-- her next run is refused, recorded on the job; so is a superuser's run of
-- her job, and verify_job, hers and a superuser's
SET ROLE regress_rs_alice;
CALL backfill.run_job(:late_job);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT status, last_error FROM backfill.job WHERE job_id = :late_job;
SELECT count(*) AS copied FROM regress_rs.late_copy;
SELECT * FROM backfill.verify_job(:late_job);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
RESET ROLE;
CALL backfill.run_job(:late_job);
SELECT * FROM backfill.verify_job(:late_job);
-- verify_job checks its argument and the caller
SELECT * FROM backfill.verify_job(NULL::bigint);
SET ROLE regress_rs_bypass;
\set VERBOSITY sqlstate
SELECT * FROM backfill.verify_job(:late_job);
\set VERBOSITY default
RESET ROLE;
-- once the policies no longer apply to her, the job runs on to the end,
-- every row copied
ALTER TABLE regress_rs.late_t DISABLE ROW LEVEL SECURITY;
SET ROLE regress_rs_alice;
CALL backfill.run_job(:late_job);
SELECT status, row_count FROM backfill.jobs WHERE job_id = :late_job;
SELECT count(*) AS copied FROM regress_rs.late_copy;
SELECT * FROM backfill.verify_job(:late_job);
RESET ROLE;

-- ---------------------------------------------------------------------------
-- indexes => true: whose functions an index copied to the downstream calls
-- ---------------------------------------------------------------------------

-- the table owner's function, in an expression index and as an operator's
-- code in a partial index's predicate; each tells whom it runs as
SET ROLE regress_rs_owner;
CREATE FUNCTION regress_rs.norm(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RAISE NOTICE 'norm runs as a superuser: %',
        (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user);
    RETURN lower(t);
END $$;
CREATE FUNCTION regress_rs.long_text(t text, n int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RAISE NOTICE 'long_text runs as a superuser: %',
        (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user);
    RETURN length(t) > n;
END $$;
CREATE OPERATOR regress_rs.>>> (LEFTARG = text, RIGHTARG = int, FUNCTION = regress_rs.long_text);
CREATE TABLE regress_rs.ix_t (id int PRIMARY KEY, v text, w text);
INSERT INTO regress_rs.ix_t SELECT g, 'V' || g, 'w' || g FROM generate_series(1, 3) g;
CREATE INDEX ix_t_v_lower ON regress_rs.ix_t (lower(v));
CREATE INDEX ix_t_norm ON regress_rs.ix_t (regress_rs.norm(v));
GRANT SELECT, TRIGGER ON regress_rs.ix_t TO regress_rs_alice;
CREATE TABLE regress_rs.op_t (id int PRIMARY KEY, v text);
INSERT INTO regress_rs.op_t SELECT g, 'V' || g FROM generate_series(1, 3) g;
CREATE INDEX op_t_long ON regress_rs.op_t (id) WHERE v OPERATOR(regress_rs.>>>) 1;
-- her own job: her own functions run as her
SELECT backfill.create_job('regress_rs.ix_own', 'regress_rs.ix_t', indexes => true) AS ix_own \gset
SELECT indexrelid::regclass::text AS index FROM pg_index
 WHERE indrelid = 'regress_rs.ix_own'::regclass ORDER BY 1;
RESET ROLE;

-- a superuser's job: the index over her function is refused, nothing left
SET ROLE regress_rs_super;
SELECT backfill.create_job('regress_rs.ix_su', 'regress_rs.ix_t', indexes => true);
SELECT :'LAST_ERROR_SQLSTATE' AS sqlstate;
SELECT to_regclass('regress_rs.ix_su') AS downstream;
SELECT backfill.create_job('regress_rs.op_su', 'regress_rs.op_t', indexes => true);
-- without the index copy, the job is made
SELECT backfill.create_job('regress_rs.ix_su', 'regress_rs.ix_t', indexes => false) > 0 AS created;
RESET ROLE;

-- a superuser's own function: kept, as PostgreSQL's are
CREATE FUNCTION regress_rs.su_norm(t text) RETURNS text LANGUAGE sql IMMUTABLE
    AS $$SELECT pg_catalog.upper(t)$$;
CREATE TABLE regress_rs.su_ix (id int PRIMARY KEY, v text);
CREATE INDEX su_ix_norm ON regress_rs.su_ix (regress_rs.su_norm(v));
CREATE INDEX su_ix_lower ON regress_rs.su_ix (lower(v)) WHERE v <> '';
GRANT SELECT, TRIGGER ON regress_rs.su_ix TO regress_rs_alice;
SELECT backfill.create_job('regress_rs.su_ix_copy', 'regress_rs.su_ix', indexes => true) > 0 AS created;
SELECT pg_get_indexdef(indexrelid) AS definition FROM pg_index
 WHERE indrelid = 'regress_rs.su_ix_copy'::regclass ORDER BY 1;
-- and for a plain role's job too
SET ROLE regress_rs_alice;
SELECT backfill.create_job('regress_rs.su_ix_alice', 'regress_rs.su_ix', indexes => true) > 0 AS created;
-- the owner's function would run as alice: refused, until the owner has
-- alice's privileges anyway
SELECT backfill.create_job('regress_rs.ix_alice', 'regress_rs.ix_t', indexes => true);
RESET ROLE;
GRANT regress_rs_alice TO regress_rs_owner;
SET ROLE regress_rs_alice;
SELECT backfill.create_job('regress_rs.ix_alice', 'regress_rs.ix_t', indexes => true) > 0 AS created;
RESET ROLE;
REVOKE regress_rs_alice FROM regress_rs_owner;

-- ---------------------------------------------------------------------------
-- what this file made
-- ---------------------------------------------------------------------------
SET client_min_messages = warning;
DO $$BEGIN
    PERFORM backfill.drop_job(job_id) FROM backfill.job
     WHERE upstream::oid IN (SELECT oid FROM pg_class
                              WHERE relnamespace = 'regress_rs'::regnamespace);
END$$;
DROP SCHEMA regress_rs CASCADE;
DROP ROLE regress_rs_alice;
DROP ROLE regress_rs_owner;
DROP ROLE regress_rs_bypass;
DROP ROLE regress_rs_super;
RESET client_min_messages;

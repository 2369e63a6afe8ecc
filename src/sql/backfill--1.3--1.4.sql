/* backfill--1.3--1.4.sql: from version 1.3 to 1.4 */

-- CREATE EXTENSION backfill installs 1.3 (backfill--1.3.sql) and runs this
-- script; ALTER EXTENSION backfill UPDATE runs it on a 1.3 catalog.  Every
-- object it changes is defined here once, in its final form.

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.4'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Internal functions: what each checks before it touches anything
-- ---------------------------------------------------------------------------

-- The PL/pgSQL functions of the API run with their caller's rights and call
-- the internal ones, which therefore stay executable by every role and check
-- every argument themselves (doc/security.md): the job is one of this
-- database whose owner's privileges the caller has, a relation exists and
-- the caller may read it or has the privileges of its owner, no argument
-- the function needs is NULL, an array has one dimension and no NULL, a
-- query returns the columns and types the function reads.  What nothing
-- calls, or only the server calls (triggers, event triggers), no role may
-- call.
REVOKE ALL ON FUNCTION backfill._drop_slot(bigint) FROM PUBLIC;

COMMENT ON FUNCTION backfill.job_workers() IS
'The background workers running jobs: job, actor and process id; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats.';

COMMENT ON FUNCTION backfill._key_compare_sql(regclass, text[], text, text, text) IS
'Internal: the SQL comparing the key columns pk_columns of upstream under alias left with those under alias right (op: <, <=, =, >=, >), through the key types'' btree operator classes; pk_columns a list of columns of upstream, one dimension, no NULL, that the caller may read.';
COMMENT ON FUNCTION backfill._live_actors() IS
'Internal: the actors running now, as their processes published them in shared memory after their last barrier; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats, whose members see the position (a key of the upstream) only of the jobs of roles whose privileges they have.';
COMMENT ON FUNCTION backfill._job_is_running(bigint) IS
'Internal: whether background workers or a session run a job the caller owns now; any job of the database for a member of pg_read_all_stats, which sees every job in backfill.jobs.';
COMMENT ON FUNCTION backfill._cutover_turn(bigint, boolean) IS
'Internal: turns a finished job the caller owns around under its tables'' lock, for a caller with the privileges of the owners of both tables: its apply triggers move to its downstream, which becomes its upstream.';
COMMENT ON FUNCTION backfill._cutover_record(bigint, text, integer, oid, oid, text, oid, text, boolean, boolean, double precision, oid[], boolean) IS
'Internal: writes the cutover row of a job the caller owns, whose tables must be the job''s own, owned by roles whose privileges the caller has.';
COMMENT ON FUNCTION backfill._cutover_report(bigint, text) IS
'Internal: shows what a cutover of a job the caller owns is doing in pg_stat_activity.query of its backend: one line of at most 512 bytes.';
COMMENT ON FUNCTION backfill._remote_switchover(bigint, boolean, interval, integer) IS
'Internal: switches a finished remote job the caller owns, not cut over, over from its source, for a caller with the privileges of the owner of its local table: optionally fences the source table (revokes its write privileges from every role but its owner, and records them on the source), fetches and applies every change committed there, sets the local sequences to the source''s, stops following; drops the slot and the publication on the source once the transaction has committed, and gives the fence back if it aborts; returns the source LSN it switched at.';
COMMENT ON FUNCTION backfill._drop_slot(bigint) IS
'Internal: drops the replication slot of a cdc job the caller owns, if it exists, when the transaction commits.  Not executable by PUBLIC: nothing calls it.';

-- The job row it is given must be of a job the caller owns: its tables are
-- dropped with the caller's rights, but the indexes named in the job's
-- catalog are built on its downstream, and only that job's.  The cutover
-- functions call it; cancel_job and drop_job make the same drop in C
-- (src/api/job_drop.c)
CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_job_objects_1_4'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._drop_job_objects(backfill.job, boolean) IS
'Internal: drops the triggers and tables of a job the caller owns, given its row as the caller read it.';

-- ---------------------------------------------------------------------------
-- A job's own tables: the extension's, not a place for its owner's code
-- ---------------------------------------------------------------------------

-- A job's state and change tables and its image type belong to its owner,
-- but only the extension changes them: what created or altered a trigger,
-- a rule, a policy, an index, statistics, a column or an inheritance on
-- them, or altered the type, is refused at its end (src/api/ddl_job_tables.c)
CREATE FUNCTION backfill._on_job_table_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_on_job_table_ddl'
LANGUAGE C
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._on_job_table_ddl() IS
'Internal: event trigger that refuses triggers, rules, policies, indexes, statistics and ALTER TABLE on a job''s state and change tables, tables inheriting from them, and ALTER TYPE of its image type, unless run by a role with the privileges of the extension''s owner.';
REVOKE ALL ON FUNCTION backfill._on_job_table_ddl() FROM PUBLIC;

CREATE EVENT TRIGGER backfill_ddl_job_tables ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE', 'CREATE TABLE', 'CREATE TRIGGER', 'ALTER TRIGGER',
                 'CREATE RULE', 'ALTER RULE', 'CREATE POLICY', 'ALTER POLICY',
                 'CREATE INDEX', 'ALTER INDEX', 'CREATE STATISTICS', 'ALTER STATISTICS',
                 'ALTER TYPE')
    EXECUTE FUNCTION backfill._on_job_table_ddl();

-- A partition created or attached under a job's upstream gets clones of
-- the job's row triggers, which PostgreSQL makes only for a role that may
-- execute their functions: granted to the role that runs the command (it
-- owns the partitioned table), since each function checks where it fires
CREATE FUNCTION backfill._before_partition_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_before_partition_ddl'
LANGUAGE C
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._before_partition_ddl() IS
'Internal: event trigger that, before a partition is created or attached under a job''s upstream, grants the functions of the job''s row triggers to the role that runs the command, for PostgreSQL to clone those triggers.';
REVOKE ALL ON FUNCTION backfill._before_partition_ddl() FROM PUBLIC;

CREATE EVENT TRIGGER backfill_ddl_partition_start ON ddl_command_start
    WHEN TAG IN ('CREATE TABLE', 'CREATE FOREIGN TABLE', 'ALTER TABLE')
    EXECUTE FUNCTION backfill._before_partition_ddl();

-- What version 1.3 let a job's owner put on those tables stays, and runs
-- as that owner only; say so, for its owner or a superuser to drop
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT j.job_id, o.what
          FROM backfill.job j
          CROSS JOIN LATERAL (
                SELECT pg_catalog.format('trigger %I on %s', t.tgname, t.tgrelid::pg_catalog.regclass) AS what
                  FROM pg_catalog.pg_trigger t
                 WHERE t.tgrelid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                   AND NOT t.tgisinternal
                UNION ALL
                SELECT pg_catalog.format('rule %I on %s', w.rulename, w.ev_class::pg_catalog.regclass)
                  FROM pg_catalog.pg_rewrite w
                 WHERE w.ev_class OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                UNION ALL
                SELECT pg_catalog.format('policy %I on %s', p.polname, p.polrelid::pg_catalog.regclass)
                  FROM pg_catalog.pg_policy p
                 WHERE p.polrelid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                   AND p.polname OPERATOR(pg_catalog.<>) pg_catalog.format('backfill_job_%s_owner', j.job_id)
                UNION ALL
                SELECT pg_catalog.format('row-level security on %s', c.oid::pg_catalog.regclass)
                  FROM pg_catalog.pg_class c
                 WHERE c.oid OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])
                   AND c.relrowsecurity
                UNION ALL
                SELECT pg_catalog.format('table %s inheriting from %s', h.inhrelid::pg_catalog.regclass,
                                         h.inhparent::pg_catalog.regclass)
                  FROM pg_catalog.pg_inherits h
                 WHERE h.inhparent OPERATOR(pg_catalog.=) ANY (ARRAY[j.state_table, j.change_table]::pg_catalog.oid[])) o
         WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled'
         ORDER BY j.job_id, o.what
    LOOP
        RAISE WARNING 'backfill job % has a % that the extension did not make', r.job_id, r.what
            USING DETAIL = 'A job''s state and change tables are the extension''s; it runs what their owner put there as that owner only.',
                  HINT = 'Drop it; the extension refuses new ones.';
    END LOOP;
END
$$;

-- ---------------------------------------------------------------------------
-- A job's state, its splits and its reschedule: C, each kind's part behind
-- its callbacks (src/kinds/kind.h), as the engine reaches a kind
-- ---------------------------------------------------------------------------

-- job_state reads with the caller's rights (a superuser's, who reads every
-- job's state through backfill.jobs) the job's row, its actors and its
-- state table, which must first carry nothing of its owner's that a read
-- would run: an ordinary table, without rules (which could make it a view)
-- or row-level security, each of whose columns has the type the extension
-- gave it: a type of the system's, or the upstream's column of that name
-- (the key's).  A column retyped to a type of its owner's, whose implicit
-- casts would run in the reader's comparisons, is an error, not a cast.
-- Its kind decodes the rows (src/api/observe.c).
CREATE OR REPLACE FUNCTION backfill.job_state(job_id bigint)
RETURNS TABLE (actor_id integer, vnode integer, current_pos text,
               backfill_finished boolean, row_count bigint,
               epoch bigint, cdc_offset jsonb)
AS 'MODULE_PATHNAME', 'backfill_job_state_1_4'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_state(bigint) IS
'The state rows of a job, decoded: one per vnode with its actor; for a cdc job its one split; for a remote job one per split (vnode is its id, current_pos its range of the first key column, cdc_offset its low and high offsets).';

-- each split of a job whose kind cuts its own (its upstream is on other
-- servers) with its partition, its server and its range of the first key
-- column (NULL: the partition's start or end); no rows for another job
CREATE OR REPLACE FUNCTION backfill.job_splits(job_id bigint)
RETURNS TABLE (split_id integer, partition regclass, server name,
               lower_bound text, upper_bound text)
AS 'MODULE_PATHNAME', 'backfill_job_splits_1_4'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_splits(bigint) IS
'The splits of a job whose upstream is on other servers: each split''s foreign table (a partition of a sharded upstream), its server and its bounds on the first key column (NULL: unbounded).';

-- reschedule checks everything before the workers stop (a refused
-- reschedule leaves them running): the parallelism, which its kind may
-- restrict, and, for a job being created, whether its kind can be
-- rescheduled before it finishes (a legacy no-shuffle one, a snapshot one
-- before it follows the upstream cannot, with the text of RisingWave's
-- meta, stream_manager.rs); then the caps on background workers
CREATE OR REPLACE FUNCTION backfill.reschedule(job_id bigint, parallelism integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_reschedule_1_4'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.reschedule(bigint, integer) IS
'Spreads the vnodes of a job over a new set of actors; restarts its background workers if it had any.';

-- what the SQL versions of those called, which nothing calls any more
DROP FUNCTION backfill._check_reschedule(bigint);
DROP FUNCTION backfill._check_workers(bigint, integer);
DROP FUNCTION backfill._rebuild_actors(bigint, integer);

-- ---------------------------------------------------------------------------
-- A whole-table copy's downstream refuses what its upstream refuses
-- ---------------------------------------------------------------------------

-- indexes now defaults to NULL: a job that copies the whole of a table
-- gives its downstream the upstream's NOT NULL columns, CHECK, UNIQUE and
-- EXCLUDE constraints and other indexes (src/copy/index_build.c); false
-- still makes a bare copy.  The signature is 1.3's, and so is its C symbol.
-- a job made with indexes NULL says so, and recreate_job passes it on
ALTER TABLE backfill.job ALTER COLUMN indexes DROP NOT NULL;
COMMENT ON COLUMN backfill.job.indexes IS
'create_job''s "indexes": true when it gave the downstream the upstream''s indexes besides its key, NULL when it was left to the job (a whole-table copy then gets them and the upstream''s constraints), false for neither.';
CREATE OR REPLACE FUNCTION backfill.create_job(name text, upstream regclass,
                                    kind text DEFAULT 'arrangement',
                                    columns text[] DEFAULT NULL,
                                    parallelism integer DEFAULT 1,
                                    chunk_size integer DEFAULT 256,
                                    rate_limit integer DEFAULT NULL,
                                    filter text DEFAULT NULL,
                                    into_existing boolean DEFAULT false,
                                    indexes boolean DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job_1_3'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer, text, boolean, boolean) IS
'Creates a streaming job that fills the table "name" (a new one, or with into_existing an empty one of the user''s) from the rows of "upstream" that pass "filter"; returns the job id.  With indexes NULL, a copy of a whole table gets its NOT NULL columns, CHECK, UNIQUE and EXCLUDE constraints and other indexes; with true, its other indexes; with false, neither.';

-- ---------------------------------------------------------------------------
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------

-- Whose code the writers of src run after the cutover: dst's triggers,
-- defaults, check constraints, rules and policies go into production with
-- it.  True when dst's owner is src's, a superuser, or a role whose
-- privileges src's owner has through its memberships: code src's writers
-- already trust.  A superuser's rights over every role do not count here
-- (pg_has_role would say yes to any role for a superuser's table)
-- (src/cutover/check_owner.c).
CREATE FUNCTION backfill._cutover_trusts(src regclass, dst regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_cutover_trusts'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_trusts(regclass, regclass) IS
'Internal: whether the owner of dst is the owner of src, a superuser, or a role whose privileges the owner of src has through its memberships.';

-- A cutover renames whole tables: a partition would be left detached from
-- its parent (whose writes go on reaching the old one), and the rows of an
-- inheritance child would not follow the name.  A partitioned table is
-- whole, its partitions with it (src/cutover/check_table.c).
CREATE FUNCTION backfill._cutover_whole_table(j backfill.job, rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_whole_table'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_whole_table(backfill.job, regclass) IS
'Internal: refuses the cutover of a partition, or of a table that inherits or has inheritance children, unless it is a partitioned table.';

-- The other job over src or dst, whoever owns it: backfill.job shows a
-- role only its own jobs, and one it could not see would be left on the
-- wrong table by the swap.  Returns its id and nothing else about it
-- (src/api/cutover.c).
CREATE FUNCTION backfill._cutover_other_job(job_id bigint, src regclass, dst regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_cutover_other_job'
LANGUAGE C STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_other_job(bigint, regclass, regclass) IS
'Internal: for a caller who owns job job_id, the first other job, of any owner and not cancelled, whose upstream or downstream is src or dst; NULL if none.';

-- Whether row-level security filtered what the job's owner read of its
-- upstream: enabled on it, and the owner neither bypasses it nor owns the
-- table without FORCE ROW LEVEL SECURITY (src/cutover/check_table.c)
CREATE FUNCTION backfill._cutover_filtered_by_rls(j backfill.job)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_cutover_filtered_by_rls'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_filtered_by_rls(backfill.job) IS
'Internal: whether row-level security on the upstream of a job applies to the job''s owner.';

-- after the turn, the job goes to the owner of its tables (src/api/cutover.c)
CREATE FUNCTION backfill._cutover_hand_over(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_hand_over'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_hand_over(bigint) IS
'Internal: under the lock of its swap, gives a job just turned around, its state and change tables to the owner of its upstream.';

-- dst's privileges become src's, grantors included (src/cutover/carry_acl.c)
CREATE FUNCTION backfill._cutover_copy_acl(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_copy_acl'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_copy_acl(regclass, regclass) IS
'Internal: under the lock of both tables of one owner, gives dst exactly the privileges of src, the table''s and its columns'' by name, with their grantors.';

-- The pairs of an index of src and one of dst of the same definition (the
-- method, columns, expressions, predicate, uniqueness, primary key,
-- exclusion, deferrability, and the kind of constraint it carries), whose
-- names the swap exchanges: the n-th of src's indexes of a definition, by
-- name, with the n-th of dst's, so that two indexes of one definition
-- both get their names back, and an exclusion constraint's index never
-- pairs with a plain index.  Pairs whose names are already the same are
-- left out (src/cutover/index_pairs.c).
CREATE FUNCTION backfill._cutover_index_pairs(src regclass, dst regclass,
                                              OUT src_index name, OUT dst_index name)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_cutover_index_pairs'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_index_pairs(regclass, regclass) IS
'Internal: the indexes of src and dst of the same definition, paired one to one in the order of their names, whose names the swap exchanges.';

-- dst's unique index on the columns (by name) of src's replica identity
-- index (src/cutover/index_pairs.c)
CREATE OR REPLACE FUNCTION backfill._cutover_identity_index(src regclass, dst regclass)
RETURNS regclass
AS 'MODULE_PATHNAME', 'backfill_cutover_identity_index'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;

-- An identity or serial column that both tables have, each with a sequence
-- of its own: dst's goes on where src's was, so that the first insert
-- after the swap does not take a value the table holds already.  (When
-- only src has one, the swap moves it, its position with it.)  Run as the
-- caller, who needs UPDATE on dst's sequences and SELECT on src's
-- (src/cutover/carry_sequences.c).
CREATE FUNCTION backfill._cutover_carry_identity(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_identity'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_identity(regclass, regclass) IS
'Internal: sets the sequence of each identity or serial column of dst to the position of the sequence of the column of the same name of src, where both have one.';

-- Functions declared with src's row type, and the subscriptions that
-- write to src, re-pointed to dst (src/cutover/carry_functions.c,
-- carry_subscriptions.c)
CREATE FUNCTION backfill._cutover_carry_functions(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_functions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_functions(regclass, regclass) IS
'Internal: under the lock of both tables, re-points the functions declared with the row type of src, or its array type, to those of dst, whose columns must be the same.';

CREATE FUNCTION backfill._cutover_carry_subscriptions(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_subscriptions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_subscriptions(regclass, regclass) IS
'Internal: under the lock of both tables, moves the rows of pg_subscription_rel of src, each ready, to dst.';

-- What a real schema has that the cutover cannot carry, refused before
-- anything changes: a subscription still copying src (or writing to dst
-- too), a generated column of src that is a plain column of dst (no ALTER
-- makes a column generated: after the cutover it would no longer be), and
-- functions of src's row type when dst's columns differ from src's
-- (src/cutover/check_schema.c).
CREATE FUNCTION backfill._cutover_check_schema(j backfill.job, src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_check_schema'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_check_schema(backfill.job, regclass, regclass) IS
'Internal: refuses a cutover of a table a subscription is still copying, or of two tables one subscription writes to, of generated columns that would no longer be generated, and of functions of the row type of src when the columns of dst differ.';

-- Materialized views over src, re-made over dst: the definitions are
-- printed before the renames, with src's name, which dst then has
-- (_cutover_matviews); after them, each is created anew under a name of
-- its own, WITH NO DATA, given the old one's owner, privileges (grantors
-- included, src/cutover/carry_acl.c), storage parameters, tablespace and
-- comments, filled, takes the old one's place and name, and gets its
-- indexes again (_cutover_carry_matviews).  It is filled by REFRESH,
-- which runs its query as its owner, under the lock, when the new table
-- is at most 8 MB; else it is left unfilled (a query of it fails until
-- then), with a NOTICE that says to refresh it after the cutover.
CREATE FUNCTION backfill._cutover_matviews(src regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'backfill_cutover_matviews'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_matviews(regclass) IS
'Internal: the materialized views over src, each with the statements that make it again, printed with the names they have.';

CREATE FUNCTION backfill._cutover_carry_matviews(src regclass, dst regclass, matviews jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_matviews'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_matviews(regclass, regclass, jsonb) IS
'Internal: under the lock of both tables, makes each materialized view given by _cutover_matviews again over dst, with its owner, privileges, options, comments and indexes, filled when dst is at most 8 MB.';

-- a materialized view the swap can make again: nothing else depends on it
-- (a view over it would have to be dropped with it), and its owner is a
-- role whose privileges the caller has, as the swap gives it to that role
-- (src/cutover/check_owner.c)
CREATE FUNCTION backfill._cutover_check_matview(mv regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_check_matview'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_check_matview(regclass, regclass) IS
'Internal: refuses to carry a materialized view another object depends on, or whose owner''s privileges the caller lacks.';

-- What src (the old table) enforces that dst (the new one) does not, one
-- row per thing, kind being the word cutover's "accept" takes for it.  The
-- swap carries src's defaults and identity to columns of dst that have
-- none, the foreign keys of other tables that reference src and src's own
-- to itself; what it does not carry is the table's own: NOT NULL, CHECK,
-- UNIQUE (a unique index or constraint, the primary key too), EXCLUDE, its
-- foreign keys to other tables, generated columns and partitioning.  A default or an identity of
-- dst's own that differs from src's stays dst's, so it is listed too.
-- Constraints compare by definition (a NOT VALID one on dst checks new
-- rows as src's does); indexes as the swap pairs them (src/cutover/weaker.c).
CREATE FUNCTION backfill._cutover_weaker(src regclass, dst regclass)
RETURNS TABLE (kind text, detail text)
AS 'MODULE_PATHNAME', 'backfill_cutover_weaker'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_weaker(regclass, regclass) IS
'Internal: what table src enforces that table dst does not and a cutover would not carry over (NOT NULL, CHECK, UNIQUE, EXCLUDE, its own foreign keys, generated columns, a different default or identity, partitioning), one row per thing, with the word that accepts it.';

-- Refuses the cutover of a job whose downstream would enforce less than its
-- upstream did, unless the caller accepts each kind of loss by name
-- (src/cutover/accepts.c)
CREATE FUNCTION backfill._cutover_accepts(j backfill.job, accept text[])
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_accepts'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_accepts(backfill.job, text[]) IS
'Internal: refuses the cutover of a job whose downstream does not enforce what its upstream does (backfill._cutover_weaker), unless accept names each kind of loss.';

-- What refuses a swap of src (which has the name) for dst, before anything
-- is locked or changed: a dst whose owner's code src's writers do not
-- already run, tables that are not whole tables on their own (a partition,
-- a table in an inheritance tree), another job over either table, and the
-- objects that name src and cannot be carried (src/cutover/check.c).
CREATE OR REPLACE FUNCTION backfill._cutover_check(j backfill.job, src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_check'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_check(backfill.job, regclass, regclass) IS
'Internal: refuses a cutover of tables whose owners do not trust each other, of a partition or a table in an inheritance tree, over which another job runs, or whose dependent objects cannot be carried, before anything is locked or changed.';


-- The swap itself, under the lock of both tables: src (which has the name)
-- becomes src_new_name in its schema, dst takes src's name and schema, and
-- what names src moves to dst.  Definitions are read before the renames, so
-- that the names they print resolve to dst afterwards.  Returns the foreign
-- keys added NOT VALID (those of other tables to dst, and dst's own to
-- itself), to validate after the transaction.
CREATE OR REPLACE FUNCTION backfill._cutover_swap(src regclass, dst regclass, src_new_name text)
RETURNS oid[]
AS 'MODULE_PATHNAME', 'backfill_cutover_swap'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_swap(regclass, regclass, text) IS
'Internal: under the lock of both tables, renames src to src_new_name and dst to src''s name, swaps the names of their indexes of the same definition, and moves to dst what names src.';

-- ---------------------------------------------------------------------------
-- The lock step: everything the swap alters, locked before the swap, in one
-- order, each wait bounded; partitions renamed with their tables
-- ---------------------------------------------------------------------------

-- one relation ACCESS EXCLUSIVE, a view without its tables, a sequence as
-- a table (src/cutover/lock.c)
CREATE FUNCTION backfill._cutover_lock_relation(rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_lock_relation'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_lock_relation(regclass) IS
'Internal: locks one relation whose owner''s privileges the caller has ACCESS EXCLUSIVE, under the caller''s lock_timeout, and nothing else with it (not the tables of a view).';

-- What the swap alters, locked in this order before it starts: the tables
-- whose foreign keys reference src, the views and materialized views that
-- select from it, the sequences of its columns, then src and dst with
-- their partitions.  An application holds the first ones before it touches
-- src (it wrote a child row, it updated through a view, it drew a value
-- from a sequence and then inserts): the cutover waits for them while it
-- holds nothing the application needs next, and the swap, which holds
-- src, never waits for a lock.  Each wait is bounded by the caller's
-- lock_timeout.  PostgreSQL checks the caller's right to each lock.
CREATE FUNCTION backfill._cutover_lock_dependents(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_lock_dependents'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_lock_dependents(regclass, regclass) IS
'Internal: locks ACCESS EXCLUSIVE, in this order, the tables whose foreign keys reference src, the views over src, the sequences of its columns, then src and dst with their partitions; each wait bounded by the caller''s lock_timeout.';

-- A CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY on either table (or
-- a partition of either) holds it SHARE UPDATE EXCLUSIVE until it ends, and
-- before it ends waits for every transaction older than its snapshot: the
-- cutover's among them.  The cutover could never take its lock, and would
-- keep the index build waiting through every attempt.  The process and the
-- table, from what pg_locks and pg_stat_progress_create_index show every
-- role; nothing if there is none.
CREATE FUNCTION backfill._cutover_index_build(src regclass, dst regclass)
RETURNS TABLE (pid integer, rel regclass)
AS 'MODULE_PATHNAME', 'backfill_cutover_index_build'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_index_build(regclass, regclass) IS
'Internal: a process building an index concurrently (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY) on src, dst or one of their partitions, and that table; no row if none.';

-- ends the cutover at once when an index is being built concurrently on
-- one of its tables (_cutover_index_build)
CREATE FUNCTION backfill._cutover_refuse_index_build(job_id bigint, src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_refuse_index_build'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_refuse_index_build(bigint, regclass, regclass) IS
'Internal: for a caller who owns job job_id, fails with 55P03 when a process builds an index concurrently on src, dst or one of their partitions.';

-- The partitions of two partitioned tables that take each other's place:
-- each of src's with the one of dst's of the same bounds, one to one, both
-- partitioned by the same key; anything else is refused, before anything
-- is locked or changed
CREATE FUNCTION backfill._cutover_partition_pairs(src regclass, dst regclass,
                                                  OUT old_part regclass, OUT new_part regclass)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_cutover_partition_pairs'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_partition_pairs(regclass, regclass) IS
'Internal: each partition of the partitioned table src with the partition of the partitioned table dst of the same bounds; an error unless both are partitioned by the same key and their partitions match one to one.';

-- After the swap, under its lock: src was src_name and has its new name,
-- dst was dst_name and has src_name.  A partition of src is renamed as
-- src was; the partition of dst of the same bounds takes its name and
-- schema, so that what names a partition (a writer, a grant, a report)
-- names the one that takes the writes.  The rollback, the same swap the
-- other way, gives the old partitions their names back.  Where only one
-- table is partitioned, its partitions follow its name
-- (src/cutover/carry_partitions.c).
CREATE FUNCTION backfill._cutover_rename_partitions(src regclass, dst regclass, src_name name, dst_name name)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_rename_partitions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_rename_partitions(regclass, regclass, name, name) IS
'Internal: after the swap of src (once src_name) and dst (once dst_name, now src_name), gives each partition of dst the name and schema of the partition of src of the same bounds, and the names of its indexes, and src''s partitions names that follow src''s new name.';

-- Lock everything the swap alters (_cutover_lock_dependents), each
-- attempt in a subtransaction waiting at most lock_timeout for each lock:
-- a writer queued behind the attempt waits no longer than that.  A lock
-- not had in time, or a deadlock with an application that PostgreSQL
-- resolves against the cutover, anywhere in the attempt (the swap
-- included), is a failed attempt: a NOTICE and a line in the server log,
-- then a pause that doubles each time (with jitter, at most a second) lets
-- the queued writers through.  An index built concurrently on either table
-- ends the cutover at once: it waits for the cutover's transaction, which
-- could not take its lock before it ends.  Gives up with 55P03 after
-- "attempts" attempts, everything as it was.  While the attempts last longer than
-- backfill.client_progress_interval, a line (INFO) at most every interval
-- says how long the lock step has waited so far and which processes hold
-- a lock on either table, as pg_locks shows them (src/cutover/attempts.c).
CREATE OR REPLACE FUNCTION backfill._cutover_attempts(job_id bigint, src regclass, dst regclass, src_new_name text,
                                           lock_timeout interval, attempts integer,
                                           OUT tries integer, OUT lock_held_ms double precision,
                                           OUT to_validate oid[])
AS 'MODULE_PATHNAME', 'backfill_cutover_attempts'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_attempts(bigint, regclass, regclass, text, interval, integer) IS
'Internal: locks both tables of a cutover and what the swap alters with bounded waits and retries, then swaps them and renames their partitions.';

-- the arguments every cutover function shares, checked alike
-- (src/cutover/arguments.c)
CREATE OR REPLACE FUNCTION backfill._cutover_arguments(lock_timeout interval, attempts integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_arguments'
LANGUAGE C IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_arguments(interval, integer) IS
'Internal: checks the lock_timeout and attempts of a cutover or rollback.';

-- a job that can be turned around: its downstream maps back onto its
-- upstream, and its owner may write the upstream; NULL if so, else why not
CREATE OR REPLACE FUNCTION backfill._cutover_irreversible(j backfill.job)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_cutover_irreversible'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_irreversible(backfill.job) IS
'Internal: why a job''s downstream could not be followed back by its upstream after a cutover, or NULL.';

-- accept and verify join the arguments: the function is made again, with
-- the rights it had (EXECUTE to PUBLIC, as in 1.3) and its comment.  With
-- verify, the checksum verify_job runs just before the lock is taken (the
-- switchover, for a remote job), and a difference refuses the cutover
-- (src/api/cutover_start.c; the gate, src/cutover/verify_gate.c)
DROP FUNCTION backfill.cutover(bigint, text, interval, integer, boolean);
CREATE FUNCTION backfill.cutover(job_id bigint, old_name text DEFAULT NULL,
                                 lock_timeout interval DEFAULT '1s', attempts integer DEFAULT 20,
                                 fence boolean DEFAULT false, accept text[] DEFAULT NULL,
                                 verify boolean DEFAULT false,
                                 OUT state text, OUT attempts_made integer,
                                 OUT lock_held_ms double precision, OUT old_table regclass,
                                 OUT rollback_possible boolean, OUT source_lsn pg_lsn)
AS 'MODULE_PATHNAME', 'backfill_cutover'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.cutover(bigint, text, interval, integer, boolean, text[], boolean) IS
'Gives a finished job''s downstream its upstream''s name and what names it (privileges, owner, sequences, defaults, identity, policies, comments, statistics targets, replica identity, publications, subscriptions, triggers, views, materialized views, functions of its row type, foreign keys), under the upstream''s lock taken with lock_timeout and retried; the old table then follows the new one until finish_cutover.  Refused when the downstream enforces less than the upstream (NOT NULL, CHECK, UNIQUE, ...), unless accept names each such loss, and with verify when the checksum verify_job finds a difference.';

-- the swap made again the other way, in C (src/api/cutover_rollback.c)
CREATE OR REPLACE FUNCTION backfill.rollback_cutover(job_id bigint, lock_timeout interval DEFAULT '1s',
                                          attempts integer DEFAULT 20,
                                          OUT state text, OUT attempts_made integer,
                                          OUT lock_held_ms double precision)
AS 'MODULE_PATHNAME', 'backfill_rollback_cutover'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

-- finish_cutover drops the old table: only if it is one of the job's own
-- (its downstream since the swap, or its upstream still when the cutover
-- could not be rolled back and let the job go) and owned by the owner of
-- the new one, whatever the cutover row says
CREATE OR REPLACE FUNCTION backfill.finish_cutover(job_id bigint, keep boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_finish_cutover'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.finish_cutover(bigint, boolean) IS
'Ends a cutover: validates the foreign keys it carried, stops the old table following the new one (the job is then cancelled) and drops the old table, unless keep; only the job''s own old table, owned by the owner of the new one.';


-- ---------------------------------------------------------------------------
-- The job operations: cancel_job, drop_job, recreate_job, alter_rate_limit
-- (src/api/job_drop.c, src/api/job_ops.c), each one C function that checks
-- the caller has the privileges of the job's owner, then makes its catalog
-- writes as the extension's owner, as control.c's internal functions do.
-- cancel_job and drop_job wait for a cutover of the same job: a cutover
-- that commits while they wait for the job's lock has turned the job around
-- (its downstream is then the old table), and they read the job's row only
-- once it has
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.cancel_job(job_id bigint)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_cancel_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

CREATE OR REPLACE FUNCTION backfill.drop_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

-- The job's filter and computed columns go back to create_job as text
-- written under fixed settings (src/copy/shape.c), read under the same ones
CREATE OR REPLACE FUNCTION backfill.recreate_job(job_id bigint, kind text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_recreate_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres;

CREATE OR REPLACE FUNCTION backfill.alter_rate_limit(job_id bigint, rows_per_second integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_alter_rate_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;

-- what only these called, now in C.  _create_job_as stays, as
-- _report_progress does: the one checks its caller as create_job's does for
-- a job's owner, the other shows what wait_job sends
DROP FUNCTION backfill._delete_job(bigint);
DROP FUNCTION backfill._set_rate_limit(bigint, integer);
DROP FUNCTION backfill._copy_names(bigint, bigint);
DROP FUNCTION backfill._drop_triggers(bigint);
DROP FUNCTION backfill._drop_kind_objects(bigint);


-- ---------------------------------------------------------------------------
-- Background jobs in every database; waits and monitoring
-- ---------------------------------------------------------------------------

-- wait_job also sends the job's line of progress every
-- backfill.client_progress_interval while it waits.  Its statement's
-- snapshot holds the session's xmin until it returns: wait_for_job does
-- not.  Both look at the job the same way (src/runtime/wait.c)
CREATE OR REPLACE FUNCTION backfill.wait_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_wait_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.wait_job(bigint) IS
'Waits until a job has finished; raises its error if it fails; sends its progress to the client every backfill.client_progress_interval. Holds its statement''s snapshot while it waits: CALL backfill.wait_for_job() does not.';

-- A procedure, so that it may commit: no SET clause (a procedure with one
-- cannot commit); the C code pins the search_path of its statements
CREATE PROCEDURE backfill.wait_for_job(job_id bigint)
AS 'MODULE_PATHNAME', 'backfill_wait_for_job'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.wait_for_job(bigint) IS
'Waits until a job has finished, as wait_job does, but commits after each look at the job and holds no snapshot between two: the xmin horizon moves on while it waits. Only with CALL outside a transaction block.';

-- Monitoring roles: a member of pg_read_all_stats (pg_monitor is one) sees
-- every job of the database in the views, as it sees every session in
-- pg_stat_activity; of another role's job, without the values of its
-- upstream (src/runtime/monitoring.c): the views read the jobs that
-- row-level security hides from it from backfill._monitored_jobs(), and
-- policies show it the actors, the cutovers and the servers' offsets of
-- every job, which hold no such value.
CREATE FUNCTION backfill._monitored_jobs()
RETURNS SETOF backfill.job
AS 'MODULE_PATHNAME', 'backfill_monitored_jobs'
LANGUAGE C STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._monitored_jobs() IS
'Internal: for a member of pg_read_all_stats, the jobs of the roles whose privileges it does not have, with the columns that hold values of their upstreams (filter, expressions, vnode_bounds, remote_splits, last_error, last_error_detail, ddl_statement) NULL; no row for anyone else.';

CREATE POLICY actor_monitor ON backfill.actor FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));
CREATE POLICY job_cutover_monitor ON backfill.job_cutover FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));
CREATE POLICY job_source_monitor ON backfill.job_source FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));

CREATE OR REPLACE VIEW backfill.workers WITH (security_invoker = true) AS
SELECT w.job_id, w.actor_id, w.pid, a.backend_start, a.state, a.query AS activity
  FROM backfill.job_workers() w
  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
 WHERE EXISTS (SELECT FROM (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
                WHERE j.job_id OPERATOR(pg_catalog.=) w.job_id);

-- backfill.jobs: the columns of 1.1, then the pace of the jobs that
-- run now: what holds them back (the first actor's that is held back), their
-- rows per second (over their actors), and when they will have read their
-- rows at that rate; then each job's progress: RisingWave's text while it is
-- being created, "100%" once finished.  A snapshot job shows its phase as
-- RisingWave's creating jobs do (creating_job/mod.rs): "Snapshot [...]"
-- while it reads its snapshot, "Snapshot finished" once every vnode has read
-- it until every actor has entered the log store, "LogStore [actor: caught
-- up/actors, avg lag ...]" with the lag averaged over the actors not caught
-- up yet, then "Finishing [epoch lag: 0ns]" until its final barrier: its
-- barriers are the upstream's own, so it never lags in epochs.  Then, for a
-- job whose upstream is on another server, how far behind its source it is
-- (the source's WAL it has not fetched yet, and since when it has not caught
-- up) and why it waits; its progress adds its finished splits.  Its cutover:
-- waiting_for_lock (attempt n of m) while a cutover or rollback waits for
-- its lock, else its backfill.job_cutover state, NULL if never cut over.
-- What the views show of a job's kind, from the kind's routine
-- (src/api/kind_columns.c): they read nothing but their arguments
CREATE FUNCTION backfill._kind_slot_name(kind text, remote boolean, job_id bigint, status text)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_kind_slot_name_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._kind_slot_name(text, boolean, bigint, text) IS
'Internal: for backfill.jobs, the replication slot a job of a kind holds in a status, by name; NULL when it holds none.';

CREATE FUNCTION backfill._kind_is_snapshot_backfill(kind text, remote boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_kind_is_snapshot_backfill_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._kind_is_snapshot_backfill(text, boolean) IS
'Internal: for backfill.jobs and backfill.ddl_progress, whether a kind is RisingWave''s snapshot backfill, whose progress goes through the Snapshot, LogStore and Finishing phases.';

CREATE OR REPLACE VIEW backfill.jobs WITH (security_invoker = true) AS
SELECT j.job_id, j.job_name, j.kind, j.status, j.upstream,
       j.upstream::pg_catalog.oid AS upstream_table_id,
       j.downstream, j.fragment_id, j.parallelism, j.chunk_size,
       coalesce(p.epoch, 0) AS epoch, coalesce(p.row_count, 0)::bigint AS row_count,
       j.created_at, j.finished_at, j.last_error, j.state_table, j.rate_limit, j.run_mode,
       (SELECT pg_catalog.array_agg(w.pid ORDER BY w.actor_id)
          FROM backfill.job_workers() w
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id) AS worker_pids,
       j.snapshot_epoch,
       backfill._kind_slot_name(j.kind, j.remote, j.job_id, j.status) AS slot_name,
       j.owner,
       CASE WHEN r.running THEN p.throttled_by END AS throttled_by,
       CASE WHEN r.running THEN pg_catalog.round(p.rows_per_second) END AS rows_per_second,
       CASE WHEN r.running AND p.rows_per_second OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.make_interval(secs => pg_catalog.round(
                     GREATEST(j.total_rows OPERATOR(pg_catalog.-) coalesce(p.row_count, 0), 0)::double precision
                     OPERATOR(pg_catalog./) p.rows_per_second)) END AS eta,
       CASE
           WHEN j.status OPERATOR(pg_catalog.=) 'finished' THEN '100%'
           WHEN j.status OPERATOR(pg_catalog.=) 'cancelled' THEN NULL
           -- a monitoring role's view of another role's job: the splits
           -- and the state are the owner's to read
           WHEN j.remote AND NOT o.mine
           THEN backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows)
           WHEN j.remote AND j.remote_partitions IS NOT NULL
           THEN (SELECT pg_catalog.format('%s [servers: %s/%s, splits: %s/%s]',
                            backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows),
                            pg_catalog.count(*) FILTER (WHERE v.finished OPERATOR(pg_catalog.=) v.splits),
                            pg_catalog.count(*), pg_catalog.sum(v.finished), pg_catalog.sum(v.splits))
                   FROM (SELECT sp.server, pg_catalog.count(*) AS splits,
                                pg_catalog.count(*) FILTER (WHERE s.backfill_finished) AS finished
                           FROM backfill.job_splits(j.job_id) sp
                           LEFT JOIN backfill.job_state(j.job_id) s
                             ON s.vnode OPERATOR(pg_catalog.=) sp.split_id
                          GROUP BY sp.server) v)
           WHEN j.remote
           THEN pg_catalog.format('%s [splits: %s/%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows),
                    (SELECT pg_catalog.count(*) FILTER (WHERE s.backfill_finished)
                       FROM backfill.job_state(j.job_id) s),
                    coalesce(pg_catalog.cardinality(j.remote_splits), 0) OPERATOR(pg_catalog.+) 1)
           WHEN NOT backfill._kind_is_snapshot_backfill(j.kind, j.remote)
           THEN backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows)
           WHEN p.caught_up OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN 'Finishing [epoch lag: 0ns]'
           WHEN p.in_log_store OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN pg_catalog.format('LogStore [actor: %s/%s, avg lag %s]', p.caught_up, p.actors,
                    backfill._rw_duration(p.ongoing_lag_ms))
           WHEN p.in_log_store OPERATOR(pg_catalog.>) 0
                OR CASE WHEN o.mine
                        THEN (SELECT pg_catalog.bool_and(s.backfill_finished)
                                FROM backfill.job_state(j.job_id) s) END
           THEN 'Snapshot finished'
           ELSE pg_catalog.format('Snapshot [%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows))
       END AS progress,
       j.remote,
       -- over several servers: the sum of their lags, and the longest
       CASE WHEN j.remote_partitions IS NOT NULL
            THEN (SELECT pg_catalog.sum(o.remote_source_lsn OPERATOR(pg_catalog.-) o.remote_lsn)
                    FROM backfill.job_source o WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id)
            WHEN j.remote THEN j.remote_source_lsn OPERATOR(pg_catalog.-) j.remote_lsn END AS lag_bytes,
       CASE WHEN j.remote_partitions IS NOT NULL
            THEN (SELECT pg_catalog.max(CASE WHEN o.remote_lsn OPERATOR(pg_catalog.>=) o.remote_source_lsn
                                             THEN '0'::pg_catalog.interval
                                             ELSE pg_catalog.now() OPERATOR(pg_catalog.-)
                                                  coalesce(o.remote_caught_up_at, j.created_at) END)
                    FROM backfill.job_source o WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id)
            WHEN j.remote AND j.remote_lsn OPERATOR(pg_catalog.>=) j.remote_source_lsn
            THEN '0'::pg_catalog.interval
            WHEN j.remote
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) coalesce(j.remote_caught_up_at, j.created_at)
       END AS lag_time,
       (SELECT pg_catalog.min(a.query)
          FROM backfill.job_workers() w
          JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id
           AND pg_catalog.starts_with(a.query, 'waiting for the source')) AS waiting_for,
       -- a cutover in progress shows in its backend's activity (its
       -- transaction shows nothing else until it commits); then the last one
       coalesce((SELECT pg_catalog.min(pg_catalog.substr(a.query,
                            pg_catalog.length(pg_catalog.format('backfill cutover of job %s: ', j.job_id)) OPERATOR(pg_catalog.+) 1))
                   FROM pg_catalog.pg_stat_activity a
                  WHERE a.state OPERATOR(pg_catalog.=) 'active'
                    AND pg_catalog.starts_with(a.query, pg_catalog.format('backfill cutover of job %s: waiting_for_lock', j.job_id))),
                (SELECT c.state FROM backfill.job_cutover c
                  WHERE c.job_id OPERATOR(pg_catalog.=) j.job_id)) AS cutover
  FROM (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count,
                            pg_catalog.sum(a.rows_per_second) AS rows_per_second,
                            (pg_catalog.array_agg(a.throttled_by ORDER BY a.actor_id)
                               FILTER (WHERE a.throttled_by IS NOT NULL))[1] AS throttled_by,
                            pg_catalog.count(*) AS actors,
                            pg_catalog.count(a.log_store_lag_ms) AS in_log_store,
                            pg_catalog.count(*) FILTER (WHERE a.log_store_caught_up) AS caught_up,
                            coalesce(pg_catalog.floor(pg_catalog.avg(a.log_store_lag_ms)
                                         FILTER (WHERE NOT a.log_store_caught_up)), 0)::bigint
                                AS ongoing_lag_ms
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true
  CROSS JOIN LATERAL (SELECT CASE WHEN j.status OPERATOR(pg_catalog.=) 'backfilling'
                                  THEN backfill._job_is_running(j.job_id)
                                  ELSE false END AS running) r
  CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role(CURRENT_USER, j.owner, 'USAGE') AS mine) o;

-- RisingWave's rw_catalog.rw_ddl_progress: the jobs being created, with
-- RisingWave's columns; finished, failed and cancelled jobs are in
-- backfill.jobs
CREATE OR REPLACE VIEW backfill.ddl_progress WITH (security_invoker = true) AS
SELECT s.job_id AS ddl_id,
       j.ddl_statement,
       CASE s.run_mode WHEN 'background' THEN 'BACKGROUND' ELSE 'FOREGROUND' END AS create_type,
       s.progress,
       s.created_at AS initialized_at,
       false AS is_serverless_backfill,
       CASE WHEN backfill._kind_is_snapshot_backfill(j.kind, j.remote)
            THEN 'SNAPSHOT_BACKFILL' ELSE 'NORMAL_BACKFILL' END AS backfill_type
  FROM backfill.jobs s
  JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
    ON j.job_id OPERATOR(pg_catalog.=) s.job_id
 WHERE s.status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling']);

-- The upstream's size for backfill.progress (src/copy/size.c): what
-- pg_class and pg_relation_size() show anyone, so no privilege is checked
CREATE FUNCTION backfill._upstream_size(upstream regclass, OUT blocks bigint, OUT tuples bigint)
AS 'MODULE_PATHNAME', 'backfill_upstream_size'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._upstream_size(regclass) IS
'Internal: for backfill.progress, the blocks of a table (and of its partitions) and the catalog''s estimate of its rows; NULL each when unknown or when a lock on it would have to be waited for.';

-- The last verify and the last repair of each job (verify_job, repair_job):
-- one row per job and operation, so that a repair, whose own verifies write
-- the job's verify row, never hides when the job was last verified and
-- what that found.  verify_job writes its row at its end, in its caller's
-- transaction (nothing in a read-only one); repair_job writes its row at
-- its start and in each range's committed transaction, so that another
-- session sees it go.  A repair whose session died leaves finished_at
-- NULL: it runs only while its pid holds the job's lock, which is what
-- backfill.progress and backfill.verifications look at.  Written only by
-- the extension's owner, on behalf of a caller who owns the job
-- (src/catalog/verification_rows.c).
CREATE TABLE backfill.verification (
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    operation text NOT NULL
        CHECK (operation OPERATOR(pg_catalog.=) ANY (ARRAY['verify', 'repair'])),
    method text,
    range_rows integer,
    pid integer NOT NULL,
    started_at timestamptz NOT NULL,
    finished_at timestamptz,
    ranges_done bigint,
    ranges_total bigint,
    rows_read bigint,
    differences bigint,
    missing bigint,
    extra bigint,
    different bigint,
    clean boolean,
    PRIMARY KEY (job_id, operation)
);
COMMENT ON TABLE backfill.verification IS
'The last verify_job and the last repair_job of each job (one row per job and operation): when, by which backend, what they compared and found, and what the repair repaired.';
COMMENT ON COLUMN backfill.verification.job_id IS
'The job verified or repaired.';
COMMENT ON COLUMN backfill.verification.operation IS
'verify (backfill.verify_job, also when repair_job or cutover(verify => true) calls it) or repair (backfill.repair_job).';
COMMENT ON COLUMN backfill.verification.method IS
'A verify''s method, checksum or rows (auto recorded as the one it chose); NULL for a repair, which verifies with auto.';
COMMENT ON COLUMN backfill.verification.range_rows IS
'The range_rows the verify or the repair was called with.';
COMMENT ON COLUMN backfill.verification.pid IS
'The backend that verified or repairs.';
COMMENT ON COLUMN backfill.verification.started_at IS
'When the verify or the repair started.';
COMMENT ON COLUMN backfill.verification.finished_at IS
'When it finished; NULL while a repair runs, and for a repair that stopped before its end (an error, a cancel, its session gone): backfill.verifications shows which.';
COMMENT ON COLUMN backfill.verification.ranges_done IS
'A verify: the ranges of keys it compared by checksums (NULL for the rows method). A repair: the ranges it has repaired and committed.';
COMMENT ON COLUMN backfill.verification.ranges_total IS
'A verify: as ranges_done. A repair: the ranges it has to repair, NULL until its first verify is done.';
COMMENT ON COLUMN backfill.verification.rows_read IS
'A verify by checksums: the rows of the upstream it compared (NULL for the rows method); NULL for a repair.';
COMMENT ON COLUMN backfill.verification.differences IS
'A verify: the differences it found. A repair: those its first verify found, the rows it has to repair; NULL until that verify is done.';
COMMENT ON COLUMN backfill.verification.missing IS
'A repair: the rows missing from the downstream that it has repaired so far; NULL for a verify.';
COMMENT ON COLUMN backfill.verification.extra IS
'A repair: the rows extra in the downstream that it has repaired so far; NULL for a verify.';
COMMENT ON COLUMN backfill.verification.different IS
'A repair: the rows that differed that it has repaired so far; NULL for a verify.';
COMMENT ON COLUMN backfill.verification.clean IS
'A repair: whether the verify at its end found no difference; NULL until then, and for a verify.';
SELECT pg_catalog.pg_extension_config_dump('backfill.verification', '');
GRANT SELECT ON backfill.verification TO PUBLIC;
ALTER TABLE backfill.verification ENABLE ROW LEVEL SECURITY;
CREATE POLICY verification_owner ON backfill.verification FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) verification.job_id));
-- (counts and times only: no value of the upstream)
CREATE POLICY verification_monitor ON backfill.verification FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, 'pg_read_all_stats', 'USAGE'));

-- backfill.verifications: the rows of backfill.verification of the jobs the
-- caller sees (every job for a monitoring role), with the job's name and
-- whether a repair runs now: its backend holds the job's lock (the
-- advisory lock whose objsubid is 25190, BACKFILL_LOCK_FIELD4)
CREATE VIEW backfill.verifications WITH (security_invoker = true) AS
SELECT v.job_id, j.job_name, v.operation, v.method, v.range_rows, v.pid,
       v.finished_at IS NULL AND EXISTS (
           SELECT FROM pg_catalog.pg_locks k
            WHERE k.locktype OPERATOR(pg_catalog.=) 'advisory'
              AND k.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                                     WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
              AND k.classid OPERATOR(pg_catalog.=) (v.job_id OPERATOR(pg_catalog.>>) 32)::pg_catalog.oid
              AND k.objid OPERATOR(pg_catalog.=) (v.job_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
              AND k.objsubid OPERATOR(pg_catalog.=) 25190
              AND k.mode OPERATOR(pg_catalog.=) 'ExclusiveLock' AND k.granted
              AND k.pid OPERATOR(pg_catalog.=) v.pid) AS running,
       v.started_at, v.finished_at, v.ranges_done, v.ranges_total, v.rows_read,
       v.differences, v.missing, v.extra, v.different, v.clean
  FROM backfill.verification v
  JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
    ON j.job_id OPERATOR(pg_catalog.=) v.job_id;
COMMENT ON VIEW backfill.verifications IS
'The last verify and the last repair of each job: when, what they compared and found, what the repair repaired and whether it left the job clean; running is true while the repair runs (false for one that stopped before its end, whose finished_at is NULL).';
GRANT SELECT ON backfill.verifications TO PUBLIC;

-- One row per actor running now, in a background worker or in a session's
-- CALL backfill.run_job, as pg_stat_progress_* has one per backend: from
-- shared memory when the library is preloaded; otherwise the actors of a run
-- in a session come from the catalog (committed each barrier), with its pid
-- from the job lock the session holds, and without position or barriers.
-- The columns of 1.3, then those of pg_stat_progress_copy and
-- pg_stat_progress_create_index: the database, the upstream (relid, NULL
-- for a table of another server), and the job's totals, in blocks of the
-- upstream (its size now) and in rows (the catalog's estimate, or
-- create_job's count for a job with a filter, and never fewer than the
-- rows copied); blocks_done is the rows copied over the rows per block, as
-- the copy reads in key order.  phase is in PostgreSQL's words (the words
-- of the actor's own phase, as 1.3 showed them, are in actor_phase):
--   initializing         the run's recovery check, before its first barrier
--   copying              reading the upstream's rows into the downstream
--   catching up          a snapshot job's log store: the changes made since
--                        its snapshot
--   waiting for barrier  the actor's vnodes are copied; the job's final
--                        barrier waits for its other actors
--   finishing            the final barrier (the downstream's indexes are
--                        built there when the job builds them at its end)
--   finished             the job has finished; the worker applies the
--                        upstream's changes to the downstream
--   repairing            CALL backfill.repair_job: one row, no actor; rows
--                        are the rows repaired of those to repair, and the
--                        last two columns its ranges repaired of its ranges
CREATE OR REPLACE VIEW backfill.progress WITH (security_invoker = true) AS
SELECT u.pid, u.job_id, u.job_name, u.actor_id, u.kind, u.run_mode,
       CASE u.actor_phase
           WHEN 'starting' THEN 'initializing'
           WHEN 'snapshot' THEN 'copying'
           WHEN 'log store' THEN 'catching up'
           WHEN 'done' THEN 'waiting for barrier'
           WHEN 'finishing' THEN 'finishing'
           WHEN 'following' THEN 'finished'
           WHEN 'repair' THEN 'repairing'
           ELSE u.actor_phase
       END AS phase,
       u.rows_done, u.job_rows_done, u.job_rows_total,
       u."position", u.barriers, u.epoch, u.rows_per_second,
       u.throttled_by, u.started_at, u.last_barrier_at,
       d.oid AS datid, d.datname,
       CASE WHEN NOT u.remote THEN u.upstream::pg_catalog.oid END AS relid,
       t.blocks_total,
       CASE WHEN t.tuples_total OPERATOR(pg_catalog.>) 0
            THEN (t.blocks_total::pg_catalog.numeric OPERATOR(pg_catalog.*) t.tuples_done
                  OPERATOR(pg_catalog./) t.tuples_total)::bigint
            WHEN t.tuples_total OPERATOR(pg_catalog.=) 0 THEN t.blocks_total
       END AS blocks_done,
       t.tuples_total, t.tuples_done,
       u.actor_phase, u.ranges_done, u.ranges_total
  FROM (SELECT l.pid, l.job_id, j.job_name, l.actor_id, j.kind, l.run_mode, l.phase AS actor_phase,
               l.rows_done,
               (SELECT pg_catalog.sum(a.row_count) FROM backfill.actor a
                 WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id)::bigint AS job_rows_done,
               j.total_rows AS job_rows_total,
               l."position", l.barriers, l.epoch,
               pg_catalog.round(l.rows_per_second)::bigint AS rows_per_second,
               l.throttled_by, l.started_at, l.last_barrier_at,
               j.upstream, j.remote, j.filter IS NOT NULL AS filtered, j.status,
               false AS repair, NULL::bigint AS ranges_done, NULL::bigint AS ranges_total
          FROM backfill._live_actors() l
          JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
            ON j.job_id OPERATOR(pg_catalog.=) l.job_id
        UNION ALL
        SELECT k.pid, j.job_id, j.job_name, a.actor_id, j.kind, 'foreground',
               CASE WHEN a.log_store_lag_ms IS NOT NULL THEN 'log store' ELSE 'snapshot' END,
               a.row_count,
               (SELECT pg_catalog.sum(b.row_count) FROM backfill.actor b
                 WHERE b.job_id OPERATOR(pg_catalog.=) j.job_id)::bigint,
               j.total_rows, NULL, NULL, a.epoch,
               pg_catalog.round(a.rows_per_second)::bigint, a.throttled_by, NULL, NULL,
               j.upstream, j.remote, j.filter IS NOT NULL, j.status, false, NULL, NULL
          FROM (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
          JOIN pg_catalog.pg_locks k
            ON k.locktype OPERATOR(pg_catalog.=) 'advisory'
           AND k.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
           AND k.classid OPERATOR(pg_catalog.=) (j.job_id OPERATOR(pg_catalog.>>) 32)::pg_catalog.oid
           AND k.objid OPERATOR(pg_catalog.=) (j.job_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
           AND k.objsubid OPERATOR(pg_catalog.=) 25190   -- BACKFILL_LOCK_FIELD4, the job lock
           AND k.mode OPERATOR(pg_catalog.=) 'ExclusiveLock' AND k.granted
          JOIN backfill.actor a ON a.job_id OPERATOR(pg_catalog.=) j.job_id
         WHERE j.status OPERATOR(pg_catalog.=) 'backfilling'
           AND NOT EXISTS (SELECT FROM backfill._live_actors() l
                            WHERE l.job_id OPERATOR(pg_catalog.=) j.job_id)
           -- (a repair holds the lock too: the branch below shows it)
           AND NOT EXISTS (SELECT FROM backfill.verification r
                            WHERE r.job_id OPERATOR(pg_catalog.=) j.job_id
                              AND r.operation OPERATOR(pg_catalog.=) 'repair'
                              AND r.finished_at IS NULL
                              AND r.pid OPERATOR(pg_catalog.=) k.pid)
        UNION ALL
        -- a repair running now: its row of backfill.verification, while its
        -- backend holds the job lock (one killed partway holds nothing); its
        -- rows are those it has repaired of those its first verify found
        SELECT r.pid, j.job_id, j.job_name, NULL, j.kind, 'foreground', 'repair',
               r.missing OPERATOR(pg_catalog.+) r.extra OPERATOR(pg_catalog.+) r.different,
               r.missing OPERATOR(pg_catalog.+) r.extra OPERATOR(pg_catalog.+) r.different,
               r.differences, NULL, NULL, NULL, NULL, NULL, r.started_at, NULL,
               j.upstream, j.remote, j.filter IS NOT NULL, j.status, true,
               r.ranges_done, r.ranges_total
          FROM backfill.verifications r
          JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
            ON j.job_id OPERATOR(pg_catalog.=) r.job_id
         WHERE r.operation OPERATOR(pg_catalog.=) 'repair' AND r.running) u
  CROSS JOIN (SELECT oid, datname FROM pg_catalog.pg_database
               WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
  -- the upstream's size, not waited for behind a lock (NULL then)
  LEFT JOIN LATERAL backfill._upstream_size(CASE WHEN NOT u.remote AND NOT u.repair THEN u.upstream END) z ON true
  CROSS JOIN LATERAL (
      SELECT z.blocks AS blocks_total,
             coalesce(u.job_rows_done, 0) AS tuples_done,
             CASE WHEN u.repair THEN u.job_rows_total
                  WHEN u.status OPERATOR(pg_catalog.=) 'finished'
                  THEN coalesce(u.job_rows_done, 0)
                  ELSE GREATEST(CASE WHEN u.filtered OR u.remote THEN u.job_rows_total
                                     ELSE coalesce(z.tuples, u.job_rows_total) END,
                                coalesce(u.job_rows_done, 0))
             END AS tuples_total) t;
COMMENT ON VIEW backfill.progress IS
'One row per actor running now, in a worker or in CALL backfill.run_job, and one per CALL backfill.repair_job running now (phase repairing): its process, phase, rows, position, barriers and pace, then its database, upstream and the job''s totals and what is done of them in blocks and rows, as pg_stat_progress_copy shows them, then a repair''s ranges done and to do; \watch 1 on it is the live picture.';

-- ---------------------------------------------------------------------------
-- Remote switchover: nothing on the source before the local commit
-- ---------------------------------------------------------------------------

-- The switchover of a remote job drops the job's slot and publication on the
-- source once the local transaction has committed, and records what its
-- fence revokes on the source, in the fence's own transaction there (the
-- comment of the job's publication), so that a fence whose switchover died
-- with its backend can be given back (src/kinds/switchover.c; the comment
-- of _remote_switchover is with the other internal functions', above).
CREATE FUNCTION backfill._remote_unfence(job_id bigint)
RETURNS integer
AS 'MODULE_PATHNAME', 'backfill_remote_unfence'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._remote_unfence(bigint) IS
'Internal: for backfill.unfence, gives back on the source the write privileges the fences of a remote job the caller owns revoked and recorded there; returns how many.';

CREATE FUNCTION backfill.unfence(job_id bigint)
RETURNS integer
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF job_id IS NULL THEN
        RAISE EXCEPTION 'argument "job_id" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- not while a switchover of the job fences and fetches
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
    RETURN backfill._remote_unfence(job_id);
END
$$;
COMMENT ON FUNCTION backfill.unfence(bigint) IS
'Gives back the write privileges on the source table(s) of a remote job that a switchover''s fence revoked and that no switchover kept (one killed or crashed before its commit, or whose source did not answer when it failed), as the source records them; returns how many grants were given back.  A fence whose switchover committed stays.';

-- ---------------------------------------------------------------------------
-- Verifying by range checksums
-- ---------------------------------------------------------------------------

-- verify_job (src/api/verify_job.c): the upstream's side of the comparison
-- is the filtered projection, computed columns as the job computes them;
-- the job's kind says which keys its downstream covers now and which are
-- pending (kind.h, verify_source).  A remote job is compared with its
-- source through the foreign table (one snapshot of the source for all of
-- it: postgres_fdw's remote transaction).  The function is VOLATILE: each
-- comparison is one statement, whose snapshot comes after the slot lock, so
-- that no fetch commits between what it sees of the job and the slot.  It
-- reads the job's filter and expressions under the settings they were
-- written under (see create_job), as the job's owner in a
-- security-restricted operation.  It reads the upstream through the
-- policies that would have filtered the copy: a job whose owner row-level
-- security applies to is refused, not found equal.
DROP FUNCTION backfill.verify_job(bigint);
-- what ran its comparison as the job's owner: verify_job does it itself
DROP FUNCTION backfill._verify_rows(bigint, text);
CREATE FUNCTION backfill.verify_job(job_id bigint, method text DEFAULT 'auto',
                                    range_rows integer DEFAULT 1000)
RETURNS TABLE (pk text, problem text)
AS 'MODULE_PATHNAME', 'backfill_verify_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres;
COMMENT ON FUNCTION backfill.verify_job(bigint, text, integer) IS
'Compares the downstream of a job with its upstream, by checksums of ranges of keys (method checksum; the ranges that differ are compared row by row, range_rows rows at most) or row by row (method rows), or the one that reads less (method auto, the default: rows for a job from several servers or from another server not finished yet); returns one row per missing, extra or different row.';

-- repair_job: a re-snapshot of the keys verify_job finds different, range
-- after range, each in a committed transaction, through the statements a
-- barrier forwards captured keys with (src/api/repair.c).  A procedure, as
-- run_job: it commits, which a procedure with a SET clause cannot, so its
-- C entry point pins the search_path of its statements itself.  Its INOUT
-- arguments are its result: CALL backfill.repair_job(7) returns one row.
CREATE PROCEDURE backfill.repair_job(job_id bigint, range_rows integer DEFAULT 1000,
                                     INOUT ranges bigint DEFAULT NULL,
                                     INOUT missing bigint DEFAULT NULL,
                                     INOUT extra bigint DEFAULT NULL,
                                     INOUT different bigint DEFAULT NULL,
                                     INOUT clean boolean DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_repair_job'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.repair_job(bigint, integer, bigint, bigint, bigint, bigint, boolean) IS
'Makes the rows that verify_job finds missing, extra or different in the downstream of a job equal to the upstream''s again, one committed transaction per range of range_rows keys, then verifies again; returns the ranges repaired, the rows per kind, and whether verify_job finds the job clean after.';

-- ---------------------------------------------------------------------------
-- PostgreSQL's vocabulary beside RisingWave's: jobs by name, alter_job, the
-- upstream's size
-- ---------------------------------------------------------------------------

-- A job by its name, as a regclass names a table: backfill.job_id() finds
-- the one job of that name among those the caller sees (row-level security
-- applies: another role's job is unknown), or errors (undefined_object
-- when there is none, ambiguous_function when there are several);
-- src/catalog/job_names.c.  Each function that takes a job's id has an
-- overload that takes its name and only passes on the id: CALL
-- backfill.run_job('orders_mv').  A call with an integer or bigint keeps
-- the function of the id (an integer has no implicit cast to text); a
-- quoted literal goes to the name.
CREATE FUNCTION backfill.job_id(job_name text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_job_id'
LANGUAGE C STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.job_id(text) IS
'The id of the job of that name among the jobs the caller sees; an error when it sees none or several.';

-- The procedures commit, which a procedure with a SET clause or in
-- LANGUAGE sql cannot: C entry points that put the id in the name's place
CREATE PROCEDURE backfill.run_job(job_name text, max_barriers integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run_job_by_name'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run_job(text, integer) IS
'Runs the job of that name (backfill.job_id) in this session, as run_job(job_id) does.';

CREATE PROCEDURE backfill.wait_for_job(job_name text)
AS 'MODULE_PATHNAME', 'backfill_wait_for_job_by_name'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.wait_for_job(text) IS
'Waits until the job of that name (backfill.job_id) has finished, as wait_for_job(job_id) does.';

CREATE FUNCTION backfill.start_job(job_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.start_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.start_job(text) IS
'Runs the job of that name (backfill.job_id) in background workers, as start_job(job_id) does.';

-- stop_job returns whether it stopped workers (1.3: void, and a NOTICE
-- when there were none, which it still raises)
DROP FUNCTION backfill.stop_job(bigint);
CREATE FUNCTION backfill.stop_job(job_id bigint)
RETURNS boolean
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    stopped boolean;
BEGIN
    PERFORM backfill._get_job(job_id);
    stopped := backfill._stop_workers(job_id, false);
    IF NOT stopped THEN
        RAISE NOTICE 'backfill job % is not running in the background', job_id;
    END IF;
    -- not restarted by the launcher any more
    PERFORM backfill._set_foreground(job_id);
    RETURN stopped;
END
$$;
COMMENT ON FUNCTION backfill.stop_job(bigint) IS
'Stops the background workers of a job at their next barrier, and waits until they have exited; returns whether it had any.';

CREATE FUNCTION backfill.stop_job(job_name text)
RETURNS boolean
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.stop_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.stop_job(text) IS
'Stops the background workers of the job of that name (backfill.job_id), as stop_job(job_id) does.';

CREATE FUNCTION backfill.wait_job(job_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.wait_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.wait_job(text) IS
'Waits until the job of that name (backfill.job_id) has finished, as wait_job(job_id) does.';

CREATE FUNCTION backfill.cancel_job(job_name text)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.cancel_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.cancel_job(text) IS
'Cancels the job of that name (backfill.job_id), as cancel_job(job_id) does; returns its id.';

CREATE FUNCTION backfill.drop_job(job_name text)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.drop_job(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.drop_job(text) IS
'Removes the job of that name (backfill.job_id), as drop_job(job_id) does.';

CREATE FUNCTION backfill.recreate_job(job_name text, kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.recreate_job(backfill.job_id(job_name), kind) $$;
COMMENT ON FUNCTION backfill.recreate_job(text, text) IS
'Creates the job of that name (backfill.job_id) again, as recreate_job(job_id) does; returns the new job id.';

CREATE FUNCTION backfill.reschedule(job_name text, parallelism integer)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.reschedule(backfill.job_id(job_name), parallelism) $$;
COMMENT ON FUNCTION backfill.reschedule(text, integer) IS
'Spreads the vnodes of the job of that name (backfill.job_id) over a new set of actors, as reschedule(job_id) does.';

CREATE FUNCTION backfill.alter_rate_limit(job_name text, rows_per_second integer)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.alter_rate_limit(backfill.job_id(job_name), rows_per_second) $$;
COMMENT ON FUNCTION backfill.alter_rate_limit(text, integer) IS
'Limits the snapshot rows of the job of that name (backfill.job_id), as alter_rate_limit(job_id) does.';

CREATE FUNCTION backfill.verify_job(job_name text, method text DEFAULT 'auto', range_rows integer DEFAULT 1000)
RETURNS TABLE(pk text, problem text)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.verify_job(backfill.job_id(job_name), method, range_rows) $$;
COMMENT ON FUNCTION backfill.verify_job(text, text, integer) IS
'Compares the downstream of the job of that name (backfill.job_id) with its upstream, as verify_job(job_id) does.';

CREATE PROCEDURE backfill.repair_job(job_name text, range_rows integer DEFAULT 1000,
                                     INOUT ranges bigint DEFAULT NULL,
                                     INOUT missing bigint DEFAULT NULL,
                                     INOUT extra bigint DEFAULT NULL,
                                     INOUT different bigint DEFAULT NULL,
                                     INOUT clean boolean DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_repair_job_by_name'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.repair_job(text, integer, bigint, bigint, bigint, bigint, boolean) IS
'Repairs the downstream of the job of that name (backfill.job_id), as repair_job(job_id) does.';

CREATE FUNCTION backfill.job_state(job_name text)
RETURNS TABLE(actor_id integer, vnode integer, current_pos text, backfill_finished boolean,
              row_count bigint, epoch bigint, cdc_offset jsonb)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.job_state(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.job_state(text) IS
'The state of the job of that name (backfill.job_id), as job_state(job_id) shows it.';

CREATE FUNCTION backfill.job_splits(job_name text)
RETURNS TABLE(split_id integer, partition regclass, server name, lower_bound text, upper_bound text)
LANGUAGE sql STABLE PARALLEL RESTRICTED
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.job_splits(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.job_splits(text) IS
'The splits of the job of that name (backfill.job_id), as job_splits(job_id) shows them.';

CREATE FUNCTION backfill.cutover(job_name text, old_name text DEFAULT NULL,
                                 lock_timeout interval DEFAULT '1s', attempts integer DEFAULT 20,
                                 fence boolean DEFAULT false, accept text[] DEFAULT NULL,
                                 verify boolean DEFAULT false,
                                 OUT state text, OUT attempts_made integer,
                                 OUT lock_held_ms double precision, OUT old_table regclass,
                                 OUT rollback_possible boolean, OUT source_lsn pg_lsn)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.cutover(backfill.job_id(job_name), old_name, lock_timeout, attempts, fence, accept, verify) $$;
COMMENT ON FUNCTION backfill.cutover(text, text, interval, integer, boolean, text[], boolean) IS
'Swaps in the downstream of the job of that name (backfill.job_id), as cutover(job_id) does.';

CREATE FUNCTION backfill.rollback_cutover(job_name text, lock_timeout interval DEFAULT '1s',
                                          attempts integer DEFAULT 20,
                                          OUT state text, OUT attempts_made integer,
                                          OUT lock_held_ms double precision)
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.rollback_cutover(backfill.job_id(job_name), lock_timeout, attempts) $$;
COMMENT ON FUNCTION backfill.rollback_cutover(text, interval, integer) IS
'Swaps back the tables of the cutover of the job of that name (backfill.job_id), as rollback_cutover(job_id) does.';

CREATE FUNCTION backfill.finish_cutover(job_name text, keep boolean DEFAULT false)
RETURNS void
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.finish_cutover(backfill.job_id(job_name), keep) $$;
COMMENT ON FUNCTION backfill.finish_cutover(text, boolean) IS
'Ends the cutover of the job of that name (backfill.job_id), as finish_cutover(job_id) does.';

CREATE FUNCTION backfill.unfence(job_name text)
RETURNS integer
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT backfill.unfence(backfill.job_id(job_name)) $$;
COMMENT ON FUNCTION backfill.unfence(text) IS
'Gives back the write privileges the fences of the job of that name (backfill.job_id) revoked, as unfence(job_id) does.';

-- alter_job: PostgreSQL's ALTER beside RisingWave's verbs.  Each setting
-- given goes through its verb (alter_rate_limit, reschedule: their checks,
-- the owner's among them); NULL leaves it as it is, so a rate limit is
-- lifted with alter_rate_limit(job, NULL).  A parallelism equal to the
-- job's leaves its actors and workers alone.  Returns the settings after.
CREATE TYPE backfill.job_settings AS (
    job_id bigint,
    job_name text,
    status text,
    run_mode text,
    rate_limit integer,
    parallelism integer
);
COMMENT ON TYPE backfill.job_settings IS
'What backfill.alter_job() returns: the job''s settings after the change.';

CREATE FUNCTION backfill.alter_job(job_id bigint, rate_limit integer DEFAULT NULL,
                                   parallelism integer DEFAULT NULL)
RETURNS backfill.job_settings
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
SELECT backfill._get_job(alter_job.job_id);
SELECT backfill.alter_rate_limit(alter_job.job_id, alter_job.rate_limit)
 WHERE alter_job.rate_limit IS NOT NULL;
SELECT backfill.reschedule(alter_job.job_id, alter_job.parallelism)
  FROM backfill.job j
 WHERE j.job_id OPERATOR(pg_catalog.=) alter_job.job_id
   AND alter_job.parallelism IS NOT NULL
   AND j.parallelism OPERATOR(pg_catalog.<>) alter_job.parallelism;
SELECT j.job_id, j.job_name, j.status, j.run_mode, j.rate_limit, j.parallelism
  FROM backfill.job j
 WHERE j.job_id OPERATOR(pg_catalog.=) alter_job.job_id;
$$;
COMMENT ON FUNCTION backfill.alter_job(bigint, integer, integer) IS
'Changes the rate limit and the parallelism of a job, as alter_rate_limit and reschedule do; NULL leaves a setting as it is; returns the job''s settings after.';

CREATE FUNCTION backfill.alter_job(job_name text, rate_limit integer DEFAULT NULL,
                                   parallelism integer DEFAULT NULL)
RETURNS backfill.job_settings
LANGUAGE sql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT * FROM backfill.alter_job(backfill.job_id(job_name), rate_limit, parallelism) $$;
COMMENT ON FUNCTION backfill.alter_job(text, integer, integer) IS
'Changes the settings of the job of that name (backfill.job_id), as alter_job(job_id) does.';


-- ---------------------------------------------------------------------------
-- Jobs over a query (src/views/): what a view job over a query would be,
-- shown before it is made, as RisingWave's EXPLAIN CREATE MATERIALIZED VIEW
-- ---------------------------------------------------------------------------

-- No SET search_path: the query is the caller's SQL, whose names resolve
-- on the caller's path, as create_job's filter does
CREATE FUNCTION backfill.explain_view_job(query text, backfill_order text DEFAULT 'auto')
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'backfill_explain_view_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.explain_view_job(text, text) IS
'What a view job over the query would be: the shape of the query, its tables in the order they would be scanned with their keys, and the downstream''s key; or the error that names what the query cannot use. Analyzes the query as the caller; makes nothing.';

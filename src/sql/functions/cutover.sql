/*
 * src/sql/functions/cutover.sql
 *	  The functions of the topics below.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- ---------------------------------------------------------------------------
-- Cut over (src/api/cutover.c, doc/cutover.md): a finished local job's
-- downstream takes its upstream's name and everything that names it, under
-- the upstream's lock taken with a short lock_timeout and retried; the job
-- turns around so that the old table follows the new one until
-- finish_cutover, and rollback_cutover swaps back the same way.
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill._cutover_record(job_id bigint, state text, attempts integer,
                                         old_table oid, new_table oid, old_name text,
                                         new_schema oid, new_name text, reversible boolean,
                                         into_existing boolean, lock_held_ms double precision,
                                         to_validate oid[], finished boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_record'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_record(bigint, text, integer, oid, oid, text, oid, text, boolean, boolean, double precision, oid[], boolean) IS
'Internal: writes the cutover row of a job the caller owns, whose tables must be the job''s own, owned by roles whose privileges the caller has.';
REVOKE ALL ON FUNCTION backfill._cutover_record(bigint, text, integer, oid, oid, text, oid, text, boolean, boolean, double precision, oid[], boolean) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._cutover_report(job_id bigint, what text)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_report'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_report(bigint, text) IS
'Internal: shows what a cutover of a job the caller owns is doing in pg_stat_activity.query of its backend: one line of at most 512 bytes.';
REVOKE ALL ON FUNCTION backfill._cutover_report(bigint, text) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._cutover_turn(job_id bigint, into_existing boolean)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_turn'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_turn(bigint, boolean) IS
'Internal: turns a finished job the caller owns around under its tables'' lock, for a caller with the privileges of the owners of both tables: its apply triggers move to its downstream, which becomes its upstream.';
REVOKE ALL ON FUNCTION backfill._cutover_turn(bigint, boolean) FROM PUBLIC;

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
REVOKE ALL ON FUNCTION backfill._cutover_check(backfill.job, regclass, regclass) FROM PUBLIC;

-- dst's unique index on the columns (by name) of src's replica identity
-- index (src/cutover/index_pairs.c)
CREATE OR REPLACE FUNCTION backfill._cutover_identity_index(src regclass, dst regclass)
RETURNS regclass
AS 'MODULE_PATHNAME', 'backfill_cutover_identity_index'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_identity_index(regclass, regclass) IS
'Internal: the unique index of dst on the columns of the replica identity index of src.';
REVOKE ALL ON FUNCTION backfill._cutover_identity_index(regclass, regclass) FROM PUBLIC;

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
REVOKE ALL ON FUNCTION backfill._cutover_swap(regclass, regclass, text) FROM PUBLIC;

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
-- a lock on either table, as pg_locks shows them (src/cutover/attempts.c,
-- attempt_lines.c).
CREATE OR REPLACE FUNCTION backfill._cutover_attempts(job_id bigint, src regclass, dst regclass, src_new_name text,
                                           lock_timeout interval, attempts integer,
                                           OUT tries integer, OUT lock_held_ms double precision,
                                           OUT to_validate oid[])
AS 'MODULE_PATHNAME', 'backfill_cutover_attempts'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_attempts(bigint, regclass, regclass, text, interval, integer) IS
'Internal: locks both tables of a cutover and what the swap alters with bounded waits and retries, then swaps them and renames their partitions.';
REVOKE ALL ON FUNCTION backfill._cutover_attempts(bigint, regclass, regclass, text, interval, integer) FROM PUBLIC;

-- the arguments every cutover function shares, checked alike
-- (src/cutover/arguments.c)
CREATE OR REPLACE FUNCTION backfill._cutover_arguments(lock_timeout interval, attempts integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_arguments'
LANGUAGE C IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_arguments(interval, integer) IS
'Internal: checks the lock_timeout and attempts of a cutover or rollback.';
REVOKE ALL ON FUNCTION backfill._cutover_arguments(interval, integer) FROM PUBLIC;

-- a job that can be turned around: its downstream maps back onto its
-- upstream, and its owner may write the upstream; NULL if so, else why not
CREATE OR REPLACE FUNCTION backfill._cutover_irreversible(j backfill.job)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_cutover_irreversible'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_irreversible(backfill.job) IS
'Internal: why a job''s downstream could not be followed back by its upstream after a cutover, or NULL.';
REVOKE ALL ON FUNCTION backfill._cutover_irreversible(backfill.job) FROM PUBLIC;

-- the swap made again the other way (src/api/cutover_rollback.c)
CREATE OR REPLACE FUNCTION backfill.rollback_cutover(job_id bigint, lock_timeout interval DEFAULT '1s',
                                          attempts integer DEFAULT 20,
                                          OUT state text, OUT attempts_made integer,
                                          OUT lock_held_ms double precision)
AS 'MODULE_PATHNAME', 'backfill_rollback_cutover'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill.rollback_cutover(bigint, interval, integer) IS
'Swaps the tables of a cutover back, with the same locking and carrying; the job follows its upstream again, and may be cut over again.';

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
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------

-- Whose code the writers of src run after the cutover: dst's triggers,
-- defaults, check constraints, rules and policies go into production with
-- it.  True when dst's owner is src's, a superuser, or a role whose
-- privileges src's owner has through its memberships: code src's writers
-- already trust.  A superuser's rights over every role do not count here
-- (pg_has_role would say yes to any role for a superuser's table)
-- (src/cutover/check_owner.c).
CREATE OR REPLACE FUNCTION backfill._cutover_trusts(src regclass, dst regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_cutover_trusts'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_trusts(regclass, regclass) IS
'Internal: whether the owner of dst is the owner of src, a superuser, or a role whose privileges the owner of src has through its memberships.';
REVOKE ALL ON FUNCTION backfill._cutover_trusts(regclass, regclass) FROM PUBLIC;

-- A cutover renames whole tables: a partition would be left detached from
-- its parent (whose writes go on reaching the old one), and the rows of an
-- inheritance child would not follow the name.  A partitioned table is
-- whole, its partitions with it (src/cutover/check_table.c).
CREATE OR REPLACE FUNCTION backfill._cutover_whole_table(j backfill.job, rel regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_whole_table'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_whole_table(backfill.job, regclass) IS
'Internal: refuses the cutover of a partition, or of a table that inherits or has inheritance children, unless it is a partitioned table.';
REVOKE ALL ON FUNCTION backfill._cutover_whole_table(backfill.job, regclass) FROM PUBLIC;

-- The other job over src or dst, whoever owns it: backfill.job shows a
-- role only its own jobs, and one it could not see would be left on the
-- wrong table by the swap.  Returns its id and nothing else about it
-- (src/api/cutover.c).
CREATE OR REPLACE FUNCTION backfill._cutover_other_job(job_id bigint, src regclass, dst regclass)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_cutover_other_job'
LANGUAGE C STABLE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_other_job(bigint, regclass, regclass) IS
'Internal: for a caller who owns job job_id, the first other job, of any owner and not cancelled, whose upstream or downstream is src or dst; NULL if none.';
REVOKE ALL ON FUNCTION backfill._cutover_other_job(bigint, regclass, regclass) FROM PUBLIC;

-- Whether row-level security filtered what the job's owner read of its
-- upstream: enabled on it, and the owner neither bypasses it nor owns the
-- table without FORCE ROW LEVEL SECURITY (src/cutover/check_table.c)
CREATE OR REPLACE FUNCTION backfill._cutover_filtered_by_rls(j backfill.job)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_cutover_filtered_by_rls'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_filtered_by_rls(backfill.job) IS
'Internal: whether row-level security on the upstream of a job applies to the job''s owner.';
REVOKE ALL ON FUNCTION backfill._cutover_filtered_by_rls(backfill.job) FROM PUBLIC;

-- after the turn, the job goes to the owner of its tables (src/api/cutover.c)
CREATE OR REPLACE FUNCTION backfill._cutover_hand_over(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_hand_over'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_hand_over(bigint) IS
'Internal: under the lock of its swap, gives a job just turned around, its state and change tables to the owner of its upstream.';
REVOKE ALL ON FUNCTION backfill._cutover_hand_over(bigint) FROM PUBLIC;

-- dst's privileges become src's, grantors included (src/cutover/carry_acl.c)
CREATE OR REPLACE FUNCTION backfill._cutover_copy_acl(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_copy_acl'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_copy_acl(regclass, regclass) IS
'Internal: under the lock of both tables of one owner, gives dst exactly the privileges of src, the table''s and its columns'' by name, with their grantors.';
REVOKE ALL ON FUNCTION backfill._cutover_copy_acl(regclass, regclass) FROM PUBLIC;

-- The pairs of an index of src and one of dst of the same definition (the
-- method, columns, expressions, predicate, uniqueness, primary key,
-- exclusion, deferrability, and the kind of constraint it carries), whose
-- names the swap exchanges: the n-th of src's indexes of a definition, by
-- name, with the n-th of dst's, so that two indexes of one definition
-- both get their names back, and an exclusion constraint's index never
-- pairs with a plain index.  Pairs whose names are already the same are
-- left out (src/cutover/index_pairs.c).
CREATE OR REPLACE FUNCTION backfill._cutover_index_pairs(src regclass, dst regclass,
                                              OUT src_index name, OUT dst_index name)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_cutover_index_pairs'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_index_pairs(regclass, regclass) IS
'Internal: the indexes of src and dst of the same definition, paired one to one in the order of their names, whose names the swap exchanges.';
REVOKE ALL ON FUNCTION backfill._cutover_index_pairs(regclass, regclass) FROM PUBLIC;

-- An identity or serial column that both tables have, each with a sequence
-- of its own: dst's goes on where src's was, so that the first insert
-- after the swap does not take a value the table holds already.  (When
-- only src has one, the swap moves it, its position with it.)  Run as the
-- caller, who needs UPDATE on dst's sequences and SELECT on src's
-- (src/cutover/carry_sequences.c).
CREATE OR REPLACE FUNCTION backfill._cutover_carry_identity(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_identity'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_identity(regclass, regclass) IS
'Internal: sets the sequence of each identity or serial column of dst to the position of the sequence of the column of the same name of src, where both have one.';
REVOKE ALL ON FUNCTION backfill._cutover_carry_identity(regclass, regclass) FROM PUBLIC;

-- Functions declared with src's row type, and the subscriptions that
-- write to src, re-pointed to dst (src/cutover/carry_functions.c,
-- carry_subscriptions.c)
CREATE OR REPLACE FUNCTION backfill._cutover_carry_functions(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_functions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_functions(regclass, regclass) IS
'Internal: under the lock of both tables, re-points the functions declared with the row type of src, or its array type, to those of dst, whose columns must be the same.';
REVOKE ALL ON FUNCTION backfill._cutover_carry_functions(regclass, regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._cutover_carry_subscriptions(src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_subscriptions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_subscriptions(regclass, regclass) IS
'Internal: under the lock of both tables, moves the rows of pg_subscription_rel of src, each ready, to dst.';
REVOKE ALL ON FUNCTION backfill._cutover_carry_subscriptions(regclass, regclass) FROM PUBLIC;

-- What a real schema has that the cutover cannot carry, refused before
-- anything changes: a subscription still copying src (or writing to dst
-- too), a generated column of src that is a plain column of dst (no ALTER
-- makes a column generated: after the cutover it would no longer be), and
-- functions of src's row type when dst's columns differ from src's
-- (src/cutover/check_schema.c).
CREATE OR REPLACE FUNCTION backfill._cutover_check_schema(j backfill.job, src regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_check_schema'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_check_schema(backfill.job, regclass, regclass) IS
'Internal: refuses a cutover of a table a subscription is still copying, or of two tables one subscription writes to, of generated columns that would no longer be generated, and of functions of the row type of src when the columns of dst differ.';
REVOKE ALL ON FUNCTION backfill._cutover_check_schema(backfill.job, regclass, regclass) FROM PUBLIC;

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
CREATE OR REPLACE FUNCTION backfill._cutover_matviews(src regclass)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'backfill_cutover_matviews'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_matviews(regclass) IS
'Internal: the materialized views over src, each with the statements that make it again, printed with the names they have.';
REVOKE ALL ON FUNCTION backfill._cutover_matviews(regclass) FROM PUBLIC;

CREATE OR REPLACE FUNCTION backfill._cutover_carry_matviews(src regclass, dst regclass, matviews jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_carry_matviews'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_carry_matviews(regclass, regclass, jsonb) IS
'Internal: under the lock of both tables, makes each materialized view given by _cutover_matviews again over dst, with its owner, privileges, options, comments and indexes, filled when dst is at most 8 MB.';
REVOKE ALL ON FUNCTION backfill._cutover_carry_matviews(regclass, regclass, jsonb) FROM PUBLIC;

-- a materialized view the swap can make again: nothing else depends on it
-- (a view over it would have to be dropped with it), and its owner is a
-- role whose privileges the caller has, as the swap gives it to that role
-- (src/cutover/check_owner.c)
CREATE OR REPLACE FUNCTION backfill._cutover_check_matview(mv regclass, dst regclass)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_check_matview'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_check_matview(regclass, regclass) IS
'Internal: refuses to carry a materialized view another object depends on, or whose owner''s privileges the caller lacks.';
REVOKE ALL ON FUNCTION backfill._cutover_check_matview(regclass, regclass) FROM PUBLIC;

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
CREATE OR REPLACE FUNCTION backfill._cutover_weaker(src regclass, dst regclass)
RETURNS TABLE (kind text, detail text)
AS 'MODULE_PATHNAME', 'backfill_cutover_weaker'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_weaker(regclass, regclass) IS
'Internal: what table src enforces that table dst does not and a cutover would not carry over (NOT NULL, CHECK, UNIQUE, EXCLUDE, its own foreign keys, generated columns, a different default or identity, partitioning), one row per thing, with the word that accepts it.';
REVOKE ALL ON FUNCTION backfill._cutover_weaker(regclass, regclass) FROM PUBLIC;

-- Refuses the cutover of a job whose downstream would enforce less than its
-- upstream did, unless the caller accepts each kind of loss by name
-- (src/cutover/accepts.c)
CREATE OR REPLACE FUNCTION backfill._cutover_accepts(j backfill.job, accept text[])
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_accepts'
LANGUAGE C STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_accepts(backfill.job, text[]) IS
'Internal: refuses the cutover of a job whose downstream does not enforce what its upstream does (backfill._cutover_weaker), unless accept names each kind of loss.';
REVOKE ALL ON FUNCTION backfill._cutover_accepts(backfill.job, text[]) FROM PUBLIC;

-- The cutover of a finished job (src/api/cutover_start.c).  With verify,
-- the checksum verify_job runs just before the lock is taken (the
-- switchover, for a remote job), and a difference refuses the cutover
-- (src/cutover/verify_gate.c)
CREATE OR REPLACE FUNCTION backfill.cutover(job_id bigint, old_name text DEFAULT NULL,
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

/* src/sql/functions/cutover_lock.sql */

-- ---------------------------------------------------------------------------
-- The lock step: everything the swap alters, locked before the swap, in one
-- order, each wait bounded; partitions renamed with their tables
-- ---------------------------------------------------------------------------

-- one relation ACCESS EXCLUSIVE, a view without its tables, a sequence as
-- a table (src/cutover/lock.c)
CREATE OR REPLACE FUNCTION backfill._cutover_lock_relation(rel regclass)
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
CREATE OR REPLACE FUNCTION backfill._cutover_lock_dependents(src regclass, dst regclass)
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
CREATE OR REPLACE FUNCTION backfill._cutover_index_build(src regclass, dst regclass)
RETURNS TABLE (pid integer, rel regclass)
AS 'MODULE_PATHNAME', 'backfill_cutover_index_build'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_index_build(regclass, regclass) IS
'Internal: a process building an index concurrently (CREATE INDEX CONCURRENTLY, REINDEX CONCURRENTLY) on src, dst or one of their partitions, and that table; no row if none.';

-- ends the cutover at once when an index is being built concurrently on
-- one of its tables (_cutover_index_build)
CREATE OR REPLACE FUNCTION backfill._cutover_refuse_index_build(job_id bigint, src regclass, dst regclass)
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
CREATE OR REPLACE FUNCTION backfill._cutover_partition_pairs(src regclass, dst regclass,
                                                  OUT old_part regclass, OUT new_part regclass)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_cutover_partition_pairs'
LANGUAGE C STABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_partition_pairs(regclass, regclass) IS
'Internal: each partition of the partitioned table src with the partition of the partitioned table dst of the same bounds; an error unless both are partitioned by the same key and their partitions match one to one.';

-- The partitions of a table renamed from before to after follow its name:
-- one named before_x becomes after_x, another name x becomes after_x; and
-- so on down, for partitions that are partitioned in turn
-- (src/cutover/carry_partitions.c)
CREATE OR REPLACE FUNCTION backfill._cutover_rename_partitions_of(rel regclass, before name, after name)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_rename_partitions_of'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_rename_partitions_of(regclass, name, name) IS
'Internal: renames the partitions of rel, a table just renamed from before to after: a partition named before_x becomes after_x, another x becomes after_x; and their partitions alike.';

-- After the swap, under its lock: src was src_name and has its new name,
-- dst was dst_name and has src_name.  A partition of src is renamed as
-- src was; the partition of dst of the same bounds takes its name and
-- schema, so that what names a partition (a writer, a grant, a report)
-- names the one that takes the writes.  The rollback, the same swap the
-- other way, gives the old partitions their names back.  Where only one
-- table is partitioned, its partitions follow its name
-- (src/cutover/carry_partitions.c).
CREATE OR REPLACE FUNCTION backfill._cutover_rename_partitions(src regclass, dst regclass, src_name name, dst_name name)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_cutover_rename_partitions'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._cutover_rename_partitions(regclass, regclass, name, name) IS
'Internal: after the swap of src (once src_name) and dst (once dst_name, now src_name), gives each partition of dst the name and schema of the partition of src of the same bounds, and the names of its indexes, and src''s partitions names that follow src''s new name.';

-- The gate of cutover(verify => true): verify_job of the job (method auto:
-- by checksums, where they are computed where the rows are), as its caller; its first differences go into the error's DETAIL.
CREATE OR REPLACE FUNCTION backfill._cutover_verify(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    found bigint;
    shown text;
BEGIN
    SELECT count(*), string_agg(v.pk || ' ' || v.problem, ', ' ORDER BY v.n) FILTER (WHERE v.n <= 10)
      INTO found, shown
      FROM (SELECT f.pk, f.problem, row_number() OVER () AS n
              FROM backfill.verify_job(_cutover_verify.job_id) f) v;
    IF found > 0 THEN
        RAISE EXCEPTION 'cannot cut over backfill job % because its downstream differs from its upstream', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('backfill.verify_job(%s) found %s difference%s: %s%s.', job_id, found,
                                  CASE WHEN found = 1 THEN '' ELSE 's' END, shown,
                                  CASE WHEN found > 10 THEN ', ...' ELSE '' END),
                  HINT = format('Compare them with backfill.verify_job(%s), mend the downstream or copy the table again with backfill.recreate_job(%s), then cut over again.', job_id, job_id);
    END IF;
END
$$;
COMMENT ON FUNCTION backfill._cutover_verify(bigint) IS
'Internal: for cutover(verify => true), refuses the cutover of a job whose checksum verify_job finds a difference, naming the first ten in the DETAIL.';

CREATE OR REPLACE FUNCTION backfill.cutover(job_id bigint, old_name text DEFAULT NULL,
                                 lock_timeout interval DEFAULT '1s', attempts integer DEFAULT 20,
                                 fence boolean DEFAULT false, accept text[] DEFAULT NULL,
                                 verify boolean DEFAULT false,
                                 OUT state text, OUT attempts_made integer,
                                 OUT lock_held_ms double precision, OUT old_table regclass,
                                 OUT rollback_possible boolean, OUT source_lsn pg_lsn)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    c backfill.job_cutover;
    why text;
    src_name text;
    dst_name text;
    up_text text;
    down_text text;
    swapped record;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'backfill.cutover() must run at isolation level READ COMMITTED'
            USING ERRCODE = 'invalid_transaction_state',
                  DETAIL = 'It reads the job as the cutover calls it waited for left it.';
    END IF;
    PERFORM backfill._cutover_arguments(lock_timeout, attempts);
    IF fence IS NULL THEN
        RAISE EXCEPTION 'argument "fence" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF verify IS NULL THEN
        RAISE EXCEPTION 'argument "verify" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- one cutover of a job at a time; rollback and finish take it too.  The
    -- job is read again once it is held: a rollback that held it meanwhile
    -- has turned the job back
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
    j := backfill._get_job(job_id);
    SELECT * INTO c FROM backfill.job_cutover WHERE backfill.job_cutover.job_id = cutover.job_id;
    IF c.state = 'cut_over' THEN
        RAISE EXCEPTION 'backfill job % has already been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Use backfill.rollback_cutover(%s) or backfill.finish_cutover(%s).', job_id, job_id);
    ELSIF c.state = 'finished' THEN
        RAISE EXCEPTION 'backfill job % has already been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'Its cutover has been finished: the job no longer follows any table.';
    END IF;
    IF j.remote THEN
        -- a switchover (src/kinds/switchover.c): the source stops being
        -- followed, so the job lets go of the local table at once, as
        -- finish_cutover does; there is no rollback to keep it for
        IF verify THEN
            PERFORM backfill._cutover_verify(job_id);
        END IF;
        source_lsn := backfill._remote_switchover(job_id, fence, lock_timeout, attempts);
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, false);
        PERFORM backfill._cutover_record(job_id, 'finished', 1, j.upstream, j.downstream,
                                         (SELECT relname FROM pg_class WHERE oid = j.upstream),
                                         (SELECT relnamespace FROM pg_class WHERE oid = j.downstream),
                                         (SELECT relname FROM pg_class WHERE oid = j.downstream),
                                         false, j.into_existing, NULL, NULL, true);
        state := 'finished';
        attempts_made := 1;
        RETURN;
    END IF;
    IF fence THEN
        RAISE EXCEPTION 'fence applies only to a job whose upstream is on another server'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'A local cutover locks the upstream itself.';
    END IF;
    IF j.status <> 'finished' THEN
        RAISE EXCEPTION 'cannot cut over backfill job % because it has not finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('Its status is %s: its downstream table is not yet equal to its upstream table.', j.status),
                  HINT = format('Wait until it has finished: backfill.wait_job(%s).', job_id);
    END IF;
    src_name := (SELECT relname FROM pg_class WHERE oid = j.upstream);
    old_name := coalesce(old_name, format('%s_before_cutover_%s', src_name, job_id));
    IF old_name = '' OR octet_length(old_name) >= 64 THEN
        RAISE EXCEPTION 'old name "%" is not a valid table name', old_name
            USING ERRCODE = 'invalid_name',
                  DETAIL = 'A table name is 1 to 63 bytes long.',
                  HINT = 'Give a shorter name as old_name.';
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE relname = old_name
                 AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = j.upstream)) THEN
        RAISE EXCEPTION 'relation "%" already exists in the schema of table %', old_name, j.upstream
            USING ERRCODE = 'duplicate_table',
                  HINT = 'Give another name as old_name.';
    END IF;
    -- a copy made through row-level security holds only the rows its
    -- owner was let see, and would replace every row of the table
    IF backfill._cutover_filtered_by_rls(j) THEN
        RAISE EXCEPTION 'cannot cut over backfill job % because row-level security on table % applies to its owner', job_id, j.upstream
            USING ERRCODE = 'insufficient_privilege',
                  DETAIL = format('Its downstream holds only the rows of table %s that the policies let role %s see, and would take the place of all of them.', j.upstream, j.owner),
                  HINT = 'Copy the table as its owner (without FORCE ROW LEVEL SECURITY), as a superuser or as a role with BYPASSRLS.';
    END IF;
    PERFORM backfill._cutover_check(j, j.upstream, j.downstream);
    PERFORM backfill._cutover_accepts(j, accept);
    why := backfill._cutover_irreversible(j);
    IF why IS NOT NULL THEN
        RAISE NOTICE 'backfill job % cannot be rolled back after its cutover: %', job_id, why
            USING DETAIL = format('The old table, renamed %s, will no longer follow the new one.', old_name);
    END IF;

    dst_name := (SELECT relname FROM pg_class WHERE oid = j.downstream);
    up_text := j.upstream::text;
    down_text := j.downstream::text;
    IF verify THEN
        PERFORM backfill._cutover_verify(job_id);
    END IF;
    swapped := backfill._cutover_attempts(job_id, j.upstream, j.downstream, old_name, lock_timeout, attempts);
    IF why IS NULL THEN
        PERFORM backfill._cutover_turn(job_id, true);
        -- the job of a role cut over by another belongs to its tables' owner now
        PERFORM backfill._cutover_hand_over(job_id);
    ELSE
        -- the old table no longer takes writes: the job has nothing to follow
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, false);
    END IF;
    PERFORM backfill._cutover_record(job_id, 'cut_over', swapped.tries, j.upstream, j.downstream,
                                     old_name,
                                     (SELECT relnamespace FROM pg_class WHERE oid = j.downstream),
                                     dst_name, why IS NULL, j.into_existing,
                                     swapped.lock_held_ms, swapped.to_validate, false);
    RAISE LOG 'cutover of backfill job %: table % swapped with table % (renamed %) after % attempts, lock held % ms',
        job_id, down_text, up_text, old_name, swapped.tries, round(swapped.lock_held_ms::numeric, 1);
    PERFORM backfill._cutover_report(job_id, 'cut over');
    state := 'cut_over';
    attempts_made := swapped.tries;
    lock_held_ms := swapped.lock_held_ms;
    old_table := j.upstream;
    rollback_possible := why IS NULL;
END
$$;
COMMENT ON FUNCTION backfill.cutover(bigint, text, interval, integer, boolean, text[], boolean) IS
'Gives a finished job''s downstream its upstream''s name and what names it (privileges, owner, sequences, defaults, identity, policies, comments, statistics targets, replica identity, publications, subscriptions, triggers, views, materialized views, functions of its row type, foreign keys), under the upstream''s lock taken with lock_timeout and retried; the old table then follows the new one until finish_cutover.  Refused when the downstream enforces less than the upstream (NOT NULL, CHECK, UNIQUE, ...), unless accept names each such loss, and with verify when the checksum verify_job finds a difference.';

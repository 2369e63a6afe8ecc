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

COMMENT ON FUNCTION backfill._key_compare_sql(regclass, text[], text, text, text) IS
'Internal: the SQL comparing the key columns pk_columns of upstream under alias left with those under alias right (op: <, <=, =, >=, >), through the key types'' btree operator classes; pk_columns a list of columns of upstream, one dimension, no NULL, that the caller may read.';
COMMENT ON FUNCTION backfill._verify_rows(bigint, text) IS
'Internal: for verify_job, runs its comparison of a job the caller owns as the job''s owner, in a security-restricted operation; the query must return two columns of type text.';
COMMENT ON FUNCTION backfill._live_actors() IS
'Internal: the actors running now, as their processes published them in shared memory after their last barrier; only the jobs of roles whose privileges the caller has, or all of them for pg_read_all_stats, whose members see the position (a key of the upstream) only of the jobs of roles whose privileges they have.';
COMMENT ON FUNCTION backfill._job_is_running(bigint) IS
'Internal: whether background workers or a session run a job the caller owns now.';
COMMENT ON FUNCTION backfill._drop_triggers(bigint) IS
'Internal: drops the triggers a job the caller owns has on its upstream, which the caller or the job''s owner must still own or have TRIGGER on.';
COMMENT ON FUNCTION backfill._cutover_turn(bigint, boolean) IS
'Internal: turns a finished job the caller owns around under its tables'' lock, for a caller with the privileges of the owners of both tables: its apply triggers move to its downstream, which becomes its upstream.';
COMMENT ON FUNCTION backfill._cutover_record(bigint, text, integer, oid, oid, text, oid, text, boolean, boolean, double precision, oid[], boolean) IS
'Internal: writes the cutover row of a job the caller owns, whose tables must be the job''s own, owned by roles whose privileges the caller has.';
COMMENT ON FUNCTION backfill._cutover_report(bigint, text) IS
'Internal: shows what a cutover of a job the caller owns is doing in pg_stat_activity.query of its backend: one line of at most 512 bytes.';
COMMENT ON FUNCTION backfill._remote_switchover(bigint, boolean, interval, integer) IS
'Internal: switches a finished remote job the caller owns, not cut over, over from its source, for a caller with the privileges of the owner of its local table: optionally fences the source table (revokes its write privileges from every role but its owner), fetches and applies every change committed there, sets the local sequences to the source''s, stops following and drops the slot and the publication on the source; returns the source LSN it switched at.';
COMMENT ON FUNCTION backfill._drop_slot(bigint) IS
'Internal: drops the replication slot of a cdc job the caller owns, if it exists, when the transaction commits.  Not executable by PUBLIC: nothing calls it.';

-- The job row it is given must be of a job the caller owns: its tables are
-- dropped with the caller's rights, but the indexes named in the job's
-- catalog are built on its downstream, and only that job's.
CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    ix record;
    stmt text;
    cur backfill.job;
BEGIN
    IF j IS NULL OR j.job_id IS NULL THEN
        RAISE EXCEPTION 'argument "j" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF drop_downstream IS NULL THEN
        RAISE EXCEPTION 'argument "drop_downstream" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- the job as the catalog has it (cancelled maybe, its tables then NULL):
    -- the row given names no table the job has not
    cur := backfill._get_job(j.job_id);
    IF j.owner IS DISTINCT FROM cur.owner OR j.upstream IS DISTINCT FROM cur.upstream
       OR (cur.downstream IS NOT NULL AND j.downstream IS DISTINCT FROM cur.downstream)
       OR (cur.state_table IS NOT NULL AND j.state_table IS DISTINCT FROM cur.state_table)
       OR (cur.change_table IS NOT NULL AND j.change_table IS DISTINCT FROM cur.change_table) THEN
        RAISE EXCEPTION 'argument "j" is not the row of backfill job %', j.job_id
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Its tables or its owner differ from those of the job''s catalog row.';
    END IF;
    IF NOT drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        FOR ix IN SELECT i.index_name, i.head, i.tail FROM backfill.job_index i
                   WHERE i.job_id OPERATOR(pg_catalog.=) j.job_id ORDER BY i.position LOOP
            CONTINUE WHEN EXISTS (SELECT FROM pg_class c
                                   WHERE c.relname OPERATOR(pg_catalog.=) ix.index_name
                                     AND c.relnamespace OPERATOR(pg_catalog.=)
                                         (SELECT d.relnamespace FROM pg_class d WHERE d.oid OPERATOR(pg_catalog.=) j.downstream));
            stmt := ix.head || j.downstream::pg_catalog.text || ix.tail;
            BEGIN
                EXECUTE stmt;
            EXCEPTION WHEN OTHERS THEN
                RAISE WARNING 'index "%" of table % was not built again', ix.index_name, j.downstream
                    USING DETAIL = format('Backfill job %s had dropped it to build it after its snapshot: %s', j.job_id, SQLERRM),
                          HINT = format('Run %s', stmt);
            END;
        END LOOP;
    END IF;
    -- the upstream's owner may be another role than the job's
    PERFORM backfill._drop_triggers(j.job_id);
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.change_table) THEN
        EXECUTE format('DROP TABLE %s', j.change_table);
    END IF;
    IF to_regtype(format('backfill.%I', 'image_' || j.job_id)) IS NOT NULL THEN
        EXECUTE format('DROP TYPE backfill.%I', 'image_' || j.job_id);
    END IF;
    IF drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        EXECUTE format('DROP TABLE %s', j.downstream);
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.state_table) THEN
        EXECUTE format('DROP TABLE %s', j.state_table);
    END IF;
    -- what its kind owns outside its tables (src/kinds/kind.h, drop_objects):
    -- a cdc job's slot, dropped at commit; the slot and the publication of a
    -- job whose upstream is on another server
    PERFORM backfill._drop_kind_objects(j.job_id);
END
$$;
COMMENT ON FUNCTION backfill._drop_job_objects(backfill.job, boolean) IS
'Internal: drops the triggers and tables of a job the caller owns, given its row as the caller read it.';

-- ---------------------------------------------------------------------------
-- A job's own tables: the extension's, not a place for its owner's code
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- Copies that row-level security would filter, and what indexes => true copies
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------

-- finish_cutover drops the old table: only if it is one of the job's own
-- (its downstream since the swap, or its upstream still when the cutover
-- could not be rolled back and let the job go) and owned by the owner of
-- the new one, whatever the cutover row says
CREATE OR REPLACE FUNCTION backfill.finish_cutover(job_id bigint, keep boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    c backfill.job_cutover;
    fk record;
BEGIN
    IF keep IS NULL THEN
        RAISE EXCEPTION 'argument "keep" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('backfill.cutover'), job_id::integer);
    SELECT * INTO c FROM backfill.job_cutover WHERE backfill.job_cutover.job_id = finish_cutover.job_id;
    IF NOT FOUND OR c.state <> 'cut_over' THEN
        RAISE EXCEPTION 'backfill job % has not been cut over', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = CASE WHEN c.state IS NULL THEN 'It has no cutover to finish.'
                                ELSE format('Its cutover is %s.', replace(c.state, '_', ' ')) END;
    END IF;
    IF NOT keep AND EXISTS (SELECT FROM pg_class WHERE oid = c.old_table)
       AND (c.old_table IS DISTINCT FROM j.upstream AND c.old_table IS DISTINCT FROM j.downstream
            OR (SELECT o.relowner FROM pg_class o WHERE o.oid = c.old_table)
               IS DISTINCT FROM (SELECT n.relowner FROM pg_class n WHERE n.oid = c.new_table)) THEN
        RAISE EXCEPTION 'cannot drop table % at the end of the cutover of backfill job %',
                        c.old_table::regclass, job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'The old table of a cutover must be a table of the job, owned by the owner of the new table.',
                  HINT = format('Drop the table yourself if it is the one to drop, then use backfill.finish_cutover(%s, keep => true).', job_id);
    END IF;
    -- the foreign keys the swap added NOT VALID
    FOR fk IN SELECT k.conrelid::regclass AS child, k.conname FROM pg_constraint k
               WHERE k.oid = ANY (c.to_validate) AND NOT k.convalidated LOOP
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', fk.child, fk.conname);
    END LOOP;
    -- the old table stops following the new one
    IF j.status <> 'cancelled' THEN
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, false);
    END IF;
    IF NOT keep AND EXISTS (SELECT FROM pg_class WHERE oid = c.old_table) THEN
        EXECUTE format('DROP TABLE %s', c.old_table::regclass);
    END IF;
    PERFORM backfill._cutover_record(job_id, 'finished', c.attempts, c.old_table, c.new_table,
                                     c.old_name, c.new_schema, c.new_name, false, c.into_existing,
                                     c.lock_held_ms, NULL, true);
    PERFORM backfill._cutover_report(job_id, 'finished');
END
$$;
COMMENT ON FUNCTION backfill.finish_cutover(bigint, boolean) IS
'Ends a cutover: validates the foreign keys it carried, stops the old table following the new one (the job is then cancelled) and drops the old table, unless keep; only the job''s own old table, owned by the owner of the new one.';

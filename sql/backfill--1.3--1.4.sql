/* backfill--1.3--1.4.sql: from version 1.3 to 1.4 */

-- CREATE EXTENSION backfill installs 1.3 (backfill--1.3.sql) and runs this
-- script; ALTER EXTENSION backfill UPDATE runs it on a 1.3 catalog.  Every
-- object it changes is defined here once, in its final form.

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.4'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Internal functions: what each checks before it touches anything
-- ---------------------------------------------------------------------------

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

-- The state table is read with the reader's rights (a superuser's, who
-- reads every job's state through backfill.jobs): it must carry nothing of
-- its owner's that a read would run.  An ordinary table, without rules
-- (which could make it a view) or row-level security, each of whose columns
-- has the type the extension gave it: a type of the system's, or the
-- upstream's column of that name (the key's).  A column retyped to a type
-- of its owner's, whose implicit casts would run in the reader's
-- comparisons, is an error, not a cast.
CREATE FUNCTION backfill._check_state_table(j backfill.job)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    bad text;
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_class c
                WHERE c.oid OPERATOR(pg_catalog.=) j.state_table
                  AND (c.relkind OPERATOR(pg_catalog.<>) 'r' OR c.relhasrules OR c.relrowsecurity)) THEN
        RAISE EXCEPTION 'state table % of backfill job % is not a table the extension can read', j.state_table, j.job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'It has rules or row-level security, which the extension did not give it.',
                  HINT = 'Drop them, or drop the job with backfill.drop_job().';
    END IF;
    SELECT pg_catalog.format('%I %s', a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)) INTO bad
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) j.state_table
       AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
       AND a.atttypid OPERATOR(pg_catalog.>=) 16384   -- FirstNormalObjectId
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute u
                        WHERE u.attrelid OPERATOR(pg_catalog.=) j.upstream
                          AND u.attname OPERATOR(pg_catalog.=) a.attname
                          AND u.atttypid OPERATOR(pg_catalog.=) a.atttypid)
     ORDER BY a.attnum LIMIT 1;
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'state table % of backfill job % has column % of a type the extension did not give it',
                        j.state_table, j.job_id, bad
            USING ERRCODE = 'data_corrupted',
                  DETAIL = 'A job''s state table holds positions and counts of the types of the system and of its upstream''s key.',
                  HINT = pg_catalog.format('Drop the job with backfill.drop_job(%s) and create it again.', j.job_id);
    END IF;
END
$$;
COMMENT ON FUNCTION backfill._check_state_table(backfill.job) IS
'Internal: refuses a state table that carries what its owner put there (rules, row-level security, a column of another type), before job_state reads it with the reader''s rights.';

-- job_state: as in 1.3, once _check_state_table has passed
CREATE OR REPLACE FUNCTION backfill.job_state(job_id bigint)
RETURNS TABLE (actor_id integer, vnode integer, current_pos text,
               backfill_finished boolean, row_count bigint,
               epoch bigint, cdc_offset jsonb)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    pos text;
BEGIN
    IF j.state_table IS NULL THEN
        RAISE EXCEPTION 'backfill job % has no state table', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = format('The job is %s.', j.status);
    END IF;
    PERFORM backfill._check_state_table(j);
    SELECT string_agg('s.' || quote_ident(c), ', ' ORDER BY o) INTO pos
      FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o);
    IF j.remote THEN
        -- actor a of p reads splits a*n/p .. (a+1)*n/p - 1 (src/kind_remote.c)
        RETURN QUERY EXECUTE format(
            'WITH b AS (SELECT coalesce($2, ''{}''::text[]) AS b), '
            '     a AS (SELECT a.actor_id, (row_number() OVER (ORDER BY a.actor_id) - 1)::int AS i, '
            '                  count(*) OVER ()::int AS p '
            '             FROM backfill.actor a WHERE a.job_id = $1) '
            'SELECT a.actor_id, sp.split_id, '
            '       format(''[%%s,%%s)'', b.b[sp.split_id], b.b[sp.split_id + 1]), '
            '       coalesce(s.backfill_finished, false), coalesce(s.row_count, 0), NULL::bigint, '
            '       CASE WHEN s.split_id IS NOT NULL '
            '            THEN jsonb_build_object(''low'', s.cdc_offset_low, ''high'', s.cdc_offset_high) END '
            '  FROM b CROSS JOIN generate_series(0, cardinality(b.b)) AS sp(split_id) '
            '  JOIN a ON sp.split_id >= a.i * (cardinality(b.b) + 1) / a.p '
            '        AND sp.split_id < (a.i + 1) * (cardinality(b.b) + 1) / a.p '
            '  LEFT JOIN %s s ON s.split_id = sp.split_id '
            ' ORDER BY sp.split_id', j.state_table)
            USING job_id, j.remote_splits;
    ELSIF j.kind = 'cdc' THEN
        -- one split for the whole table
        RETURN QUERY EXECUTE format(
            'SELECT a.actor_id, NULL::integer, '
            '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
            '       coalesce(s.backfill_finished, false), coalesce(s.row_count, 0), '
            '       NULL::bigint, s.cdc_offset '
            '  FROM backfill.actor a LEFT JOIN %2$s s ON true '
            ' WHERE a.job_id = $1', pos, j.state_table)
            USING job_id;
    ELSIF j.kind = 'snapshot' THEN
        -- current_pos is the next row to read; finished is is_epoch_finished
        RETURN QUERY EXECUTE format(
            'SELECT a.actor_id, v.vnode, '
            '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
            '       coalesce(s.is_epoch_finished, false), coalesce(s.row_count, 0), '
            '       s.epoch, NULL::jsonb '
            '  FROM generate_series(0, 255) AS v(vnode) '
            '  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end '
            '  LEFT JOIN %2$s s ON s.vnode = v.vnode '
            ' ORDER BY v.vnode', pos, j.state_table)
            USING job_id;
    ELSE
        -- a vnode without a row decodes as RisingWave decodes it: not started
        RETURN QUERY EXECUTE format(
            'SELECT a.actor_id, v.vnode, '
            '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
            '       CASE WHEN s.vnode IS NULL THEN false ELSE s.backfill_finished END, '
            '       CASE WHEN s.vnode IS NULL THEN 0 ELSE s.row_count END, '
            '       NULL::bigint, NULL::jsonb '
            '  FROM generate_series(0, 255) AS v(vnode) '
            '  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end '
            '  LEFT JOIN %2$s s ON s.vnode = v.vnode '
            ' ORDER BY v.vnode', pos, j.state_table)
            USING job_id;
    END IF;
END
$$;
COMMENT ON FUNCTION backfill.job_state(bigint) IS
'The state rows of a job, decoded: one per vnode with its actor; for a cdc job its one split; for a remote job one per split (vnode is its id, current_pos its range of the first key column, cdc_offset its low and high offsets).';


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
-- Copies that row-level security would filter, and what indexes => true copies
-- ---------------------------------------------------------------------------

-- ---------------------------------------------------------------------------
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------

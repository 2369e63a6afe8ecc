/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit


-- ---- keys: comparisons through the key types' btree operator classes ----

-- The comparison of two keys of a job's upstream, written with the
-- operators of the key types' default btree operator classes
-- (OPERATOR(schema.name), looked up by strategy), for SQL that builds
-- statements over a job's key: the order of the primary key's index
-- whatever the operators are named (hstore's #<#, #<=#, ...), whatever the
-- search_path.
CREATE FUNCTION backfill._key_compare_sql(upstream regclass, pk_columns text[], "left" text,
                                          op text, "right" text)
RETURNS text
AS 'MODULE_PATHNAME', 'backfill_key_compare_sql'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION backfill._key_compare_sql(regclass, text[], text, text, text) IS
'Internal: the SQL comparing the key columns pk_columns of upstream under alias left with those under alias right (op: <, <=, =, >=, >), through the key types'' btree operator classes.';

-- verify_job of 1.2, its positions compared through _key_compare_sql
CREATE OR REPLACE FUNCTION backfill.verify_job(job_id bigint)
RETURNS TABLE (pk text, problem text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    key_u text;
    key_d text;
    key_s text;
    key_c text;
    cols_u text;
    cols_d text;
    scan_u text;
    scan_d text;
    covered text := 'true';
    pending text := 'false';
    decoded text := 'SELECT NULL::record AS k WHERE false';
    vnode_u text;
    key_types text;
    first_type text;
BEGIN
    IF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    SELECT string_agg('u.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('d.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('s.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('c.' || quote_ident(c), ', ' ORDER BY o)
      INTO key_u, key_d, key_s, key_c
      FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o);
    -- a key's vnode in the job: its range, or the hash of older jobs
    vnode_u := CASE WHEN j.vnode_mapping = 'range'
                    THEN format('backfill.job_vnode(%s::int8, %s)', j.job_id, key_u)
                    ELSE format('backfill.vnode(%s)', key_u) END;
    -- each value as the downstream's column stores it
    SELECT string_agg(format('CAST(%s AS %s)', coalesce('(' || t.e || ')', 'u.' || quote_ident(t.c)),
                             format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY t.o),
           string_agg('d.' || quote_ident(t.c), ', ' ORDER BY t.o)
      INTO cols_u, cols_d
      FROM unnest(j.columns, j.expressions) WITH ORDINALITY AS t(c, e, o)
      JOIN pg_attribute a ON a.attrelid = j.downstream AND a.attname = t.c AND NOT a.attisdropped;
    -- a partitioned upstream is read through its partitions
    scan_u := format('%s%s u', CASE WHEN (SELECT relkind FROM pg_class WHERE oid = j.upstream) = 'p'
                                    THEN '' ELSE 'ONLY ' END, j.upstream);
    scan_d := format('%s', j.downstream);

    IF j.remote THEN
        SELECT string_agg(format('p.k[%s]::%s', t.o, format_type(a.atttypid, a.atttypmod)), ', ' ORDER BY t.o),
               min(format_type(a.atttypid, a.atttypmod)) FILTER (WHERE t.o = 1)
          INTO key_types, first_type
          FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o)
          JOIN pg_attribute a ON a.attrelid = j.downstream AND a.attname = t.c AND NOT a.attisdropped;
        IF j.status <> 'finished' THEN
            -- the keys of finished splits: [bound split_id - 1, bound split_id)
            covered := format('EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished '
                              'AND ((%2$L::text[])[s.split_id] IS NULL OR u.%3$I >= ((%2$L::text[])[s.split_id])::%4$s) '
                              'AND ((%2$L::text[])[s.split_id + 1] IS NULL OR u.%3$I < ((%2$L::text[])[s.split_id + 1])::%4$s))',
                              j.state_table, coalesce(j.remote_splits, '{}'), j.pk_columns[1], first_type);
            scan_d := format('(SELECT u.* FROM %s u WHERE %s)', j.downstream, covered);
        END IF;
        -- no fetch from here on; the source's snapshot, then what its slot
        -- holds after it, from the offset the comparison's snapshot sees
        PERFORM backfill._lock_slot(j.job_id);
        EXECUTE format('SELECT FROM %s LIMIT 1', scan_u);
        decoded := format('SELECT ROW(%s) AS k FROM backfill._unfetched_keys(%s, '
                          '(SELECT j.remote_lsn FROM backfill.job j WHERE j.job_id = %s)) p(k)',
                          key_types, j.job_id, j.job_id);
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    -- a backfilling job covers, per vnode, the keys up to its position
    -- (below it for the snapshot kind, whose position is the next row to
    -- read), and the keys captured since its last barrier are pending, not
    -- differences; a finished job covers every key and has nothing pending
    ELSIF j.status <> 'finished' THEN
        IF j.kind = 'snapshot' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = %s '
                              'AND (s.is_epoch_finished OR %s))',
                              j.state_table, vnode_u,
                              backfill._key_compare_sql(j.upstream, j.pk_columns, 'u', '<', 's'));
        ELSIF j.kind = 'cdc' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.backfill_finished OR %s)',
                              j.state_table,
                              backfill._key_compare_sql(j.upstream, j.pk_columns, 'u', '<=', 's'));
            -- and the changes the slot has decoded but not delivered yet
            -- (flushed first: the slot decodes only flushed WAL, and an
            -- asynchronous commit may not have reached it)
            IF EXISTS (SELECT FROM pg_replication_slots
                        WHERE slot_name = format('backfill_%s_%s',
                                  (SELECT oid FROM pg_database WHERE datname = current_database()),
                                  j.job_id)) THEN
                PERFORM backfill._flush_wal();
                -- one user of the slot at a time: the job's fetch waits
                PERFORM backfill._lock_slot(j.job_id);
                decoded := format(
                    'SELECT ROW((substr(p.data, strpos(p.data, E''\t'') + 1)::%s).*) AS k '
                    '  FROM pg_logical_slot_peek_changes(%L, NULL, NULL, ''relid'', %L) p',
                    j.change_table,
                    format('backfill_%s_%s',
                           (SELECT oid FROM pg_database WHERE datname = current_database()),
                           j.job_id),
                    j.upstream::oid::text);
            END IF;
        ELSE
            covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = %s '
                              'AND (s.backfill_finished OR %s))',
                              j.state_table, vnode_u,
                              backfill._key_compare_sql(j.upstream, j.pk_columns, 'u', '<=', 's'));
        END IF;
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    END IF;
    IF j.filter IS NOT NULL THEN
        covered := format('%s AND (%s)', covered, j.filter);
    END IF;

    -- one statement, one snapshot for all of it
    RETURN QUERY EXECUTE format(
        'WITH w AS MATERIALIZED (%9$s) '
        'SELECT coalesce(u.k, d.k)::text, '
        '       CASE WHEN d.k IS NULL THEN ''missing'' '
        '            WHEN u.k IS NULL THEN ''extra'' ELSE ''different'' END '
        '  FROM (SELECT ROW(%1$s) AS k, ROW(%2$s) AS r FROM %3$s WHERE %4$s) u '
        '  FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d) d ON u.k = d.k '
        ' WHERE (u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) '
        '   AND NOT %8$s '
        ' ORDER BY coalesce(u.k, d.k)',
        key_u, cols_u, scan_u, covered,
        key_d, cols_d, scan_d, pending, decoded);
END
$$;

-- ---- keys: enum values renamed under a job's range vnodes ----

-- ALTER TYPE ... RENAME VALUE of an enum that the key of an unfinished job
-- with range vnodes contains is refused (src/ddl.c): the bounds are keys
-- stored as text, which the renamed label would make unreadable.
CREATE EVENT TRIGGER backfill_ddl_type ON ddl_command_start
    WHEN TAG IN ('ALTER TYPE')
    EXECUTE FUNCTION backfill._on_ddl();

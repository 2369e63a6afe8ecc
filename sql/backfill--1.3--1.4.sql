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

-- ---------------------------------------------------------------------------
-- Copies that row-level security would filter, and what indexes => true copies
-- ---------------------------------------------------------------------------

-- A job reads its upstream as its owner: where row-level security applies
-- to the owner, its copy holds the rows the policies show the owner, and a
-- comparison through the same policies finds nothing missing.  create_job
-- and each run refuse such a job in C; verify_job refuses it through
-- _check_unfiltered, before it compares anything.
CREATE FUNCTION backfill._check_unfiltered(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_check_unfiltered'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._check_unfiltered(bigint) IS
'Internal: for verify_job, refuses a job the caller owns whose owner is subject to row-level security on its upstream.';

-- verify_job: the upstream's side of the comparison is the filtered
-- projection, computed columns as the job computes them, and a key's vnode
-- is the job's (range vnodes); positions are compared through
-- _key_compare_sql.
-- A remote job is compared with its source through the foreign table (one
-- snapshot of the source for all of it: postgres_fdw's remote transaction).
-- The keys of splits not finished yet are not compared, on either side (a
-- split's position lives in its actor's memory); the keys of changes the job
-- fetched and has not applied (its change table) and of those the source
-- committed that it has not fetched (its slot, read after the source's
-- snapshot was taken) are pending, also after the finish, since the job
-- follows its source asynchronously.  The function is VOLATILE: the
-- comparison is one statement, whose snapshot comes after the slot lock, so
-- that no fetch commits between what it sees of the job and the slot.  It
-- reads the job's filter and expressions under the settings they were
-- written under (see create_job).  It reads the upstream as the job's
-- owner, through the policies that would have filtered the copy: a job
-- whose owner row-level security applies to is refused, not found equal.
CREATE OR REPLACE FUNCTION backfill.verify_job(job_id bigint)
RETURNS TABLE (pk text, problem text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
SET "DateStyle" = 'ISO, MDY'
SET "IntervalStyle" = postgres
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
    settled text := 'true';
    decoded text := 'SELECT NULL::record AS k WHERE false';
    vnode_u text;
    key_types text;
    first_type text;
    part_cases text := '';
BEGIN
    IF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM backfill._check_unfiltered(j.job_id);
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
            -- (compared through the key type's btree operators, as the
            -- splits were cut: an hstore key has no >= of that name)
            -- and, over several servers, in the split's partition: its
            -- partition constraint, on the key's columns, which hold the
            -- partition keys (a NULL bound is the partition's start or end)
            IF j.remote_partitions IS NOT NULL THEN
                SELECT format(' AND CASE s.split_id %s END',
                              string_agg(format('WHEN %s THEN (%s)', p.split_id,
                                                pg_get_partition_constraintdef(p.partition)),
                                         ' ' ORDER BY p.split_id))
                  INTO part_cases
                  FROM backfill.job_splits(j.job_id) p;
            END IF;
            covered := format('EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished '
                              'AND ((%2$L::text[])[s.split_id] IS NULL OR EXISTS (SELECT FROM '
                              '(SELECT ((%2$L::text[])[s.split_id])::%4$s AS %3$I) b WHERE %5$s)) '
                              'AND ((%2$L::text[])[s.split_id + 1] IS NULL OR EXISTS (SELECT FROM '
                              '(SELECT ((%2$L::text[])[s.split_id + 1])::%4$s AS %3$I) b WHERE %6$s))%7$s)',
                              j.state_table, coalesce(j.remote_splits, '{}'), j.pk_columns[1], first_type,
                              backfill._key_compare_sql(j.upstream, j.pk_columns[1:1], 'u', '>=', 'b'),
                              backfill._key_compare_sql(j.upstream, j.pk_columns[1:1], 'u', '<', 'b'),
                              part_cases);
            scan_d := format('(SELECT u.* FROM %s u WHERE %s)', j.downstream, covered);
        END IF;
        -- no fetch from here on; the source's snapshot, then what its slot
        -- holds after it, from the offset the comparison's snapshot sees.
        -- The snapshot is postgres_fdw's, one per server, taken by a first
        -- read of each foreign table as the job's owner, whose user mappings
        -- the comparison uses (a LIMIT over the partitioned table would
        -- read its first partition only)
        PERFORM backfill._lock_slot(j.job_id);
        PERFORM FROM backfill._verify_rows(j.job_id,
            (SELECT string_agg(format('(SELECT NULL::text, NULL::text FROM %s LIMIT 1)', p.p), ' UNION ALL ')
               FROM unnest(coalesce(j.remote_partitions, ARRAY[j.upstream])) p(p)));
        -- (a job over several servers reads each one's offset itself)
        decoded := format('SELECT ROW(%s) AS k FROM backfill._unfetched_keys(%s, '
                          '(SELECT CASE WHEN j.remote_partitions IS NULL THEN j.remote_lsn '
                          'ELSE ''0/0''::pg_lsn END FROM backfill.job j WHERE j.job_id = %s)) p(k)',
                          key_types, j.job_id, j.job_id);
        settled := format('NOT EXISTS (SELECT FROM %s c WHERE ROW(%s) = x.k) '
                          'AND NOT EXISTS (SELECT FROM w WHERE w.k = x.k)',
                          j.change_table, key_c);
    -- a backfilling job covers, per vnode, the keys up to its position
    -- (below it for the snapshot kind, whose position is the next row to
    -- read), and the keys captured since its last barrier are pending, not
    -- differences; a finished job covers every key and has nothing pending.
    -- A difference is settled when its key is pending nowhere: two
    -- anti-joins, which the planner merges (a key is an anonymous record,
    -- which it will not hash), so that a job with many keys pending and
    -- many differences is compared in n log n, not n times m
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
            -- and the changes the slot has decoded but not delivered yet,
            -- up to the WAL flushed as the comparison peeks, after its
            -- snapshot: the slot decodes only flushed WAL, which an
            -- asynchronous commit may not have reached (_flush_wal)
            IF EXISTS (SELECT FROM pg_replication_slots
                        WHERE slot_name = format('backfill_%s_%s',
                                  (SELECT oid FROM pg_database WHERE datname = current_database()),
                                  j.job_id)) THEN
                -- one user of the slot at a time: the job's fetch waits
                PERFORM backfill._lock_slot(j.job_id);
                decoded := format(
                    'SELECT ROW((substr(p.data, strpos(p.data, E''\t'') + 1)::%s).*) AS k '
                    '  FROM pg_logical_slot_peek_changes(%L, backfill._flush_wal(), NULL, ''relid'', %L) p',
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
        settled := format('NOT EXISTS (SELECT FROM %s c WHERE ROW(%s) = x.k) '
                          'AND NOT EXISTS (SELECT FROM w WHERE w.k = x.k)',
                          j.change_table, key_c);
    END IF;
    IF j.filter IS NOT NULL THEN
        covered := format('%s AND (%s)', covered, j.filter);
    END IF;

    -- one statement, one snapshot for all of it, run as the job's owner in
    -- a security-restricted operation: the filter and the computed columns
    -- are the owner's SQL
    RETURN QUERY SELECT v.pk, v.problem FROM backfill._verify_rows(j.job_id, format(
        'WITH w AS MATERIALIZED (%9$s), '
        '     x AS (SELECT coalesce(u.k, d.k) AS k, '
        '                  CASE WHEN d.k IS NULL THEN ''missing'' '
        '                       WHEN u.k IS NULL THEN ''extra'' ELSE ''different'' END AS problem '
        '             FROM (SELECT ROW(%1$s) AS k, ROW(%2$s) AS r FROM %3$s WHERE %4$s) u '
        '             FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d) d ON u.k = d.k '
        '            WHERE u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) '
        'SELECT x.k::text, x.problem FROM x '
        ' WHERE %8$s '
        ' ORDER BY x.k',
        key_u, cols_u, scan_u, covered,
        key_d, cols_d, scan_d, settled, decoded)) v;
END
$$;
COMMENT ON FUNCTION backfill.verify_job(bigint) IS
'Compares the downstream of a job with its upstream; returns one row per missing, extra or different row.';

-- ---------------------------------------------------------------------------
-- The cutover: what it refuses, what it carries, and as whom
-- ---------------------------------------------------------------------------

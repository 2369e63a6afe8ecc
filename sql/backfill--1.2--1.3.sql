/* backfill--1.2--1.3.sql */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.3'" to load this file. \quit

-- ---- search_path, owners' SQL, internal functions (1.3) ----

-- Every statement the extension runs is planned under a search_path of
-- pg_catalog then pg_temp, never the caller's, a role's default or a
-- database's: an operator or function of the same name in a schema put
-- first would otherwise run with the rights of whoever runs the statement.
-- The SQL and PL/pgSQL functions set it already; so do now the C functions
-- that run SQL of their own.  create_job and estimate_job read the caller's
-- names (the downstream's, the filter's and the expressions' functions)
-- under the caller's search_path and pin it themselves afterwards, as
-- run_job does (a procedure with a SET clause could not commit), and as
-- _on_ddl does (it looks up the names of the command that fired it under
-- the caller's search_path); the trigger functions pin it where they run
-- SQL; vnode runs none.
ALTER FUNCTION backfill.job_workers() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._stop_and_lock_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._stop_workers(bigint, boolean) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._job_is_running(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill.start_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_slot(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._lock_slot(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._on_drop_extension() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._flush_wal() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._mark_cancelled(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._delete_job(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._set_foreground(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._set_rate_limit(bigint, integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._rebuild_actors(bigint, integer) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._copy_names(bigint, bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_triggers(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill.job_vnode(bigint, VARIADIC "any") SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._check_reschedule(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._drop_kind_objects(bigint) SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION backfill._unfetched_keys(bigint, pg_catalog.pg_lsn) SET search_path = pg_catalog, pg_temp;

-- a vnode of no key is no vnode
ALTER FUNCTION backfill.vnode(VARIADIC "any") STRICT;

-- verify_job's comparison evaluates the job's filter and computed columns:
-- run as the job's owner, in a security-restricted operation
CREATE FUNCTION backfill._verify_rows(job_id bigint, query text)
RETURNS TABLE (pk text, problem text)
AS 'MODULE_PATHNAME', 'backfill_verify_rows'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._verify_rows(bigint, text) IS
'Internal: for verify_job, runs its comparison of a job the caller owns as the job''s owner, in a security-restricted operation.';

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
                              'AND (s.is_epoch_finished OR (%s) < (%s)))',
                              j.state_table, vnode_u, key_u, key_s);
        ELSIF j.kind = 'cdc' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.backfill_finished OR (%s) <= (%s))',
                              j.state_table, key_u, key_s);
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
                              'AND (s.backfill_finished OR (%s) <= (%s)))',
                              j.state_table, vnode_u, key_u, key_s);
        END IF;
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    END IF;
    IF j.filter IS NOT NULL THEN
        covered := format('%s AND (%s)', covered, j.filter);
    END IF;

    -- one statement, one snapshot for all of it, run as the job's owner in
    -- a security-restricted operation: the filter and the computed columns
    -- are the owner's SQL
    RETURN QUERY SELECT v.pk, v.problem FROM backfill._verify_rows(j.job_id, format(
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
        key_d, cols_d, scan_d, pending, decoded)) v;
END
$$;

-- recreate_job makes the new job its owner's, not the caller's
CREATE FUNCTION backfill._create_job_as(from_job_id bigint, name text, upstream regclass,
                                        kind text, columns text[], parallelism integer,
                                        chunk_size integer, rate_limit integer,
                                        filter text, into_existing boolean)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job_as'
LANGUAGE C VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION backfill._create_job_as(bigint, text, regclass, text, text[], integer, integer, integer, text, boolean) IS
'Internal: for recreate_job, create_job on behalf of the owner of a job the caller owns, in a security-restricted operation; the new job is that owner''s.';

CREATE OR REPLACE FUNCTION backfill.recreate_job(job_id bigint, kind text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    new_id bigint;
BEGIN
    IF j.status = 'finished' THEN
        RAISE EXCEPTION 'cannot recreate backfill job % because it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = format('Use backfill.drop_job(%s), then backfill.create_job().', job_id);
    END IF;
    IF j.status <> 'cancelled' THEN
        PERFORM backfill.cancel_job(job_id);
    END IF;
    -- on behalf of the job's owner, who owns the new job and whose filter
    -- and expressions it runs, whoever recreates it; the columns again:
    -- "expression AS name" for a computed one
    new_id := backfill._create_job_as(j.job_id, j.downstream_name, j.upstream,
                                  coalesce(kind, j.kind),
                                  CASE WHEN j.expressions IS NULL THEN j.columns
                                       ELSE ARRAY(SELECT coalesce(t.e || ' AS ' || quote_ident(t.c), t.c)
                                                    FROM unnest(j.columns, j.expressions)
                                                         WITH ORDINALITY AS t(c, e, o)
                                                   ORDER BY t.o) END,
                                  j.parallelism, j.chunk_size, j.rate_limit,
                                  j.filter, j.into_existing);
    PERFORM backfill._copy_names(new_id, job_id);
    RETURN new_id;
END
$$;

-- the event trigger functions are called by no one: revoke EXECUTE (the
-- other internal functions are called by the SQL functions with the
-- caller's rights, and each checks that the caller owns the job)
REVOKE ALL ON FUNCTION backfill._on_ddl() FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill._on_drop_extension() FROM PUBLIC;

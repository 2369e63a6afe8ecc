/* backfill--1.0--1.1.sql: the snapshot and cdc kinds */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.1'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Catalogs
-- ---------------------------------------------------------------------------

-- snapshot kind: the epoch its snapshot is read as of
ALTER TABLE backfill.job ADD COLUMN snapshot_epoch bigint;

-- snapshot kind: each actor's log store phase
ALTER TABLE backfill.actor
    ADD COLUMN log_store_lag_ms bigint,
    ADD COLUMN log_store_caught_up boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN backfill.actor.log_store_lag_ms IS
'Snapshot kind: age of the oldest change the actor''s last barrier consumed from the log store; NULL before the log store phase.';

-- snapshot kind: orders the log entries of a key as their writes
CREATE SEQUENCE backfill.change_seq AS bigint;
SELECT pg_catalog.pg_extension_config_dump('backfill.change_seq', '');

CREATE FUNCTION backfill._drop_slot(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_slot'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._drop_slot(bigint) IS
'Internal: drops the replication slot of a cdc job the caller owns, if it exists, when the transaction commits.';

CREATE FUNCTION backfill._lock_slot(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_lock_slot'
LANGUAGE C STRICT VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._lock_slot(bigint) IS
'Internal: waits for, then holds until the end of the transaction, the lock that guards a cdc job''s replication slot.';

-- DROP EXTENSION ... CASCADE drops the jobs' tables but cannot run
-- drop_job: at commit, if the extension is gone, its slots go too
CREATE FUNCTION backfill._on_drop_extension()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_on_drop_extension'
LANGUAGE C;
COMMENT ON FUNCTION backfill._on_drop_extension() IS
'Internal: event trigger that drops the cdc jobs'' replication slots once extension backfill has been dropped.';
-- DDL that would break a job is refused while it exists (src/ddl.c)
CREATE FUNCTION backfill._on_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'backfill_on_ddl'
LANGUAGE C;
COMMENT ON FUNCTION backfill._on_ddl() IS
'Internal: event trigger that refuses dropping a job''s tables, and dropping, renaming or retyping the columns it copies.';
CREATE EVENT TRIGGER backfill_ddl_drop ON sql_drop
    EXECUTE FUNCTION backfill._on_ddl();
CREATE EVENT TRIGGER backfill_ddl_alter ON ddl_command_end
    WHEN TAG IN ('ALTER TABLE')
    EXECUTE FUNCTION backfill._on_ddl();

CREATE EVENT TRIGGER backfill_drop_extension ON ddl_command_start
    WHEN TAG IN ('DROP EXTENSION')
    EXECUTE FUNCTION backfill._on_drop_extension();

-- catalog writes on behalf of the SQL functions, checked against the job's
-- owner (src/jobs.c)
CREATE FUNCTION backfill._job_catalog(job_id bigint, op text, arg bigint DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_job_catalog'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._job_catalog(bigint, text, bigint) IS
'Internal: one of a fixed set of catalog writes for a job the caller owns.';

-- cdc kind: verify_job() flushes the WAL before it peeks at a slot, so
-- that an asynchronous commit is decoded, hence pending, too
CREATE FUNCTION backfill._flush_wal()
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_flush_wal'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION backfill._flush_wal() IS
'Internal: flushes the WAL inserted so far, for verify_job().';

-- the triggers, the change table (whose log may use the downstream's row
-- type), the downstream, the state table, and a cdc job's slot
CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the upstream's owner may be another role than the job's
    PERFORM backfill._job_catalog(j.job_id, 'drop_triggers');
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.change_table) THEN
        EXECUTE format('DROP TABLE %s', j.change_table);
    END IF;
    IF drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        EXECUTE format('DROP TABLE %s', j.downstream);
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.state_table) THEN
        EXECUTE format('DROP TABLE %s', j.state_table);
    END IF;
    IF j.kind = 'cdc' THEN
        PERFORM backfill._drop_slot(j.job_id);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION backfill.cancel_job(job_id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    PERFORM backfill._stop_and_lock_job(job_id);
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = cancel_job.job_id;
    IF j.status = 'finished' THEN
        RAISE EXCEPTION 'cannot cancel backfill job % because it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'A finished job keeps its downstream table equal to its upstream table.',
                  HINT = format('Use backfill.drop_job(%s) to remove the job and its downstream table.', job_id);
    ELSIF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has already been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- out of the catalog first: the DDL event trigger guards a job's tables
    PERFORM backfill._job_catalog(job_id, 'cancel');
    PERFORM backfill._drop_job_objects(j, true);
    RETURN job_id;
END
$$;

CREATE OR REPLACE FUNCTION backfill.drop_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    PERFORM backfill._stop_and_lock_job(job_id);
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = drop_job.job_id;
    IF j.status <> 'cancelled' THEN
        -- out of the catalog first: the DDL event trigger guards a job's tables
        PERFORM backfill._job_catalog(job_id, 'cancel');
        PERFORM backfill._drop_job_objects(j, true);
    END IF;
    PERFORM backfill._job_catalog(job_id, 'delete');
END
$$;

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
    new_id := backfill.create_job(j.downstream_name, j.upstream,
                                  coalesce(kind, j.kind), j.columns, j.parallelism,
                                  j.chunk_size, j.rate_limit);
    PERFORM backfill._job_catalog(new_id, 'copy_names', job_id);
    RETURN new_id;
END
$$;

CREATE OR REPLACE FUNCTION backfill.stop_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM backfill._get_job(job_id);
    IF NOT backfill._stop_workers(job_id, false) THEN
        RAISE NOTICE 'backfill job % is not running in the background', job_id;
    END IF;
    -- not restarted by the launcher any more
    PERFORM backfill._job_catalog(job_id, 'foreground');
END
$$;

CREATE OR REPLACE FUNCTION backfill.alter_rate_limit(job_id bigint, rows_per_second integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM backfill._get_job(job_id);
    IF rows_per_second < 0 THEN
        RAISE EXCEPTION 'rows_per_second must not be negative'
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Pass NULL for no limit, or 0 to pause the snapshot.';
    END IF;
    PERFORM backfill._job_catalog(job_id, 'rate_limit', rows_per_second);
END
$$;

-- ---------------------------------------------------------------------------
-- Views
-- ---------------------------------------------------------------------------

CREATE OR REPLACE VIEW backfill.jobs AS
SELECT j.job_id, j.job_name, j.kind, j.status, j.upstream,
       j.upstream::pg_catalog.oid AS upstream_table_id,
       j.downstream, j.fragment_id, j.parallelism, j.chunk_size,
       coalesce(p.epoch, 0) AS epoch, coalesce(p.row_count, 0)::bigint AS row_count,
       j.created_at, j.finished_at, j.last_error, j.state_table, j.rate_limit, j.run_mode,
       (SELECT pg_catalog.array_agg(w.pid ORDER BY w.actor_id)
          FROM backfill.job_workers() w
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id) AS worker_pids,
       j.snapshot_epoch,
       CASE WHEN j.kind OPERATOR(pg_catalog.=) 'cdc'
                 AND j.status OPERATOR(pg_catalog.<>) ALL (ARRAY['finished', 'cancelled'])
            THEN pg_catalog.format('backfill_%s_%s', d.oid, j.job_id) END AS slot_name,
       j.owner
  FROM backfill.job j
  CROSS JOIN (SELECT oid FROM pg_catalog.pg_database
               WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true;

-- RisingWave's rw_ddl_progress.  Snapshot jobs show their phase as
-- RisingWave's creating jobs do: "Snapshot [42.17% (421700/1000000)]" while
-- reading the snapshot, "LogStore [actor: 1/2, avg lag 1.2s]" while
-- catching up.
CREATE OR REPLACE VIEW backfill.ddl_progress AS
SELECT j.job_id AS ddl_id,
       j.ddl_statement,
       CASE j.run_mode WHEN 'background' THEN 'BACKGROUND' ELSE 'FOREGROUND' END AS create_type,
       CASE
           WHEN j.status OPERATOR(pg_catalog.=) 'finished' THEN '100%'
           WHEN j.kind OPERATOR(pg_catalog.=) 'snapshot'
                AND p.in_log_store OPERATOR(pg_catalog.=) p.actors
                AND p.actors OPERATOR(pg_catalog.>) 0
           THEN pg_catalog.format('LogStore [actor: %s/%s, avg lag %ss]',
                    p.caught_up, p.actors,
                    pg_catalog.to_char(p.avg_lag_ms OPERATOR(pg_catalog./) 1000.0, 'FM999999990.0'))
           WHEN j.kind OPERATOR(pg_catalog.=) 'snapshot'
           THEN pg_catalog.format('Snapshot [%s]', m.progress)
           ELSE m.progress
       END AS progress,
       j.created_at AS initialized_at
  FROM backfill.job j
  CROSS JOIN LATERAL (SELECT coalesce(pg_catalog.sum(a.row_count), 0)::bigint AS row_count,
                             pg_catalog.count(*) AS actors,
                             pg_catalog.count(a.log_store_lag_ms) AS in_log_store,
                             pg_catalog.count(*) FILTER (WHERE a.log_store_caught_up) AS caught_up,
                             coalesce(pg_catalog.avg(a.log_store_lag_ms), 0) AS avg_lag_ms
                        FROM backfill.actor a
                       WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p
  CROSS JOIN LATERAL (SELECT CASE
           WHEN j.total_rows OPERATOR(pg_catalog.=) 0 THEN '99.99%'
           ELSE pg_catalog.format('%s%% (%s/%s)',
                    pg_catalog.to_char(LEAST(99.99::numeric,
                        p.row_count::numeric OPERATOR(pg_catalog.*) 100
                            OPERATOR(pg_catalog./) j.total_rows), 'FM990.00'),
                    p.row_count, j.total_rows)
       END AS progress) m
 WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled';

-- ---------------------------------------------------------------------------
-- Functions that know the kinds' layouts
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill.reschedule(job_id bigint, parallelism integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    was_running boolean;
BEGIN
    IF parallelism IS NULL THEN
        RAISE EXCEPTION 'argument "parallelism" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF parallelism < 1 OR parallelism > 256 THEN
        RAISE EXCEPTION 'parallelism must be between 1 and 256'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The 256 vnodes are split across the actors, so there can be at most one actor per vnode.';
    END IF;
    IF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    IF j.kind = 'cdc' AND parallelism <> 1 THEN
        RAISE EXCEPTION 'a backfill job of kind "cdc" must have parallelism 1'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The cdc backfill reads each table with a single actor, as RisingWave''s non-parallel CDC backfill does.';
    END IF;
    IF j.kind = 'snapshot' AND j.status <> 'finished' THEN
        RAISE EXCEPTION 'cannot reschedule backfill job % of kind "snapshot" before it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'As in RisingWave, a snapshot backfill keeps its vnodes on their actors until it follows the upstream directly.';
    END IF;
    was_running := backfill._stop_and_lock_job(job_id);
    -- new actors, new ids, the vnodes in even contiguous ranges again; the
    -- vnodes keep their progress wherever they land
    PERFORM backfill._job_catalog(job_id, 'reschedule', parallelism);
    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
END
$$;

DROP FUNCTION backfill.job_state(bigint);
CREATE FUNCTION backfill.job_state(job_id bigint)
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
    SELECT string_agg('s.' || quote_ident(c), ', ' ORDER BY o) INTO pos
      FROM unnest(j.pk_columns) WITH ORDINALITY AS t(c, o);
    IF j.kind = 'cdc' THEN
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
'The state rows of a job, decoded: one per vnode with its actor, or for a cdc job its one split.';

CREATE OR REPLACE FUNCTION backfill.verify_job(job_id bigint)
RETURNS TABLE (pk text, problem text)
LANGUAGE plpgsql STABLE PARALLEL UNSAFE
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
    covered text := 'true';
    pending text := 'false';
    decoded text := 'SELECT NULL::record AS k WHERE false';
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
    SELECT string_agg('u.' || quote_ident(c), ', ' ORDER BY o),
           string_agg('d.' || quote_ident(c), ', ' ORDER BY o)
      INTO cols_u, cols_d
      FROM unnest(j.columns) WITH ORDINALITY AS t(c, o);

    -- a backfilling job covers, per vnode, the keys up to its position
    -- (below it for the snapshot kind, whose position is the next row to
    -- read), and the keys captured since its last barrier are pending, not
    -- differences; a finished job covers every key and has nothing pending
    IF j.status <> 'finished' THEN
        IF j.kind = 'snapshot' THEN
            covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = backfill.vnode(%s) '
                              'AND (s.is_epoch_finished OR (%s) < (%s)))',
                              j.state_table, key_u, key_u, key_s);
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
            covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = backfill.vnode(%s) '
                              'AND (s.backfill_finished OR (%s) <= (%s)))',
                              j.state_table, key_u, key_u, key_s);
        END IF;
        pending := format('(EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k)) '
                          'OR coalesce(u.k, d.k) IN (SELECT w.k FROM w))',
                          j.change_table, key_c);
    END IF;

    -- one snapshot for all of it (the function is STABLE)
    RETURN QUERY EXECUTE format(
        'WITH w AS MATERIALIZED (%9$s) '
        'SELECT coalesce(u.k, d.k)::text, '
        '       CASE WHEN d.k IS NULL THEN ''missing'' '
        '            WHEN u.k IS NULL THEN ''extra'' ELSE ''different'' END '
        '  FROM (SELECT ROW(%1$s) AS k, ROW(%2$s) AS r FROM ONLY %3$s u WHERE %4$s) u '
        '  FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d) d ON u.k = d.k '
        ' WHERE (u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) '
        '   AND NOT %8$s '
        ' ORDER BY coalesce(u.k, d.k)',
        key_u, cols_u, j.upstream, covered,
        key_d, cols_d, j.downstream, pending, decoded);
END
$$;

-- ---------------------------------------------------------------------------
-- Privileges
-- ---------------------------------------------------------------------------

-- Any role may create jobs (with SELECT and TRIGGER on the upstream and
-- CREATE on the downstream's schema) and sees its own; only the extension's
-- owner writes the catalogs, which the C code and backfill._job_catalog do
-- on the job owner's behalf.
GRANT USAGE ON SCHEMA backfill TO PUBLIC;
GRANT SELECT ON backfill.job, backfill.actor TO PUBLIC;
ALTER TABLE backfill.job ENABLE ROW LEVEL SECURITY;
ALTER TABLE backfill.actor ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_owner ON backfill.job FOR SELECT
    USING (pg_catalog.pg_has_role(CURRENT_USER, owner, 'USAGE'));
CREATE POLICY actor_owner ON backfill.actor FOR SELECT
    USING (EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) actor.job_id));

-- the views show the caller's jobs only
ALTER VIEW backfill.jobs SET (security_invoker = true);
ALTER VIEW backfill.ddl_progress SET (security_invoker = true);
CREATE OR REPLACE VIEW backfill.workers WITH (security_invoker = true) AS
SELECT w.job_id, w.actor_id, w.pid, a.backend_start, a.state, a.query AS activity
  FROM backfill.job_workers() w
  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
 WHERE EXISTS (SELECT FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) w.job_id);
GRANT SELECT ON backfill.jobs, backfill.ddl_progress, backfill.workers TO PUBLIC;

-- the trigger functions are for the triggers create_job makes, as the
-- extension's owner; nobody attaches them to a table by hand
REVOKE ALL ON FUNCTION backfill.capture_change() FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill.apply_change() FROM PUBLIC;
REVOKE ALL ON FUNCTION backfill.truncate_change() FROM PUBLIC;

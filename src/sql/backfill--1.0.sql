/* backfill--1.0.sql: the catalogs, views and functions of backfill 1.0 */

\echo Use "CREATE EXTENSION backfill" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Catalogs
-- ---------------------------------------------------------------------------

CREATE SEQUENCE backfill.job_id_seq AS bigint;
CREATE SEQUENCE backfill.fragment_id_seq AS integer;
CREATE SEQUENCE backfill.actor_id_seq AS integer;

CREATE TABLE backfill.job (
    job_id bigint PRIMARY KEY,
    job_name text NOT NULL,
    kind text NOT NULL
        CHECK (kind OPERATOR(pg_catalog.=) ANY (ARRAY['no_shuffle', 'arrangement', 'snapshot', 'cdc'])),
    status text NOT NULL DEFAULT 'pending'
        CHECK (status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling', 'finished', 'failed', 'cancelled'])),
    owner regrole NOT NULL DEFAULT CURRENT_USER::regrole,
    upstream regclass NOT NULL,
    downstream_name text NOT NULL,
    downstream regclass,
    state_table regclass,
    change_table regclass,
    columns text[] NOT NULL,
    pk_columns text[] NOT NULL,
    fragment_id integer NOT NULL UNIQUE,
    parallelism integer NOT NULL CHECK (parallelism BETWEEN 1 AND 256),
    chunk_size integer NOT NULL CHECK (chunk_size OPERATOR(pg_catalog.>=) 1),
    rate_limit integer CHECK (rate_limit OPERATOR(pg_catalog.>=) 0),
    run_mode text NOT NULL DEFAULT 'foreground'
        CHECK (run_mode OPERATOR(pg_catalog.=) ANY (ARRAY['foreground', 'background'])),
    ddl_statement text NOT NULL,
    total_rows bigint NOT NULL DEFAULT 0,
    runs integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at timestamptz,
    last_error text,
    last_error_detail text,
    last_sqlstate text
);
COMMENT ON TABLE backfill.job IS 'Streaming jobs: one row per job, whatever its status.';

CREATE TABLE backfill.actor (
    actor_id integer PRIMARY KEY,
    job_id bigint NOT NULL REFERENCES backfill.job ON DELETE CASCADE,
    fragment_id integer NOT NULL,
    vnode_start smallint NOT NULL,
    vnode_end smallint NOT NULL,
    epoch bigint NOT NULL DEFAULT 0,
    row_count bigint NOT NULL DEFAULT 0,
    CHECK (vnode_start OPERATOR(pg_catalog.<=) vnode_end)
);
CREATE INDEX ON backfill.actor (job_id);
COMMENT ON TABLE backfill.actor IS 'Actors of the jobs: each owns the vnodes vnode_start to vnode_end, and records the epoch and snapshot rows of its last barrier.';

SELECT pg_catalog.pg_extension_config_dump('backfill.job', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.actor', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.fragment_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('backfill.actor_id_seq', '');

-- ---------------------------------------------------------------------------
-- Views
-- ---------------------------------------------------------------------------

-- the background workers that run jobs now, from shared memory
CREATE FUNCTION backfill.job_workers(OUT job_id bigint, OUT actor_id integer, OUT pid integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'backfill_job_workers'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION backfill.job_workers() IS 'The background workers running jobs: job, actor and process id.';

CREATE VIEW backfill.workers AS
SELECT w.job_id, w.actor_id, w.pid, a.backend_start, a.state, a.query AS activity
  FROM backfill.job_workers() w
  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid;
COMMENT ON VIEW backfill.workers IS 'Background workers running jobs, with their pg_stat_activity entries.';

-- progress per job: the actors' epochs and snapshot rows
CREATE VIEW backfill.jobs AS
SELECT j.job_id, j.job_name, j.kind, j.status, j.upstream,
       j.upstream::pg_catalog.oid AS upstream_table_id,
       j.downstream, j.fragment_id, j.parallelism, j.chunk_size,
       coalesce(p.epoch, 0) AS epoch, coalesce(p.row_count, 0)::bigint AS row_count,
       j.created_at, j.finished_at, j.last_error, j.state_table, j.rate_limit, j.run_mode,
       (SELECT pg_catalog.array_agg(w.pid ORDER BY w.actor_id)
          FROM backfill.job_workers() w
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id) AS worker_pids
  FROM backfill.job j
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true;
COMMENT ON VIEW backfill.jobs IS 'Streaming jobs, their status and progress.';

-- RisingWave's rw_catalog.rw_ddl_progress: "42.17% (421700/1000000)", capped
-- at 99.99% until the job has finished, "100%" once it has.
CREATE VIEW backfill.ddl_progress AS
SELECT j.job_id AS ddl_id,
       j.ddl_statement,
       CASE j.run_mode WHEN 'background' THEN 'BACKGROUND' ELSE 'FOREGROUND' END AS create_type,
       CASE
           WHEN j.status OPERATOR(pg_catalog.=) 'finished' THEN '100%'
           WHEN j.total_rows OPERATOR(pg_catalog.=) 0 THEN '99.99%'
           ELSE pg_catalog.format('%s%% (%s/%s)',
                    pg_catalog.to_char(LEAST(99.99::numeric,
                        p.row_count::numeric OPERATOR(pg_catalog.*) 100
                            OPERATOR(pg_catalog./) j.total_rows), 'FM990.00'),
                    p.row_count, j.total_rows)
       END AS progress,
       j.created_at AS initialized_at
  FROM backfill.job j
  CROSS JOIN LATERAL (SELECT coalesce(pg_catalog.sum(a.row_count), 0)::bigint AS row_count
                        FROM backfill.actor a
                       WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p
 WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled';
COMMENT ON VIEW backfill.ddl_progress IS 'Progress of the jobs, as RisingWave''s rw_ddl_progress shows it.';

-- ---------------------------------------------------------------------------
-- Internal functions
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill.vnode(VARIADIC "any")
RETURNS smallint
AS 'MODULE_PATHNAME', 'backfill_vnode'
LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION backfill.vnode("any") IS 'The vnode (0 to 255) of a primary key, given its columns in key order.';

CREATE FUNCTION backfill.capture_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_capture_change'
LANGUAGE C;
COMMENT ON FUNCTION backfill.capture_change() IS 'Trigger: records the keys a writer touches while a job backfills.';

CREATE FUNCTION backfill.apply_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_apply_change'
LANGUAGE C;
COMMENT ON FUNCTION backfill.apply_change() IS 'Trigger: keeps the downstream of a finished job equal to the upstream.';

CREATE FUNCTION backfill.truncate_change()
RETURNS trigger
AS 'MODULE_PATHNAME', 'backfill_truncate_change'
LANGUAGE C;
COMMENT ON FUNCTION backfill.truncate_change() IS 'Trigger: refuses TRUNCATE of the upstream while a job backfills; truncates the downstream too once it has finished.';

CREATE FUNCTION backfill._stop_and_lock_job(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_stop_and_lock_job'
LANGUAGE C STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._stop_and_lock_job(bigint) IS
'Internal: stops the job''s background workers at once, then takes the job lock for this transaction; fails if a session runs the job.';

CREATE FUNCTION backfill._stop_workers(job_id bigint, immediate boolean)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_stop_job_workers'
LANGUAGE C STRICT PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._stop_workers(bigint, boolean) IS
'Internal: stops the job''s background workers and waits until they have exited; returns whether any ran.';

CREATE FUNCTION backfill._job_is_running(job_id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'backfill_job_is_running'
LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION backfill._job_is_running(bigint) IS
'Internal: whether background workers or a session run the job now.';

-- the job row, or an error that says why there is none
CREATE FUNCTION backfill._get_job(job_id bigint)
RETURNS backfill.job
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job;
BEGIN
    IF job_id IS NULL THEN
        RAISE EXCEPTION 'argument "job_id" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = _get_job.job_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'backfill job % does not exist', job_id
            USING ERRCODE = 'undefined_object';
    END IF;
    RETURN j;
END
$$;
COMMENT ON FUNCTION backfill._get_job(bigint) IS 'Internal: the catalog row of a job.';

-- drop what a job created: its triggers, downstream, state and change tables
CREATE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.upstream) THEN
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s',
                       'backfill_capture_' || j.job_id, j.upstream);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s',
                       'backfill_apply_' || j.job_id, j.upstream);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s',
                       'backfill_capture_truncate_' || j.job_id, j.upstream);
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %s',
                       'backfill_apply_truncate_' || j.job_id, j.upstream);
    END IF;
    IF drop_downstream AND EXISTS (SELECT FROM pg_class WHERE oid = j.downstream) THEN
        EXECUTE format('DROP TABLE %s', j.downstream);
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.state_table) THEN
        EXECUTE format('DROP TABLE %s', j.state_table);
    END IF;
    IF EXISTS (SELECT FROM pg_class WHERE oid = j.change_table) THEN
        EXECUTE format('DROP TABLE %s', j.change_table);
    END IF;
END
$$;
COMMENT ON FUNCTION backfill._drop_job_objects(backfill.job, boolean) IS 'Internal: drops the triggers and tables of a job.';

-- ---------------------------------------------------------------------------
-- Jobs
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill.create_job(name text, upstream regclass,
                                    kind text DEFAULT 'arrangement',
                                    columns text[] DEFAULT NULL,
                                    parallelism integer DEFAULT 1,
                                    chunk_size integer DEFAULT 256,
                                    rate_limit integer DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'backfill_create_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.create_job(text, regclass, text, text[], integer, integer, integer) IS
'Creates a streaming job that fills the new table "name" from "upstream"; returns the job id.';

CREATE PROCEDURE backfill.run_job(job_id bigint, max_barriers integer DEFAULT NULL)
AS 'MODULE_PATHNAME', 'backfill_run_job'
LANGUAGE C;
COMMENT ON PROCEDURE backfill.run_job(bigint, integer) IS
'Runs a job in this session, one transaction per barrier, until it has finished or for max_barriers barriers.';

CREATE FUNCTION backfill.cancel_job(job_id bigint)
RETURNS bigint
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    PERFORM backfill._stop_and_lock_job(job_id);
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = cancel_job.job_id FOR UPDATE;
    IF j.status = 'finished' THEN
        RAISE EXCEPTION 'cannot cancel backfill job % because it has finished', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'A finished job keeps its downstream table equal to its upstream table.',
                  HINT = format('Use backfill.drop_job(%s) to remove the job and its downstream table.', job_id);
    ELSIF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has already been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    PERFORM backfill._drop_job_objects(j, true);
    UPDATE backfill.job
       SET status = 'cancelled', downstream = NULL, state_table = NULL, change_table = NULL
     WHERE backfill.job.job_id = cancel_job.job_id;
    RETURN job_id;
END
$$;
COMMENT ON FUNCTION backfill.cancel_job(bigint) IS
'Cancels an unfinished job: drops its downstream, state and capture; returns the job id.';

CREATE FUNCTION backfill.drop_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
BEGIN
    PERFORM backfill._stop_and_lock_job(job_id);
    SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = drop_job.job_id FOR UPDATE;
    IF j.status <> 'cancelled' THEN
        PERFORM backfill._drop_job_objects(j, true);
    END IF;
    DELETE FROM backfill.job WHERE backfill.job.job_id = drop_job.job_id;
END
$$;
COMMENT ON FUNCTION backfill.drop_job(bigint) IS
'Removes a job in any status, with its downstream table.';

CREATE FUNCTION backfill.recreate_job(job_id bigint, kind text DEFAULT NULL)
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
    UPDATE backfill.job
       SET job_name = j.job_name, ddl_statement = j.ddl_statement
     WHERE backfill.job.job_id = new_id;
    RETURN new_id;
END
$$;
COMMENT ON FUNCTION backfill.recreate_job(bigint, text) IS
'Cancels a job if needed and creates it again, of the same kind or of the given one; returns the new job id.';

-- ---------------------------------------------------------------------------
-- Jobs in background workers
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill.start_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_start_job'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill.start_job(bigint) IS
'Runs a job in background workers, one per actor; returns at once. Needs the library in shared_preload_libraries.';

CREATE FUNCTION backfill.stop_job(job_id bigint)
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
    UPDATE backfill.job SET run_mode = 'foreground'
     WHERE backfill.job.job_id = stop_job.job_id AND run_mode = 'background';
END
$$;
COMMENT ON FUNCTION backfill.stop_job(bigint) IS
'Stops the background workers of a job at their next barrier, and waits until they have exited.';

CREATE FUNCTION backfill.alter_rate_limit(job_id bigint, rows_per_second integer)
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
    UPDATE backfill.job SET rate_limit = rows_per_second
     WHERE backfill.job.job_id = alter_rate_limit.job_id;
END
$$;
COMMENT ON FUNCTION backfill.alter_rate_limit(bigint, integer) IS
'Limits the snapshot rows each actor reads per second from the next barrier: NULL no limit, 0 paused.';

CREATE FUNCTION backfill.reschedule(job_id bigint, parallelism integer)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    was_running boolean;
    last_epoch bigint;
BEGIN
    IF parallelism IS NULL OR parallelism < 1 OR parallelism > 256 THEN
        RAISE EXCEPTION 'parallelism must be between 1 and 256'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'The 256 vnodes are split across the actors, so there can be at most one actor per vnode.';
    END IF;
    IF j.status = 'cancelled' THEN
        RAISE EXCEPTION 'backfill job % has been cancelled', job_id
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    was_running := backfill._stop_and_lock_job(job_id);

    -- new actors, new ids, the vnodes in even contiguous ranges again
    SELECT coalesce(max(a.epoch), 0) INTO last_epoch
      FROM backfill.actor a WHERE a.job_id = reschedule.job_id;
    DELETE FROM backfill.actor a WHERE a.job_id = reschedule.job_id;
    FOR i IN 0 .. parallelism - 1 LOOP
        INSERT INTO backfill.actor (actor_id, job_id, fragment_id, vnode_start, vnode_end, epoch)
        VALUES (nextval('backfill.actor_id_seq'), reschedule.job_id, j.fragment_id,
                i * 256 / parallelism, (i + 1) * 256 / parallelism - 1, last_epoch);
    END LOOP;
    UPDATE backfill.job SET parallelism = reschedule.parallelism
     WHERE backfill.job.job_id = reschedule.job_id;

    -- the vnodes keep their progress wherever they land
    IF j.state_table IS NOT NULL THEN
        EXECUTE format(
            'UPDATE backfill.actor a SET row_count = coalesce((SELECT CASE WHEN $2 = ''no_shuffle'' '
            '    THEN max(s.row_count) FILTER (WHERE s.vnode = a.vnode_start) ELSE sum(s.row_count) END '
            '  FROM %s s WHERE s.vnode BETWEEN a.vnode_start AND a.vnode_end), 0) '
            ' WHERE a.job_id = $1', j.state_table)
            USING job_id, j.kind;
    END IF;

    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
END
$$;
COMMENT ON FUNCTION backfill.reschedule(bigint, integer) IS
'Spreads the vnodes of a job over a new set of actors; restarts its background workers if it had any.';

CREATE FUNCTION backfill.wait_job(job_id bigint)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    j backfill.job := backfill._get_job(job_id);
    running boolean;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'backfill.wait_job() must run at isolation level READ COMMITTED'
            USING ERRCODE = 'invalid_transaction_state',
                  DETAIL = 'It watches the job''s status as the workers commit it.';
    END IF;
    LOOP
        running := backfill._job_is_running(job_id);
        -- read after the check: a worker commits the final status, then exits
        SELECT * INTO j FROM backfill.job WHERE backfill.job.job_id = wait_job.job_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'backfill job % was dropped', job_id
                USING ERRCODE = 'undefined_object';
        ELSIF j.status = 'finished' THEN
            RETURN;
        ELSIF j.status = 'failed' THEN
            RAISE EXCEPTION USING MESSAGE = j.last_error,
                                  ERRCODE = coalesce(j.last_sqlstate, 'XX000'),
                                  DETAIL = coalesce(j.last_error_detail, '');
        ELSIF j.status = 'cancelled' THEN
            RAISE EXCEPTION 'backfill job % has been cancelled', job_id
                USING ERRCODE = 'object_not_in_prerequisite_state';
        ELSIF NOT running THEN
            RAISE EXCEPTION 'backfill job % is not running', job_id
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      HINT = format('Start it with backfill.start_job(%s), or run it here with CALL backfill.run_job(%s).', job_id, job_id);
        END IF;
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
COMMENT ON FUNCTION backfill.wait_job(bigint) IS
'Waits until a job has finished; raises its error if it fails.';

-- ---------------------------------------------------------------------------
-- Observing jobs
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill.job_state(job_id bigint)
RETURNS TABLE (actor_id integer, vnode integer, current_pos text,
               backfill_finished boolean, row_count bigint)
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
    -- a vnode without a row decodes as RisingWave decodes it: not started
    RETURN QUERY EXECUTE format(
        'SELECT a.actor_id, v.vnode, '
        '       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, '
        '       CASE WHEN s.vnode IS NULL THEN false ELSE s.backfill_finished END, '
        '       CASE WHEN s.vnode IS NULL THEN 0 ELSE s.row_count END '
        '  FROM generate_series(0, 255) AS v(vnode) '
        '  JOIN backfill.actor a ON a.job_id = $1 AND v.vnode BETWEEN a.vnode_start AND a.vnode_end '
        '  LEFT JOIN %2$s s ON s.vnode = v.vnode '
        ' ORDER BY v.vnode', pos, j.state_table)
        USING job_id;
END
$$;
COMMENT ON FUNCTION backfill.job_state(bigint) IS
'The state rows of a job, decoded: one per vnode, with its actor.';

CREATE FUNCTION backfill.verify_job(job_id bigint)
RETURNS TABLE (pk text, problem text)
LANGUAGE plpgsql STABLE PARALLEL SAFE
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

    -- a backfilling job covers, per vnode, the keys up to its position, and
    -- the keys captured since its last barrier are pending, not differences;
    -- a finished job covers every key and has nothing pending
    IF j.status <> 'finished' THEN
        covered := format('EXISTS (SELECT FROM %s s WHERE s.vnode = backfill.vnode(%s) '
                          'AND (s.backfill_finished OR (%s) <= (%s)))',
                          j.state_table, key_u, key_u, key_s);
        pending := format('EXISTS (SELECT FROM %s c WHERE ROW(%s) = coalesce(u.k, d.k))',
                          j.change_table, key_c);
    END IF;

    -- one snapshot for all of it (the function is STABLE)
    RETURN QUERY EXECUTE format(
        'SELECT coalesce(u.k, d.k)::text, '
        '       CASE WHEN d.k IS NULL THEN ''missing'' '
        '            WHEN u.k IS NULL THEN ''extra'' ELSE ''different'' END '
        '  FROM (SELECT ROW(%1$s) AS k, ROW(%2$s) AS r FROM ONLY %3$s u WHERE %4$s) u '
        '  FULL JOIN (SELECT ROW(%5$s) AS k, ROW(%6$s) AS r FROM %7$s d) d ON u.k = d.k '
        ' WHERE (u.k IS NULL OR d.k IS NULL OR NOT (u.r OPERATOR(pg_catalog.*=) d.r)) '
        '   AND NOT %8$s '
        ' ORDER BY coalesce(u.k, d.k)',
        key_u, cols_u, j.upstream, covered,
        key_d, cols_d, j.downstream, pending);
END
$$;
COMMENT ON FUNCTION backfill.verify_job(bigint) IS
'Compares the downstream of a job with its upstream; returns one row per missing, extra or different row.';

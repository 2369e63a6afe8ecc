/* backfill--1.1--1.2.sql: named internal catalog functions */

\echo Use "ALTER EXTENSION backfill UPDATE TO '1.2'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- The catalog writes of the control functions, one function each (they
-- replace backfill._job_catalog(job_id, op, arg)); each checks that the
-- caller has the privileges of the job's owner (src/control.c)
-- ---------------------------------------------------------------------------

CREATE FUNCTION backfill._mark_cancelled(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_mark_cancelled_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._mark_cancelled(bigint) IS
'Internal: marks a job the caller owns cancelled, without downstream, state or change table.';

CREATE FUNCTION backfill._delete_job(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_delete_job_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._delete_job(bigint) IS
'Internal: deletes the catalog rows of a job the caller owns.';

CREATE FUNCTION backfill._set_foreground(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_set_foreground_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._set_foreground(bigint) IS
'Internal: marks a job the caller owns as run in the foreground, so that the launcher leaves it alone.';

CREATE FUNCTION backfill._set_rate_limit(job_id bigint, rows_per_second integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_set_rate_limit_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._set_rate_limit(bigint, integer) IS
'Internal: sets the rate limit of a job the caller owns; NULL for none.';

CREATE FUNCTION backfill._rebuild_actors(job_id bigint, parallelism integer)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_rebuild_actors_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._rebuild_actors(bigint, integer) IS
'Internal: replaces the actors of a job the caller owns by parallelism new ones; the vnodes keep their progress.';

CREATE FUNCTION backfill._copy_names(job_id bigint, from_job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_copy_names_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._copy_names(bigint, bigint) IS
'Internal: gives a job the caller owns the name and statement of another job it owns.';

CREATE FUNCTION backfill._drop_triggers(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_drop_triggers_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._drop_triggers(bigint) IS
'Internal: drops the triggers a job the caller owns has on its upstream.';

-- ---------------------------------------------------------------------------
-- The control functions, calling them
-- ---------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- the upstream's owner may be another role than the job's
    PERFORM backfill._drop_triggers(j.job_id);
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
    PERFORM backfill._mark_cancelled(job_id);
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
        PERFORM backfill._mark_cancelled(job_id);
        PERFORM backfill._drop_job_objects(j, true);
    END IF;
    PERFORM backfill._delete_job(job_id);
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
    PERFORM backfill._copy_names(new_id, job_id);
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
    PERFORM backfill._set_foreground(job_id);
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
    PERFORM backfill._set_rate_limit(job_id, rows_per_second);
END
$$;

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
    PERFORM backfill._rebuild_actors(job_id, parallelism);
    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
END
$$;

DROP FUNCTION backfill._job_catalog(bigint, text, bigint);

-- ---- RisingWave fidelity ----

-- reschedule: a job being created whose backfill cannot be rescheduled (a
-- legacy no-shuffle one, a snapshot one before it follows the upstream) is
-- refused with the text of RisingWave's meta (stream_manager.rs), which
-- refuses it for every creating job of those scan types
-- (StreamScanType::is_reschedulable); the job's kind says which (src/kind.h)
CREATE FUNCTION backfill._check_reschedule(job_id bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'backfill_check_reschedule_1_2'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION backfill._check_reschedule(bigint) IS
'Internal: refuses to reschedule a job the caller owns that its kind cannot reschedule before it has finished.';

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
    -- before the workers stop: a refused reschedule leaves them running
    PERFORM backfill._check_reschedule(job_id);
    was_running := backfill._stop_and_lock_job(job_id);
    -- new actors, new ids, the vnodes in even contiguous ranges again; the
    -- vnodes keep their progress wherever they land
    PERFORM backfill._rebuild_actors(job_id, parallelism);
    IF was_running THEN
        PERFORM backfill.start_job(job_id);
    END IF;
END
$$;

-- Progress as RisingWave's meta prints it (barrier/progress.rs,
-- calculate_progress): {:.2}% of consumed/total as a float, forced to
-- 0.9999 only when more rows were consumed than counted, so N/N reads
-- 100.00% (N/N) until the job is done; a total of 0 reads 99.99%.
-- to_char of a float8 rounds as printf's %.2f does, as Rust's {:.2} does.
CREATE FUNCTION backfill._rw_progress(consumed bigint, total bigint)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN total OPERATOR(pg_catalog.=) 0 THEN '99.99%'
    ELSE pg_catalog.format('%s%% (%s/%s)',
             pg_catalog.to_char(
                 CASE WHEN consumed::pg_catalog.float8 OPERATOR(pg_catalog./) total::pg_catalog.float8
                           OPERATOR(pg_catalog.>) 1.0::pg_catalog.float8
                      THEN 0.9999::pg_catalog.float8
                      ELSE consumed::pg_catalog.float8 OPERATOR(pg_catalog./) total::pg_catalog.float8
                 END OPERATOR(pg_catalog.*) 100.0::pg_catalog.float8, 'FM990.00'),
             consumed, total)
END;
COMMENT ON FUNCTION backfill._rw_progress(bigint, bigint) IS
'Internal: RisingWave''s progress text of consumed rows out of a total, "42.17% (421700/1000000)".';

-- Rust's Debug of a Duration of whole milliseconds: 0ns, 800ms, 1.2s, 61s
CREATE FUNCTION backfill._rw_duration(ms bigint)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE
    WHEN ms OPERATOR(pg_catalog.<=) 0 THEN '0ns'
    WHEN ms OPERATOR(pg_catalog.<) 1000 THEN ms::pg_catalog.text OPERATOR(pg_catalog.||) 'ms'
    ELSE (ms OPERATOR(pg_catalog./) 1000)::pg_catalog.text
         OPERATOR(pg_catalog.||) pg_catalog.rtrim('.' OPERATOR(pg_catalog.||)
             pg_catalog.lpad((ms OPERATOR(pg_catalog.%) 1000)::pg_catalog.text, 3, '0'), '.0')
         OPERATOR(pg_catalog.||) 's'
END;
COMMENT ON FUNCTION backfill._rw_duration(bigint) IS
'Internal: a number of milliseconds as Rust''s Debug of a Duration prints it, "1.2s".';

-- backfill.jobs gets each job's progress: RisingWave's text while it is
-- being created, "100%" once finished.  A snapshot job shows its phase as
-- RisingWave's creating jobs do (creating_job/mod.rs): "Snapshot [...]"
-- while it reads its snapshot, "Snapshot finished" once every vnode has
-- read it until every actor has entered the log store, "LogStore [actor:
-- caught up/actors, avg lag ...]" with the lag averaged over the actors not
-- caught up yet, then "Finishing [epoch lag: 0ns]" until its final barrier:
-- its barriers are the upstream's own, so it never lags in epochs.
DROP VIEW backfill.ddl_progress;
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
       CASE WHEN j.kind OPERATOR(pg_catalog.=) 'cdc'
                 AND j.status OPERATOR(pg_catalog.<>) ALL (ARRAY['finished', 'cancelled'])
            THEN pg_catalog.format('backfill_%s_%s', d.oid, j.job_id) END AS slot_name,
       j.owner,
       CASE
           WHEN j.status OPERATOR(pg_catalog.=) 'finished' THEN '100%'
           WHEN j.status OPERATOR(pg_catalog.=) 'cancelled' THEN NULL
           WHEN j.kind OPERATOR(pg_catalog.<>) 'snapshot'
           THEN backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows)
           WHEN p.caught_up OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN 'Finishing [epoch lag: 0ns]'
           WHEN p.in_log_store OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN pg_catalog.format('LogStore [actor: %s/%s, avg lag %s]', p.caught_up, p.actors,
                    backfill._rw_duration(p.ongoing_lag_ms))
           WHEN p.in_log_store OPERATOR(pg_catalog.>) 0
                OR (SELECT pg_catalog.bool_and(s.backfill_finished)
                      FROM backfill.job_state(j.job_id) s)
           THEN 'Snapshot finished'
           ELSE pg_catalog.format('Snapshot [%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows))
       END AS progress
  FROM backfill.job j
  CROSS JOIN (SELECT oid FROM pg_catalog.pg_database
               WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count,
                            pg_catalog.count(*) AS actors,
                            pg_catalog.count(a.log_store_lag_ms) AS in_log_store,
                            pg_catalog.count(*) FILTER (WHERE a.log_store_caught_up) AS caught_up,
                            coalesce(pg_catalog.floor(pg_catalog.avg(a.log_store_lag_ms)
                                         FILTER (WHERE NOT a.log_store_caught_up)), 0)::bigint
                                AS ongoing_lag_ms
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true;

-- RisingWave's rw_catalog.rw_ddl_progress: the jobs being created, with
-- RisingWave's columns; finished, failed and cancelled jobs are in
-- backfill.jobs
CREATE VIEW backfill.ddl_progress WITH (security_invoker = true) AS
SELECT s.job_id AS ddl_id,
       j.ddl_statement,
       CASE s.run_mode WHEN 'background' THEN 'BACKGROUND' ELSE 'FOREGROUND' END AS create_type,
       s.progress,
       s.created_at AS initialized_at,
       false AS is_serverless_backfill,
       CASE s.kind WHEN 'snapshot' THEN 'SNAPSHOT_BACKFILL' ELSE 'NORMAL_BACKFILL' END AS backfill_type
  FROM backfill.jobs s
  JOIN backfill.job j ON j.job_id OPERATOR(pg_catalog.=) s.job_id
 WHERE s.status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling']);
COMMENT ON VIEW backfill.ddl_progress IS 'Progress of the jobs being created, as RisingWave''s rw_ddl_progress shows it.';
GRANT SELECT ON backfill.ddl_progress TO PUBLIC;

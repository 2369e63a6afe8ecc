/*
 * src/sql/views.sql
 *	  The views over the catalogs and the running jobs: jobs, ddl_progress,
 *	  workers, progress, verifications.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql), which reads it again over a 1.3 catalog: it says
 * CREATE OR REPLACE.
 */

-- the background workers that run jobs now, with their pg_stat_activity
-- entries
CREATE OR REPLACE VIEW backfill.workers WITH (security_invoker = true) AS
SELECT w.job_id, w.actor_id, w.pid, a.backend_start, a.state, a.query AS activity
  FROM backfill.job_workers() w
  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
 WHERE EXISTS (SELECT FROM (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
                WHERE j.job_id OPERATOR(pg_catalog.=) w.job_id);
COMMENT ON VIEW backfill.workers IS 'Background workers running jobs, with their pg_stat_activity entries.';

-- backfill.jobs: the columns of 1.1, then the pace of the jobs that
-- run now: what holds them back (the first actor's that is held back), their
-- rows per second (over their actors), and when they will have read their
-- rows at that rate; then each job's progress: RisingWave's text while it is
-- being created, "100%" once finished.  A snapshot job shows its phase as
-- RisingWave's creating jobs do (creating_job/mod.rs): "Snapshot [...]"
-- while it reads its snapshot, "Snapshot finished" once every vnode has read
-- it until every actor has entered the log store, "LogStore [actor: caught
-- up/actors, avg lag ...]" with the lag averaged over the actors not caught
-- up yet, then "Finishing [epoch lag: 0ns]" until its final barrier: its
-- barriers are the upstream's own, so it never lags in epochs.  Then, for a
-- job whose upstream is on another server, how far behind its source it is
-- (the source's WAL it has not fetched yet, and since when it has not caught
-- up) and why it waits; its progress adds its finished splits.  Its cutover:
-- waiting_for_lock (attempt n of m) while a cutover or rollback waits for
-- its lock, else its backfill.job_cutover state, NULL if never cut over.
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
       backfill._kind_slot_name(j.kind, j.remote, j.job_id, j.status) AS slot_name,
       j.owner,
       CASE WHEN r.running THEN p.throttled_by END AS throttled_by,
       CASE WHEN r.running THEN pg_catalog.round(p.rows_per_second) END AS rows_per_second,
       CASE WHEN r.running AND p.rows_per_second OPERATOR(pg_catalog.>) 0
            THEN pg_catalog.make_interval(secs => pg_catalog.round(
                     GREATEST(j.total_rows OPERATOR(pg_catalog.-) coalesce(p.row_count, 0), 0)::double precision
                     OPERATOR(pg_catalog./) p.rows_per_second)) END AS eta,
       CASE
           WHEN j.status OPERATOR(pg_catalog.=) 'finished' THEN '100%'
           WHEN j.status OPERATOR(pg_catalog.=) 'cancelled' THEN NULL
           -- a monitoring role's view of another role's job: the splits
           -- and the state are the owner's to read
           WHEN j.remote AND NOT o.mine
           THEN backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows)
           WHEN j.remote AND j.remote_partitions IS NOT NULL
           THEN (SELECT pg_catalog.format('%s [servers: %s/%s, splits: %s/%s]',
                            backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows),
                            pg_catalog.count(*) FILTER (WHERE v.finished OPERATOR(pg_catalog.=) v.splits),
                            pg_catalog.count(*), pg_catalog.sum(v.finished), pg_catalog.sum(v.splits))
                   FROM (SELECT sp.server, pg_catalog.count(*) AS splits,
                                pg_catalog.count(*) FILTER (WHERE s.backfill_finished) AS finished
                           FROM backfill.job_splits(j.job_id) sp
                           LEFT JOIN backfill.job_state(j.job_id) s
                             ON s.vnode OPERATOR(pg_catalog.=) sp.split_id
                          GROUP BY sp.server) v)
           WHEN j.remote
           THEN pg_catalog.format('%s [splits: %s/%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows),
                    (SELECT pg_catalog.count(*) FILTER (WHERE s.backfill_finished)
                       FROM backfill.job_state(j.job_id) s),
                    coalesce(pg_catalog.cardinality(j.remote_splits), 0) OPERATOR(pg_catalog.+) 1)
           WHEN NOT backfill._kind_is_snapshot_backfill(j.kind, j.remote)
           THEN backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows)
           WHEN p.caught_up OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN 'Finishing [epoch lag: 0ns]'
           WHEN p.in_log_store OPERATOR(pg_catalog.=) p.actors AND p.actors OPERATOR(pg_catalog.>) 0
           THEN pg_catalog.format('LogStore [actor: %s/%s, avg lag %s]', p.caught_up, p.actors,
                    backfill._rw_duration(p.ongoing_lag_ms))
           WHEN p.in_log_store OPERATOR(pg_catalog.>) 0
                OR CASE WHEN o.mine
                        THEN (SELECT pg_catalog.bool_and(s.backfill_finished)
                                FROM backfill.job_state(j.job_id) s) END
           THEN 'Snapshot finished'
           ELSE pg_catalog.format('Snapshot [%s]',
                    backfill._rw_progress(coalesce(p.row_count, 0)::bigint, j.total_rows))
       END AS progress,
       j.remote,
       -- over several servers: the sum of their lags, and the longest
       CASE WHEN j.remote_partitions IS NOT NULL
            THEN (SELECT pg_catalog.sum(o.remote_source_lsn OPERATOR(pg_catalog.-) o.remote_lsn)
                    FROM backfill.job_source o WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id)
            WHEN j.remote THEN j.remote_source_lsn OPERATOR(pg_catalog.-) j.remote_lsn END AS lag_bytes,
       CASE WHEN j.remote_partitions IS NOT NULL
            THEN (SELECT pg_catalog.max(CASE WHEN o.remote_lsn OPERATOR(pg_catalog.>=) o.remote_source_lsn
                                             THEN '0'::pg_catalog.interval
                                             ELSE pg_catalog.now() OPERATOR(pg_catalog.-)
                                                  coalesce(o.remote_caught_up_at, j.created_at) END)
                    FROM backfill.job_source o WHERE o.job_id OPERATOR(pg_catalog.=) j.job_id)
            WHEN j.remote AND j.remote_lsn OPERATOR(pg_catalog.>=) j.remote_source_lsn
            THEN '0'::pg_catalog.interval
            WHEN j.remote
            THEN pg_catalog.now() OPERATOR(pg_catalog.-) coalesce(j.remote_caught_up_at, j.created_at)
       END AS lag_time,
       (SELECT pg_catalog.min(a.query)
          FROM backfill.job_workers() w
          JOIN pg_catalog.pg_stat_activity a ON a.pid OPERATOR(pg_catalog.=) w.pid
         WHERE w.job_id OPERATOR(pg_catalog.=) j.job_id
           AND pg_catalog.starts_with(a.query, 'waiting for the source')) AS waiting_for,
       -- a cutover in progress shows in its backend's activity (its
       -- transaction shows nothing else until it commits); then the last one
       coalesce((SELECT pg_catalog.min(pg_catalog.substr(a.query,
                            pg_catalog.length(pg_catalog.format('backfill cutover of job %s: ', j.job_id)) OPERATOR(pg_catalog.+) 1))
                   FROM pg_catalog.pg_stat_activity a
                  WHERE a.state OPERATOR(pg_catalog.=) 'active'
                    AND pg_catalog.starts_with(a.query, pg_catalog.format('backfill cutover of job %s: waiting_for_lock', j.job_id))),
                (SELECT c.state FROM backfill.job_cutover c
                  WHERE c.job_id OPERATOR(pg_catalog.=) j.job_id)) AS cutover
  FROM (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
  LEFT JOIN LATERAL (SELECT pg_catalog.max(a.epoch) AS epoch, pg_catalog.sum(a.row_count) AS row_count,
                            pg_catalog.sum(a.rows_per_second) AS rows_per_second,
                            (pg_catalog.array_agg(a.throttled_by ORDER BY a.actor_id)
                               FILTER (WHERE a.throttled_by IS NOT NULL))[1] AS throttled_by,
                            pg_catalog.count(*) AS actors,
                            pg_catalog.count(a.log_store_lag_ms) AS in_log_store,
                            pg_catalog.count(*) FILTER (WHERE a.log_store_caught_up) AS caught_up,
                            coalesce(pg_catalog.floor(pg_catalog.avg(a.log_store_lag_ms)
                                         FILTER (WHERE NOT a.log_store_caught_up)), 0)::bigint
                                AS ongoing_lag_ms
                       FROM backfill.actor a
                      WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id) p ON true
  CROSS JOIN LATERAL (SELECT CASE WHEN j.status OPERATOR(pg_catalog.=) 'backfilling'
                                  THEN backfill._job_is_running(j.job_id)
                                  ELSE false END AS running) r
  CROSS JOIN LATERAL (SELECT pg_catalog.pg_has_role(CURRENT_USER, j.owner, 'USAGE') AS mine) o;
COMMENT ON VIEW backfill.jobs IS 'Streaming jobs, their status and progress.';

-- RisingWave's rw_catalog.rw_ddl_progress: the jobs being created, with
-- RisingWave's columns; finished, failed and cancelled jobs are in
-- backfill.jobs
CREATE OR REPLACE VIEW backfill.ddl_progress WITH (security_invoker = true) AS
SELECT s.job_id AS ddl_id,
       j.ddl_statement,
       CASE s.run_mode WHEN 'background' THEN 'BACKGROUND' ELSE 'FOREGROUND' END AS create_type,
       s.progress,
       s.created_at AS initialized_at,
       false AS is_serverless_backfill,
       CASE WHEN backfill._kind_is_snapshot_backfill(j.kind, j.remote)
            THEN 'SNAPSHOT_BACKFILL' ELSE 'NORMAL_BACKFILL' END AS backfill_type
  FROM backfill.jobs s
  JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
    ON j.job_id OPERATOR(pg_catalog.=) s.job_id
 WHERE s.status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling']);
COMMENT ON VIEW backfill.ddl_progress IS 'Progress of the jobs being created, as RisingWave''s rw_ddl_progress shows it.';

-- backfill.verifications: the rows of backfill.verification of the jobs the
-- caller sees (every job for a monitoring role), with the job's name and
-- whether a repair runs now: its backend holds the job's lock (the
-- advisory lock whose objsubid is 25190, BACKFILL_LOCK_FIELD4)
CREATE OR REPLACE VIEW backfill.verifications WITH (security_invoker = true) AS
SELECT v.job_id, j.job_name, v.operation, v.method, v.range_rows, v.pid,
       v.finished_at IS NULL AND EXISTS (
           SELECT FROM pg_catalog.pg_locks k
            WHERE k.locktype OPERATOR(pg_catalog.=) 'advisory'
              AND k.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                                     WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
              AND k.classid OPERATOR(pg_catalog.=) (v.job_id OPERATOR(pg_catalog.>>) 32)::pg_catalog.oid
              AND k.objid OPERATOR(pg_catalog.=) (v.job_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
              AND k.objsubid OPERATOR(pg_catalog.=) 25190
              AND k.mode OPERATOR(pg_catalog.=) 'ExclusiveLock' AND k.granted
              AND k.pid OPERATOR(pg_catalog.=) v.pid) AS running,
       v.started_at, v.finished_at, v.ranges_done, v.ranges_total, v.rows_read,
       v.differences, v.missing, v.extra, v.different, v.clean
  FROM backfill.verification v
  JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
    ON j.job_id OPERATOR(pg_catalog.=) v.job_id;
COMMENT ON VIEW backfill.verifications IS
'The last verify and the last repair of each job: when, what they compared and found, what the repair repaired and whether it left the job clean; running is true while the repair runs (false for one that stopped before its end, whose finished_at is NULL).';
GRANT SELECT ON backfill.verifications TO PUBLIC;

-- One row per actor running now, in a background worker or in a session's
-- CALL backfill.run_job, as pg_stat_progress_* has one per backend: from
-- shared memory when the library is preloaded; otherwise the actors of a run
-- in a session come from the catalog (committed each barrier), with its pid
-- from the job lock the session holds, and without position or barriers.
-- The columns of 1.3, then those of pg_stat_progress_copy and
-- pg_stat_progress_create_index: the database, the upstream (relid, NULL
-- for a table of another server), and the job's totals, in blocks of the
-- upstream (its size now) and in rows (the catalog's estimate, or
-- create_job's count for a job with a filter, and never fewer than the
-- rows copied); blocks_done is the rows copied over the rows per block, as
-- the copy reads in key order.  phase is in PostgreSQL's words (the words
-- of the actor's own phase, as 1.3 showed them, are in actor_phase):
--   initializing         the run's recovery check, before its first barrier
--   copying              reading the upstream's rows into the downstream
--   catching up          a snapshot job's log store: the changes made since
--                        its snapshot
--   waiting for barrier  the actor's vnodes are copied; the job's final
--                        barrier waits for its other actors
--   finishing            the final barrier (the downstream's indexes are
--                        built there when the job builds them at its end)
--   finished             the job has finished; the worker applies the
--                        upstream's changes to the downstream
--   repairing            CALL backfill.repair_job: one row, no actor; rows
--                        are the rows repaired of those to repair, and the
--                        last two columns its ranges repaired of its ranges
CREATE OR REPLACE VIEW backfill.progress WITH (security_invoker = true) AS
SELECT u.pid, u.job_id, u.job_name, u.actor_id, u.kind, u.run_mode,
       CASE u.actor_phase
           WHEN 'starting' THEN 'initializing'
           WHEN 'snapshot' THEN 'copying'
           WHEN 'log store' THEN 'catching up'
           WHEN 'done' THEN 'waiting for barrier'
           WHEN 'finishing' THEN 'finishing'
           WHEN 'following' THEN 'finished'
           WHEN 'repair' THEN 'repairing'
           ELSE u.actor_phase
       END AS phase,
       u.rows_done, u.job_rows_done, u.job_rows_total,
       u."position", u.barriers, u.epoch, u.rows_per_second,
       u.throttled_by, u.started_at, u.last_barrier_at,
       d.oid AS datid, d.datname,
       CASE WHEN NOT u.remote THEN u.upstream::pg_catalog.oid END AS relid,
       t.blocks_total,
       CASE WHEN t.tuples_total OPERATOR(pg_catalog.>) 0
            THEN (t.blocks_total::pg_catalog.numeric OPERATOR(pg_catalog.*) t.tuples_done
                  OPERATOR(pg_catalog./) t.tuples_total)::bigint
            WHEN t.tuples_total OPERATOR(pg_catalog.=) 0 THEN t.blocks_total
       END AS blocks_done,
       t.tuples_total, t.tuples_done,
       u.actor_phase, u.ranges_done, u.ranges_total
  FROM (SELECT l.pid, l.job_id, j.job_name, l.actor_id, j.kind, l.run_mode, l.phase AS actor_phase,
               l.rows_done,
               (SELECT pg_catalog.sum(a.row_count) FROM backfill.actor a
                 WHERE a.job_id OPERATOR(pg_catalog.=) j.job_id)::bigint AS job_rows_done,
               j.total_rows AS job_rows_total,
               l."position", l.barriers, l.epoch,
               pg_catalog.round(l.rows_per_second)::bigint AS rows_per_second,
               l.throttled_by, l.started_at, l.last_barrier_at,
               j.upstream, j.remote, j.filter IS NOT NULL AS filtered, j.status,
               false AS repair, NULL::bigint AS ranges_done, NULL::bigint AS ranges_total
          FROM backfill._live_actors() l
          JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
            ON j.job_id OPERATOR(pg_catalog.=) l.job_id
        UNION ALL
        SELECT k.pid, j.job_id, j.job_name, a.actor_id, j.kind, 'foreground',
               CASE WHEN a.log_store_lag_ms IS NOT NULL THEN 'log store' ELSE 'snapshot' END,
               a.row_count,
               (SELECT pg_catalog.sum(b.row_count) FROM backfill.actor b
                 WHERE b.job_id OPERATOR(pg_catalog.=) j.job_id)::bigint,
               j.total_rows, NULL, NULL, a.epoch,
               pg_catalog.round(a.rows_per_second)::bigint, a.throttled_by, NULL, NULL,
               j.upstream, j.remote, j.filter IS NOT NULL, j.status, false, NULL, NULL
          FROM (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
          JOIN pg_catalog.pg_locks k
            ON k.locktype OPERATOR(pg_catalog.=) 'advisory'
           AND k.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d
                                                  WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
           AND k.classid OPERATOR(pg_catalog.=) (j.job_id OPERATOR(pg_catalog.>>) 32)::pg_catalog.oid
           AND k.objid OPERATOR(pg_catalog.=) (j.job_id OPERATOR(pg_catalog.&) 4294967295)::pg_catalog.oid
           AND k.objsubid OPERATOR(pg_catalog.=) 25190   -- BACKFILL_LOCK_FIELD4, the job lock
           AND k.mode OPERATOR(pg_catalog.=) 'ExclusiveLock' AND k.granted
          JOIN backfill.actor a ON a.job_id OPERATOR(pg_catalog.=) j.job_id
         WHERE j.status OPERATOR(pg_catalog.=) 'backfilling'
           AND NOT EXISTS (SELECT FROM backfill._live_actors() l
                            WHERE l.job_id OPERATOR(pg_catalog.=) j.job_id)
           -- (a repair holds the lock too: the branch below shows it)
           AND NOT EXISTS (SELECT FROM backfill.verification r
                            WHERE r.job_id OPERATOR(pg_catalog.=) j.job_id
                              AND r.operation OPERATOR(pg_catalog.=) 'repair'
                              AND r.finished_at IS NULL
                              AND r.pid OPERATOR(pg_catalog.=) k.pid)
        UNION ALL
        -- a repair running now: its row of backfill.verification, while its
        -- backend holds the job lock (one killed partway holds nothing); its
        -- rows are those it has repaired of those its first verify found
        SELECT r.pid, j.job_id, j.job_name, NULL, j.kind, 'foreground', 'repair',
               r.missing OPERATOR(pg_catalog.+) r.extra OPERATOR(pg_catalog.+) r.different,
               r.missing OPERATOR(pg_catalog.+) r.extra OPERATOR(pg_catalog.+) r.different,
               r.differences, NULL, NULL, NULL, NULL, NULL, r.started_at, NULL,
               j.upstream, j.remote, j.filter IS NOT NULL, j.status, true,
               r.ranges_done, r.ranges_total
          FROM backfill.verifications r
          JOIN (SELECT * FROM backfill.job UNION ALL SELECT * FROM backfill._monitored_jobs()) j
            ON j.job_id OPERATOR(pg_catalog.=) r.job_id
         WHERE r.operation OPERATOR(pg_catalog.=) 'repair' AND r.running) u
  CROSS JOIN (SELECT oid, datname FROM pg_catalog.pg_database
               WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d
  -- the upstream's size, not waited for behind a lock (NULL then)
  LEFT JOIN LATERAL backfill._upstream_size(CASE WHEN NOT u.remote AND NOT u.repair THEN u.upstream END) z ON true
  CROSS JOIN LATERAL (
      SELECT z.blocks AS blocks_total,
             coalesce(u.job_rows_done, 0) AS tuples_done,
             CASE WHEN u.repair THEN u.job_rows_total
                  WHEN u.status OPERATOR(pg_catalog.=) 'finished'
                  THEN coalesce(u.job_rows_done, 0)
                  ELSE GREATEST(CASE WHEN u.filtered OR u.remote THEN u.job_rows_total
                                     ELSE coalesce(z.tuples, u.job_rows_total) END,
                                coalesce(u.job_rows_done, 0))
             END AS tuples_total) t;
COMMENT ON VIEW backfill.progress IS
'One row per actor running now, in a worker or in CALL backfill.run_job, and one per CALL backfill.repair_job running now (phase repairing): its process, phase, rows, position, barriers and pace, then its database, upstream and the job''s totals and what is done of them in blocks and rows, as pg_stat_progress_copy shows them, then a repair''s ranges done and to do; \watch 1 on it is the live picture.';
GRANT SELECT ON backfill.jobs, backfill.ddl_progress, backfill.workers, backfill.progress TO PUBLIC;

/*
 * src/sql/catalog/comments.sql
 *	  The comments of the catalogs of tables.sql and of their columns.
 *
 * Part of the install script (install.sql) and of the upgrade from 1.3
 * (update-1.3--1.4.sql).
 */

COMMENT ON TABLE backfill.job IS 'Streaming jobs: one row per job, whatever its status.';
COMMENT ON COLUMN backfill.job.filter IS
'The row filter: only upstream rows for which it is true are copied. NULL for none.';
COMMENT ON COLUMN backfill.job.expressions IS
'Per column of "columns", the expression over the upstream it is computed with, NULL for a column copied as it is; NULL when every column is copied.';
COMMENT ON COLUMN backfill.job.source_columns IS
'The upstream columns the job reads: the key, the copied columns and those the expressions and the filter use. NULL for a job made before version 1.2, which reads "columns".';
COMMENT ON COLUMN backfill.job.into_existing IS
'Whether the downstream is a table the user made, which cancel_job and drop_job leave in place.';
COMMENT ON COLUMN backfill.job.vnode_mapping IS
'How the job maps keys to vnodes: range (vnode_bounds), or hash when NULL or hash.';
COMMENT ON COLUMN backfill.job.vnode_bounds IS
'Range vnodes: the lowest key of vnodes 1 to 255, one row of key columns (as text) each.';
COMMENT ON COLUMN backfill.job.remote IS
'Whether the upstream is a foreign table, read from its server.';
COMMENT ON COLUMN backfill.job.remote_splits IS
'The inner bounds of the splits, values of the first key column as text.';
COMMENT ON COLUMN backfill.job.remote_lsn IS
'The offset of the change stream: the changes the source committed below it are fetched.';
COMMENT ON COLUMN backfill.job.remote_source_lsn IS
'The end of the source''s flushed WAL when the job last fetched.';
COMMENT ON COLUMN backfill.job.remote_caught_up_at IS
'When a fetch last reached the end of the source''s flushed WAL.';
COMMENT ON COLUMN backfill.job.remote_last_commit IS
'The commit time on the source of the last transaction fetched.';
COMMENT ON COLUMN backfill.job.indexes IS
'create_job''s "indexes": true when it gave the downstream the upstream''s indexes besides its key, NULL when it was left to the job (a whole-table copy then gets them and the upstream''s constraints), false for neither.';
COMMENT ON COLUMN backfill.job.remote_partitions IS
'For a job over a partitioned table of foreign tables: its foreign partitions, in the order of its splits (a NULL bound in remote_splits ends one partition''s splits). NULL for any other job.';
COMMENT ON TABLE backfill.actor IS 'Actors of the jobs: each owns the vnodes vnode_start to vnode_end, and records the epoch and snapshot rows of its last barrier.';
COMMENT ON COLUMN backfill.actor.log_store_lag_ms IS
'Snapshot kind: age of the oldest change the actor''s last barrier consumed from the log store; NULL before the log store phase.';
COMMENT ON COLUMN backfill.actor.throttled_by IS
'What held the actor''s snapshot reads back in its last barrier: replica lag, retained WAL, WAL rate, rate limit or paused; NULL for nothing.';
COMMENT ON COLUMN backfill.actor.rows_per_second IS
'The actor''s snapshot rows per second over the minute before its last barrier, in the run that wrote it; 0 once its vnodes have finished.';
COMMENT ON TABLE backfill.job_index IS
'Indexes of the jobs'' downstreams still to build: each is built by head || the downstream''s name || tail, in position order, once the snapshot is copied.';
COMMENT ON TABLE backfill.job_cutover IS
'Cutovers: per job, the last swap (cut_over, rolled_back) or its end (finished), the tables it swapped, the attempts and how long the lock was held, the foreign keys still to validate.';
COMMENT ON COLUMN backfill.job_cutover.old_table IS
'The table that had the name before the cutover (the job''s upstream then).';
COMMENT ON COLUMN backfill.job_cutover.new_table IS
'The table that took the name (the job''s downstream then).';
COMMENT ON COLUMN backfill.job_cutover.old_name IS
'The name the old table got, in its schema.';
COMMENT ON COLUMN backfill.job_cutover.new_name IS
'The name the new table had before the cutover, in schema new_schema: it gets it back at a rollback.';
COMMENT ON COLUMN backfill.job_cutover.reversible IS
'Whether the old table follows the new one (the job turned around), so that rollback_cutover may swap back.';
COMMENT ON COLUMN backfill.job_cutover.into_existing IS
'The job''s into_existing before the cutover, given back at a rollback.';
COMMENT ON COLUMN backfill.job_cutover.to_validate IS
'Foreign keys (pg_constraint OIDs) added NOT VALID by the last swap, validated by finish_cutover.';
COMMENT ON TABLE backfill.job_source IS
'The servers of a job over foreign partitions of several servers (source: their order, that of their first partition): per server, the offset of its change stream (remote_lsn), the end of its flushed WAL at the last fetch, when a fetch last caught up with it and the commit time of the last transaction fetched.';

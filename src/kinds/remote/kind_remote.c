/*-------------------------------------------------------------------------
 *
 * kind_remote.c
 *	  The cdc kind when the upstream is a foreign table of postgres_fdw:
 *	  copying a table of another PostgreSQL server in parallel splits, and
 *	  following it through that server's own logical replication.
 *
 * RisingWave's CDC backfill v2 (cdc_backill_v2.rs, state_v2.rs) cuts the
 * upstream's key range into splits, gives consecutive splits to each actor,
 * reads each split between a low and a high offset of the change stream,
 * and keeps one state row per split.  Here:
 *
 * Splits.  create_job cuts the range of the first key column at bounds taken
 * from the source's pg_stats histogram of that column (or, without one, from
 * a sample; remote/splits.c), up to BACKFILL_REMOTE_SPLITS_PER_ACTOR per
 * actor, and stores them in backfill.job.remote_splits
 * (catalog/remote_rows.c): split j holds the keys whose first column is in
 * [bound j-1, bound j).  Actor a of p reads splits a*n/p .. (a+1)*n/p-1, in
 * order, over its own connection; split j stands on the actor's vnode
 * vnode_start + (j - its first split) in the executor's vnode array, the
 * actor's other vnodes being finished from the start (job.c).  The
 * state table is RisingWave's v2 layout: split_id, backfill_finished,
 * row_count, cdc_offset_low, cdc_offset_high (offsets are {"lsn": ...} of
 * the source).  The position inside a split lives only in memory: a split not
 * finished when a run stops is read again from its start, so a crash
 * re-reads at most one split per actor, and a barrier commits as soon as one
 * of its actor's splits has finished (barrier_full).
 *
 * The change stream (fetch.c).  One publication and one logical
 * slot on the source per job (remote/replication.c); a fetch, before a
 * barrier (every one in run_job; in a worker, at most once a barrier
 * interval unless the last stopped at its limit: driver.c) and in a
 * transaction of its own, under the job's slot lock,
 * appends the changes of whole transactions the slot holds beyond the
 * offset committed in backfill.job.remote_lsn to backfill.changes_<id>,
 * and commits its new offset; the slot is only advanced to an offset whose
 * changes are committed here, so a crash anywhere re-fetches from it.
 *
 * Reading a chunk (DBLog's watermarks, made exact by snapshots).  A chunk of
 * split s is read on the source in one REPEATABLE READ transaction: first
 * its snapshot and pg_current_wal_insert_lsn() (the chunk's offset), then
 * COPY of its next rows in key order, up to the chunk's size, straight into
 * the downstream (COPY FROM; remote/reads.c); the last row's key ends the
 * chunk, and fewer rows than asked for end the split.  A change of a key in
 * the chunk is either visible to that snapshot, so already in the chunk, or
 * not, so it came after: the chunk's barrier deletes the changes of the
 * chunk's keys that its snapshot sees (pg_visible_in_snapshot of their
 * transaction), and leaves the others.  A key is "covered" once a chunk has
 * read it: it lies in a finished split of its actor, or in the current split
 * at or below the position.  At the start of each barrier an actor applies
 * the changes of its covered keys in commit order (apply.c), the
 * last change of each key winning: an upsert is INSERT ... ON CONFLICT DO
 * UPDATE, a delete a DELETE, a refetch (an update that left a TOASTed column
 * out of the WAL) reads the row again from the source.  The changes of keys
 * not covered yet wait in the change table for their chunk.
 *
 * Why nothing is lost or doubled: the writes to one key are serialized on
 * the source, so the changes to a key that a snapshot sees are a prefix of
 * that key's changes in commit order.  After a chunk, the change table holds
 * the suffix the chunk did not see (those fetched later come after them),
 * and applying a suffix of full images in order leaves the last one, which
 * is the source's row.  A change fetched after the chunk's barrier that the
 * chunk did see is applied too, followed by every later change of its key,
 * so the row only goes back for a moment.  Re-reading a split first deletes
 * the split's range downstream, so rows deleted on the source meanwhile do
 * not stay, and every apply is by key, so applying twice changes nothing.
 *
 * Indexes built once (builds_indexes_once, copy/index_build.c).  The
 * downstream has no index while the splits are copied: the rows go to the
 * heap alone, through one ring of buffers for all the chunks (sink.c says
 * why), and the final barrier builds the key's index and the others,
 * sorted, before it applies the change table.  Nothing needs a key looked
 * up before that: no change is applied while the downstream waits for its
 * indexes (each waits in the change table, in commit order, as those of
 * keys not read yet wait for their chunk, and applying them all at the end
 * leaves each key's last image just as applying them barrier by barrier
 * does), and a split read from its start deletes its range only when rows
 * of it were committed, which happens once per split read again after a
 * crash, at most one per actor.  The build is in the final barrier's
 * transaction: a crash during it rolls both back, and the next run builds
 * again from the committed copy without reading the source again.
 *
 * Several servers (doc/sharded.md).  The upstream may also be a
 * partitioned table whose leaves, at any level, are all foreign tables (a
 * sharded upstream; remote.c's backfill_remote_leaves finds them, grouped
 * by server).  Each is a part of the job: it is cut into splits of its own
 * from its server's statistics, the parts' splits one after the other (a
 * NULL bound between two parts, backfill.job.remote_partitions their
 * order), so each actor's consecutive splits lie on one server or two, and
 * the actors read the servers at once.  Each server is a source with its
 * own slot and publication (of its parts' tables, same name on each) and
 * its own offset (backfill.job_source); a fetch visits each, and each
 * change is stored with its part (backfill_part).  The partition keys must
 * be columns of the key, which every part's table has the same on its
 * server: a key then lives in one part, its changes all come from one
 * server in that server's commit order, and the argument above holds per
 * key.  Covered keys are those of (part, key) ranges; a split read again
 * deletes its range downstream within its partition's constraint.  Before
 * the final barrier, a fetch that cannot reach a server leaves it out (in a
 * subtransaction), so the actors of the others go on in their workers; the
 * final barrier needs all of them.
 *
 * After the finish the job follows the source: its final barrier applies
 * what is fetched, then fetches and applies, one fetch per transaction,
 * until it has reached what the source had committed (after_finish); a
 * worker goes on doing so until stop_job (driver.c), and a run of a finished
 * job (run_job) does it once and returns.
 *
 * verify_job compares the downstream with the source through the foreign
 * table: the keys of splits not finished are not compared, and those of the
 * changes in the change table, or committed on the source after the job's
 * offset (peeked at in the slot, unfetched_keys), are pending.
 * cancel_job and drop_job drop the slot and the publication; those of jobs
 * that no longer exist, left by a crash or a source that was down, are
 * dropped by the first fetch of any job on that server in each process that
 * fetches (each run, each worker).
 *
 * The kind is cut by concern, as postgres_fdw cuts its callbacks from its
 * connections and its SQL, in the files of kinds/remote/: this file holds
 * the kind's routine; create.c its part of create_job; state.c its state
 * table; chunk.c the snapshot reads; stream.c the callbacks on the change
 * stream, fetch.c and apply.c the stream itself, fetched and applied;
 * verify.c its part of verify_job; job.c the RemoteJob they share (job.h),
 * with the splits' places; keys.c the conditions on keys; switchover.c the
 * switchover.  What is said to the source is in remote/ (replication.c,
 * reads.c, splits.c), what is written in backfill.job and backfill.actor
 * in catalog/remote_rows.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "kinds/remote/switchover.h"

static const char *const remote_reserved_columns[] = {
	"split_id", "backfill_finished", "row_count", "cdc_offset_low", "cdc_offset_high",
	"backfill_lsn", "backfill_order", "backfill_xid", "backfill_op", "backfill_row", NULL
};

static void
remote_prepare(BarrierExecutor *exec)
{
	MemoryContext old = MemoryContextSwitchTo(exec->cxt);
	RemoteJob  *rj = remote_job_make(exec->job);

	rj->plans = exec->plans;
	prepare_apply(rj);
	prepare_insert(rj);
	prepare_persist(rj);
	exec->kind_state = rj;
	MemoryContextSwitchTo(old);
}

/* its slot on each source, which it keeps after its finish until it is cancelled */
static char *
remote_slot_name(int64 job_id, BackfillJobStatus status)
{
	if (status == BACKFILL_STATUS_CANCELLED)
		return NULL;
	return remote_object_name(job_id, false);
}

const KindRoutine backfill_remote_cdc_routine = {
	.kind = BACKFILL_KIND_REMOTE_CDC,
	.reserved_columns = remote_reserved_columns,
	.capture = CAPTURE_STREAM,
	.recount_total = false,
	.needs_job_column = "remote_splits",
	.needs_version = "1.2",
	.cuts_splits = true,
	.builds_indexes_once = true,
	.upstream_key = remote_upstream_key,
	.check_shape = remote_check_shape,
	.check_create = remote_check_create,
	.create_state_table = remote_create_state_table,
	.after_create = remote_after_create,
	.load_state = remote_load_state,
	.prepare = remote_prepare,
	.fetch = remote_fetch,
	.barrier_changes = remote_barrier_changes,
	.read_chunk = remote_read_chunk,
	.barrier_full = remote_barrier_full,
	.persist = remote_persist,
	.update_actor = remote_update_actor,
	.actor_finished = backfill_vnodes_finished,
	.finished_everywhere = remote_finished_everywhere,
	.final_changes = remote_final_changes,
	.after_finish = remote_after_finish,
	.drop_objects = remote_drop_objects,
	.unfetched_keys = remote_unfetched_keys,
	.check_switchover = remote_check_switchover,
	.switchover = backfill_remote_switchover,
	.recount_actors = remote_recount_actors,
	.verify_source = remote_verify_source,
	.state_query = remote_state_query,
	.splits = remote_splits,
	.slot_name = remote_slot_name,
};

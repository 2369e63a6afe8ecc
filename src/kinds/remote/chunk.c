/*-------------------------------------------------------------------------
 *
 * chunk.c
 *	  The remote cdc kind's snapshot reads: the next chunk of an actor's
 *	  current split, read on the source and written downstream.
 *
 * A chunk is read in one REPEATABLE READ transaction of the source, its
 * snapshot and offset first (remote/reads.c); the chunk's barrier drops
 * the changes of its keys that snapshot saw (kind_remote.c has the whole
 * argument).  A split read from its start first deletes what an earlier
 * read of it left downstream.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "nodes/value.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "copy/barrier_io.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"
#include "remote/remote.h"

/*
 * " AND" the partition constraint of a sharded job's part, on the
 * downstream's columns (those of the key, which holds the partition keys),
 * or "" for a job of one table.  Caller is connected to SPI.
 */
static const char *
part_condition(RemoteJob *rj, RemotePart *part)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(part->relid)};

	if (!rj->sharded)
		return "";
	if (part->constraint_sql == NULL)
	{
		backfill_spi_exec_args("SELECT pg_catalog.pg_get_partition_constraintdef($1) AS c",
							   1, types, values, NULL, SPI_OK_SELECT);
		part->constraint_sql =
			MemoryContextStrdup(GetMemoryChunkContext(rj),
								psprintf(" AND (%s)", SPI_getvalue(SPI_tuptable->vals[0],
																  SPI_tuptable->tupdesc, 1)));
	}
	return part->constraint_sql;
}

/*
 * kind.h: read_chunk.  Reads the next chunk of the group's actor's current
 * split (see the file header); the group's vnodes are the actor's unread
 * splits.
 */
int64
remote_read_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit)
{
	RemoteJob  *rj = exec->kind_state;
	BackfillJob *job = rj->job;
	int			a = group->actor;
	int			j = -1;
	RemoteConn *conn;
	char	  **end;
	char	   *last;
	char	   *snapshot;
	XLogRecPtr	lsn;
	KeyCond		kc;
	uint64		rows;
	Relation	rel;
	List	   *attnames = NIL;
	VnodeState *vs;
	RemotePart *part;
	ChunkSink  *sink;

	for (int s = rj->first_split[a]; s < rj->end_split[a] && j < 0; s++)
		if (!job->vnodes[split_vnode(rj, a, s)].finished)
			j = s;
	if (j < 0 || rj->full[a])
		return 0;
	vs = &job->vnodes[split_vnode(rj, a, j)];
	part = part_of_split(rj, j);
	limit = Max(limit, 1);
	conn = remote_source_connect(rj, part->source);
	backfill_remote_chunk_start(conn, &snapshot, &lsn);

	/*
	 * A split read from its start: what an earlier read left goes.  Its
	 * row_count is the committed one (a failed barrier drops the executor,
	 * and the next run loads the state again), and rows of the split, read
	 * or applied, commit with their count: none counted, none there.  So a
	 * split never started deletes nothing, which matters while the
	 * downstream has no index to find its range by (builds_indexes_once).
	 */
	if (rj->pos[a] == NULL)
	{
		if (vs->row_count > 0)
		{
			memset(&kc, 0, sizeof(kc));
			cond_range(&kc, rj, "t", j, NULL, NULL);
			spi_cond(&kc, psprintf("DELETE FROM %s t WHERE %s%s", job->downstream_sql, kc.sql.data,
								   part_condition(rj, part)), SPI_OK_DELETE);
		}
		vs->row_count = 0;
		rj->low[j] = lsn;
	}

	/* the next rows of the split in key order; the last one ends the chunk */
	memset(&kc, 0, sizeof(kc));
	kc.conn = conn;
	cond_range(&kc, rj, "t", j, rj->pos[a], NULL);
	for (int c = 0; c < job->ncols; c++)
		attnames = lappend(attnames, makeString(job->col_names[c]));
	rel = table_open(job->downstream, RowExclusiveLock);
	/*
	 * The rows go through the sink (sink.c), which inserts them through the
	 * executor's ring of buffers, one for every chunk of the run; COPY FROM
	 * would take a new ring for each.  NULL when the downstream needs what
	 * COPY FROM does (triggers, partitions, a table of the user's).
	 */
	sink = backfill_sink_begin(exec, -1, false);
	rows = backfill_remote_read_range(conn, rel, attnames, job->columns_sql, part->table.qualified,
									  kc.sql.data, backfill_pk_list(job, "t"), limit,
									  (DestReceiver *) sink, &last);
	if (sink != NULL)
		(void) backfill_sink_end(sink, NULL, NULL, NULL, NULL, NULL);
	table_close(rel, NoLock);
	backfill_remote_chunk_end(conn);
	/* fewer rows than asked for: the split's end */
	end = rows < (uint64) limit || last == NULL ? NULL :
		backfill_remote_copy_row_key(last, job->ncols, job->npk, rj->pk_cols);

	/* the changes of the chunk's keys that its snapshot saw are in it */
	memset(&kc, 0, sizeof(kc));
	cond_range(&kc, rj, "c", j, rj->pos[a], end);
	kc.values[kc.nparams] = CStringGetTextDatum(snapshot);
	kc.types[kc.nparams++] = TEXTOID;
	if (rj->sharded)
		appendStringInfo(&kc.sql, " AND c.backfill_part = %d", rj->split_part[j]);
	spi_cond(&kc, psprintf("DELETE FROM %s c WHERE %s AND pg_catalog.pg_visible_in_snapshot(c.backfill_xid, $%d::pg_catalog.pg_snapshot)",
						   job->changes_sql, kc.sql.data, kc.nparams), SPI_OK_DELETE);

	/* the new position, in the executor's memory */
	rj->high[j] = lsn;
	vs->row_count += rows;
	vs->dirty = true;
	if (end == NULL)
	{
		vs->finished = true;
		rj->pos[a] = NULL;
		rj->full[a] = true;
	}
	else
	{
		MemoryContext old = MemoryContextSwitchTo(exec->cxt);

		rj->pos[a] = palloc(sizeof(char *) * job->npk);
		for (int k = 0; k < job->npk; k++)
			rj->pos[a][k] = pstrdup(end[k]);
		MemoryContextSwitchTo(old);
	}
	return (int64) rows;
}

/* kind.h: barrier_full: an actor commits at the end of each split */
bool
remote_barrier_full(BarrierExecutor *exec, int actor)
{
	RemoteJob  *rj = exec->kind_state;

	return rj->full[actor];
}

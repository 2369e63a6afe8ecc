/*-------------------------------------------------------------------------
 *
 * barrier.h
 *	  The barrier executor's state, shared by executor.c and the files of the
 *	  kinds that change parts of a barrier (snapshot.c, cdc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_BARRIER_H
#define BACKFILL_BARRIER_H

#include "access/xlogdefs.h"
#include "utils/timestamp.h"

#include "backfill.h"

/* how a chunk query restricts vnodes */
typedef enum VnodeFilter
{
	VNODE_FILTER_NONE,			/* the set is all 256 vnodes */
	VNODE_FILTER_RANGE,			/* a contiguous range */
	VNODE_FILTER_LIST			/* any set */
} VnodeFilter;

/* a set of unfinished vnodes of one actor that share a position */
typedef struct VnodeGroup
{
	int			nvnodes;
	int16		vnodes[BACKFILL_VNODE_COUNT];
	int			actor;			/* index into job->actors */
} VnodeGroup;

struct BarrierExecutor
{
	BackfillJob *job;
	MemoryContext barrier_cxt;	/* reset at every barrier */
	SPIPlanPtr	chunk_plans[2][3];	/* [has position][VnodeFilter] */
	SPIPlanPtr	select_plans[2][3]; /* the same, reading only (sink.c) */
	VnodeHasher *vnode_hasher;
	VnodeGroup *groups;			/* an actor's groups, this round */
	SPIPlanPtr	persist_plan;
	SPIPlanPtr	forward_delete_plan;
	SPIPlanPtr	forward_insert_plan;
	SPIPlanPtr	consume_plan;
	SPIPlanPtr	actor_plan;
	SPIPlanPtr	finish_plan;
	int16		typlens[INDEX_MAX_KEYS];
	bool		typbyvals[INDEX_MAX_KEYS];
	TimestampTz *rate_next;		/* per actor: when the limiter allows a read */
	int		   *batch;			/* per actor: chunks per statement, this barrier */

	/* snapshot kind (snapshot.c) */
	SPIPlanPtr	log_consume_plan;
	SPIPlanPtr	log_store_plan;

	/* cdc kind (cdc.c) */
	char	   *slot_name;
	XLogRecPtr	cdc_offset;		/* changes below it have been consumed */
	XLogRecPtr	cdc_fetched;	/* what the next barrier persists as offset */
	bool		cdc_offset_known;	/* cdc_offset is valid */
	SPIPlanPtr	fetch_plan;
};

/* executor.c */
extern void backfill_spi_enter(void);
extern void backfill_spi_leave(void);
extern SPIPlanPtr backfill_prepare_kept(const char *sql, int nargs, Oid *argtypes);
extern char *backfill_pk_params(BackfillJob *job, int first);
extern void backfill_append_excluded_key(StringInfo sql, BackfillJob *job);
extern void backfill_set_position(BarrierExecutor *exec, VnodeState *vs, Datum *pos);
extern void backfill_forward_changes(BarrierExecutor *exec, int lo, int hi);
extern void backfill_sleep_until(TimestampTz t);
extern VnodeFilter backfill_group_filter(VnodeGroup *group);
extern char *backfill_chunk_conditions(BackfillJob *job, const char *alias, const char *cmp,
									   bool has_pos, VnodeFilter filter, Oid *argtypes,
									   int *nargs);
extern int	backfill_group_params(BarrierExecutor *exec, VnodeGroup *group,
								  VnodeFilter filter, Datum *values);

/* sink.c */
typedef struct ChunkSink ChunkSink;
extern ChunkSink *backfill_sink_begin(BarrierExecutor *exec, int64 insert_limit,
									  bool count_vnodes);
extern void backfill_sink_run(ChunkSink *sink, SPIPlanPtr plan, Datum *values);
extern int64 backfill_sink_end(ChunkSink *sink, int64 *vnode_rows, Datum *last_key,
							   bool *has_last, Datum *next_key, bool *has_next);

/* snapshot.c */
extern void backfill_snapshot_prepare(BarrierExecutor *exec);
extern int64 backfill_snapshot_read_chunk(BarrierExecutor *exec, VnodeGroup *group,
										  int64 limit);
extern bool backfill_snapshot_log_store_barrier(BarrierExecutor *exec, int actor);
extern void backfill_snapshot_update_actor(BarrierExecutor *exec, BackfillActor *actor);
extern bool backfill_snapshot_everywhere(BackfillJob *job, bool log_store_too);
extern bool backfill_vnodes_finished(BackfillJob *job, int actor);

/* cdc.c */
extern void backfill_cdc_prepare(BarrierExecutor *exec);
extern void backfill_cdc_fetch(BarrierExecutor *exec);
extern void backfill_cdc_persist(BarrierExecutor *exec);

#endif							/* BACKFILL_BARRIER_H */

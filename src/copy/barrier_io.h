/*-------------------------------------------------------------------------
 *
 * barrier_io.h
 *	  What the copy layer reads and writes for a barrier: groups of vnodes
 *	  and chunks read from the upstream in key order (chunk.c), chunks
 *	  written to the downstream (sink.c), the per-vnode state persisted
 *	  (state.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COPY_BARRIER_IO_H
#define BACKFILL_COPY_BARRIER_IO_H

#include "barrier.h"

/* chunk.c */
extern bool backfill_same_position(BarrierExecutor *exec, VnodeState *a, VnodeState *b);
extern int	backfill_actor_groups(BarrierExecutor *exec, int actor, VnodeGroup *groups);
extern void backfill_set_position(BarrierExecutor *exec, VnodeState *vs, Datum *pos);
extern VnodeFilter backfill_group_filter(BarrierExecutor *exec, VnodeGroup *group);
extern char *backfill_chunk_conditions(BackfillJob *job, const char *alias, int cmp,
									   bool has_pos, VnodeFilter filter, Oid *argtypes,
									   int *nargs);
extern int	backfill_group_params(BarrierExecutor *exec, VnodeGroup *group,
								  VnodeFilter filter, Datum *values);
extern bool backfill_vnodes_finished(BackfillJob *job, int actor);
extern int	backfill_plan_by_index_begin(void);
extern void backfill_plan_by_index_end(int level);
extern int64 backfill_read_live_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit,
									  bool per_vnode_counts);
extern void backfill_prepare_forward(BarrierExecutor *exec, const char *matching);
extern void backfill_forward_changes(BarrierExecutor *exec, int lo, int hi);
extern void backfill_forward_actors_changes(BarrierExecutor *exec, int first, int last,
											TimestampTz deadline);
extern int64 backfill_read_chunk_per_vnode(BarrierExecutor *exec, VnodeGroup *group,
										   int64 limit);
extern int64 backfill_read_chunk_per_actor(BarrierExecutor *exec, VnodeGroup *group,
										   int64 limit);

/* sink.c */
typedef struct ChunkSink ChunkSink;
extern ChunkSink *backfill_sink_begin(BarrierExecutor *exec, int64 insert_limit,
									  bool count_vnodes);
extern void backfill_sink_run(ChunkSink *sink, SPIPlanPtr plan, Datum *values);
extern int64 backfill_sink_end(ChunkSink *sink, int64 *vnode_rows, Datum *last_key,
							   bool *has_last, Datum *next_key, bool *has_next);

/* state.c */
extern void backfill_persist_vnodes(BarrierExecutor *exec, SPIPlanPtr plan);
extern void backfill_record_actor(BarrierExecutor *exec, BackfillActor *actor, int64 rows);
extern VnodeState *backfill_state_row_vnode(BackfillJob *job, HeapTuple tup, TupleDesc desc);

#endif							/* BACKFILL_COPY_BARRIER_IO_H */

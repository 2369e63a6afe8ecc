/*-------------------------------------------------------------------------
 *
 * barrier.h
 *	  The barrier executor's state, and the services that read and write
 *	  for it: chunk.c (groups of vnodes, reading the upstream in key order),
 *	  sink.c, pacing.c (whether an actor may read now), the per-vnode
 *	  persisting of state.c, executor.c itself.
 *
 * The executor (executor.c) owns the struct; a kind (kind.h) fills the
 * plans and keeps what only it needs behind kind_state.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_BARRIER_H
#define BACKFILL_BARRIER_H

#include "access/xlogdefs.h"
#include "utils/timestamp.h"

#include "backfill.h"
#include "lib.h"

/*
 * How a chunk query restricts vnodes.  A job with range vnodes (vnode.c)
 * restricts keys instead: its groups are consecutive vnodes, one range of
 * keys, whose lower bound is the position when there is one at or above the
 * group's lowest key, else that key; the filters that name a lowest key
 * leave the position out.
 */
typedef enum VnodeFilter
{
	VNODE_FILTER_NONE,			/* the set is all 256 vnodes, or keys from
								 * the position on */
	VNODE_FILTER_RANGE,			/* a contiguous range */
	VNODE_FILTER_LIST,			/* any set */
	VNODE_FILTER_KEYS_BELOW,	/* range vnodes: keys below a bound */
	VNODE_FILTER_KEYS_FROM,		/* range vnodes: keys from a bound on */
	VNODE_FILTER_KEYS_BETWEEN	/* range vnodes: both */
} VnodeFilter;

#define VNODE_NUM_FILTERS 6

/* a set of unfinished vnodes of one actor that share a position */
typedef struct VnodeGroup
{
	int			nvnodes;
	int16		vnodes[BACKFILL_VNODE_COUNT];
	int			actor;			/* index into job->actors */
} VnodeGroup;

struct KindRoutine;
typedef struct PacingState PacingState;

typedef struct BarrierExecutor
{
	BackfillJob *job;
	const struct KindRoutine *kind;
	MemoryContext cxt;			/* the executor's own, freed with it */
	MemoryContext barrier_cxt;	/* reset at every barrier */
	KeptPlans  *plans;			/* every plan below, freed with it */
	SPIPlanPtr	chunk_plans[2][VNODE_NUM_FILTERS];	/* [has position][VnodeFilter] */
	SPIPlanPtr	select_plans[2][VNODE_NUM_FILTERS]; /* the same, reading only (sink.c) */
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
	PacingState *pacing;		/* pacing.c: the run's, kept across executors */
	SPIPlanPtr	pace_plan;		/* records an actor's pace; NULL on a catalog before 1.2 */
	void	   *kind_state;		/* what the kind keeps for the run */
} BarrierExecutor;

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

/* pacing.c */
extern PacingState *backfill_pacing_create(BackfillJob *job, MemoryContext cxt);
extern void backfill_pacing_begin(PacingState *ps, int first, int last);
extern TimestampTz backfill_pacing_hold(PacingState *ps, int actor);
extern void backfill_pacing_held_by(PacingState *ps, int actor, const char *reason);
extern int64 backfill_pacing_chunk_rows(PacingState *ps, int64 limit);
extern void backfill_pacing_read(PacingState *ps, int actor, int64 rows);
extern void backfill_pacing_end(PacingState *ps, int actor);
extern const char *backfill_pacing_throttled_by(PacingState *ps, int actor);
extern bool backfill_pacing_held(PacingState *ps);
extern double backfill_pacing_rows_per_second(PacingState *ps, int actor);

/* state.c */
extern void backfill_persist_vnodes(BarrierExecutor *exec, SPIPlanPtr plan);
extern void backfill_record_actor(BarrierExecutor *exec, BackfillActor *actor, int64 rows);
extern VnodeState *backfill_state_row_vnode(BackfillJob *job, HeapTuple tup, TupleDesc desc);

/* executor.c */
extern BarrierExecutor *backfill_executor_create(BackfillJob *job);
extern BarrierExecutor *backfill_executor_refresh(BarrierExecutor *exec);
extern void backfill_executor_free(BarrierExecutor *exec);
extern int64 backfill_run_barrier(BarrierExecutor *exec, int actor, int interval_ms,
								  int rate_limit);
extern bool backfill_run_finish_barrier(BarrierExecutor *exec);
extern void backfill_run_fetch(BarrierExecutor *exec);
extern bool backfill_actor_finished(BackfillJob *job, int actor);
extern bool backfill_all_finished(BackfillJob *job);

#endif							/* BACKFILL_BARRIER_H */

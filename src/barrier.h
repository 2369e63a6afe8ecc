/*-------------------------------------------------------------------------
 *
 * barrier.h
 *	  The barrier executor's state: the types every layer that reads or
 *	  writes for a barrier shares.  The services themselves are declared by
 *	  their folders: the copy layer's in copy/barrier_io.h (chunk.c, sink.c,
 *	  state.c), the runtime's in runtime/executor.h and runtime/pacing.h.
 *
 * The executor (executor.c) owns the struct; a kind (kind.h) fills the
 * plans the kinds share (the chunks', the forwarding of captured changes)
 * and keeps its own, and what else only it needs, behind kind_state: a
 * struct of its own that its prepare callback allocates in the executor's
 * context, so that it goes with the executor, its plans kept in the
 * executor's KeptPlans as the shared ones are.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_BARRIER_H
#define BACKFILL_BARRIER_H

#include "access/xlogdefs.h"
#include "storage/buf.h"
#include "utils/timestamp.h"

#include "backfill.h"
#include "lib/lib.h"

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
	/* forwarding the captured changes of a range of vnodes (chunk.c) */
	SPIPlanPtr	forward_delete_plan;
	SPIPlanPtr	forward_insert_plan;
	bool		forward_in_place;	/* upsert, then delete the gone keys */
	SPIPlanPtr	consume_plan;
	SPIPlanPtr	actor_plan;
	SPIPlanPtr	finish_plan;
	int16		typlens[INDEX_MAX_KEYS];
	bool		typbyvals[INDEX_MAX_KEYS];
	TimestampTz *rate_next;		/* per actor: when the limiter allows a read */
	int		   *batch;			/* per actor: chunks per statement, this barrier */
	PacingState *pacing;		/* pacing.c: the run's, kept across executors */
	SPIPlanPtr	pace_plan;		/* records an actor's pace; NULL on a catalog before 1.2 */
	BufferAccessStrategy bulk_ring; /* the chunks' inserts' buffers (sink.c) */
	void	   *kind_state;		/* what the kind keeps for the run */
} BarrierExecutor;

#endif							/* BACKFILL_BARRIER_H */

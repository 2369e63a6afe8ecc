/*-------------------------------------------------------------------------
 *
 * pacing.h
 *	  Pacing: its settings, what an estimate needs of them, and whether an
 *	  actor of a barrier may read now (pacing.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_RUNTIME_PACING_H
#define BACKFILL_RUNTIME_PACING_H

#include "barrier.h"

/* pacing.c: its settings, and what an estimate needs of them */
extern void backfill_pacing_init(void);
extern int64 backfill_pacing_wal_rate(void);


/* pacing.c: an actor's reads in a barrier (the executor) */
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

#endif							/* BACKFILL_RUNTIME_PACING_H */

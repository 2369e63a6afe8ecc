/*-------------------------------------------------------------------------
 *
 * pacing.h
 *	  Pacing: its settings, and what an estimate needs of them (pacing.c).
 *
 * What the layers above this folder may call (doc/layers.md).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_RUNTIME_PACING_H
#define BACKFILL_RUNTIME_PACING_H

#include "backfill.h"

/* pacing.c: its settings, and what an estimate needs of them */
extern void backfill_pacing_init(void);
extern int64 backfill_pacing_wal_rate(void);

#endif							/* BACKFILL_RUNTIME_PACING_H */

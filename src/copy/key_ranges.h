/*-------------------------------------------------------------------------
 *
 * key_ranges.h
 *	  Ranges of keys in key order, and the range of a key (key_ranges.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COPY_KEY_RANGES_H
#define BACKFILL_COPY_KEY_RANGES_H

#include "lib/lib.h"

/*
 * Ranges of keys in key order: range 0 holds the keys below bounds[0],
 * range i the keys from bound i - 1 up to bound i, the last one the keys
 * from the last bound on.  The comparison is the key columns' default btree
 * order under the collations given (a side's columns').
 */
typedef struct KeyRanges
{
	VnodeHasher order;			/* its procs and collations; no bounds */
	int			nranges;
	Datum	   *bounds;			/* nranges - 1 keys, nkeys columns each */
} KeyRanges;

extern void key_ranges_init(KeyRanges *ranges, int nkeys, const Oid *types,
							const Oid *collations, int nranges, Datum *bounds);
extern int	key_range_of(KeyRanges *ranges, const Datum *key);

#endif							/* BACKFILL_COPY_KEY_RANGES_H */

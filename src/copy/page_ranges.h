/*-------------------------------------------------------------------------
 *
 * page_ranges.h
 *	  Which ranges of keys the rows of each page of a table fall in, and
 *	  which pages were written since a position in the WAL (page_ranges.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_COPY_PAGE_RANGES_H
#define BACKFILL_COPY_PAGE_RANGES_H

#include "access/xlogdefs.h"
#include "storage/block.h"

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

/* per page of a table, the ranges its rows fell in when it was read */
typedef struct PageRanges
{
	BlockNumber npages;
	int32	  **lists;			/* lists[b]: a count n, then n ranges in order;
								 * NULL: no row */
} PageRanges;

extern void key_ranges_init(KeyRanges *ranges, int nkeys, const Oid *types,
							const Oid *collations, int nranges, Datum *bounds);
extern int	key_range_of(KeyRanges *ranges, const Datum *key);

extern PageRanges *page_ranges_scan(Oid relid, char **key_names, KeyRanges *ranges,
									const PageRanges *old, XLogRecPtr since,
									const bool *refresh, bool *touched);
extern bytea *page_ranges_encode(const PageRanges *pages);
extern PageRanges *page_ranges_decode(bytea *stored, int nranges);

#endif							/* BACKFILL_COPY_PAGE_RANGES_H */

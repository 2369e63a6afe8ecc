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

#include "copy/key_ranges.h"

/* per page of a table, the ranges its rows fell in when it was read */
typedef struct PageRanges
{
	BlockNumber npages;
	int32	  **lists;			/* lists[b]: a count n, then n ranges in order;
								 * NULL: no row */
} PageRanges;

extern PageRanges *page_ranges_scan(Oid relid, char **key_names, KeyRanges *ranges,
									const PageRanges *old, XLogRecPtr since,
									const bool *refresh, bool *touched);
extern bytea *page_ranges_encode(const PageRanges *pages);
extern PageRanges *page_ranges_decode(bytea *stored, int nranges);

#endif							/* BACKFILL_COPY_PAGE_RANGES_H */

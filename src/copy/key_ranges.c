/*-------------------------------------------------------------------------
 *
 * key_ranges.c
 *	  Ranges of keys in key order, and the range of a key: which ranges
 *	  the rows of a page fall in, for verify_job(job, 'changed')
 *	  (page_ranges.c).
 *
 * The order is the key columns' default btree order under each column's
 * collation, the order of the statements' conditions on a range's bounds
 * (backfill_key_compare_columns), so that a row is in the range whose
 * bounds hold it whichever way it is looked at.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "copy/key_ranges.h"

/*
 * key_ranges_init
 *		Ranges of keys of the given column types, compared under the given
 *		collations, cut at bounds (nranges - 1 keys of nkeys columns).
 */
void
key_ranges_init(KeyRanges *ranges, int nkeys, const Oid *types, const Oid *collations,
				int nranges, Datum *bounds)
{
	Assert(nranges >= 1);
	backfill_vnode_order_init(&ranges->order, nkeys, types, collations, CurrentMemoryContext);
	ranges->nranges = nranges;
	ranges->bounds = bounds;
}

/*
 * key_range_of
 *		The range of a key: the number of bounds at or below it.  Rows of a
 *		page often come in key order, so the range found last is tried first.
 */
int
key_range_of(KeyRanges *ranges, const Datum *key)
{
	int			nkeys = ranges->order.nkeys;
	int			r = ranges->order.last;
	int			lo = 0;
	int			hi = ranges->nranges - 1;

	if ((r == 0 || backfill_vnode_compare(&ranges->order, &ranges->bounds[(r - 1) * nkeys], key) <= 0) &&
		(r == ranges->nranges - 1 ||
		 backfill_vnode_compare(&ranges->order, key, &ranges->bounds[r * nkeys]) < 0))
		return r;
	/* the first bound above the key: bounds 0 .. nranges - 2 */
	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (backfill_vnode_compare(&ranges->order, &ranges->bounds[mid * nkeys], key) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	ranges->order.last = lo;
	return lo;
}

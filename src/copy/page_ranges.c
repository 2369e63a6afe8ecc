/*-------------------------------------------------------------------------
 *
 * page_ranges.c
 *	  Which ranges of keys the rows of each page of a table fall in, and
 *	  which of those pages were written since a position in the WAL: what
 *	  verify_job(job, 'changed') reads instead of the rows themselves
 *	  (src/api/verify_changed.c).
 *
 * Every change to a page of a logged table is a WAL record whose end
 * becomes the page's LSN, so a page whose LSN is at or below a position
 * has not been written since (vacuum and hint bits written to the WAL make
 * a page look written when its rows are the same: it is read again for
 * nothing).  A page written since is read again, each of its rows (live,
 * dead or not committed yet: all that the page holds) mapped to the range
 * of its key; the ranges it held before and those it holds now are the
 * ranges touched.  A row deleted and pruned away since leaves no key on
 * its page: the range it was in is in the page's earlier list.
 *
 * A page is copied out under its share lock and read after, as pageinspect
 * reads one, so that no comparison function runs under a buffer lock.  A
 * key stored out of line (a toasted value) cannot be read from a row that
 * may be dead: such a page touches every range.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "copy/page_ranges.h"

/* whether a page's list names a range set in these */
static bool
names_any(const int32 *list, const bool *ranges)
{
	if (list == NULL || ranges == NULL)
		return false;
	for (int i = 1; i <= list[0]; i++)
		if (ranges[list[i]])
			return true;
	return false;
}

/* set the ranges of a page's list in touched */
static void
touch_list(const int32 *list, bool *touched)
{
	if (list == NULL)
		return;
	for (int i = 1; i <= list[0]; i++)
		touched[list[i]] = true;
}

/*
 * The ranges of the rows of a page (a copy), as a list; NULL when it holds
 * none.  *unreadable: a key is stored out of line.
 */
static int32 *
page_list(Page page, BlockNumber block, Relation rel, const AttrNumber *attnums,
		  KeyRanges *ranges, bool *unreadable)
{
	TupleDesc	desc = RelationGetDescr(rel);
	int			nkeys = ranges->order.nkeys;
	OffsetNumber maxoff;
	bool	   *seen;
	int32	   *list;
	int			n = 0;
	int			first = ranges->nranges;
	int			last = -1;

	if (PageIsNew(page))
		return NULL;
	maxoff = PageGetMaxOffsetNumber(page);
	seen = palloc0(sizeof(bool) * ranges->nranges);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		id = PageGetItemId(page, off);
		HeapTupleData tuple;
		Datum		key[FUNC_MAX_ARGS];
		bool		skip = false;
		int			r;

		if (!ItemIdIsNormal(id))
			continue;
		tuple.t_data = (HeapTupleHeader) PageGetItem(page, id);
		tuple.t_len = ItemIdGetLength(id);
		tuple.t_tableOid = RelationGetRelid(rel);
		ItemPointerSet(&tuple.t_self, block, off);
		for (int k = 0; k < nkeys && !skip; k++)
		{
			bool		isnull;
			Form_pg_attribute att = TupleDescAttr(desc, attnums[k] - 1);

			key[k] = heap_getattr(&tuple, attnums[k], desc, &isnull);
			/* a NULL key is in no range: no comparison of ranges reads it */
			skip = isnull;
			if (!isnull && att->attlen == -1 && VARATT_IS_EXTERNAL(DatumGetPointer(key[k])))
				*unreadable = true;
		}
		if (skip || *unreadable)
			continue;
		r = key_range_of(ranges, key);
		if (!seen[r])
			n++;
		seen[r] = true;
		first = Min(first, r);
		last = Max(last, r);
	}
	if (n == 0)
		return NULL;
	list = palloc(sizeof(int32) * (n + 1));
	list[0] = n;
	n = 0;
	for (int r = first; r <= last; r++)
		if (seen[r])
			list[++n] = r;
	pfree(seen);
	return list;
}

/*
 * page_ranges_scan
 *		The ranges of each page of a table (relid, a leaf: no partitions),
 *		its key the columns named.  With old (the lists of an earlier scan,
 *		whose pages were read at a position since), only the pages written
 *		since are read again, and those whose list names a range set in
 *		refresh (when given: ranges cut in parts since, which the lists name
 *		all), the others keep their lists; the ranges of every page read
 *		again, before and now, and of every page gone, are set in touched
 *		(nranges of them).  Without old, every page is read.
 */
PageRanges *
page_ranges_scan(Oid relid, char **key_names, KeyRanges *ranges, const PageRanges *old,
				 XLogRecPtr since, const bool *refresh, bool *touched)
{
	Relation	rel = table_open(relid, AccessShareLock);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	PageRanges *pages = palloc(sizeof(PageRanges));
	AttrNumber	attnums[FUNC_MAX_ARGS];
	PGAlignedBlock copy;
	bool		unreadable = false;

	for (int k = 0; k < ranges->order.nkeys; k++)
	{
		attnums[k] = get_attnum(relid, key_names[k]);
		if (attnums[k] <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							key_names[k], RelationGetRelationName(rel))));
	}
	pages->npages = RelationGetNumberOfBlocks(rel);
	pages->lists = palloc0(sizeof(int32 *) * Max(pages->npages, 1));
	for (BlockNumber b = 0; b < pages->npages; b++)
	{
		Buffer		buf;
		bool		written;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferExtended(rel, MAIN_FORKNUM, b, RBM_NORMAL, strategy);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		written = old == NULL || b >= old->npages || BufferGetLSNAtomic(buf) > since ||
			names_any(old->lists[b], refresh);
		if (written)
			memcpy(copy.data, BufferGetPage(buf), BLCKSZ);
		UnlockReleaseBuffer(buf);
		if (!written)
		{
			pages->lists[b] = old->lists[b];
			continue;
		}
		if (old != NULL && b < old->npages)
			touch_list(old->lists[b], touched);
		pages->lists[b] = page_list((Page) copy.data, b, rel, attnums, ranges, &unreadable);
		touch_list(pages->lists[b], touched);
	}
	/* pages cut off the end since (vacuum truncates empty ones) */
	for (BlockNumber b = pages->npages; old != NULL && b < old->npages; b++)
		touch_list(old->lists[b], touched);
	FreeAccessStrategy(strategy);
	table_close(rel, AccessShareLock);
	if (unreadable)
		for (int r = 0; r < ranges->nranges; r++)
			touched[r] = true;
	return pages;
}

/*
 * page_ranges_encode
 *		The stored form of the lists: int32s, the number of pages, then per
 *		page its list (a count, then the ranges; a count of 0 for none).
 */
bytea *
page_ranges_encode(const PageRanges *pages)
{
	Size		n = 1;
	bytea	   *stored;
	int32	   *out;

	for (BlockNumber b = 0; b < pages->npages; b++)
		n += 1 + (pages->lists[b] ? pages->lists[b][0] : 0);
	stored = palloc(VARHDRSZ + n * sizeof(int32));
	SET_VARSIZE(stored, VARHDRSZ + n * sizeof(int32));
	out = (int32 *) VARDATA(stored);
	*out++ = (int32) pages->npages;
	for (BlockNumber b = 0; b < pages->npages; b++)
	{
		int32		count = pages->lists[b] ? pages->lists[b][0] : 0;

		*out++ = count;
		if (count > 0)
			memcpy(out, &pages->lists[b][1], count * sizeof(int32));
		out += count;
	}
	return stored;
}

/*
 * page_ranges_decode
 *		The lists of their stored form, or NULL when it is not one of
 *		ranges below nranges.
 */
PageRanges *
page_ranges_decode(bytea *stored, int nranges)
{
	int32	   *in = (int32 *) VARDATA_ANY(stored);
	Size		n = VARSIZE_ANY_EXHDR(stored) / sizeof(int32);
	Size		i = 1;
	PageRanges *pages = palloc(sizeof(PageRanges));

	if (n < 1 || in[0] < 0)
		return NULL;
	pages->npages = (BlockNumber) in[0];
	pages->lists = palloc0(sizeof(int32 *) * Max(pages->npages, 1));
	for (BlockNumber b = 0; b < pages->npages; b++)
	{
		int32		count;

		if (i >= n || (count = in[i]) < 0 || i + 1 + count > n)
			return NULL;
		if (count > 0)
		{
			pages->lists[b] = palloc(sizeof(int32) * (count + 1));
			memcpy(pages->lists[b], &in[i], sizeof(int32) * (count + 1));
			for (int j = 1; j <= count; j++)
				if (pages->lists[b][j] < 0 || pages->lists[b][j] >= nranges)
					return NULL;
		}
		i += 1 + count;
	}
	return i == n ? pages : NULL;
}

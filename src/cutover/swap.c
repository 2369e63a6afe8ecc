/*-------------------------------------------------------------------------
 *
 * swap.c
 *	  The swap of a cutover's two tables, under the lock of both: src
 *	  (which has the name) becomes src_new_name in its schema, dst takes
 *	  src's name and schema, and what names src moves to dst.
 *
 * The order is the one the swap has always had.  Everything that prints a
 * definition naming src is read first: the tables' names (swap_renames.c),
 * the materialized views over it (matview_definitions.c), the pairs of
 * indexes whose names are exchanged (index_pairs.c), the views, the user's
 * triggers and the foreign keys that reference src.  Then the renames, the
 * indexes' names, the owner and the privileges (carry_acl.c), the
 * sequences of identity columns both tables have, the functions of src's
 * row type and the subscriptions (swap_carry.c), the columns, the table's
 * settings, row-level security, replica identity, publications, triggers,
 * views, materialized views and foreign keys.  The definitions printed
 * before the renames name src by the name dst then has, so each resolves
 * to dst.
 *
 * Every statement runs through SPI as the caller, under the search_path
 * the function's SET clause pins: an ALTER needs the privileges it would
 * need typed by hand, and a relation prints as regclass prints it.  Each
 * statement reads the catalogs as the previous ones left them (the command
 * counter).
 *
 * The result: the foreign keys added NOT VALID (those of other tables to
 * dst, dst's own to itself, and dst's own that its job added NOT VALID),
 * which the cutover validates after its transaction (finish_cutover).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "cutover/lock_step.h"
#include "cutover/swap_internal.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_swap);

/* the foreign keys added NOT VALID, an oid[] in the caller's memory context */
static Datum
added_keys(Swap *swap, MemoryContext caller)
{
	MemoryContext old = MemoryContextSwitchTo(caller);
	int			n = list_length(swap->added);
	Datum	   *oids = palloc(sizeof(Datum) * Max(n, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(n, 1));
	int			dims[1] = {n};
	int			lbs[1] = {1};
	ArrayType  *result;
	int			i = 0;
	ListCell   *lc;

	foreach(lc, swap->added)
	{
		oids[i] = ObjectIdGetDatum(lfirst_oid(lc));
		nulls[i++] = !OidIsValid(lfirst_oid(lc));
	}
	result = n == 0 ? construct_empty_array(OIDOID) :
		construct_md_array(oids, nulls, 1, dims, lbs, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
	MemoryContextSwitchTo(old);
	return PointerGetDatum(result);
}

/* an argument of the swap that must not be NULL (InvalidOid, NULL) */
static void
refuse_null(bool isnull, const char *name)
{
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * cutover_swap
 *		Swap src and dst under the lock of both (see the file header); the
 *		foreign keys added NOT VALID (an oid[], to validate after the
 *		transaction), in the caller's memory context.  The caller holds
 *		both tables and what names them ACCESS EXCLUSIVE (the lock step),
 *		and needs the privileges each ALTER needs.
 */
Datum
cutover_swap(Oid src, Oid dst, const char *src_new_name)
{
	MemoryContext caller = CurrentMemoryContext;
	Swap		swap;
	Datum		matviews;
	bool		matviews_null;
	List	   *src_indexes = NIL;
	List	   *dst_indexes = NIL;
	Datum		result;

	refuse_null(!OidIsValid(src), "src");
	refuse_null(!OidIsValid(dst), "dst");
	refuse_null(src_new_name == NULL, "src_new_name");
	memset(&swap, 0, sizeof(Swap));
	swap.src = src;
	swap.dst = dst;
	swap.src_new_name = pstrdup(src_new_name);

	backfill_spi_enter();
	swap_read_tables(&swap);
	matviews = swap_read_matviews(&swap, &matviews_null);
	cutover_query_pair(cutover_index_pairs_sql, false, swap.src, swap.dst);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		src_indexes = lappend(src_indexes, cutover_value(i, 1));
		dst_indexes = lappend(dst_indexes, cutover_value(i, 2));
	}
	/* definitions first, printed with src's name, which dst will have */
	swap_read_views(&swap);
	swap_read_triggers(&swap);
	swap_read_keys(&swap);

	swap_rename_tables(&swap, src_indexes, dst_indexes);
	swap_carry_owner(&swap);
	swap_carry_by_oid(&swap);
	swap_carry_columns(&swap);
	swap_carry_table(&swap);
	swap_carry_publications(&swap);
	swap_carry_triggers(&swap);
	swap_carry_views(&swap);
	swap_carry_matviews(&swap, matviews, matviews_null);
	swap_carry_keys(&swap);

	result = added_keys(&swap, caller);
	backfill_spi_leave();
	return result;
}

/*
 * backfill._cutover_swap(src regclass, dst regclass, src_new_name text)
 *		RETURNS oid[]
 *		cutover_swap, for a caller of SQL.
 */
Datum
backfill_cutover_swap(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(cutover_swap(PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0),
								 PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1),
								 PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2))));
}

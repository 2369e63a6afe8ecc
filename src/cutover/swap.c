/*-------------------------------------------------------------------------
 *
 * swap.c
 *	  The swap of a cutover's two tables, under the lock of both: src
 *	  (which has the name) becomes src_new_name in its schema, dst takes
 *	  src's name and schema, and what names src moves to dst.
 *
 * The order is the one the swap has always had.  Everything that prints a
 * definition naming src is read first: the materialized views over it
 * (matview_definitions.c), the pairs of indexes whose names are exchanged
 * (index_pairs.c), the views, the user's triggers and the foreign keys
 * that reference src.  Then the renames, the indexes' names, the owner and
 * the privileges (carry_acl.c), the sequences of identity columns both
 * tables have, the functions of src's row type and the subscriptions
 * (carry_functions.c, carry_subscriptions.c), the columns, the table's settings,
 * row-level security, replica identity, publications, triggers, views,
 * materialized views and foreign keys.  The definitions printed before the
 * renames name src by the name dst then has, so each resolves to dst.
 *
 * Every statement runs through SPI as the caller, under the search_path
 * the function's SET clause pins: an ALTER needs the privileges it would
 * need typed by hand, and a relation prints as regclass prints it.  A step
 * of a file of its own (the materialized views, the identity sequences) is
 * called directly, as a statement of its own with a snapshot of its own,
 * as the SQL function behind it was.  Each statement reads the catalogs as
 * the previous ones left them (the command counter).
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
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"

#include "cutover/carry_internal.h"
#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "cutover/swap_internal.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_swap);

/*
 * src's name and schema, its settings, dst's schema, and whether both are
 * tables of one access method
 */
#define TABLES \
	"SELECT s.relname, sn.nspname, dn.nspname, s.relowner, s.relrowsecurity," \
	"       s.relforcerowsecurity, s.relreplident," \
	"       s.relkind = 'r' AND d.relkind = 'r' AND s.relam = d.relam" \
	"  FROM pg_class s JOIN pg_namespace sn ON sn.oid = s.relnamespace," \
	"       pg_class d JOIN pg_namespace dn ON dn.oid = d.relnamespace" \
	" WHERE s.oid = $1 AND d.oid = $2"

/* src's and dst's names and schemas, and src's settings, before the renames */
static void
read_tables(Swap *swap)
{
	cutover_query_pair(TABLES, false, swap->src, swap->dst);
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist",
						OidIsValid(backfill_relation_owner(swap->src)) ? swap->dst : swap->src)));
	swap->src_name = cutover_value(0, 1);
	swap->src_schema = cutover_value(0, 2);
	swap->dst_schema = cutover_value(0, 3);
	swap->src_owner = cutover_oid(0, 4);
	swap->src_rowsecurity = cutover_bool(0, 5);
	swap->src_forcerowsecurity = cutover_bool(0, 6);
	swap->src_replident = cutover_value(0, 7)[0];
	swap->same_heap = cutover_bool(0, 8);
	swap->dst_text = backfill_regclass_text(swap->dst);
}

/* the materialized views over src as matview_definitions.c prints them, or NULL */
static Datum
read_matviews(Swap *swap, bool *isnull)
{
	Datum		matviews;

	cutover_statement_begin();
	matviews = cutover_matviews(swap->src, isnull);
	cutover_statement_end();
	return matviews;
}

/* the materialized views, made again over dst */
static void
carry_matviews(Swap *swap, Datum matviews, bool isnull)
{
	if (isnull)
		return;
	cutover_statement_begin();
	cutover_carry_matviews(swap->src, swap->dst, matviews);
	cutover_statement_end();
}

/*
 * The names: src takes src_new_name, dst src's schema and name; then the
 * names of each pair of indexes are exchanged through a third name (so a
 * rollback exchanges them back): the key's index of orders is orders_pkey
 * again, and a constraint's name follows its index's
 */
static void
rename_tables(Swap *swap, List *src_indexes, List *dst_indexes)
{
	ListCell   *s;
	ListCell   *d;
	int			i = 0;

	cutover_run(psprintf("ALTER TABLE %s RENAME TO %s", backfill_regclass_text(swap->src),
						 quote_identifier(swap->src_new_name)));
	if (strcmp(swap->dst_schema, swap->src_schema) != 0)
		cutover_run(psprintf("ALTER TABLE %s SET SCHEMA %s", backfill_regclass_text(swap->dst),
							 quote_identifier(swap->src_schema)));
	cutover_run(psprintf("ALTER TABLE %s RENAME TO %s", backfill_regclass_text(swap->dst),
						 quote_identifier(swap->src_name)));
	forboth(s, src_indexes, d, dst_indexes)
	{
		const char *schema = quote_identifier(swap->src_schema);
		const char *src_index = quote_identifier(lfirst(s));
		const char *dst_index = quote_identifier(lfirst(d));
		char	   *aside = psprintf("backfill_cutover_%u_%d", swap->src, ++i);

		cutover_run(psprintf("ALTER INDEX %s.%s RENAME TO %s", schema, src_index, aside));
		cutover_run(psprintf("ALTER INDEX %s.%s RENAME TO %s", schema, dst_index, src_index));
		cutover_run(psprintf("ALTER INDEX %s.%s RENAME TO %s", schema, aside, dst_index));
	}
}

/*
 * The owner, then the privileges: exactly src's, the table's and the
 * columns' (by name), with their grantors: a privilege granted through a
 * grant option stays within reach of REVOKE ... CASCADE of that option,
 * and dst's own column grants are gone (carry_acl.c)
 */
static void
carry_owner(Swap *swap)
{
	cutover_query_pair("SELECT relowner FROM pg_class WHERE oid = $1", false, swap->dst,
					   InvalidOid);
	if (SPI_processed == 1 && cutover_oid(0, 1) != swap->src_owner)
		cutover_run(psprintf("ALTER TABLE %s OWNER TO %s", backfill_regclass_text(swap->dst),
							 quote_identifier(GetUserNameFromId(swap->src_owner, false))));
	cutover_copy_acl(swap->src, swap->dst);
}

/*
 * The sequences of identity and serial columns that dst has of its own go
 * on where src's were, the functions of src's row type take dst's, the
 * subscriptions write to dst (carry_functions.c, carry_subscriptions.c)
 */
static void
carry_by_oid(Swap *swap)
{
	cutover_statement_begin();
	cutover_carry_identity(swap->src, swap->dst);
	cutover_statement_end();
	cutover_carry_functions(swap->src, swap->dst);
	cutover_carry_subscriptions(swap->src, swap->dst);
}

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
	read_tables(&swap);
	matviews = read_matviews(&swap, &matviews_null);
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

	rename_tables(&swap, src_indexes, dst_indexes);
	carry_owner(&swap);
	carry_by_oid(&swap);
	swap_carry_columns(&swap);
	swap_carry_table(&swap);
	swap_carry_publications(&swap);
	swap_carry_triggers(&swap);
	swap_carry_views(&swap);
	carry_matviews(&swap, matviews, matviews_null);
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

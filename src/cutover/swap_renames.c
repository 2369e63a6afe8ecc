/*-------------------------------------------------------------------------
 *
 * swap_renames.c
 *	  The names of the swap's two tables (swap.c): read with src's settings
 *	  before the renames, then exchanged, with the names of their pairs of
 *	  indexes.
 *
 * src takes its new name, dst src's schema and name; the names of each
 * pair of indexes go through a third name, so that a rollback, the same
 * swap the other way, exchanges them back.  Each ALTER runs as the caller,
 * in its SPI connection; the swap holds both tables ACCESS EXCLUSIVE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"

#include "cutover/swap_internal.h"
#include "lib/lib.h"

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
void
swap_read_tables(Swap *swap)
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

/*
 * The names: src takes src_new_name, dst src's schema and name; then the
 * names of each pair of indexes are exchanged through a third name (so a
 * rollback exchanges them back): the key's index of orders is orders_pkey
 * again, and a constraint's name follows its index's
 */
void
swap_rename_tables(Swap *swap, List *src_indexes, List *dst_indexes)
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

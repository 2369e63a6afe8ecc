/*-------------------------------------------------------------------------
 *
 * carry_matviews.c
 *	  The materialized views a cutover carries: each one over the old table
 *	  is made again over the new one.
 *
 * A materialized view's query names the old table by OID, and no ALTER
 * re-points it.  So the definitions are printed before the swap's renames,
 * with the old table's name, which the new table then has, and read back
 * after them (_cutover_matviews, matview_definitions.c); after the renames
 * each is created anew under that name, WITH NO DATA, given the old one's owner, privileges (grantors
 * included, _cutover_copy_acl), storage parameters, tablespace and
 * comments, takes the old one's place and gets its indexes again
 * (_cutover_carry_matviews).  It is filled by REFRESH, which runs its query
 * as its owner, under the lock, when the new table is at most 8 MB; else it
 * is left unfilled (a query of it fails until then), with a NOTICE that
 * says to refresh it after the cutover.
 *
 * Every statement runs as the caller, as the PL/pgSQL it replaces ran it;
 * the swap holds both tables ACCESS EXCLUSIVE.  A definition that no longer
 * fits the new table fails the cutover with the error of CREATE, caught in
 * a subtransaction of its own and reported as what the cutover cannot
 * carry.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"

#include "cutover/carry_internal.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_carry_matviews);

/* "" for a NULL, as format()'s %s prints it */
static const char *
or_empty(const char *s)
{
	return s ? s : "";
}

/* only a materialized view over src, as _cutover_matviews found it */
static void
check_still_there(const Matview *mv, Oid src)
{
	Oid			types[3] = {OIDOID, TEXTOID, TEXTOID};
	Datum		values[3] = {ObjectIdGetDatum(mv->old), CStringGetTextDatum(or_empty(mv->name)),
	CStringGetTextDatum(or_empty(mv->schema))};
	char		nulls[3] = {' ', mv->name ? ' ' : 'n', mv->schema ? ' ' : 'n'};

	if (SPI_execute_with_args("SELECT FROM pg_class c WHERE c.oid = $1 AND c.relkind = 'm'"
							  "   AND c.relname = $2 AND c.relnamespace::regnamespace::text = quote_ident($3)",
							  3, types, values, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: pg_class");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("materialized view %s is not a materialized view over table %s",
						backfill_regclass_text(mv->old), backfill_regclass_text(src))));
}

/* CREATE MATERIALIZED VIEW again, its error the cutover's */
static void
create_again(const Matview *mv, Oid dst)
{
	char	   *sql = psprintf("CREATE MATERIALIZED VIEW %s%s%s AS %s WITH NO DATA",
							   quote_qualified_identifier(mv->schema, mv->name),
							   or_empty(mv->options), or_empty(mv->tablespace), mv->query);
	ErrorData  *edata = backfill_subxact_exec(sql, SPI_OK_UTILITY, -1);

	if (edata == NULL)
		return;
	if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED || edata->sqlerrcode == ERRCODE_ASSERT_FAILURE)
		ReThrowError(edata);
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot carry materialized view %s.%s over to table %s",
					mv->schema, mv->name, backfill_regclass_text(dst)),
			 errdetail("Its definition does not fit table %s: %s.", backfill_regclass_text(dst), edata->message),
			 errhint("Drop materialized view %s before the cutover and create it again after it.",
					 quote_qualified_identifier(mv->schema, mv->name))));
}

/* one materialized view made again over dst, in the old one's place */
static void
carry_matview(const Matview *mv, Oid src, Oid dst, Datum matviews)
{
	Oid			fresh;

	check_still_there(mv, src);
	/* the old one out of the way first (which locks it), the new one under its name */
	cutover_run(psprintf("ALTER MATERIALIZED VIEW %s RENAME TO %s", backfill_regclass_text(mv->old),
						 quote_identifier(psprintf("backfill_cutover_%u", mv->old))));
	create_again(mv, dst);
	fresh = RangeVarGetRelid(makeRangeVar(mv->schema, mv->name, -1), NoLock, false);
	cutover_matview_owner_and_acl(mv, fresh);
	cutover_matview_comments(mv, fresh, matviews);
	cutover_run(psprintf("DROP MATERIALIZED VIEW %s", backfill_regclass_text(mv->old)));
	cutover_matview_indexes(mv, matviews);
	cutover_matview_fill(mv, fresh, dst);
}

/*
 * cutover_carry_matviews
 *		Make each materialized view of matviews (a jsonb array, as
 *		cutover_matviews(src) printed it) again over dst (see the file
 *		header).
 */
void
cutover_carry_matviews(Oid src, Oid dst, Datum matviews)
{
	Matview    *mvs;
	int			n;

	backfill_spi_enter();
	mvs = cutover_read_matviews(matviews, &n);
	for (int i = 0; i < n; i++)
		carry_matview(&mvs[i], src, dst, matviews);
	backfill_spi_leave();
}

/*
 * backfill._cutover_carry_matviews(src regclass, dst regclass,
 *		matviews jsonb) RETURNS void
 *		cutover_carry_matviews.  Not strict: a NULL array has no
 *		materialized view.
 */
Datum
backfill_cutover_carry_matviews(PG_FUNCTION_ARGS)
{
	if (!PG_ARGISNULL(2))
		cutover_carry_matviews(PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0),
							   PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1),
							   PG_GETARG_DATUM(2));
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 *
 * matview_parts.c
 *	  What a materialized view made again over the new table gets of the
 *	  old one: its owner and privileges, its comments, its indexes, and its
 *	  rows when the new table is small enough (carry_matviews.c).
 *
 * Every statement runs as the caller, as the PL/pgSQL it replaces ran it;
 * the caller is connected to SPI and the swap holds both tables ACCESS
 * EXCLUSIVE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "cutover/carry_internal.h"
#include "lib/lib.h"

/* run a query of element nth of the array matviews, $1 and $2 */
static void
element_query(const char *sql, Datum matviews, int nth)
{
	Oid			types[2] = {JSONBOID, INT4OID};
	Datum		values[2] = {matviews, Int32GetDatum(nth)};
	int			rc = SPI_execute_with_args(sql, 2, types, values, NULL, false, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed (%d): %s", rc, sql);
}

/* the new one gets the old one's owner and privileges */
void
cutover_matview_owner_and_acl(const Matview *mv, Oid fresh)
{
	char	   *owner;

	cutover_query_pair("SELECT relowner::regrole::text FROM pg_class WHERE oid = $2", false,
				  InvalidOid, fresh);
	owner = SPI_processed > 0 ? cutover_value(0, 1) : NULL;
	if (owner != NULL && mv->owner != NULL && strcmp(owner, mv->owner) != 0)
		cutover_run(psprintf("ALTER MATERIALIZED VIEW %s OWNER TO %s",
							 backfill_regclass_text(fresh), mv->owner));
	CommandCounterIncrement();
	cutover_copy_acl(mv->old, fresh);
}

/* the old one's comments, on the new one and its columns */
void
cutover_matview_comments(const Matview *mv, Oid fresh, Datum matviews)
{
	int			n;
	char	  **columns;
	char	  **texts;

	element_query("SELECT c->>'column', c->>'text' FROM jsonb_array_elements($1->$2->'comments') c",
				  matviews, mv->nth);
	n = (int) SPI_processed;
	columns = palloc(sizeof(char *) * Max(n, 1));
	texts = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		columns[i] = cutover_value(i, 1);
		texts[i] = cutover_value(i, 2);
	}
	for (int i = 0; i < n; i++)
	{
		const char *text = texts[i] ? quote_literal_cstr(texts[i]) : "NULL";

		if (columns[i] == NULL)
			cutover_run(psprintf("COMMENT ON MATERIALIZED VIEW %s IS %s",
								 backfill_regclass_text(fresh), text));
		else
			cutover_run(psprintf("COMMENT ON COLUMN %s.%s IS %s", backfill_regclass_text(fresh),
								 quote_identifier(columns[i]), text));
	}
}

/* the old one's indexes, made again by their definitions */
void
cutover_matview_indexes(const Matview *mv, Datum matviews)
{
	int			n;
	char	  **stmts;

	element_query("SELECT i FROM jsonb_array_elements_text($1->$2->'indexes') i",
				  matviews, mv->nth);
	n = (int) SPI_processed;
	stmts = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
		stmts[i] = cutover_value(i, 1);
	for (int i = 0; i < n; i++)
		cutover_run(stmts[i]);
}

/* filled under the lock when dst is at most 8 MB, else a NOTICE */
void
cutover_matview_fill(const Matview *mv, Oid fresh, Oid dst)
{
	bool		isnull;
	int64		size;

	if (!mv->populated)
		return;
	cutover_query_pair("SELECT pg_relation_size($2)", false, InvalidOid, dst);
	size = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (!isnull && size <= 8 * 1024 * 1024)
		cutover_run(psprintf("REFRESH MATERIALIZED VIEW %s", backfill_regclass_text(fresh)));
	else
		ereport(NOTICE,
				(errmsg("materialized view %s is not populated after the cutover",
						backfill_regclass_text(fresh)),
				 errdetail("Table %s is larger than 8 MB: its query would run under the lock of the cutover.",
						   backfill_regclass_text(dst)),
				 errhint("Use REFRESH MATERIALIZED VIEW %s.", backfill_regclass_text(fresh))));
}

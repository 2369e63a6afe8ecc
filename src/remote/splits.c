/*-------------------------------------------------------------------------
 *
 * splits.c
 *	  The bounds of a remote job's splits, cut from the source's statistics
 *	  of the first key column, or from a sample of it.
 *
 * create_job cuts the range of the first key column into splits (the
 * design is in kinds/remote/kind_remote.c): the inner bounds are the source's
 * pg_stats histogram of that column taken at the quantiles, or, without a
 * histogram, the quantiles of a sample of about 30000 rows.  Equal bounds
 * are kept once, so there may be fewer splits than asked for.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"

#include "remote/remote.h"

/*
 * The inner bounds of nsplits splits of table's key column "key" (its name
 * on the source), as a text[] Datum in the current memory context: fewer
 * when bounds repeat, none when the table is empty.
 */
Datum
backfill_remote_cut_splits(RemoteConn *conn, RemoteTable *table, const char *key, int nsplits)
{
	const char *params[3] = {table->nspname, table->relname, key};
	RemoteRows *rows;
	ArrayBuildState *astate = initArrayResult(TEXTOID, CurrentMemoryContext, false);
	char	   *prev = NULL;
	bool		sampled = false;
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	rows = backfill_remote_query(conn,
								 "SELECT histogram_bounds::text::text[] FROM pg_catalog.pg_stats "
								 "WHERE schemaname = $1 AND tablename = $2 AND attname = $3 "
								 "ORDER BY inherited LIMIT 1", 3, params);
	if (rows->nrows == 0 || backfill_remote_value(rows, 0, 0) == NULL)
	{
		/* no statistics: quantiles of a sample of about 30000 rows */
		char	   *sql;
		StringInfoData fractions;

		initStringInfo(&fractions);
		appendStringInfoString(&fractions, "{");
		for (int i = 1; i < nsplits; i++)
			appendStringInfo(&fractions, "%s%g", i > 1 ? "," : "", (double) i / nsplits);
		appendStringInfoString(&fractions, "}");
		sql = psprintf("SELECT (pg_catalog.percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY %s))::text[] "
					   "FROM %s TABLESAMPLE BERNOULLI ((SELECT LEAST(100, 3000000 / GREATEST(c.reltuples, 1)) "
					   "FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($2)))",
					   quote_identifier(key), table->qualified);
		params[0] = nsplits > 1 ? fractions.data : "{}";
		params[1] = table->qualified;
		rows = backfill_remote_query(conn, sql, 2, params);
		if (rows->nrows == 0 || backfill_remote_value(rows, 0, 0) == NULL)
			return PointerGetDatum(construct_empty_array(TEXTOID));
		sampled = true;
	}
	deconstruct_array(DatumGetArrayTypeP(OidInputFunctionCall(F_ARRAY_IN,
															  backfill_remote_value(rows, 0, 0),
															  TEXTOID, -1)),
					  TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 1; i < nsplits; i++)
	{
		/* a histogram's inner bounds at the quantiles; a sample's as they are */
		int			at = sampled ? i - 1 : (int) ((int64) i * (n - 1) / nsplits);
		char	   *b;

		if (at >= n || nulls[at])
			continue;
		b = TextDatumGetCString(elems[at]);
		if (prev != NULL && strcmp(prev, b) == 0)
			continue;
		astate = accumArrayResult(astate, CStringGetTextDatum(b), false, TEXTOID, CurrentMemoryContext);
		prev = b;
	}
	return makeArrayResult(astate, CurrentMemoryContext);
}


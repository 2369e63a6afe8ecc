/*-------------------------------------------------------------------------
 *
 * index_pairs.c
 *	  Which index of the new table stands for which index of the old one:
 *	  the pairs whose names the swap exchanges, and the index the new
 *	  table's replica identity uses.
 *
 * Index pairs.  An index of src and one of dst of the same definition (the
 * method, columns, expressions, predicate, uniqueness, primary key,
 * exclusion, deferrability, and the kind of constraint it carries) pair
 * up: the n-th of src's indexes of a definition, by name, with the n-th of
 * dst's, so that two indexes of one definition both get their names back,
 * and an exclusion constraint's index never pairs with a plain index.
 * Pairs whose names are already the same are left out.  A definition is
 * compared as pg_get_indexdef() prints it from " USING " on, so that the
 * index's own name and its table's do not count.
 *
 * The identity index.  A table whose replica identity is an index hands
 * it to the new table's unique index on the same columns, by name:
 * immediate, without predicate or expressions, the primary key first.
 *
 * Both are catalog queries run as the caller with the snapshot of the
 * calling statement, as the SQL functions they were did.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "cutover/carry_internal.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_index_pairs);
PG_FUNCTION_INFO_V1(backfill_cutover_identity_index);

const char cutover_index_pairs_sql[] =
	"WITH defs AS ("
	"    SELECT x.indrelid AS rel, i.relname,"
	"           concat_ws(' ', x.indisunique, x.indisprimary, x.indisexclusion, x.indimmediate,"
	"                     (SELECT c.contype FROM pg_constraint c"
	"                       WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid"
	"                         AND c.contype IN ('p', 'u', 'x')),"
	"                     substr(pg_get_indexdef(x.indexrelid),"
	"                            strpos(pg_get_indexdef(x.indexrelid), ' USING '))) AS def"
	"      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
	"     WHERE x.indrelid IN ($1, $2)"
	"), ranked AS ("
	"    SELECT rel, relname, def, row_number() OVER (PARTITION BY rel, def ORDER BY relname) AS nth"
	"      FROM defs"
	")"
	"SELECT s.relname, d.relname"
	"  FROM ranked s JOIN ranked d ON d.def = s.def AND d.nth = s.nth"
	" WHERE s.rel = $1 AND d.rel = $2 AND s.relname <> d.relname"
	" ORDER BY s.relname";

const char cutover_identity_index_sql[] =
	"SELECT di.indexrelid::regclass"
	"  FROM pg_index si, pg_index di"
	" WHERE si.indrelid = $1 AND si.indisreplident"
	"   AND di.indrelid = $2 AND di.indisunique AND di.indimmediate AND di.indpred IS NULL"
	"   AND di.indexprs IS NULL"
	"   AND ARRAY(SELECT a.attname FROM unnest(si.indkey::int2[]) WITH ORDINALITY k(n, o)"
	"               JOIN pg_attribute a ON a.attrelid = $1 AND a.attnum = k.n ORDER BY k.o)"
	"       = ARRAY(SELECT a.attname FROM unnest(di.indkey::int2[]) WITH ORDINALITY k(n, o)"
	"                 JOIN pg_attribute a ON a.attrelid = $2 AND a.attnum = k.n ORDER BY k.o)"
	" ORDER BY di.indisprimary DESC, 1"
	" LIMIT 1";

/*
 * backfill._cutover_index_pairs(src regclass, dst regclass,
 *		OUT src_index name, OUT dst_index name) RETURNS SETOF record
 *		The pairs of indexes whose names the swap exchanges, in the order of
 *		src's names (see the file header).  Not strict: a NULL table has no
 *		index.
 */
Datum
backfill_cutover_index_pairs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			src = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	Oid			dst = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);

	InitMaterializedSRF(fcinfo, 0);
	backfill_spi_enter();
	cutover_query_pair(cutover_index_pairs_sql, true, src, dst);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		for (int c = 0; c < 2; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1,
									  &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	backfill_spi_leave();
	return (Datum) 0;
}

/*
 * backfill._cutover_identity_index(src regclass, dst regclass)
 *		RETURNS regclass
 *		dst's unique index on the columns, by name, of src's replica
 *		identity index; NULL when it has none.
 */
Datum
backfill_cutover_identity_index(PG_FUNCTION_ARGS)
{
	Oid			src = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	Oid			dst = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
	Oid			index = InvalidOid;

	backfill_spi_enter();
	cutover_query_pair(cutover_identity_index_sql, true, src, dst);
	if (SPI_processed > 0)
		index = cutover_oid(0, 1);
	backfill_spi_leave();
	if (!OidIsValid(index))
		PG_RETURN_NULL();
	PG_RETURN_OID(index);
}

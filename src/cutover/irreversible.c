/*-------------------------------------------------------------------------
 *
 * irreversible.c
 *	  Whether a job can be followed back after its cutover, and if not,
 *	  why.
 *
 * A job can be turned around at the swap (api/cutover.c) only if its
 * downstream maps back onto its upstream column for column and its owner
 * may write the upstream: else the cutover cannot be rolled back, and
 * cutover() says why.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "cutover/steps.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_irreversible);

/* a column of the upstream the job does not copy, NOT NULL without a default */
static const char *const uncopied_sql =
"SELECT a.attname FROM pg_attribute a"
" WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped"
"   AND a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = ''"
"   AND a.attname <> ALL ($2) LIMIT 1";

/* whether the job computes a column: an expression that is not NULL */
static bool
computes_columns(Datum expressions)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(DatumGetArrayTypeP(expressions), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		if (!nulls[i])
			return true;
	return false;
}

/*
 * A column of upstream that the job (which copies columns) does not copy,
 * and that is NOT NULL without a default, or NULL
 */
static char *
uncopied_column(Datum upstream, bool upstream_null, Datum columns, bool columns_null)
{
	Oid			types[2] = {REGCLASSOID, TEXTARRAYOID};
	Datum		values[2] = {upstream, columns};
	char		nulls[2] = {upstream_null ? 'n' : ' ', columns_null ? 'n' : ' '};
	MemoryContext caller = CurrentMemoryContext;
	char	   *col = NULL;

	backfill_spi_enter();
	if (SPI_execute_with_args(uncopied_sql, 2, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed");
	if (SPI_processed > 0)
		col = MemoryContextStrdup(caller,
								  SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	backfill_spi_leave();
	return col;
}

/*
 * Why the job's owner may not write its upstream, or NULL: also when
 * either is unknown, as has_table_privilege() gives NULL then
 */
static char *
owner_may_not_write(HeapTupleHeader job)
{
	bool		owner_null;
	bool		upstream_null;
	Oid			owner = DatumGetObjectId(GetAttributeByName(job, "owner", &owner_null));
	Oid			upstream = DatumGetObjectId(GetAttributeByName(job, "upstream", &upstream_null));

	if (owner_null || upstream_null ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(upstream)) ||
		pg_class_aclcheck(upstream, owner, ACL_INSERT | ACL_UPDATE | ACL_DELETE) == ACLCHECK_OK)
		return NULL;
	return psprintf("the job's owner %s may not write table %s",
					DatumGetCString(DirectFunctionCall1(regroleout, ObjectIdGetDatum(owner))),
					backfill_regclass_text(upstream));
}

/*
 * cutover_irreversible, backfill._cutover_irreversible(j backfill.job)
 *		RETURNS text
 *		Why a job's downstream could not be followed back by its upstream
 *		after a cutover, or NULL: a job that can be turned around maps its
 *		downstream back onto its upstream, and its owner may write the
 *		upstream.
 */
char *
cutover_irreversible(HeapTupleHeader job)
{
	bool		isnull;
	bool		upstream_null;
	bool		columns_null;
	Datum		upstream;
	Datum		columns;
	Datum		expressions;
	char	   *col;

	(void) GetAttributeByName(job, "filter", &isnull);
	if (!isnull)
		return "the job has a filter, so the new table lacks rows the old one has";
	expressions = GetAttributeByName(job, "expressions", &isnull);
	if (!isnull && computes_columns(expressions))
		return "the job has computed columns, whose values cannot be turned back into the old table's";
	upstream = GetAttributeByName(job, "upstream", &upstream_null);
	columns = GetAttributeByName(job, "columns", &columns_null);
	col = uncopied_column(upstream, upstream_null, columns, columns_null);
	if (col != NULL)
		return psprintf("column %s of table %s is not copied, and is NOT NULL without a default",
						quote_identifier(col),
						backfill_regclass_text(DatumGetObjectId(upstream)));
	return owner_may_not_write(job);
}

Datum
backfill_cutover_irreversible(PG_FUNCTION_ARGS)
{
	char	   *why = PG_ARGISNULL(0) ? NULL : cutover_irreversible(PG_GETARG_HEAPTUPLEHEADER(0));

	if (why == NULL)
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(why));
}

/*-------------------------------------------------------------------------
 *
 * check_args.c
 *	  What the checks of the cutover share: their arguments read as the
 *	  PL/pgSQL they replace read them, the names their messages print, and
 *	  their catalog queries.
 *
 * The checks are called with what a caller could pass: a NULL job row, a
 * NULL table, a job row made up.  A NULL reads as NULL, and a query or a
 * comparison with it finds nothing, as it did in PL/pgSQL; a table is
 * printed as regclass prints it, under the search_path the function's SET
 * clause pins.  The queries run in the caller's SPI connection
 * (backfill_spi_enter), read-only in a STABLE function as PL/pgSQL ran them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "cutover/check.h"
#include "lib/lib.h"

/* a field of a job row, NULL as InvalidOid */
static Oid
job_oid(HeapTupleHeader row, const char *field)
{
	bool		isnull;
	Datum		d = GetAttributeByName(row, field, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * cutover_job_from_row
 *		The fields of a backfill.job row (NULL: every field NULL) the checks
 *		read.
 */
void
cutover_job_from_row(HeapTupleHeader row, CutoverJob *job)
{
	bool		isnull = true;
	Datum		d;

	memset(job, 0, sizeof(CutoverJob));
	if (row != NULL)
	{
		d = GetAttributeByName(row, "job_id", &isnull);
		if (!isnull)
			job->job_id = DatumGetInt64(d);
		job->upstream = job_oid(row, "upstream");
		job->downstream = job_oid(row, "downstream");
		job->change_table = job_oid(row, "change_table");
		job->owner = job_oid(row, "owner");
	}
	job->id_null = isnull;
	job->id_raise = isnull ? "<NULL>" : psprintf(INT64_FORMAT, job->job_id);
	job->id_format = isnull ? "" : job->id_raise;
}

/* the backfill.job argument argno of fcinfo */
void
cutover_job_arg(FunctionCallInfo fcinfo, int argno, CutoverJob *job)
{
	cutover_job_from_row(PG_ARGISNULL(argno) ? NULL : PG_GETARG_HEAPTUPLEHEADER(argno), job);
}

/* a regclass or oid argument, NULL as InvalidOid */
Oid
cutover_oid_arg(FunctionCallInfo fcinfo, int argno)
{
	return PG_ARGISNULL(argno) ? InvalidOid : PG_GETARG_OID(argno);
}

/* a table as RAISE prints a regclass: "<NULL>" for NULL */
char *
cutover_rel_raise(Oid relid)
{
	if (!OidIsValid(relid))
		return "<NULL>";
	return backfill_regclass_text(relid);
}

/* a table as format()'s %s prints a regclass: "" for NULL */
char *
cutover_rel_format(Oid relid)
{
	return OidIsValid(relid) ? cutover_rel_raise(relid) : "";
}

/* a name as format()'s %I prints it, which refuses a NULL */
const char *
cutover_ident(const char *name)
{
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("null values cannot be formatted as an SQL identifier")));
	return quote_identifier(name);
}

/* a role as regrole prints it */
char *
cutover_role(Oid roleid)
{
	if (!OidIsValid(roleid))
		return "";
	return DatumGetCString(DirectFunctionCall1(regroleout, ObjectIdGetDatum(roleid)));
}

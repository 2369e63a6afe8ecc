/*-------------------------------------------------------------------------
 *
 * verification.c
 *	  backfill._record_verify(): verify_job's record of its result, the
 *	  job's verify row of backfill.verification.
 *
 * verify_job is PL/pgSQL and runs as its caller, who may not write the
 * catalogs; it calls this at its end, and the row is written as the
 * extension's owner for a caller who owns the job (verification_rows.c),
 * as _cutover_record writes a cutover's row (cutover.c).  A role may so
 * write the record of its own jobs only, whatever figures it passes: the
 * record is what the job's owner says of it, as the job's downstream is
 * the owner's to change.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "catalog/catalog_access.h"
#include "catalog/verification_rows.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_record_verify);

/* a required argument of _record_verify, by its name */
static void
require_argument(FunctionCallInfo fcinfo, int n, const char *name)
{
	if (PG_ARGISNULL(n))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * backfill._record_verify(job_id bigint, method text, range_rows integer,
 *						   started_at timestamptz, ranges bigint,
 *						   rows_read bigint, differences bigint) RETURNS void
 *		The end of a verify of the job by method (checksum or rows), now;
 *		ranges and rows_read NULL where the method does not count them.
 */
Datum
backfill_record_verify(PG_FUNCTION_ARGS)
{
	char	   *method;
	Datum		figures[3];
	bool		figure_nulls[3];

	require_argument(fcinfo, 0, "job_id");
	(void) backfill_require_job_owner(PG_GETARG_INT64(0));
	require_argument(fcinfo, 1, "method");
	require_argument(fcinfo, 2, "range_rows");
	require_argument(fcinfo, 3, "started_at");
	require_argument(fcinfo, 6, "differences");
	method = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(method, "checksum") != 0 && strcmp(method, "rows") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized verify method \"%s\"", method),
				 errhint("Use checksum or rows.")));
	for (int i = 0; i < 3; i++)
	{
		figure_nulls[i] = PG_ARGISNULL(4 + i);
		figures[i] = figure_nulls[i] ? (Datum) 0 : PG_GETARG_DATUM(4 + i);
	}
	(void) backfill_record_verify_row(PG_GETARG_INT64(0), method, PG_GETARG_INT32(2),
									  PG_GETARG_TIMESTAMPTZ(3), figures, figure_nulls);
	PG_RETURN_VOID();
}

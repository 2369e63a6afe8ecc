/*-------------------------------------------------------------------------
 *
 * job_row.c
 *	  A job's row (backfill.job) as the caller of cutover(),
 *	  rollback_cutover() or finish_cutover() sees it, and the fields their
 *	  steps read of it.
 *
 * The row is read by a query of the caller's: row-level security on
 * backfill.job hides another role's job, which then does not exist for
 * the caller.  READ COMMITTED (which all three require) gives the query a
 * new snapshot: a job read after the cutover's advisory lock is held shows
 * what a cutover or rollback that held it before has committed.  The
 * caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/datum.h"

#include "cutover/steps.h"
#include "lib/lib.h"

/* a field of the job's row */
static Datum
job_field(CutoverJobRow *job, const char *field, bool *isnull)
{
	return GetAttributeByName(DatumGetHeapTupleHeader(job->job), field, isnull);
}

static Oid
job_oid(CutoverJobRow *job, const char *field)
{
	bool		isnull;
	Datum		d = job_field(job, field, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

static bool
job_bool(CutoverJobRow *job, const char *field)
{
	bool		isnull;
	Datum		d = job_field(job, field, &isnull);

	return !isnull && DatumGetBool(d);
}

/*
 * cutover_get_job
 *		The job's row (backfill.job) as the caller sees it, with its type
 *		into *type, as backfill._get_job gave it: an error if job_null, or
 *		if there is no such job or row-level security on backfill.job hides
 *		it from the caller (another role's job).  Read by a query of the
 *		caller's, not by a call of _get_job, which PUBLIC may not execute.
 */
Datum
cutover_get_job(int64 job_id, bool job_null, Oid *type)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;
	Datum		d;

	if (job_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "job_id")));
	backfill_spi_exec_args("SELECT j FROM backfill.job j WHERE j.job_id = $1", 1, types, values,
						   NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	*type = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	return datumCopy(d, false, -1);
}

/*
 * cutover_read_job
 *		The job's row (cutover_get_job) and the fields the steps read of it.
 */
void
cutover_read_job(CutoverJobRow *job, bool job_null)
{
	bool		isnull;
	Datum		status;

	job->job = cutover_get_job(job->job_id, job_null, &job->job_type);
	job->upstream = job_oid(job, "upstream");
	job->downstream = job_oid(job, "downstream");
	job->owner = job_oid(job, "owner");
	job->remote = job_bool(job, "remote");
	job->into_existing = job_bool(job, "into_existing");
	status = job_field(job, "status", &isnull);
	/* NOT NULL in the catalog; a NULL would compare as neither */
	job->status = isnull ? "cancelled" : TextDatumGetCString(status);
}

/*-------------------------------------------------------------------------
 *
 * job_run_rows.c
 *	  The statements on backfill.job and backfill.actor that the runtime and
 *	  the kinds run as a job runs: named here, as pg_cron keeps its catalog
 *	  SQL in job_metadata.c, so that no file above this folder writes SQL on
 *	  the extension's catalogs.
 *
 * Each runs under the catalog's role (backfill_catalog_enter), inside the
 * caller's SPI connection unless it says otherwise.
 *
 * May call: the foundations.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"

#include "lib.h"
#include "job_run_rows.h"

/*
 * backfill_set_background
 *		run_mode background: the launcher relaunches the job after a crash,
 *		even one right after this.  Caller connected to SPI.
 */
void
backfill_set_background(int64 job_id)
{
	RoleContext rc;

	backfill_catalog_enter(&rc);
	if (SPI_execute_with_args("UPDATE backfill.job SET run_mode = 'background' WHERE job_id = $1",
							  1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)},
							  NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.job");
	backfill_role_leave(&rc);
}

/*
 * backfill_live_job_upstreams
 *		The upstreams of the jobs that are not cancelled, each once, in OID
 *		order, palloc'd in the caller's context, and how many (*n).  Connects
 *		to SPI itself.
 */
Oid *
backfill_live_job_upstreams(uint64 *n)
{
	RoleContext rc;
	Oid		   *upstreams;
	MemoryContext cxt = CurrentMemoryContext;

	SPI_connect();
	backfill_catalog_enter(&rc);
	if (SPI_execute("SELECT DISTINCT upstream::pg_catalog.oid AS upstream FROM backfill.job "
					"WHERE status OPERATOR(pg_catalog.<>) 'cancelled' ORDER BY 1",
					true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	*n = SPI_processed;
	upstreams = MemoryContextAlloc(cxt, sizeof(Oid) * Max(*n, 1));
	for (uint64 i = 0; i < *n; i++)
	{
		bool		isnull;

		upstreams[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
													  SPI_fnumber(SPI_tuptable->tupdesc, "upstream"),
													  &isnull));
	}
	backfill_role_leave(&rc);
	SPI_finish();
	return upstreams;
}

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

#include "catalog_access.h"
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

/* ---- the snapshot kind's columns ---- */

/*
 * backfill_job_snapshot_epoch
 *		The epoch a snapshot job reads as of; 0 when it has none, or the
 *		catalog has no such column yet (1.0).  Caller connected to SPI.
 */
int64
backfill_job_snapshot_epoch(int64 job_id)
{
	RoleContext rc;
	int64		epoch = 0;

	if (!backfill_catalog_caps()->job_snapshot_epoch)
		return 0;
	backfill_catalog_enter(&rc);
	if (SPI_execute_with_args("SELECT coalesce(snapshot_epoch, 0) AS snapshot_epoch "
							  "FROM backfill.job WHERE job_id = $1",
							  1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	if (SPI_processed > 0)
	{
		bool		isnull;

		epoch = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											SPI_fnumber(SPI_tuptable->tupdesc, "snapshot_epoch"),
											&isnull));
	}
	backfill_role_leave(&rc);
	return epoch;
}

/*
 * backfill_set_snapshot_epoch
 *		Record the epoch a snapshot job reads as of.  Caller connected to SPI.
 */
void
backfill_set_snapshot_epoch(int64 job_id, int64 epoch)
{
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.job SET snapshot_epoch = $2 WHERE job_id = $1",
						   2, (Oid[]) {INT8OID, INT8OID},
						   (Datum[]) {Int64GetDatum(job_id), Int64GetDatum(epoch)},
						   NULL, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * backfill_actors_caught_up
 *		Whether each actor of the job (caught_up[i] for job->actors[i]) had
 *		caught up with the snapshot kind's log store when it last recorded a
 *		barrier; all false when the catalog has no such column yet (1.0).
 *		Caller connected to SPI.
 */
void
backfill_actors_caught_up(BackfillJob *job, bool *caught_up)
{
	RoleContext rc;
	TupleDesc	desc;

	memset(caught_up, 0, sizeof(bool) * job->nactors);
	if (!backfill_catalog_caps()->actor_log_store_caught_up)
		return;
	backfill_catalog_enter(&rc);
	if (SPI_execute_with_args("SELECT actor_id, coalesce(log_store_caught_up, false) AS caught_up "
							  "FROM backfill.actor WHERE job_id = $1",
							  1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job->job_id)},
							  NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.actor");
	desc = SPI_tuptable->tupdesc;
	for (uint64 r = 0; r < SPI_processed; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		bool		isnull;
		int32		actor_id = DatumGetInt32(SPI_getbinval(tup, desc, SPI_fnumber(desc, "actor_id"),
														   &isnull));

		for (int i = 0; i < job->nactors; i++)
			if (job->actors[i].actor_id == actor_id)
				caught_up[i] = DatumGetBool(SPI_getbinval(tup, desc, SPI_fnumber(desc, "caught_up"),
														  &isnull));
	}
	backfill_role_leave(&rc);
}

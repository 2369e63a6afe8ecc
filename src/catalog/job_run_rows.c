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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "lib/lib.h"

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

/*
 * backfill_jobs_to_relaunch
 *		The jobs that ran in the background when the server stopped, and
 *		still have something to do (a finished one may follow its upstream),
 *		in cxt, and how many (*njobs); NULL when they cannot be read.  For the
 *		launcher, connected to SPI, once it knows the extension is there.
 */
int64 *
backfill_jobs_to_relaunch(int *njobs, MemoryContext cxt)
{
	int64	   *job_ids;
	TupleDesc	desc;

	*njobs = 0;
	if (SPI_execute("SELECT job_id FROM backfill.job WHERE run_mode = 'background' "
					"AND status IN ('pending', 'backfilling', 'finished') ORDER BY job_id",
					true, 0) != SPI_OK_SELECT)
		return NULL;
	*njobs = (int) SPI_processed;
	desc = SPI_tuptable->tupdesc;
	job_ids = MemoryContextAlloc(cxt, sizeof(int64) * Max(*njobs, 1));
	for (int i = 0; i < *njobs; i++)
	{
		bool		isnull;

		job_ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], desc,
												 SPI_fnumber(desc, "job_id"), &isnull));
	}
	return job_ids;
}

/*
 * backfill_record_lost_worker
 *		Count the unexpected exit of a worker of the job as a failure, with
 *		what is known of it as the job's last error, without failing the job:
 *		the launcher starts it again.  Returns whether the job still runs in
 *		the background with something to do, so is to be started again (not
 *		stopped, cancelled, failed or dropped meanwhile).  For the launcher,
 *		connected to SPI; it commits.
 */
bool
backfill_record_lost_worker(int64 job_id, int32 actor_id, int exit_code)
{
	RoleContext rc;
	bool		relaunch;
	Datum		values[3];

	values[0] = Int64GetDatum(job_id);
	values[1] = CStringGetTextDatum(psprintf("the background worker of actor %d exited unexpectedly",
											 actor_id));
	values[2] = CStringGetTextDatum(psprintf("It exited with code %d while the job still needed it, "
											 "and no one had asked it to stop; the server log has "
											 "what ended it.  The launcher starts the job again.",
											 exit_code));
	backfill_catalog_enter(&rc);
	/* failures counts them once the catalog has it (1.3) */
	if (SPI_execute_with_args(psprintf("UPDATE backfill.job SET %s"
									   "last_error = $2, last_error_detail = $3, last_sqlstate = NULL "
									   "WHERE job_id OPERATOR(pg_catalog.=) $1 "
									   "AND run_mode OPERATOR(pg_catalog.=) 'background' "
									   "AND status OPERATOR(pg_catalog.=) ANY (ARRAY['pending', 'backfilling', 'finished'])",
									   backfill_catalog_caps()->job_failures ?
									   "failures = failures OPERATOR(pg_catalog.+) 1, " : ""),
							  3, (Oid[]) {INT8OID, TEXTOID, TEXTOID}, values,
							  NULL, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "could not update backfill.job");
	relaunch = SPI_processed == 1;
	backfill_role_leave(&rc);
	return relaunch;
}

/*
 * backfill_recount_actor_rows
 *		Set the row count of each actor of the job from rows_sql, a scalar
 *		subquery over the actor's row "a" (0 when it finds nothing): after a
 *		reschedule, a kind counts its actors' rows in its own state table.
 *		Caller connected to SPI.
 */
void
backfill_recount_actor_rows(int64 job_id, const char *rows_sql)
{
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args(psprintf("UPDATE backfill.actor a SET row_count = coalesce((%s), 0) "
									"WHERE a.job_id = $1", rows_sql),
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * backfill_jobs_reading
 *		The jobs that are not cancelled and have a downstream whose upstream
 *		is one of upstreams (an oid[]), in job order: their ids and
 *		downstreams, palloc'd, and how many.  As the current role sees them;
 *		caller connected to SPI.
 */
int
backfill_jobs_reading(Datum upstreams, int64 **job_ids, Oid **downstreams)
{
	TupleDesc	desc;
	int			n;

	backfill_spi_exec_args("SELECT j.job_id, j.downstream::pg_catalog.oid AS downstream FROM backfill.job j "
						   "WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled' "
						   "AND j.downstream IS NOT NULL "
						   "AND j.upstream::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
						   "ORDER BY j.job_id",
						   1, (Oid[]) {OIDARRAYOID}, &upstreams, NULL, SPI_OK_SELECT);
	n = (int) SPI_processed;
	desc = SPI_tuptable->tupdesc;
	*job_ids = palloc(sizeof(int64) * Max(n, 1));
	*downstreams = palloc(sizeof(Oid) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		bool		isnull;

		(*job_ids)[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], desc,
													SPI_fnumber(desc, "job_id"), &isnull));
		(*downstreams)[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], desc,
														   SPI_fnumber(desc, "downstream"), &isnull));
	}
	return n;
}

/*
 * backfill_job_filling
 *		The first job that is not cancelled whose downstream is the table, or
 *		0.  As the current role sees them; caller connected to SPI.
 */
int64
backfill_job_filling(Oid downstream)
{
	bool		isnull;

	backfill_spi_exec_args("SELECT j.job_id FROM backfill.job j WHERE j.status OPERATOR(pg_catalog.<>) 'cancelled' "
						   "AND j.downstream OPERATOR(pg_catalog.=) $1 "
						   "ORDER BY j.job_id LIMIT 1",
						   1, (Oid[]) {OIDOID}, (Datum[]) {ObjectIdGetDatum(downstream)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed == 0)
		return 0;
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
									   SPI_fnumber(SPI_tuptable->tupdesc, "job_id"), &isnull));
}

/* ---- the lines of progress ---- */

/*
 * backfill_job_progress_text
 *		The job's progress as backfill.ddl_progress shows it, and with
 *		with_eta its ETA as backfill.jobs does (a catalog that records the
 *		pace), as text; NULL when the current role sees no such row.  Caller
 *		connected to SPI.
 */
void
backfill_job_progress_text(int64 job_id, bool with_eta, char **progress, char **eta)
{
	TupleDesc	desc;

	*progress = NULL;
	*eta = NULL;
	backfill_spi_exec_args(with_eta ?
						   "SELECT p.progress, j.eta::text AS eta FROM backfill.ddl_progress p "
						   "JOIN backfill.jobs j ON j.job_id = p.ddl_id WHERE p.ddl_id = $1" :
						   "SELECT progress, NULL AS eta FROM backfill.ddl_progress WHERE ddl_id = $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed != 1)
		return;
	desc = SPI_tuptable->tupdesc;
	*progress = SPI_getvalue(SPI_tuptable->vals[0], desc, SPI_fnumber(desc, "progress"));
	*eta = SPI_getvalue(SPI_tuptable->vals[0], desc, SPI_fnumber(desc, "eta"));
}

/*
 * backfill_job_summary_text
 *		What a run ends with: the job's status, its progress as
 *		backfill.jobs shows it, and its failures (once the catalog counts
 *		them), as "finished, 100%, 0 failures"; NULL when the current role
 *		sees no such row.  Caller connected to SPI.
 */
char *
backfill_job_summary_text(int64 job_id)
{
	TupleDesc	desc;
	HeapTuple	tup;
	char	   *status;
	char	   *progress;
	char	   *failures;

	backfill_spi_exec_args(psprintf("SELECT s.status, s.progress, %s AS failures "
									"FROM backfill.jobs s JOIN backfill.job j ON j.job_id = s.job_id "
									"WHERE s.job_id = $1",
									backfill_catalog_caps()->job_failures ? "j.failures" : "0"),
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed != 1)
		return NULL;
	desc = SPI_tuptable->tupdesc;
	tup = SPI_tuptable->vals[0];
	status = SPI_getvalue(tup, desc, 1);
	progress = SPI_getvalue(tup, desc, 2);
	failures = SPI_getvalue(tup, desc, 3);
	return psprintf("%s%s%s, %s failure%s", status,
					progress ? ", " : "", progress ? progress : "",
					failures, strcmp(failures, "1") == 0 ? "" : "s");
}

/*
 * backfill_job_rows_left
 *		The job's progress as backfill.ddl_progress shows it (NULL when the
 *		current role sees no such row) and the rows its actors have still to
 *		read of its total; false when that is unknown.  Caller connected to
 *		SPI.
 */
bool
backfill_job_rows_left(int64 job_id, char **progress, double *left)
{
	TupleDesc	desc;
	Datum		d;
	bool		isnull;

	*progress = NULL;
	backfill_spi_exec_args("SELECT p.progress, j.total_rows - "
						   "(SELECT coalesce(pg_catalog.sum(a.row_count), 0) FROM backfill.actor a "
						   "WHERE a.job_id = j.job_id)::float8 AS rows_left "
						   "FROM backfill.ddl_progress p JOIN backfill.job j ON j.job_id = p.ddl_id "
						   "WHERE p.ddl_id = $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed != 1)
		return false;
	desc = SPI_tuptable->tupdesc;
	*progress = SPI_getvalue(SPI_tuptable->vals[0], desc, SPI_fnumber(desc, "progress"));
	d = SPI_getbinval(SPI_tuptable->vals[0], desc, SPI_fnumber(desc, "rows_left"), &isnull);
	if (isnull)
		return false;
	*left = DatumGetFloat8(d);
	return true;
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

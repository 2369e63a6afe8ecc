/*-------------------------------------------------------------------------
 *
 * progress.c
 *	  What a person watching a job at psql sees: a line of progress sent to
 *	  the client every backfill.client_progress_interval, by a run in the
 *	  foreground (CALL backfill.run_job) and by backfill.wait_job.
 *
 * The line is an INFO message, as VACUUM VERBOSE and ANALYZE VERBOSE send
 * theirs: the session asked for the work and the progress is the answer to
 * that request, so it reaches the client whatever client_min_messages says
 * (a NOTICE would be hidden by client_min_messages = warning, which scripts
 * set to keep psql quiet), and it stays out of the server log unless
 * log_min_messages is lowered to info (the log has its own lines, at most
 * every backfill.log_progress_interval, from each worker).  The setting
 * turns the lines off.
 *
 * One line: the job, its progress as ddl_progress shows it (RisingWave's
 * text), its rows per second, its ETA, and what holds it back, the same
 * words as the workers' log lines:
 *
 *	  INFO:  backfill job 1: 42.17% (421700/1000000), 1000 rows/s, ETA 00:09:38, throttled by rate limit (1000 rows/s per actor)
 *
 * A run in the foreground knows its pace itself (driver.c hands it over);
 * wait_job reads backfill.jobs, which the workers keep up to date.  Every
 * run in the foreground ends with a line of its own, even one shorter than
 * the interval or one of a job that had finished already: how long it ran,
 * and the job's status, progress and failures as they are then:
 *
 *	  INFO:  backfill job 1: run ended after 12.3 s: finished, 100%, 0 failures; 1000000 rows copied, 1200 changes applied, 14 barriers, 81301 rows/s
 *
 * A run that fails ends with "run failed after 2.0 s:" and what it did, a
 * worker's run with "backfill job 1 actor 2: run ended", "stopped" or
 * "failed" in the server log.  The lines that say what the run waits for
 * (a lock, an index build) come from lib/lines.c, where the layers below
 * print them; this file begins and ends them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "catalog/job_run_rows.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_report_progress);

/* backfill.client_progress_interval: ms between two lines to the client */
static int	client_progress_interval_ms = 10000;

/* define the setting; from _PG_init */
void
backfill_progress_init(void)
{
	DefineCustomIntVariable("backfill.client_progress_interval",
							"Time between two lines of progress sent to the client by run_job and wait_job.",
							"Zero turns the lines off.",
							&client_progress_interval_ms,
							10000,
							0,
							INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
}

/*
 * backfill_progress_due
 *		Whether a line of progress is due: the setting is on and its
 *		interval has passed since "since", the start of the watch or the
 *		last line.
 */
bool
backfill_progress_due(TimestampTz since)
{
	return client_progress_interval_ms > 0 &&
		TimestampDifferenceExceeds(since, GetCurrentTimestamp(), client_progress_interval_ms);
}

/*
 * backfill_progress_send
 *		Send the line of a job to the client: its progress text (NULL when
 *		unknown), its rows per second and ETA in seconds (negative when
 *		unknown), what holds it back (NULL for nothing).
 */
void
backfill_progress_send(int64 job_id, const char *progress, double rows_per_second,
					   double eta_seconds, const char *throttled_by)
{
	char		rate[64];
	char		eta[64];

	if (rows_per_second >= 0)
		snprintf(rate, sizeof(rate), "%.0f rows/s", rows_per_second);
	else
		strlcpy(rate, "rows/s unknown", sizeof(rate));
	if (eta_seconds >= 0 && eta_seconds < (double) INT64CONST(1000000000))
	{
		int64		s = (int64) rint(eta_seconds);

		snprintf(eta, sizeof(eta), "%02lld:%02d:%02d", (long long) (s / 3600),
				 (int) (s / 60 % 60), (int) (s % 60));
	}
	else
		strlcpy(eta, "unknown", sizeof(eta));
	ereport(INFO,
			(errmsg("backfill job %lld: %s, %s, ETA %s%s%s",
					(long long) job_id, progress ? progress : "no progress", rate, eta,
					throttled_by ? ", throttled by " : "", throttled_by ? throttled_by : "")));
}

/*
 * backfill_progress_run_begin
 *		Begin the lines of a run (lib/lines.c): of a run in the foreground
 *		(actor_id < 0), INFO lines to the client every
 *		backfill.client_progress_interval; of a worker's actor, LOG lines
 *		every backfill.log_progress_interval (log_interval_ms, driver.c).
 */
void
backfill_progress_run_begin(int64 job_id, int32 actor_id, int log_interval_ms)
{
	char		prefix[64];

	if (actor_id < 0)
	{
		snprintf(prefix, sizeof(prefix), "backfill job %lld", (long long) job_id);
		backfill_lines_begin(prefix, INFO, client_progress_interval_ms);
	}
	else
	{
		snprintf(prefix, sizeof(prefix), "backfill job %lld actor %d",
				 (long long) job_id, actor_id);
		backfill_lines_begin(prefix, LOG, log_interval_ms);
	}
}

/* what the run did, as the line that ends it says it */
static char *
run_counts_text(double elapsed)
{
	const BackfillRunCounts *counts = backfill_run_counts(NULL);

	return psprintf("%lld rows copied, %lld changes applied, %lld barrier%s, %.0f rows/s",
					(long long) counts->rows_copied, (long long) counts->changes_applied,
					(long long) counts->barriers, counts->barriers == 1 ? "" : "s",
					elapsed > 0 ? counts->rows_copied / elapsed : 0);
}

/* seconds since the run began */
static double
run_elapsed(void)
{
	TimestampTz started_at;

	(void) backfill_run_counts(&started_at);
	return (GetCurrentTimestamp() - started_at) / 1000000.0;
}

/*
 * backfill_progress_run_end
 *		End the lines of a run with the line that ends it, when its lines
 *		are on: how long it ran, how it ended ("ended", "stopped" or
 *		"failed"), for a run in the foreground that ended the job's status,
 *		progress and failures as they are then (job_id > 0: the caller is
 *		connected to SPI, in a transaction), then what it did: rows copied,
 *		changes applied, barriers, rows per second.
 */
void
backfill_progress_run_end(int64 job_id, const char *how)
{
	double		elapsed;
	char	   *summary = NULL;

	if (!backfill_lines_on())
	{
		backfill_lines_end();
		return;
	}
	elapsed = run_elapsed();
	if (job_id > 0)
	{
		summary = backfill_job_summary_text(job_id);
		if (summary == NULL)
			summary = "no longer visible";
	}
	backfill_line("run %s after %.1f s: %s%s%s", how, elapsed,
				  summary ? summary : "", summary ? "; " : "",
				  run_counts_text(elapsed));
	backfill_lines_end();
}

/*
 * backfill._report_progress(job_id bigint, since timestamptz) RETURNS
 * timestamptz, for wait_job: when a line is due since "since", sends the
 * job's line as backfill.jobs shows it to the current user and returns the
 * time it was sent; else (or when the user cannot see the job) returns
 * "since".
 */
Datum
backfill_report_progress(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(backfill_report_progress_since(PG_GETARG_INT64(0),
														 PG_GETARG_TIMESTAMPTZ(1)));
}

/*
 * backfill_report_progress_since
 *		What backfill._report_progress does, for wait_job and wait_for_job
 *		(wait.c).
 */
TimestampTz
backfill_report_progress_since(int64 job_id, TimestampTz since)
{
	char	   *progress = NULL;
	char	   *throttled_by = NULL;
	double		rate = -1;
	double		eta = -1;
	bool		isnull;

	if (!backfill_progress_due(since))
		return since;

	backfill_spi_enter();
	backfill_spi_exec_args("SELECT progress, rows_per_second::float8, "
						   "extract(epoch FROM eta)::float8, throttled_by "
						   "FROM backfill.jobs WHERE job_id = $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	/* a job the current user cannot see has no line */
	if (SPI_processed != 1)
	{
		backfill_spi_leave();
		return since;
	}
	{
		HeapTuple	tuple = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		Datum		d;

		progress = SPI_getvalue(tuple, desc, 1);
		d = SPI_getbinval(tuple, desc, 2, &isnull);
		if (!isnull)
			rate = DatumGetFloat8(d);
		d = SPI_getbinval(tuple, desc, 3, &isnull);
		if (!isnull)
			eta = DatumGetFloat8(d);
		throttled_by = SPI_getvalue(tuple, desc, 4);
	}
	backfill_progress_send(job_id, progress, rate, eta, throttled_by);
	backfill_spi_leave();
	return GetCurrentTimestamp();
}

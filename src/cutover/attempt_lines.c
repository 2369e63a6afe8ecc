/*-------------------------------------------------------------------------
 *
 * attempt_lines.c
 *	  What the cutover's attempts say: in pg_stat_activity what they do, a
 *	  NOTICE and a line in the server log for each failed attempt, an INFO
 *	  line at most every backfill.client_progress_interval while they last,
 *	  and the error that ends them.
 *
 * The INFO line names the processes that hold a lock on either table, as
 * pg_locks shows them every role; no query, user or value.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "cutover/attempts.h"
#include "cutover/lock_step.h"
#include "cutover/steps.h"
#include "lib/lib.h"

/* the processes but this one holding a lock on either table */
static const char *const holders_sql =
"SELECT string_agg(DISTINCT l.pid::text, ', ' ORDER BY l.pid::text)"
"  FROM pg_locks l"
" WHERE l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
"   AND l.relation IN ($1, $2) AND l.granted AND l.pid <> pg_backend_pid()";

/*
 * What the attempts do, in pg_stat_activity (cutover_report); nothing for
 * a NULL job, as backfill._cutover_report, STRICT, did nothing
 */
void
backfill_attempt_report(Attempts *a, const char *what)
{
	if (!a->job_null)
		cutover_report(a->job_id, what);
}

/* a regclass argument as format('%s') shows it: "" for NULL */
char *
backfill_attempt_rel(Oid relid)
{
	return OidIsValid(relid) ? backfill_regclass_text(relid) : "";
}

/* the processes holding a lock on either table, as the line shows them */
static char *
holders(Attempts *a)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(a->src), ObjectIdGetDatum(a->dst)};
	char		nulls[2] = {OidIsValid(a->src) ? ' ' : 'n', OidIsValid(a->dst) ? ' ' : 'n'};
	char	   *pids;

	backfill_spi_exec_args(holders_sql, 2, types, values, nulls, SPI_OK_SELECT);
	pids = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	if (pids == NULL)
		return "no holder on either table (queued behind other requests, or a lock on what the swap alters)";
	return psprintf("held by %s %s", strchr(pids, ',') ? "pids" : "pid", pids);
}

/* how long the lock step has waited so far, in s, rounded as round(x, 1) */
static char *
waited_s(Attempts *a)
{
	Numeric		us = int64_to_numeric(GetCurrentTimestamp() - a->wait_began);
	Datum		s = DirectFunctionCall2(numeric_div, NumericGetDatum(us),
										NumericGetDatum(int64_to_numeric(USECS_PER_SEC)));

	return DatumGetCString(DirectFunctionCall1(numeric_out,
											   DirectFunctionCall2(numeric_round, s,
																   Int32GetDatum(1))));
}

/*
 * A failed attempt, its subtransaction rolled back: say so, and at most
 * every interval how long the wait has lasted and who holds the tables
 */
void
backfill_attempt_failed(Attempts *a, bool deadlock)
{
	char	   *what;

	if (deadlock)
		/*
		 * PostgreSQL broke a deadlock with another transaction by failing
		 * the attempt: the other goes on
		 */
		what = psprintf("cutover of backfill job %s: attempt %d of %s gave way to another transaction in a deadlock over table %s",
						a->job_null ? "" : psprintf(INT64_FORMAT, a->job_id), a->tries,
						a->attempts ? a->attempts : "", backfill_attempt_rel(a->src));
	else
		what = psprintf("cutover of backfill job %s: attempt %d of %s could not lock table %s within %s ms",
						a->job_null ? "" : psprintf(INT64_FORMAT, a->job_id), a->tries,
						a->attempts ? a->attempts : "", backfill_attempt_rel(a->src),
						a->timeout_ms ? a->timeout_ms : "");
	ereport(NOTICE, (errmsg_internal("%s", what)));
	ereport(LOG, (errmsg_internal("%s", what)));
	if (a->line_every_us > 0 &&
		(double) (GetCurrentTimestamp() - a->told_at) >= a->line_every_us)
	{
		char	   *held = holders(a);

		ereport(INFO,
				(errmsg_internal("backfill job %s: cutover waiting for AccessExclusiveLock on table %s for %s s (attempt %d of %s), %s",
								 a->job_null ? "" : psprintf(INT64_FORMAT, a->job_id),
								 backfill_attempt_rel(a->src), waited_s(a), a->tries,
								 a->attempts ? a->attempts : "", held)));
		a->told_at = GetCurrentTimestamp();
	}
}

/* give up after the last attempt, everything as it was */
void
backfill_attempt_give_up(Attempts *a)
{
	backfill_attempt_report(a, "gave up");
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg_internal("could not lock table %s for the cutover of backfill job %s in %s attempts",
							 backfill_attempt_rel(a->src), a->job_null ? "" : psprintf(INT64_FORMAT, a->job_id),
							 a->attempts ? a->attempts : ""),
			 errdetail_internal("Each attempt waited at most %s ms for each lock, of the table and of what the swap alters; another transaction held one or was ahead in the queue each time. Nothing was changed.",
								a->timeout_ms ? a->timeout_ms : ""),
			 errhint("Find the long transaction on the table in pg_locks and pg_stat_activity, or try again with more attempts or a longer lock_timeout.")));
}

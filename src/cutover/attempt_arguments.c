/*-------------------------------------------------------------------------
 *
 * attempt_arguments.c
 *	  The arguments of the cutover's attempts (attempts.c) read once: the
 *	  job, the tables, src's new name, the caller's lock_timeout in ms and
 *	  attempts as the lines show them, and how often the wait says how long
 *	  it has lasted (backfill.client_progress_interval).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/numeric.h"

#include "cutover/attempts.h"

/*
 * The interval between two lines of the wait, in microseconds, from
 * backfill.client_progress_interval as current_setting() shows it: a
 * number of ms, or with its unit
 */
double
backfill_attempt_line_interval(void)
{
	const char *setting = GetConfigOptionByName("backfill.client_progress_interval", NULL, true);
	const char *text = setting;
	Interval   *every;

	if (setting == NULL || setting[0] == '\0')
		text = "10 s";
	else if (strspn(setting, "0123456789") == strlen(setting))
		text = psprintf("%s ms", setting);
	every = DatumGetIntervalP(DirectFunctionCall3(interval_in, CStringGetDatum(text),
												  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
	return (double) every->time + (double) every->day * USECS_PER_DAY +
		(double) every->month * DAYS_PER_MONTH * USECS_PER_DAY;
}

/*
 * backfill_attempt_read_arguments
 *		The attempts' arguments: the job (NULL: none), the tables
 *		(InvalidOid: none), src's new name (NULL: none) and the caller's
 *		lock_timeout and attempts, arguments timeout_arg and attempts_arg
 *		of fcinfo (NULL: no limit)
 */
void
backfill_attempt_read_arguments(Attempts *a, const int64 *job_id, Oid src, Oid dst,
								const char *src_new_name, FunctionCallInfo fcinfo,
								int timeout_arg, int attempts_arg)
{
	memset(a, 0, sizeof(Attempts));
	a->job_null = job_id == NULL;
	a->job_id = job_id ? *job_id : 0;
	a->src = src;
	a->dst = dst;
	a->src_new_name = src_new_name;
	if (!PG_ARGISNULL(timeout_arg))
	{
		/* (extract(epoch FROM lock_timeout) * 1000)::bigint */
		Datum		epoch = DirectFunctionCall2(extract_interval, CStringGetTextDatum("epoch"),
												PG_GETARG_DATUM(timeout_arg));
		Datum		ms = DirectFunctionCall2(numeric_mul, epoch,
											 NumericGetDatum(int64_to_numeric(1000)));

		a->timeout_ms = psprintf(INT64_FORMAT, DatumGetInt64(DirectFunctionCall1(numeric_int8, ms)));
	}
	if (!PG_ARGISNULL(attempts_arg))
	{
		a->max_tries = PG_GETARG_INT32(attempts_arg);
		a->attempts = psprintf("%d", a->max_tries);
	}
	a->line_every_us = backfill_attempt_line_interval();
	a->wait_began = a->told_at = GetCurrentTimestamp();
	a->caller = CurrentMemoryContext;
}

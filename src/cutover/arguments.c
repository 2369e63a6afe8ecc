/*-------------------------------------------------------------------------
 *
 * arguments.c
 *	  What every cutover function checks before the lock step: the
 *	  lock_timeout and attempts they share, the arguments that must not be
 *	  NULL, and the isolation level they run at.
 *
 * The cutover, its rollback and finish_cutover take lock_timeout and
 * attempts alike and check them alike.  Whether a job can be followed
 * back after its cutover is irreversible.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "cutover/steps.h"

PG_FUNCTION_INFO_V1(backfill_cutover_arguments);

/* an interval constant */
static Datum
interval_of(const char *text)
{
	return DirectFunctionCall3(interval_in, CStringGetDatum(text),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/*
 * cutover_lock_arguments, backfill._cutover_arguments(lock_timeout interval,
 *												   attempts integer)
 *		RETURNS void
 *		Check the lock_timeout and attempts of a cutover or rollback.
 */
void
cutover_lock_arguments(Datum lock_timeout, bool lock_timeout_null, int32 attempts,
					   bool attempts_null)
{
	if (lock_timeout_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "lock_timeout")));
	if (attempts_null)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "attempts")));
	if (DatumGetBool(DirectFunctionCall2(interval_lt, lock_timeout, interval_of("1ms"))) ||
		DatumGetBool(DirectFunctionCall2(interval_gt, lock_timeout, interval_of("1 hour"))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_timeout must be between 1 ms and 1 hour"),
				 errdetail("A writer queued behind the cutover's lock waits up to this long at each attempt.")));
	if (attempts < 1 || attempts > 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("attempts must be between 1 and 1000")));
}

Datum
backfill_cutover_arguments(PG_FUNCTION_ARGS)
{
	cutover_lock_arguments(PG_GETARG_DATUM(0), PG_ARGISNULL(0), PG_GETARG_INT32(1),
						   PG_ARGISNULL(1));
	PG_RETURN_VOID();
}

/*
 * cutover_require_read_committed
 *		Each of the three reads the job as the cutover calls it waited for
 *		left it, which only READ COMMITTED shows it.
 */
void
cutover_require_read_committed(const char *function)
{
	if (XactIsoLevel != XACT_READ_COMMITTED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("backfill.%s() must run at isolation level READ COMMITTED", function),
				 errdetail("It reads the job as the cutover calls it waited for left it.")));
}

/*
 * cutover_refuse_null
 *		An argument of the caller's that must not be NULL.
 */
void
cutover_refuse_null(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", name)));
}

/*
 * cutover_check_arguments
 *		The lock_timeout and attempts of the caller's arguments, checked as
 *		backfill._cutover_arguments checks them (cutover_lock_arguments).
 */
void
cutover_check_arguments(FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg)
{
	cutover_lock_arguments(PG_GETARG_DATUM(timeout_arg), PG_ARGISNULL(timeout_arg),
						   PG_GETARG_INT32(attempts_arg), PG_ARGISNULL(attempts_arg));
}

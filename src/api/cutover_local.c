/*-------------------------------------------------------------------------
 *
 * cutover_local.c
 *	  The local cutover of a finished job, for backfill.cutover()
 *	  (cutover_start.c): its checks, the verify gate, the attempts and the
 *	  swap, then the job turned around and handed over, or let go when it
 *	  cannot follow the new table back; the cutover row, the log line and
 *	  pg_stat_activity.
 *
 * Each step runs as the caller, through SPI (src/cutover/steps.c) or by a
 * direct call of the C behind an internal function, which PUBLIC may not
 * execute, as a statement of its own; each checks its own arguments and
 * the caller's rights: the caller needs the privileges the swap's
 * statements need.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "api/cutover.h"
#include "api/cutover_start.h"
#include "catalog/cutover_rows.h"
#include "cutover/queries.h"
#include "lib/lib.h"

/* a text Datum of a C string, or NULL (*isnull) */
Datum
cutover_text_or_null(const char *str, bool *isnull)
{
	*isnull = str == NULL;
	return str ? CStringGetTextDatum(str) : (Datum) 0;
}

/* an OID Datum, or NULL (*isnull) for InvalidOid */
Datum
cutover_oid_or_null(Oid oid, bool *isnull)
{
	*isnull = !OidIsValid(oid);
	return ObjectIdGetDatum(oid);
}

/*
 * The cutover row: cut over, reversible or not.  dst_schema is the new
 * table's schema before the swap moved it into the old table's: a rollback
 * moves it back there.
 */
static void
record(CutoverJobRow *job, const char *old_name, const char *dst_name, Oid dst_schema,
	   CutoverSwapped *swapped, bool reversible)
{
	Datum		values[CUTOVER_RECORD_ARGS];
	bool		nulls[CUTOVER_RECORD_ARGS] = {0};

	cutover_statement_begin();
	values[0] = Int64GetDatum(job->job_id);
	values[1] = CStringGetTextDatum("cut_over");
	values[3] = cutover_oid_or_null(job->upstream, &nulls[3]);
	values[4] = cutover_oid_or_null(job->downstream, &nulls[4]);
	values[5] = CStringGetTextDatum(old_name);
	values[6] = cutover_oid_or_null(dst_schema, &nulls[6]);
	values[7] = cutover_text_or_null(dst_name, &nulls[7]);
	values[8] = BoolGetDatum(reversible);
	values[9] = BoolGetDatum(job->into_existing);
	values[12] = BoolGetDatum(false);
	cutover_record_attempts(values, nulls, swapped);
	cutover_record(values, nulls);
	cutover_statement_end();
}

/*
 * cutover_local
 *		Cut the job over, a finished local job (see the file header), into
 *		*result.
 */
void
cutover_local(FunctionCallInfo fcinfo, CutoverJobRow *job, bool verify, CutoverResult *result)
{
	char	   *old_name;
	char	   *why;
	char	   *dst_name;
	char	   *up_text;
	char	   *down_text;
	Oid			dst_schema;
	CutoverSwapped swapped;

	if (strcmp(job->status, "finished") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cut over backfill job " INT64_FORMAT " because it has not finished",
						job->job_id),
				 errdetail("Its status is %s: its downstream table is not yet equal to its upstream table.",
						   job->status),
				 errhint("Wait until it has finished: backfill.wait_job(" INT64_FORMAT ").",
						 job->job_id)));
	old_name = cutover_old_name(job, PG_ARGISNULL(ARG_OLD_NAME) ? NULL :
								PG_GETARG_TEXT_PP(ARG_OLD_NAME));
	why = cutover_check_local(job, PG_GETARG_DATUM(ARG_ACCEPT), PG_ARGISNULL(ARG_ACCEPT),
							  old_name);

	dst_name = cutover_rel_name(job->downstream);
	dst_schema = get_rel_namespace(job->downstream);
	up_text = backfill_regclass_text(job->upstream);
	down_text = backfill_regclass_text(job->downstream);
	if (verify)
		cutover_verify_gate(job->job_id);
	cutover_swap_attempts(job, old_name, fcinfo, ARG_LOCK_TIMEOUT, ARG_ATTEMPTS, &swapped);
	if (why == NULL)
	{
		cutover_statement_begin();
		cutover_turn_job(job->job_id, true);
		cutover_statement_end();
		/* the job of a role cut over by another belongs to its tables' owner now */
		cutover_statement_begin();
		cutover_hand_over_job(job->job_id);
		cutover_statement_end();
	}
	else
	{
		/* the old table no longer takes writes: the job has nothing to follow */
		backfill_let_job_go(job->job_id, job->job);
	}

	record(job, old_name, dst_name, dst_schema, &swapped, why == NULL);
	ereport(LOG,
			(errmsg("cutover of backfill job " INT64_FORMAT ": table %s swapped with table %s (renamed %s) after %d attempts, lock held %s ms",
					job->job_id, down_text, up_text, old_name, swapped.tries,
					cutover_ms_text(&swapped))));
	cutover_report(job->job_id, "cut over");

	result->state = "cut_over";
	result->values[OUT_ATTEMPTS_MADE] = Int32GetDatum(swapped.tries);
	result->values[OUT_LOCK_HELD_MS] = Float8GetDatum(swapped.lock_held_ms);
	result->values[OUT_OLD_TABLE] = ObjectIdGetDatum(job->upstream);
	result->values[OUT_ROLLBACK_POSSIBLE] = BoolGetDatum(why == NULL);
	result->nulls[OUT_ATTEMPTS_MADE] = false;
	result->nulls[OUT_LOCK_HELD_MS] = swapped.lock_held_null;
	result->nulls[OUT_OLD_TABLE] = false;
	result->nulls[OUT_ROLLBACK_POSSIBLE] = false;
}

/*-------------------------------------------------------------------------
 *
 * jobs.c
 *	  The catalog writes of the SQL functions, on behalf of the job's owner.
 *
 * No role but the extension's owner may write backfill.job and
 * backfill.actor.  The SQL functions that change a job (cancel_job,
 * drop_job, stop_job, alter_rate_limit, reschedule, recreate_job) run with
 * their caller's rights and make their catalog writes through
 * backfill._job_catalog(job_id, op, arg), which checks that the caller has
 * the privileges of the job's owner, then does one of a fixed set of writes
 * as the extension's owner.  A SECURITY DEFINER function could not do the
 * check: inside it the current user is the definer.  The same check guards
 * the internal C functions that stop a job's workers or drop its slot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"

#include "backfill.h"

PG_FUNCTION_INFO_V1(backfill_job_catalog);

/*
 * backfill_require_job_owner
 *		The job must exist and the current user must have the privileges of
 *		its owner, else it does not exist for the caller, as in the views.
 *		Returns the owner.
 */
Oid
backfill_require_job_owner(int64 job_id)
{
	Oid			owner = backfill_job_owner(job_id);

	/* as row-level security hides it: another role's job does not exist */
	if (!OidIsValid(owner) || !has_privs_of_role(GetUserId(), owner))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));
	return owner;
}

static void
exec_with_args(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
			   int expected)
{
	if (SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0) != expected)
		elog(ERROR, "could not run: %s", sql);
}

/* the job's actors again: n of them, new ids, even contiguous ranges */
static void
rebuild_actors(int64 job_id, int parallelism)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(job_id), Int32GetDatum(parallelism)};
	char	   *kind;
	char	   *state;
	bool		isnull;

	exec_with_args("WITH old AS (DELETE FROM backfill.actor a WHERE a.job_id = $1 "
				   "                 RETURNING a.epoch, a.fragment_id) "
				   "INSERT INTO backfill.actor (actor_id, job_id, fragment_id, vnode_start, vnode_end, epoch) "
				   "SELECT pg_catalog.nextval('backfill.actor_id_seq'), $1, j.fragment_id, "
				   "       i * 256 / $2, (i + 1) * 256 / $2 - 1, "
				   "       (SELECT coalesce(pg_catalog.max(o.epoch), 0) FROM old o) "
				   "  FROM backfill.job j, pg_catalog.generate_series(0, $2 - 1) i "
				   " WHERE j.job_id = $1 ORDER BY i",
				   2, types, values, NULL, SPI_OK_INSERT);
	exec_with_args("UPDATE backfill.job SET parallelism = $2 WHERE job_id = $1",
				   2, types, values, NULL, SPI_OK_UPDATE);

	/* the vnodes keep their progress wherever they land */
	exec_with_args("SELECT kind, state_table::pg_catalog.text FROM backfill.job WHERE job_id = $1",
				   1, types, values, NULL, SPI_OK_SELECT);
	kind = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	state = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	(void) SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &isnull);
	if (isnull)
		return;
	if (strcmp(kind, "cdc") == 0)
		exec_with_args(psprintf("UPDATE backfill.actor a SET row_count = "
								"coalesce((SELECT s.row_count FROM %s s), 0) WHERE a.job_id = $1",
								state),
					   1, types, values, NULL, SPI_OK_UPDATE);
	else
		exec_with_args(psprintf("UPDATE backfill.actor a SET row_count = coalesce((SELECT "
								"CASE WHEN %s THEN pg_catalog.max(s.row_count) FILTER (WHERE s.vnode = a.vnode_start) "
								"ELSE pg_catalog.sum(s.row_count) END "
								"FROM %s s WHERE s.vnode BETWEEN a.vnode_start AND a.vnode_end), 0) "
								"WHERE a.job_id = $1",
								strcmp(kind, "no_shuffle") == 0 ? "true" : "false", state),
					   1, types, values, NULL, SPI_OK_UPDATE);
}

/* drop the job's triggers on its upstream, whose owner the job's may not be */
static void
drop_triggers(int64 job_id)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	static const char *const prefixes[] = {
		"backfill_capture_", "backfill_apply_", "backfill_capture_truncate_",
		"backfill_apply_truncate_"
	};
	char	   *upstream;

	exec_with_args("SELECT upstream::pg_catalog.text FROM backfill.job j "
				   "WHERE job_id = $1 AND EXISTS (SELECT FROM pg_catalog.pg_class c "
				   "WHERE c.oid OPERATOR(pg_catalog.=) j.upstream)",
				   1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;
	upstream = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	for (int i = 0; i < lengthof(prefixes); i++)
	{
		char	   *name = psprintf("%s%lld", prefixes[i], (long long) job_id);

		if (SPI_execute(psprintf("SELECT FROM pg_catalog.pg_trigger WHERE tgrelid = %s::pg_catalog.regclass "
								 "AND tgname = %s",
								 quote_literal_cstr(upstream), quote_literal_cstr(name)),
						true, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not read pg_trigger");
		if (SPI_processed > 0)
			exec_with_args(psprintf("DROP TRIGGER %s ON %s", quote_identifier(name), upstream),
						   0, NULL, NULL, NULL, SPI_OK_UTILITY);
	}
}

/*
 * backfill._job_catalog(job_id bigint, op text, arg bigint) RETURNS void
 *
 *	cancel			status cancelled, no downstream, state or change table
 *	delete			the job's rows
 *	foreground		run_mode foreground (the launcher leaves it alone)
 *	rate_limit		rate_limit = arg (NULL: none)
 *	reschedule		arg new actors
 *	copy_names		job_name and ddl_statement of job arg, which the caller
 *					must own too
 *	drop_triggers	the job's triggers on its upstream
 */
Datum
backfill_job_catalog(PG_FUNCTION_ARGS)
{
	int64		job_id;
	char	   *op;
	bool		arg_null = PG_ARGISNULL(2);
	int64		arg = arg_null ? 0 : PG_GETARG_INT64(2);
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2];
	char		nulls[2] = {' ', arg_null ? 'n' : ' '};
	RoleContext rc;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("arguments \"job_id\" and \"op\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	op = text_to_cstring(PG_GETARG_TEXT_PP(1));
	backfill_require_job_owner(job_id);
	if (strcmp(op, "copy_names") == 0)
	{
		if (arg_null)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("operation \"copy_names\" needs the job to copy from")));
		backfill_require_job_owner(arg);
	}

	values[0] = Int64GetDatum(job_id);
	values[1] = Int64GetDatum(arg);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_catalog_enter(&rc);
	if (strcmp(op, "cancel") == 0)
		exec_with_args("UPDATE backfill.job SET status = 'cancelled', downstream = NULL, "
					   "state_table = NULL, change_table = NULL WHERE job_id = $1",
					   1, types, values, nulls, SPI_OK_UPDATE);
	else if (strcmp(op, "delete") == 0)
		exec_with_args("DELETE FROM backfill.job WHERE job_id = $1",
					   1, types, values, nulls, SPI_OK_DELETE);
	else if (strcmp(op, "foreground") == 0)
		exec_with_args("UPDATE backfill.job SET run_mode = 'foreground' "
					   "WHERE job_id = $1 AND run_mode = 'background'",
					   1, types, values, nulls, SPI_OK_UPDATE);
	else if (strcmp(op, "rate_limit") == 0)
		exec_with_args("UPDATE backfill.job SET rate_limit = $2::pg_catalog.int4 WHERE job_id = $1",
					   2, types, values, nulls, SPI_OK_UPDATE);
	else if (strcmp(op, "reschedule") == 0)
	{
		if (arg_null || arg < 1 || arg > BACKFILL_MAX_PARALLELISM)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("parallelism must be between 1 and %d", BACKFILL_MAX_PARALLELISM)));
		rebuild_actors(job_id, (int) arg);
	}
	else if (strcmp(op, "copy_names") == 0)
		exec_with_args("UPDATE backfill.job j SET job_name = o.job_name, ddl_statement = o.ddl_statement "
					   "FROM backfill.job o WHERE j.job_id = $1 AND o.job_id = $2",
					   2, types, values, nulls, SPI_OK_UPDATE);
	else if (strcmp(op, "drop_triggers") == 0)
		drop_triggers(job_id);
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid catalog operation \"%s\"", op)));
	backfill_role_leave(&rc);
	SPI_finish();
	PG_RETURN_VOID();
}

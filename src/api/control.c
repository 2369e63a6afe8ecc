/*-------------------------------------------------------------------------
 *
 * control.c
 *	  The catalog writes of the SQL functions that change a job, on behalf
 *	  of its owner.
 *
 * No role but the extension's owner may write backfill.job and
 * backfill.actor.  The SQL functions that change a job (cancel_job,
 * drop_job, stop_job, alter_rate_limit, reschedule, recreate_job) run with
 * their caller's rights and make their catalog writes through the internal
 * functions here, each of which checks that the caller has the privileges
 * of the job's owner, then does its one write as the extension's owner
 * (catalog/job.c).  A SECURITY DEFINER function could not do the check: inside
 * it the current user is the definer.
 *
 * reschedule is C: it asks the job's kind first whether it can run the
 * parallelism asked for and whether it lets the job be rescheduled now
 * (RisingWave refuses to reschedule a creating job whose backfill is not
 * reschedulable), then stops the job's workers, makes its new actors and
 * starts them again.
 *
 * verify_job is C (verify_job.c).  The PL/pgSQL verify_job of a 1.3
 * catalog ran its comparison through backfill._verify_rows(), as the job's
 * owner in a security-restricted operation; its symbol stays until ALTER
 * EXTENSION UPDATE drops the function.
 *
 * Two internal functions reach what a job's kind has outside this database:
 * _drop_kind_objects (for cancel_job and drop_job) and _unfetched_keys (what
 * verify_job's comparison reads of a remote job's slot, which the comparison
 * now reads in C, src/kinds/remote/unfetched.c).
 *
 * backfill.job_id(job_name) resolves a job's name to its id as the caller
 * sees the jobs (src/catalog/job_names.c): the overloads of the functions
 * that take a job_name pass it to the function of the job's id.
 *
 * Catalogs of versions 1.0 and 1.1 make the same writes through one
 * function, backfill._job_catalog(job_id, op, arg); its C symbol stays, as
 * pg_stat_statements keeps old symbols, until ALTER EXTENSION UPDATE
 * replaces it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "api/create.h"
#include "capture/capture.h"
#include "catalog/capture_job_rows.h"
#include "catalog/catalog_access.h"
#include "catalog/job_rows.h"
#include "api/job_ops.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_job_id);
PG_FUNCTION_INFO_V1(backfill_mark_cancelled_1_2);
PG_FUNCTION_INFO_V1(backfill_delete_job_1_2);
PG_FUNCTION_INFO_V1(backfill_set_foreground_1_2);
PG_FUNCTION_INFO_V1(backfill_set_rate_limit_1_2);
PG_FUNCTION_INFO_V1(backfill_rebuild_actors_1_2);
PG_FUNCTION_INFO_V1(backfill_check_reschedule_1_2);
PG_FUNCTION_INFO_V1(backfill_reschedule_1_4);
PG_FUNCTION_INFO_V1(backfill_copy_names_1_2);
PG_FUNCTION_INFO_V1(backfill_drop_triggers_1_2);
PG_FUNCTION_INFO_V1(backfill_job_catalog);
PG_FUNCTION_INFO_V1(backfill_drop_kind_objects);
PG_FUNCTION_INFO_V1(backfill_unfetched_keys);
PG_FUNCTION_INFO_V1(backfill_verify_rows);

/* the job's actors again, n of them; their row counts as its kind says */
static void
rebuild_actors(int64 job_id, bool null, int64 parallelism)
{
	char	   *kind;
	char	   *state;

	if (null || parallelism < 1 || parallelism > BACKFILL_MAX_PARALLELISM)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("parallelism must be between 1 and %d", BACKFILL_MAX_PARALLELISM)));
	backfill_replace_actors(job_id, (int) parallelism);
	backfill_job_kind_state(job_id, &kind, &state);
	if (state != NULL)
		backfill_kind_routine(backfill_parse_kind(kind))->recount_actors(job_id, state);
}

/* whether role may have triggers on relation relid: owns it, or has TRIGGER */
static bool
may_trigger(Oid relid, Oid role)
{
	return pg_class_ownercheck(relid, role) ||
		pg_class_aclcheck(relid, role, ACL_TRIGGER) == ACLCHECK_OK;
}

/*
 * Before the job's triggers are dropped, which locks its upstream ACCESS
 * EXCLUSIVE, as RangeVarGetRelidExtended's callbacks check before they lock:
 * the caller (it has the privileges of the job's owner) or the job's owner
 * must still own the upstream or have TRIGGER on it.  A role whose
 * privileges on a table were revoked cannot lock it out through its job; a
 * superuser can still drop such a job.  A job without triggers there (one
 * whose changes come from another server) drops nothing and locks nothing.
 */
static void
check_may_drop_triggers(int64 job_id)
{
	Oid			upstream = backfill_job_upstream_present(job_id);
	Oid			owner = backfill_job_owner(job_id);

	if (!OidIsValid(upstream) || !backfill_has_job_triggers(upstream, job_id) ||
		may_trigger(upstream, GetUserId()) ||
		(OidIsValid(owner) && may_trigger(upstream, owner)))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to drop the triggers of backfill job %lld on table \"%s\"",
					(long long) job_id, get_rel_name(upstream)),
			 errdetail("Neither the current user nor the job's owner owns the table or has privilege TRIGGER on it."),
			 errhint("Grant TRIGGER on the table to the job's owner again, or have a superuser drop the job.")));
}

/*
 * backfill_catalog_op
 *		Make one catalog write for a job the caller owns (its owner's
 *		privileges, checked by the caller); arg is the write's argument, if
 *		any.  The job operations of job_ops.c make theirs through it too.
 */
void
backfill_catalog_op(CatalogOp op, int64 job_id, bool arg_null, int64 arg)
{
	RoleContext rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	switch (op)
	{
		case OP_CANCEL:
			backfill_mark_cancelled(job_id);
			break;
		case OP_DELETE:
			backfill_delete_job_rows(job_id);
			break;
		case OP_FOREGROUND:
			backfill_set_foreground(job_id);
			break;
		case OP_RATE_LIMIT:
			backfill_set_rate_limit(job_id, arg_null, arg);
			break;
		case OP_RESCHEDULE:
			rebuild_actors(job_id, arg_null, arg);
			break;
		case OP_COPY_NAMES:
			backfill_copy_names(job_id, arg);
			break;
		case OP_DROP_TRIGGERS:
			check_may_drop_triggers(job_id);
			/* the upstream's owner may be another role than the job's */
			backfill_catalog_enter(&rc);
			backfill_drop_triggers(job_id);
			backfill_role_leave(&rc);
			break;
	}
	SPI_finish();
}

/*
 * backfill.job_id(job_name text) RETURNS bigint
 *		The id of the one job of that name that the caller sees.
 */
Datum
backfill_job_id(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(backfill_job_name_arg(fcinfo, 0));
}

/* backfill._mark_cancelled(job_id bigint): status cancelled, tables gone */
Datum
backfill_mark_cancelled_1_2(PG_FUNCTION_ARGS)
{
	backfill_catalog_op(OP_CANCEL, backfill_owned_job_arg(fcinfo, 0, "job_id"), true, 0);
	PG_RETURN_VOID();
}

/* backfill._delete_job(job_id bigint): the job's rows */
Datum
backfill_delete_job_1_2(PG_FUNCTION_ARGS)
{
	backfill_catalog_op(OP_DELETE, backfill_owned_job_arg(fcinfo, 0, "job_id"), true, 0);
	PG_RETURN_VOID();
}

/* backfill._set_foreground(job_id bigint): the launcher leaves it alone */
Datum
backfill_set_foreground_1_2(PG_FUNCTION_ARGS)
{
	backfill_catalog_op(OP_FOREGROUND, backfill_owned_job_arg(fcinfo, 0, "job_id"), true, 0);
	PG_RETURN_VOID();
}

/* backfill._set_rate_limit(job_id bigint, rows_per_second integer): NULL for none */
Datum
backfill_set_rate_limit_1_2(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");

	if (!PG_ARGISNULL(1) && PG_GETARG_INT32(1) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rows_per_second must not be negative"),
				 errhint("Pass NULL for no limit, or 0 to pause the job.")));
	backfill_catalog_op(OP_RATE_LIMIT, job_id, PG_ARGISNULL(1),
			   PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1));
	PG_RETURN_VOID();
}

/* backfill._rebuild_actors(job_id bigint, parallelism integer) */
Datum
backfill_rebuild_actors_1_2(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");

	backfill_catalog_op(OP_RESCHEDULE, job_id, PG_ARGISNULL(1), PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1));
	PG_RETURN_VOID();
}

/*
 * Refuse, with the text of RisingWave's meta (stream_manager.rs), to
 * reschedule a job the caller owns that has not finished when its kind
 * cannot be rescheduled before then.
 */
static void
check_reschedule(int64 job_id, const KindRoutine *routine)
{
	bool		status_null;
	Datum		status = backfill_job_column(job_id, "status", &status_null);
	char	   *detail;
	char	   *hint;

	if (status_null ||
		backfill_parse_status(TextDatumGetCString(status)) == BACKFILL_STATUS_FINISHED ||
		backfill_kind_reschedulable(routine, job_id, &detail, &hint))
		return;					/* gone (the reschedule says so), or free to go */
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("Cannot alter the job %lld because it is blocked by creating unreschedulable backfill jobs",
					(long long) job_id),
			 errdetail_internal("%s", detail),
			 errhint("%s", hint)));
}

/* backfill._check_reschedule(job_id bigint), in a 1.3 catalog */
Datum
backfill_check_reschedule_1_2(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	bool		kind_null;
	Datum		kind = backfill_job_column(job_id, "kind", &kind_null);

	if (!kind_null)
		check_reschedule(job_id, backfill_kind_routine(backfill_parse_kind(TextDatumGetCString(kind))));
	PG_RETURN_VOID();
}

/*
 * backfill.reschedule(job_id bigint, parallelism integer) RETURNS void
 *		Spread the vnodes of a job over parallelism new actors; restart its
 *		background workers if it had any.
 *
 * The job is the caller's to see (its row read as the caller), then to
 * change (it has the privileges of the job's owner).  Its kind's rules,
 * by the kind its catalog row names (a job whose upstream is on another
 * server is a cdc job there): the parallelism it can run, and whether it
 * can be rescheduled before it has finished.  Every refusal comes before
 * the workers stop, so that a refused reschedule leaves them running.
 */
Datum
backfill_reschedule_1_4(PG_FUNCTION_ARGS)
{
	int64		job_id;
	int32		parallelism;
	JobView		job;
	const KindRoutine *routine;
	bool		was_running;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) backfill_read_job_view(job_id, false, false, &job);
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"parallelism\" must not be null")));
	parallelism = PG_GETARG_INT32(1);
	backfill_check_parallelism(parallelism);
	if (backfill_parse_status(job.status) == BACKFILL_STATUS_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has been cancelled", (long long) job_id)));
	routine = backfill_kind_routine(job.catalog_kind);
	backfill_kind_check_parallelism(routine, parallelism);
	(void) backfill_require_job_owner(job_id);
	check_reschedule(job_id, routine);
	backfill_check_workers(job_id, parallelism);
	was_running = backfill_stop_and_lock(job_id);
	/*
	 * new actors, new ids, the vnodes in even contiguous ranges again; the
	 * vnodes keep their progress wherever they land
	 */
	backfill_catalog_op(OP_RESCHEDULE, job_id, false, parallelism);
	SPI_finish();
	if (was_running)
		backfill_start_workers(job_id);
	PG_RETURN_VOID();
}

/* backfill._copy_names(job_id bigint, from_job_id bigint), both owned */
Datum
backfill_copy_names_1_2(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	int64		from_job_id = backfill_owned_job_arg(fcinfo, 1, "from_job_id");

	backfill_catalog_op(OP_COPY_NAMES, job_id, false, from_job_id);
	PG_RETURN_VOID();
}

/* backfill._drop_triggers(job_id bigint): its triggers on its upstream */
Datum
backfill_drop_triggers_1_2(PG_FUNCTION_ARGS)
{
	backfill_catalog_op(OP_DROP_TRIGGERS, backfill_owned_job_arg(fcinfo, 0, "job_id"), true, 0);
	PG_RETURN_VOID();
}

/*
 * backfill._job_catalog(job_id bigint, op text, arg bigint) RETURNS void,
 * in 1.0 and 1.1 catalogs
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
	static const char *const names[] = {
		[OP_CANCEL] = "cancel", [OP_DELETE] = "delete", [OP_FOREGROUND] = "foreground",
		[OP_RATE_LIMIT] = "rate_limit", [OP_RESCHEDULE] = "reschedule",
		[OP_COPY_NAMES] = "copy_names", [OP_DROP_TRIGGERS] = "drop_triggers"
	};
	int64		job_id;
	char	   *opname;
	bool		arg_null = PG_ARGISNULL(2);
	int64		arg = arg_null ? 0 : PG_GETARG_INT64(2);
	int			op = -1;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("arguments \"job_id\" and \"op\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	opname = text_to_cstring(PG_GETARG_TEXT_PP(1));
	backfill_require_job_owner(job_id);
	for (int i = 0; i < lengthof(names); i++)
		if (strcmp(opname, names[i]) == 0)
			op = i;
	if (op == OP_COPY_NAMES)
	{
		if (arg_null)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("operation \"copy_names\" needs the job to copy from")));
		backfill_require_job_owner(arg);
	}
	if (op < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid catalog operation \"%s\"", opname)));
	backfill_catalog_op((CatalogOp) op, job_id, arg_null, arg);
	PG_RETURN_VOID();
}

/*
 * backfill._drop_kind_objects(job_id bigint) RETURNS void
 *		What the job's kind owns outside its tables (a cdc job's slot, when
 *		the transaction commits; the slot and the publication of a job whose
 *		upstream is on another server), for cancel_job and drop_job.
 */
Datum
backfill_drop_kind_objects(PG_FUNCTION_ARGS)
{
	backfill_drop_kind_objects_of(backfill_owned_job_arg(fcinfo, 0, "job_id"));
	PG_RETURN_VOID();
}

/*
 * backfill_drop_kind_objects_of
 *		What the kind of a job the caller owns keeps outside its tables,
 *		dropped; the caller has checked the job's owner.
 */
void
backfill_drop_kind_objects_of(int64 job_id)
{
	bool		isnull;
	bool		remote;
	Datum		kindname;
	BackfillKind kind;

	/*
	 * The kind from the job's row alone: its tables may be gone already
	 * (drop_job_objects drops them first), so the job is not loaded
	 */
	kindname = backfill_job_column(job_id, "kind", &isnull);
	if (isnull)
		return;					/* dropped meanwhile: nothing of it is left */
	kind = backfill_parse_kind(TextDatumGetCString(kindname));
	remote = DatumGetBool(backfill_job_column(job_id, "remote", &isnull)) && !isnull;
	if (remote)
		kind = backfill_remote_kind(kind);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_kind_drop_objects(backfill_kind_routine(kind), job_id);
	SPI_finish();
}

/*
 * backfill._unfetched_keys(job_id bigint, since pg_lsn) RETURNS SETOF text[]
 *		For verify_job: the keys of the changes the upstream of a job the
 *		caller owns committed from the offset "since" on, which the job has
 *		not fetched (those its source holds for it: a remote job's slot).
 *		None for a kind without such changes, or when "since" is NULL (the
 *		job has fetched nothing yet).
 */
Datum
backfill_unfetched_keys(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	const KindRoutine *kind;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	kind = backfill_kind_routine(backfill_load_job(job_id, CurrentMemoryContext)->kind);
	if (!PG_ARGISNULL(1))
		foreach(lc, backfill_kind_unfetched_keys(kind, job_id,
												 DatumGetCString(DirectFunctionCall1(pg_lsn_out,
																					 PG_GETARG_DATUM(1)))))
		{
			Datum		values[1] = {PointerGetDatum(lfirst(lc))};
			bool		nulls[1] = {false};

			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * The result of _verify_rows's query must be what the function returns, two
 * columns of type text, before a datum of it is read as a text: the query
 * is its caller's.
 */
static void
check_verify_result(TupleDesc desc)
{
	if (desc->natts != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the comparison query of backfill._verify_rows() must return two columns of type text"),
				 errdetail_plural("It returns %d column.", "It returns %d columns.",
								  desc->natts, desc->natts)));
	if (TupleDescAttr(desc, 0)->atttypid != TEXTOID ||
		TupleDescAttr(desc, 1)->atttypid != TEXTOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the comparison query of backfill._verify_rows() must return two columns of type text"),
				 errdetail("Its columns are of types %s and %s.",
						   format_type_be(TupleDescAttr(desc, 0)->atttypid),
						   format_type_be(TupleDescAttr(desc, 1)->atttypid))));
}

/*
 * backfill._verify_rows(job_id bigint, query text)
 *		RETURNS TABLE(pk text, problem text)
 *		For 1.3's verify_job: its comparison, a query of two text columns, run as
 *		the owner of the job in a security-restricted operation under a
 *		search_path of pg_catalog only.  The caller must have the privileges
 *		of the job's owner, so it gains nothing it could not do as that role.
 */
Datum
backfill_verify_rows(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	Oid			owner = backfill_job_owner(job_id);
	char	   *query;
	RoleContext oc;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "query")));
	query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_owner_enter(owner, true, &oc);
	backfill_spi_exec(query, SPI_OK_SELECT);
	check_verify_result(SPI_tuptable->tupdesc);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[2];
		bool		nulls[2];

		for (int c = 0; c < 2; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1,
									  &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	backfill_role_leave(&oc);
	SPI_finish();
	PG_RETURN_VOID();
}

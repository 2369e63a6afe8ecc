/*-------------------------------------------------------------------------
 *
 * verify_job.c
 *	  backfill.verify_job(job_id, method, range_rows): compare a job's
 *	  downstream with its upstream and return the differences.
 *
 * The function runs as its caller, under the settings its SQL definition
 * pins (search_path, and those its job's filter and computed columns were
 * written under).  It reads the job's row as the caller sees it, so that
 * another role's job does not exist for it, and refuses a job whose owner
 * row-level security applies to on the upstream: the comparison reads the
 * upstream as the owner, through the policies that filtered the copy, and
 * would find nothing missing.
 *
 * Its kind says what of the job to compare now (kind.h, verify_source):
 * which keys the downstream covers, which are pending.  The comparison's
 * statements (verify_sql.c) evaluate the job's filter and computed columns,
 * which are the owner's SQL: they run as the job's owner in a
 * security-restricted operation, as a barrier runs them and as REFRESH
 * MATERIALIZED VIEW runs a view's query, whoever calls.  Each is one
 * statement, whose snapshot comes after the locks the kind took (a slot's),
 * so that no fetch commits between what it sees of the job and the slot.
 *
 * Method rows compares all of it in one statement; method checksum
 * (verify_ranges.c) compares ranges of keys by their checksums and only
 * the ranges that differ row by row; method changed (verify_changed.c)
 * only the ranges written since its last call; auto takes checksum, but
 * rows where the source could not compute the checksums (a copy from
 * another server not finished, whose coverage only this server knows): they
 * would bring every row across several times.
 *
 * At its end a verify records what it found in the job's verify row of
 * backfill.verification, as the extension's owner, once the caller commits
 * (verification_rows.c; nothing in a read-only transaction).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "api/verify.h"
#include "catalog/catalog_access.h"
#include "catalog/verification_rows.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_verify_job);

/* the job's row as the caller reads it, beyond what VerifyJob holds */
typedef struct JobRow
{
	char	   *status;
	char	   *kind;
	Oid			downstream;
	List	   *columns;
	List	   *expressions;	/* NULL where a column is copied */
	bool		range_vnodes;	/* vnode_mapping "range" */
} JobRow;

/* the elements of a text[], NULL ones as NULL */
static List *
text_list(Datum array)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	List	   *list = NIL;

	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT,
					  &elems, &nulls, &n);
	for (int i = 0; i < n; i++)
		list = lappend(list, nulls[i] ? NULL : TextDatumGetCString(elems[i]));
	return list;
}

/* column c of the row read, or NULL */
static Datum
field(int c, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c, isnull);
}

/* the name of relation column c of the row read; NULL when it is NULL */
static char *
relation_field(int c, Oid *relid)
{
	bool		isnull;
	Datum		d = field(c, &isnull);

	*relid = isnull ? InvalidOid : DatumGetObjectId(d);
	return isnull ? NULL : backfill_regclass_text(*relid);
}

/*
 * read_job
 *		The job's row as the caller sees it (row-level security applies),
 *		or the error that says there is none.
 */
static void
read_job(int64 job_id, VerifyPlan *plan, JobRow *row)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	bool		isnull;
	Datum		d;
	Oid			unused;

	backfill_spi_exec_args("SELECT j.status, j.kind, coalesce(j.remote, false), "
						   "       j.upstream::pg_catalog.oid, j.downstream::pg_catalog.oid, "
						   "       j.state_table::pg_catalog.oid, j.change_table::pg_catalog.oid, "
						   "       j.pk_columns, j.columns, j.expressions, j.filter, "
						   "       j.vnode_mapping OPERATOR(pg_catalog.=) 'range', "
						   "       j.remote_splits::pg_catalog.text, j.remote_partitions::pg_catalog.oid[] "
						   "  FROM backfill.job j WHERE j.job_id OPERATOR(pg_catalog.=) $1",
						   1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));
	plan->job.job_id = job_id;
	row->status = TextDatumGetCString(field(1, &isnull));
	row->kind = TextDatumGetCString(field(2, &isnull));
	plan->remote = DatumGetBool(field(3, &isnull));
	plan->job.upstream = DatumGetObjectId(field(4, &isnull));
	plan->job.downstream_sql = relation_field(5, &row->downstream);
	plan->job.state_sql = relation_field(6, &unused);
	plan->job.changes_sql = relation_field(7, &unused);
	(void) backfill_text_array_sql(field(8, &isnull), &plan->job.pk_names, &plan->job.npk);
	row->columns = text_list(field(9, &isnull));
	d = field(10, &isnull);
	row->expressions = isnull ? NIL : text_list(d);
	d = field(11, &isnull);
	plan->filter = isnull ? NULL : TextDatumGetCString(d);
	d = field(12, &isnull);
	row->range_vnodes = !isnull && DatumGetBool(d);
	d = field(13, &isnull);
	plan->job.splits = isnull ? NULL : TextDatumGetCString(d);
	d = field(14, &isnull);
	plan->several_servers = !isnull;
	if (!isnull)
	{
		Datum	   *elems;
		int			n;

		deconstruct_array(DatumGetArrayTypeP(d), OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &elems, NULL, &n);
		for (int i = 0; i < n; i++)
			plan->job.partitions = lappend_oid(plan->job.partitions, DatumGetObjectId(elems[i]));
	}
	plan->job.finished = strcmp(row->status, "finished") == 0;
}

/* refuse arguments verify_job cannot take, and a job it cannot verify */
static const char *
check_arguments(FunctionCallInfo fcinfo, const VerifyPlan *plan, const JobRow *row)
{
	char	   *method;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"method\" must not be null")));
	method = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (strcmp(method, "auto") != 0 && strcmp(method, "checksum") != 0 &&
		strcmp(method, "rows") != 0 && strcmp(method, "changed") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized verify method \"%s\"", method),
				 errhint("Use auto, checksum, changed or rows.")));
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"range_rows\" must not be null")));
	if (PG_GETARG_INT32(2) < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("range_rows must be at least 1"),
				 errdetail("It was %d.", PG_GETARG_INT32(2))));
	if (strcmp(row->status, "cancelled") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has been cancelled", (long long) plan->job.job_id)));
	/* the caller must have the privileges of the owner, whose copy must be whole */
	(void) backfill_require_job_owner(plan->job.job_id);
	backfill_check_unfiltered_copy(backfill_job_upstream(plan->job.job_id),
								   backfill_job_owner(plan->job.job_id));
	return method;
}

/*
 * plan_comparison
 *		The comparison's SQL: the job's pieces, then what its kind says to
 *		compare now (it may take the slot's lock), the filter on the upstream
 *		side.
 */
static void
plan_comparison(VerifyPlan *plan, JobRow *row)
{
	BackfillKind kind = backfill_parse_kind(row->kind);

	plan->job.owner = backfill_job_owner(plan->job.job_id);
	verify_plan_sql(plan, row->downstream, row->columns, row->expressions);
	/* a key's vnode in the job: its range, or the hash of older jobs */
	plan->job.vnode_u = row->range_vnodes ?
		psprintf("backfill.job_vnode(%lld::int8, %s)", (long long) plan->job.job_id,
				 plan->job.key_u) :
		psprintf("backfill.vnode(%s)", plan->job.key_u);
	if (plan->remote)
		kind = backfill_remote_kind(kind);
	backfill_kind_verify_source(backfill_kind_routine(kind), &plan->job, &plan->source);
	if (plan->filter != NULL)
		plan->source.covered = psprintf("%s AND (%s)", plan->source.covered, plan->filter);
}

/*
 * The job's verify row, once the caller commits (none read-only): of a
 * verify by checksums, the ranges compared of all there are (ranges_total,
 * the ranges compared but for method changed) and the rows read.
 */
static void
record_verify(const VerifyPlan *plan, const char *method, TimestampTz started,
			  const VerifyCounts *counts, int64 ranges, int64 ranges_total)
{
	bool		checksum = strcmp(method, "rows") != 0;
	Datum		figures[4] = {Int64GetDatum(ranges), Int64GetDatum(ranges_total),
		Int64GetDatum(counts->rows_read), Int64GetDatum(counts->differences)};
	bool		nulls[4] = {!checksum, !checksum, !checksum, false};

	if (!XactReadOnly)
		(void) backfill_record_verify_row(plan->job.job_id, method, plan->range_rows, started,
										  figures, nulls);
}

/*
 * backfill.verify_job(job_id bigint, method text DEFAULT 'auto',
 *					   range_rows integer DEFAULT 1000)
 *		RETURNS TABLE (pk text, problem text)
 */
Datum
backfill_verify_job(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TimestampTz started = GetCurrentTimestamp();
	VerifyPlan	plan = {0};
	VerifyCounts counts = {0};
	JobRow		row = {0};
	const char *method;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	backfill_spi_enter();
	read_job(PG_GETARG_INT64(0), &plan, &row);
	method = check_arguments(fcinfo, &plan, &row);
	plan.range_rows = PG_GETARG_INT32(2);
	plan.started = started;
	plan_comparison(&plan, &row);
	if (strcmp(method, "auto") == 0)
		method = plan.remote && !plan.job.finished ? "rows" : "checksum";
	if (strcmp(method, "rows") == 0)
	{
		counts.differences = verify_compare(&plan, verify_rows_sql(&plan, "", "", ""), rsinfo);
		record_verify(&plan, method, started, &counts, 0, 0);
		if (verify_lines_on())
			ereport(INFO,
					(errmsg("backfill job %lld verified row by row: %lld differences",
							(long long) plan.job.job_id, (long long) counts.differences)));
	}
	else if (strcmp(method, "changed") == 0)
	{
		int64		rechecked;
		int64		total;

		verify_changed(&plan, row.downstream, rsinfo, &counts, &rechecked, &total);
		record_verify(&plan, method, started, &counts, rechecked, total);
		if (verify_lines_on())
			ereport(INFO,
					(errmsg("backfill job %lld verified the ranges written since its last check: %lld of %lld ranges, %lld rows compared, %lld differences",
							(long long) plan.job.job_id, (long long) rechecked,
							(long long) total, (long long) counts.rows_read,
							(long long) counts.differences)));
	}
	else
	{
		verify_by_checksums(&plan, rsinfo, &counts);
		record_verify(&plan, method, started, &counts, counts.ranges, counts.ranges);
		if (verify_lines_on())
			ereport(INFO,
					(errmsg("backfill job %lld verified: %lld ranges, %lld rows compared, %lld differences",
							(long long) plan.job.job_id, (long long) counts.ranges,
							(long long) counts.rows_read, (long long) counts.differences)));
	}
	backfill_spi_leave();
	return (Datum) 0;
}

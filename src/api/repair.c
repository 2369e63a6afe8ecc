/*-------------------------------------------------------------------------
 *
 * repair.c
 *	  CALL backfill.repair_job(job_id, range_rows): make the rows verify_job
 *	  finds different equal to the upstream's again, one committed
 *	  transaction per range of keys.
 *
 * The repair is a re-snapshot of the keys that differ.  verify_job finds
 * them (by checksums of ranges where they pay, as it always does, pending
 * keys left out); they come in key order and are taken range_rows at a
 * time, each such range of keys in a transaction of its own.  A range's
 * keys are made equal to the upstream's the way a barrier forwards the
 * keys it captured (sql.c, "Making downstream rows equal to the
 * upstream's"): the downstream rows of those keys are deleted and the
 * upstream's rows of those keys that pass the job's filter are inserted,
 * projected as the copy projects them (computed columns, a generated
 * column of the downstream left to it, an identity kept), or, for a
 * downstream that a foreign key references, upserted then deleted where
 * the upstream has none, so that no referenced row leaves the table for a
 * moment.  A row missing downstream is so inserted, a row that differs
 * rewritten, a row extra there (its key gone from the upstream, or out of
 * the filter) deleted.  The statements run as the job's owner in a
 * security-restricted operation under the job's search_path, as a
 * barrier's do, whoever calls.
 *
 * The job lock is held at session level for the whole call, as run_job
 * holds it: a repair and a run of the same job never interleave, and a
 * repair of a job that runs (in a session or in workers) is refused as a
 * second run is (SQLSTATE 55006).  A session that dies lets it go; what
 * its committed ranges repaired stays, and the next call, which verifies
 * again, repairs the rest.  At the end the job is verified again: the
 * result says what was repaired and whether the job is now clean.
 *
 * Its progress is the job's repair row of backfill.verification
 * (verification_rows.c), which other sessions read in backfill.progress:
 * written and committed at the start, with its pid, so that the first
 * verify, which may be long, shows; updated in each range's transaction;
 * finished in the CALL's last one.  A repair that dies leaves the row
 * unfinished, and its pid no longer holds the job lock, which is what
 * says that it runs.
 *
 * A job whose upstream is on another server reads the source's rows
 * through its foreign table; the keys of a range are also given column by
 * column as "= ANY ($n)", which postgres_fdw sends to the source, so that
 * only their rows cross the network (sql.c).  The keys of changes the job
 * has fetched and not applied, or not fetched yet, are pending in
 * verify_job and so never repaired here: its next run applies them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "catalog/catalog_access.h"
#include "catalog/verification_rows.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_repair_job);
PG_FUNCTION_INFO_V1(backfill_repair_job_by_name);

/* the differences verify_job reported, in key order */
typedef struct Differences
{
	int			n;
	char	  **keys;			/* each key as verify_job writes it */
	char	   *kinds;			/* 'm'issing, 'e'xtra, 'd'ifferent */
} Differences;

/*
 * find_differences
 *		verify_job's rows for the job, into cxt.  As the caller: verify_job
 *		checks its rights and runs the owner's SQL as the owner.
 */
static void
find_differences(int64 job_id, int range_rows, MemoryContext cxt, Differences *diffs)
{
	Oid			argtypes[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(job_id), Int32GetDatum(range_rows)};
	MemoryContext old;

	if (SPI_execute_with_args("SELECT v.pk, v.problem FROM backfill.verify_job($1, 'auto', $2) v",
							  2, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not verify backfill job " INT64_FORMAT, job_id);
	old = MemoryContextSwitchTo(cxt);
	diffs->n = (int) SPI_processed;
	diffs->keys = palloc(sizeof(char *) * Max(diffs->n, 1));
	diffs->kinds = palloc(Max(diffs->n, 1));
	for (int i = 0; i < diffs->n; i++)
	{
		char	   *problem = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		diffs->keys[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		diffs->kinds[i] = problem[0];
	}
	MemoryContextSwitchTo(old);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * key_desc
 *		The row type of the job's key, blessed: verify_job writes a key as
 *		the text of an anonymous record of the key's columns, which
 *		record_in reads back with it.
 */
static TupleDesc
key_desc(BackfillJob *job)
{
	TupleDesc	desc = CreateTemplateTupleDesc(job->npk);

	for (int k = 0; k < job->npk; k++)
		TupleDescInitEntry(desc, (AttrNumber) (k + 1), job->pk_names[k], job->pk_types[k], -1, 0);
	return BlessTupleDesc(desc);
}

/*
 * key_arrays
 *		The keys first..first + n - 1 of diffs, as one array per key column
 *		(the parameters of sql.c's statements over a set of keys), into
 *		values and types.
 */
static void
key_arrays(BackfillJob *job, TupleDesc desc, Differences *diffs, int first, int n,
		   Datum *values, Oid *types)
{
	Datum	  **cols = palloc(sizeof(Datum *) * job->npk);

	for (int k = 0; k < job->npk; k++)
		cols[k] = palloc(sizeof(Datum) * n);
	for (int i = 0; i < n; i++)
	{
		Datum		rec = OidInputFunctionCall(F_RECORD_IN, diffs->keys[first + i],
											   RECORDOID, desc->tdtypmod);
		HeapTupleHeader td = DatumGetHeapTupleHeader(rec);
		HeapTupleData tup;
		Datum	   *fields = palloc(sizeof(Datum) * job->npk);
		bool	   *nulls = palloc(sizeof(bool) * job->npk);

		tup.t_len = HeapTupleHeaderGetDatumLength(td);
		ItemPointerSetInvalid(&tup.t_self);
		tup.t_tableOid = InvalidOid;
		tup.t_data = td;
		heap_deform_tuple(&tup, desc, fields, nulls);
		for (int k = 0; k < job->npk; k++)
		{
			if (nulls[k])
				elog(ERROR, "verify_job reported a key with a null column: %s",
					 diffs->keys[first + i]);
			cols[k][i] = fields[k];
		}
	}
	for (int k = 0; k < job->npk; k++)
	{
		int16		typlen;
		bool		typbyval;
		char		typalign;

		types[k] = get_array_type(job->pk_types[k]);
		if (!OidIsValid(types[k]))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot repair backfill job %lld", (long long) job->job_id),
					 errdetail("The type %s of its key column \"%s\" has no array type.",
							   format_type_be(job->pk_types[k]), job->pk_names[k])));
		get_typlenbyvalalign(job->pk_types[k], &typlen, &typbyval, &typalign);
		values[k] = PointerGetDatum(construct_array(cols[k], n, job->pk_types[k],
													typlen, typbyval, typalign));
	}
}

/*
 * repair_range
 *		Make the downstream rows of the keys first..first + n - 1 of diffs
 *		equal to the upstream's, as the job's owner; the caller commits.
 */
static void
repair_range(BackfillJob *job, TupleDesc desc, Differences *diffs, int first, int n,
			 bool in_place)
{
	Datum	   *values = palloc(sizeof(Datum) * job->npk);
	Oid		   *types = palloc(sizeof(Oid) * job->npk);
	const char *matching = backfill_keys_in_arrays(job);
	const char *first_sql;
	const char *second_sql;
	RoleContext rc;
	int			guc_level;

	key_arrays(job, desc, diffs, first, n, values, types);
	/* in place when a foreign key references the downstream, as forwarding */
	if (in_place)
	{
		first_sql = backfill_sync_upsert_many_sql(job, true);
		second_sql = backfill_sync_delete_gone_many_sql(job, true);
	}
	else
	{
		first_sql = backfill_sync_delete_sql(job, matching, false);
		second_sql = backfill_sync_insert_many_sql(job);
	}
	backfill_owner_enter(job->owner, false, &rc);
	guc_level = backfill_pin_search_path(job);
	backfill_spi_enter();
	if (SPI_execute_with_args(first_sql, job->npk, types, values, NULL, false, 0) < 0 ||
		SPI_execute_with_args(second_sql, job->npk, types, values, NULL, false, 0) < 0)
		elog(ERROR, "could not repair the downstream of backfill job " INT64_FORMAT,
			 job->job_id);
	backfill_spi_leave();
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&rc);
}

/* count the differences of a range by kind */
static void
count_range(Differences *diffs, int first, int n, RepairFigures *counts)
{
	counts->ranges++;
	for (int i = first; i < first + n; i++)
	{
		if (diffs->kinds[i] == 'm')
			counts->missing++;
		else if (diffs->kinds[i] == 'e')
			counts->extra++;
		else
			counts->different++;
	}
}

/*
 * check_repairable
 *		Refuse what repair_job cannot repair: a cancelled job, as
 *		verify_job refuses it.
 *		The caller has checked that the job is the caller's.
 */
static void
check_repairable(int64 job_id)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};

	if (backfill_spi_true_args("SELECT j.status OPERATOR(pg_catalog.=) 'cancelled' FROM backfill.job j "
							   "WHERE j.job_id OPERATOR(pg_catalog.=) $1",
							   1, argtypes, values))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has been cancelled", (long long) job_id)));
}

/* the progress interval, in ms; 0 for none */
static int
progress_interval_ms(void)
{
	const char *value = GetConfigOption("backfill.client_progress_interval", true, false);

	return value ? atoi(value) : 0;
}

/*
 * repair
 *		The repair of a job the caller owns and this session holds the lock
 *		of: the differences, range after range, each committed; then the
 *		verify again.  Returns whether the job is clean after.
 */
static bool
repair(int64 job_id, int range_rows, MemoryContext cxt, RepairFigures *counts)
{
	Differences diffs;
	BackfillJob *job;
	TupleDesc	desc;
	bool		in_place;
	int			nranges;
	TimestampTz last_line = GetCurrentTimestamp();
	bool		lines = progress_interval_ms() > 0;

	counts->ranges_total = -1;
	counts->differences = -1;
	backfill_repair_row_start(job_id, range_rows);
	backfill_commit();
	find_differences(job_id, range_rows, cxt, &diffs);
	job = backfill_load_job(job_id, cxt);
	in_place = backfill_sync_in_place(job);
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		desc = key_desc(job);
		MemoryContextSwitchTo(old);
	}
	nranges = (diffs.n + range_rows - 1) / range_rows;
	counts->ranges_total = nranges;
	counts->differences = diffs.n;
	backfill_repair_row_progress(job_id, counts);
	for (int first = 0; first < diffs.n; first += range_rows)
	{
		int			n = Min(range_rows, diffs.n - first);
		MemoryContext range_cxt = AllocSetContextCreate(cxt, "backfill repair range",
														ALLOCSET_DEFAULT_SIZES);
		MemoryContext old = MemoryContextSwitchTo(range_cxt);

		CHECK_FOR_INTERRUPTS();
		repair_range(job, desc, &diffs, first, n, in_place);
		MemoryContextSwitchTo(old);
		MemoryContextDelete(range_cxt);
		count_range(&diffs, first, n, counts);
		backfill_repair_row_progress(job_id, counts);
		/* a range repaired stays repaired, and shows */
		backfill_commit();
		if (lines && backfill_progress_due(last_line))
		{
			ereport(INFO,
					(errmsg("backfill job %lld repair: %lld of %d ranges, %lld missing, %lld extra, %lld different rows repaired",
							(long long) job_id, (long long) counts->ranges, nranges,
							(long long) counts->missing, (long long) counts->extra,
							(long long) counts->different)));
			last_line = GetCurrentTimestamp();
		}
	}
	/* what a verify finds now, the keys pending left out as before */
	if (diffs.n > 0)
		find_differences(job_id, range_rows, cxt, &diffs);
	backfill_repair_row_finish(job_id, counts, diffs.n == 0);
	return diffs.n == 0;
}

/*
 * backfill.repair_job(job_id bigint, range_rows integer DEFAULT 1000,
 *					   INOUT ranges, missing, extra, different bigint,
 *					   INOUT clean boolean) procedure
 */
Datum
backfill_repair_job(PG_FUNCTION_ARGS)
{
	CallContext *callcxt = (CallContext *) fcinfo->context;
	MemoryContext caller_cxt = CurrentMemoryContext;
	MemoryContext run_cxt;
	int64		job_id;
	int			range_rows;
	RepairFigures counts = {0};
	volatile bool clean = false;
	TupleDesc	desc;
	Datum		values[5];
	bool		nulls[5] = {false};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"range_rows\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	range_rows = PG_GETARG_INT32(1);
	if (range_rows < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("range_rows must be at least 1"),
				 errdetail("It was %d.", range_rows)));
	/* the job must be the caller's, and one it can repair */
	(void) backfill_require_job_owner(job_id);
	check_repairable(job_id);
	if (callcxt == NULL || !IsA(callcxt, CallContext) || callcxt->atomic)
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("backfill.repair_job() cannot run inside a transaction block"),
				 errdetail("It commits one transaction per range of keys it repairs."),
				 errhint("Call it with CALL outside of BEGIN ... COMMIT.")));
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "backfill.repair_job() must have its result columns");

	/* survives the commits: PortalContext belongs to the CALL */
	run_cxt = AllocSetContextCreate(PortalContext, "backfill repair",
									ALLOCSET_DEFAULT_SIZES);
	if (SPI_connect_ext(SPI_OPT_NONATOMIC) != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	backfill_xact_pin_path();
	backfill_lock_job(job_id, true);
	PG_TRY();
	{
		clean = repair(job_id, range_rows, run_cxt, &counts);
	}
	PG_CATCH();
	{
		backfill_unlock_job(job_id);
		PG_RE_THROW();
	}
	PG_END_TRY();
	backfill_unlock_job(job_id);
	if (progress_interval_ms() > 0)
		ereport(INFO,
				(errmsg("backfill job %lld repaired: %lld ranges, %lld missing, %lld extra, %lld different rows; %s",
						(long long) job_id, (long long) counts.ranges,
						(long long) counts.missing, (long long) counts.extra,
						(long long) counts.different,
						clean ? "verify finds no difference" : "verify still finds differences")));
	SPI_finish();
	MemoryContextDelete(run_cxt);

	MemoryContextSwitchTo(caller_cxt);
	desc = BlessTupleDesc(CreateTupleDescCopy(desc));
	values[0] = Int64GetDatum(counts.ranges);
	values[1] = Int64GetDatum(counts.missing);
	values[2] = Int64GetDatum(counts.extra);
	values[3] = Int64GetDatum(counts.different);
	values[4] = BoolGetDatum(clean);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * backfill.repair_job(job_name text, ...) procedure
 *		The job the caller sees by that name (job_names.c), repaired as by
 *		its id.
 */
Datum
backfill_repair_job_by_name(PG_FUNCTION_ARGS)
{
	fcinfo->args[0].value = Int64GetDatum(backfill_job_name_arg(fcinfo, 0));
	return backfill_repair_job(fcinfo);
}

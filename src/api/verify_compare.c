/*-------------------------------------------------------------------------
 *
 * verify_compare.c
 *	  Running verify_job's statements: as the job's owner, whose SQL (the
 *	  filter, the computed columns) they evaluate.
 *
 * Each statement runs as the job's owner in a security-restricted
 * operation, under a search_path of pg_catalog only and the settings the
 * job's SQL was written under, as a barrier runs it and as REFRESH
 * MATERIALIZED VIEW runs a view's query, whoever calls verify_job.  The
 * caller of verify_job has the privileges of the owner, so it gains
 * nothing it could not do as that role.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"

#include "api/verify.h"
#include "lib/lib.h"

/*
 * verify_lines_on
 *		Whether the caller asked for lines of progress
 *		(backfill.client_progress_interval), as run_job sends them.
 */
bool
verify_lines_on(void)
{
	const char *value = GetConfigOption("backfill.client_progress_interval", true, false);

	return value != NULL && atoi(value) > 0;
}

/*
 * verify_query
 *		Run a statement of the comparison as the job's owner, in a
 *		security-restricted operation under a search_path of pg_catalog
 *		only; its rows are SPI_tuptable's until the next statement.
 */
SPITupleTable *
verify_query(const VerifyPlan *plan, const char *sql)
{
	RoleContext oc;

	backfill_owner_enter(plan->job.owner, true, &oc);
	backfill_spi_exec(sql, SPI_OK_SELECT);
	backfill_role_leave(&oc);
	return SPI_tuptable;
}

/*
 * verify_query_decoded
 *		verify_query for a comparison row by row whose keys not fetched yet
 *		(VerifySource's decoded) take a parameter: the statement's snapshot
 *		is taken first, then the job's kind computes the parameter, which
 *		may depend on what the snapshot sees (a slot is peeked at up to the
 *		WAL flushed then, past every commit the snapshot sees), then the
 *		statement runs with that snapshot, as SPI would have run it.
 */
static SPITupleTable *
verify_query_decoded(const VerifyPlan *plan, const char *sql)
{
	const VerifySource *source = &plan->source;
	RoleContext oc;
	SPIPlanPtr	prepared;
	Snapshot	snapshot;
	Datum		value;
	bool		isnull;
	int			rc;

	backfill_owner_enter(plan->job.owner, true, &oc);
	prepared = SPI_prepare(sql, 1, (Oid *) &source->decoded_type);
	if (prepared == NULL)
		elog(ERROR, "SPI_prepare failed (%s): %s", SPI_result_code_string(SPI_result), sql);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	value = source->decoded_param(&plan->job, &isnull);
	rc = SPI_execute_snapshot(prepared, &value, isnull ? "n" : NULL, snapshot, InvalidSnapshot,
							  false, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_snapshot failed (%d): %s", rc, sql);
	UnregisterSnapshot(snapshot);
	SPI_freeplan(prepared);
	backfill_role_leave(&oc);
	return SPI_tuptable;
}

/*
 * verify_compare
 *		Run a comparison row by row (verify_rows_sql) as the job's owner and
 *		return its differences to the caller of verify_job; returns how many.
 */
uint64
verify_compare(const VerifyPlan *plan, const char *sql, ReturnSetInfo *rsinfo)
{
	SPITupleTable *rows = plan->source.decoded_param != NULL ?
		verify_query_decoded(plan, sql) : verify_query(plan, sql);
	uint64		n = SPI_processed;

	for (uint64 i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		nulls[2];

		for (int c = 0; c < 2; c++)
			values[c] = SPI_getbinval(rows->vals[i], rows->tupdesc, c + 1, &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_freetuptable(rows);
	return n;
}

/*-------------------------------------------------------------------------
 *
 * job_drop.c
 *	  cancel_job and drop_job, and what both drop of a job: its triggers,
 *	  its change and state tables, its image type, its downstream unless
 *	  it filled a table of its user's, and what its kind keeps elsewhere.
 *
 * Both run with their caller's rights: the caller must have the privileges
 * of the job's owner (another role's job does not exist for it, as in the
 * views), and the tables are dropped as the caller.  The catalog writes go
 * through control.c, as the extension's owner.
 *
 * Locks, in this order:
 *	1. the job's cutover lock (pg_advisory_xact_lock(hashtext(
 *	   'backfill.cutover'), job_id), the lock the cutover functions take):
 *	   a cutover that commits while the job waits for it has turned the job
 *	   around, its downstream then the old table;
 *	2. the job lock, once its background workers have stopped
 *	   (worker_control.c); a session that runs the job makes it fail;
 *	3. then the job's row is read again: it is the one the cutover left.
 * The job leaves the catalog (cancelled) before its tables are dropped: the
 * DDL event trigger guards the tables of a job that is not cancelled.
 *
 * backfill_let_job_go is the same drop for the cutover functions, which
 * pass the job's row as they read it: a row that names a table the job's
 * catalog row does not is refused.  backfill._drop_job_objects(job,
 * drop_downstream), which they called before, is that drop for the tests.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "api/cutover.h"
#include "api/job_ops.h"
#include "catalog/catalog_access.h"
#include "cutover/queries.h"
#include "lib/lib.h"
#include "runtime/driver.h"

PG_FUNCTION_INFO_V1(backfill_cancel_job);
PG_FUNCTION_INFO_V1(backfill_drop_job);
PG_FUNCTION_INFO_V1(backfill_drop_job_objects_1_4);

/* what cancel_job and drop_job read of a job's row */
typedef struct JobRow
{
	int64		job_id;
	Oid			owner;
	Oid			upstream;
	Oid			downstream;		/* InvalidOid for NULL */
	Oid			state_table;
	Oid			change_table;
	bool		into_existing;
	char	   *status;			/* NULL when the row is gone */
} JobRow;

/* the oid in column attno of an SPI row, InvalidOid for NULL */
static Oid
row_oid(int attno)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, attno, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * read_job_row
 *		The job's row as the caller sees it in backfill.job, in a snapshot
 *		of its own; status NULL when there is none.  Caller is connected to
 *		SPI.
 */
static void
read_job_row(int64 job_id, JobRow *row)
{
	bool		isnull;
	Datum		d;

	memset(row, 0, sizeof(JobRow));
	row->job_id = job_id;
	backfill_spi_exec_args("SELECT owner::pg_catalog.oid, upstream::pg_catalog.oid, "
						   "downstream::pg_catalog.oid, state_table::pg_catalog.oid, "
						   "change_table::pg_catalog.oid, into_existing, status "
						   "FROM backfill.job WHERE job_id OPERATOR(pg_catalog.=) $1",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(job_id)}, NULL,
						   SPI_OK_SELECT);
	if (SPI_processed != 1)
		return;
	row->owner = row_oid(1);
	row->upstream = row_oid(2);
	row->downstream = row_oid(3);
	row->state_table = row_oid(4);
	row->change_table = row_oid(5);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 6, &isnull);
	row->into_existing = !isnull && DatumGetBool(d);
	row->status = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 7);
}

static bool
relation_exists(Oid relid)
{
	return OidIsValid(relid) && SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid));
}

/*
 * build_index
 *		Build again an index the job had dropped from its downstream to build
 *		it after its snapshot; a failure is a WARNING, as the job's user may
 *		build it later with the statement in the HINT.
 */
static void
build_index(int64 job_id, Oid downstream, const char *index_name, const char *stmt)
{
	ErrorData  *edata = backfill_subxact_exec(stmt, SPI_OK_UTILITY, -1);

	if (edata == NULL)
		return;
	ereport(WARNING,
			(errmsg("index \"%s\" of table %s was not built again",
					index_name, backfill_regclass_text(downstream)),
			 errdetail("Backfill job %lld had dropped it to build it after its snapshot: %s",
					   (long long) job_id, edata->message),
			 errhint("Run %s", stmt)));
	FreeErrorData(edata);
}

/*
 * build_dropped_indexes
 *		The indexes named in the job's catalog that its downstream, which
 *		stays, does not have: built again, in their order.
 */
static void
build_dropped_indexes(const JobRow *j)
{
	Oid			nsp = get_rel_namespace(j->downstream);
	char	   *table = backfill_regclass_text(j->downstream);
	SPITupleTable *indexes;
	uint64		nindexes;

	backfill_spi_exec_args("SELECT index_name, head, tail FROM backfill.job_index "
						   "WHERE job_id OPERATOR(pg_catalog.=) $1 ORDER BY position",
						   1, (Oid[]) {INT8OID}, (Datum[]) {Int64GetDatum(j->job_id)}, NULL,
						   SPI_OK_SELECT);
	/* the builds below run statements of their own */
	indexes = SPI_tuptable;
	nindexes = SPI_processed;
	for (uint64 i = 0; i < nindexes; i++)
	{
		HeapTuple	tup = indexes->vals[i];
		char	   *name = SPI_getvalue(tup, indexes->tupdesc, 1);

		if (OidIsValid(get_relname_relid(name, nsp)))
			continue;
		build_index(j->job_id, j->downstream, name,
					psprintf("%s%s%s", SPI_getvalue(tup, indexes->tupdesc, 2), table,
							 SPI_getvalue(tup, indexes->tupdesc, 3)));
	}
}

/* DROP TABLE of a relation, if it is still there */
static void
drop_table(Oid relid)
{
	if (relation_exists(relid))
		backfill_spi_exec(psprintf("DROP TABLE %s", backfill_regclass_text(relid)), SPI_OK_UTILITY);
}

/* the job's image type (a cdc job's), if it has one */
static void
drop_image_type(int64 job_id)
{
	char	   *name = psprintf("image_%lld", (long long) job_id);
	Oid			nsp = get_namespace_oid(BACKFILL_SCHEMA, false);

	if (OidIsValid(GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
								   CStringGetDatum(name), ObjectIdGetDatum(nsp))))
		backfill_spi_exec(psprintf("DROP TYPE %s",
								   quote_qualified_identifier(BACKFILL_SCHEMA, name)),
						  SPI_OK_UTILITY);
}

/*
 * drop_job_objects
 *		Drop the triggers and tables of job j, whose owner's privileges the
 *		caller has, its downstream only if drop_downstream (else the indexes
 *		it dropped are built again), and what its kind keeps elsewhere.
 *		Caller is connected to SPI.
 */
static void
drop_job_objects(const JobRow *j, bool drop_downstream)
{
	if (!drop_downstream && relation_exists(j->downstream))
		build_dropped_indexes(j);
	/* the upstream's owner may be another role than the job's */
	backfill_catalog_op(OP_DROP_TRIGGERS, j->job_id, true, 0);
	drop_table(j->change_table);
	drop_image_type(j->job_id);
	if (drop_downstream)
		drop_table(j->downstream);
	drop_table(j->state_table);

	/*
	 * what its kind owns outside its tables (src/kinds/kind.h,
	 * drop_objects): a cdc job's slot, dropped at commit; the slot and the
	 * publication of a job whose upstream is on another server
	 */
	backfill_drop_kind_objects_of(j->job_id);
}

/*
 * lock_job_for_drop
 *		The job's cutover lock, then its job lock once its workers have
 *		stopped; returns its row as the caller sees it after both.
 */
static void
lock_job_for_drop(int64 job_id, JobRow *row)
{
	/*
	 * a cutover of the job commits first: it turns the job around, and the
	 * row read below must be the one it left
	 */
	backfill_lock_job_cutover(job_id);
	(void) backfill_require_job_owner(job_id);
	(void) backfill_stop_and_lock(job_id);
	read_job_row(job_id, row);
	/* dropped meanwhile: the same check says it does not exist */
	if (row->status == NULL)
		(void) backfill_require_job_owner(job_id);
}

/*
 * cancel_owned
 *		Out of the catalog (cancelled), then its objects dropped; a table of
 *		the user's that it filled stays, with its rows.
 */
static void
cancel_owned(const JobRow *j)
{
	/* out of the catalog first: the DDL event trigger guards a job's tables */
	backfill_catalog_op(OP_CANCEL, j->job_id, true, 0);
	drop_job_objects(j, !j->into_existing);
	if (j->into_existing)
		ereport(NOTICE,
				(errmsg("backfill job %lld leaves table %s and its rows in place",
						(long long) j->job_id, backfill_regclass_text(j->downstream)),
				 errdetail("The job filled a table its user made, which only its user drops or empties.")));
}

/*
 * backfill_cancel_job_owned
 *		cancel_job of a job the caller sees, for cancel_job and recreate_job.
 */
int64
backfill_cancel_job_owned(int64 job_id)
{
	JobRow		j;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_job_for_drop(job_id, &j);
	if (strcmp(j.status, "finished") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cancel backfill job %lld because it has finished",
						(long long) job_id),
				 errdetail("A finished job keeps its downstream table equal to its upstream table."),
				 errhint("Use backfill.drop_job(%lld) to remove the job and its downstream table.",
						 (long long) job_id)));
	if (strcmp(j.status, "cancelled") == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has already been cancelled", (long long) job_id)));
	cancel_owned(&j);
	SPI_finish();
	return job_id;
}

/*
 * backfill.cancel_job(job_id bigint) RETURNS bigint
 *		Cancel an unfinished job: drop its downstream (unless it filled a
 *		table of the user's), state and capture; returns the job id.
 */
Datum
backfill_cancel_job(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT64(backfill_cancel_job_owned(backfill_owned_job_arg(fcinfo, 0, "job_id")));
}

/*
 * backfill.drop_job(job_id bigint) RETURNS void
 *		Remove a job in any status: cancelled first unless it is, then its
 *		catalog rows.
 */
Datum
backfill_drop_job(PG_FUNCTION_ARGS)
{
	int64		job_id = backfill_owned_job_arg(fcinfo, 0, "job_id");
	JobRow		j;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	lock_job_for_drop(job_id, &j);
	if (strcmp(j.status, "cancelled") != 0)
		cancel_owned(&j);
	backfill_catalog_op(OP_DELETE, job_id, true, 0);
	SPI_finish();
	PG_RETURN_VOID();
}

/* the oid in a column of a backfill.job row, InvalidOid for NULL */
static Oid
given_oid(HeapTupleHeader row, const char *column)
{
	bool		isnull;
	Datum		d = GetAttributeByName(row, column, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * given_job_row
 *		The job row the caller passed, which must name no table its job has
 *		not: the job as the catalog has it (cancelled maybe, its tables then
 *		NULL) must have the same owner, upstream and, where it still has
 *		them, the same tables.
 */
static void
given_job_row(HeapTupleHeader given, JobRow *j)
{
	bool		isnull;
	Datum		id = GetAttributeByName(given, "job_id", &isnull);
	JobRow		cur;

	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"j\" must not be null")));
	memset(j, 0, sizeof(JobRow));
	j->job_id = DatumGetInt64(id);
	j->owner = given_oid(given, "owner");
	j->upstream = given_oid(given, "upstream");
	j->downstream = given_oid(given, "downstream");
	j->state_table = given_oid(given, "state_table");
	j->change_table = given_oid(given, "change_table");

	(void) backfill_require_job_owner(j->job_id);
	read_job_row(j->job_id, &cur);
	if (cur.status == NULL)
		(void) backfill_require_job_owner(j->job_id);
	if (j->owner != cur.owner || j->upstream != cur.upstream ||
		(OidIsValid(cur.downstream) && j->downstream != cur.downstream) ||
		(OidIsValid(cur.state_table) && j->state_table != cur.state_table) ||
		(OidIsValid(cur.change_table) && j->change_table != cur.change_table))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"j\" is not the row of backfill job %lld",
						(long long) j->job_id),
				 errdetail("Its tables or its owner differ from those of the job's catalog row.")));
}

/*
 * backfill._drop_job_objects(j backfill.job, drop_downstream boolean)
 *		RETURNS void
 *		For the cutover functions: drop the triggers and tables of a job the
 *		caller owns, given its row as the caller read it.
 */
Datum
backfill_drop_job_objects_1_4(PG_FUNCTION_ARGS)
{
	JobRow		j;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"j\" must not be null")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"drop_downstream\" must not be null")));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	given_job_row(PG_GETARG_HEAPTUPLEHEADER(0), &j);
	drop_job_objects(&j, PG_GETARG_BOOL(1));
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * backfill_let_job_go
 *		For cutover and finish_cutover: the job, whose row (job_row) the
 *		caller read, out of the catalog (cancelled), then its triggers and
 *		tables dropped, its downstream kept.  Each step checks what
 *		_mark_cancelled and _drop_job_objects(j, false) checked and runs as
 *		the statement the caller ran them in did, with a snapshot of its own
 *		(cutover/queries.c): those functions are not PUBLIC's.
 */
void
backfill_let_job_go(int64 job_id, Datum job_row)
{
	JobRow		j;

	cutover_statement_begin();
	(void) backfill_require_job_owner(job_id);
	backfill_catalog_op(OP_CANCEL, job_id, true, 0);
	cutover_statement_end();

	cutover_statement_begin();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	given_job_row(DatumGetHeapTupleHeader(job_row), &j);
	drop_job_objects(&j, false);
	SPI_finish();
	cutover_statement_end();
}

/*-------------------------------------------------------------------------
 *
 * observe.c
 *	  backfill.job_state() and backfill.job_splits(): a job's state rows,
 *	  decoded, and the splits of a job that cuts its own.
 *
 * Both read as their caller: the job's row (catalog/job_view.c), its
 * actors and its state table with the caller's rights, so that a role sees
 * the state of the jobs of the roles whose privileges it has (a superuser,
 * every job's), as backfill.jobs shows them.  A job's kind knows its state
 * table's layout and its splits (kinds/kind.h: state_query, splits); this
 * file only checks, asks the kind and returns what it says.
 *
 * The state table belongs to the job's owner, but a superuser reads it too:
 * before it is read, check_state_table refuses one that carries what its
 * owner put there (rules, which could make it a view; row-level security;
 * a column retyped to a type of the owner's, whose casts and operators
 * would run in the reader's comparisons).  Only the extension changes a
 * job's tables (ddl_job_tables.c); this catches what version 1.3 let an
 * owner do.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "catalog/catalog_access.h"
#include "kinds/kind.h"

PG_FUNCTION_INFO_V1(backfill_job_state_1_4);
PG_FUNCTION_INFO_V1(backfill_job_splits_1_4);

/* the columns of job_state's rows */
#define JOB_STATE_COLUMNS 7

/*
 * Refuse a state table with rules or row-level security, which the
 * extension never gives one.
 */
static void
check_state_relation(const JobView *job)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(job->state_table));
	Form_pg_class rel;
	bool		bad;

	if (!HeapTupleIsValid(tup))
		return;					/* gone: reading it says so */
	rel = (Form_pg_class) GETSTRUCT(tup);
	bad = rel->relkind != RELKIND_RELATION || rel->relhasrules || rel->relrowsecurity;
	ReleaseSysCache(tup);
	if (bad)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("state table %s of backfill job %lld is not a table the extension can read",
						backfill_regclass_text(job->state_table), (long long) job->job_id),
				 errdetail("It has rules or row-level security, which the extension did not give it."),
				 errhint("Drop them, or drop the job with backfill.drop_job().")));
}

/* whether the upstream has a column of that name and type: a key's */
static bool
upstream_column_of_type(Oid upstream, const char *name, Oid type)
{
	HeapTuple	tup = SearchSysCacheAttName(upstream, name);
	bool		same;

	if (!HeapTupleIsValid(tup))
		return false;
	same = ((Form_pg_attribute) GETSTRUCT(tup))->atttypid == type;
	ReleaseSysCache(tup);
	return same;
}

/*
 * Refuse a state table of which a column has a type that is neither the
 * system's nor that of the upstream's column of its name: the extension
 * gives its columns those types only, and a type of the owner's would run
 * its implicit casts in the reader's comparisons.  The first such column,
 * in the table's order, is named.
 */
static void
check_state_columns(const JobView *job)
{
	HeapTuple	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(job->state_table));
	int			natts;

	if (!HeapTupleIsValid(classtup))
		return;
	natts = ((Form_pg_class) GETSTRUCT(classtup))->relnatts;
	ReleaseSysCache(classtup);
	for (AttrNumber attnum = 1; attnum <= natts; attnum++)
	{
		HeapTuple	tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(job->state_table),
										  Int16GetDatum(attnum));
		Form_pg_attribute att;
		char	   *column;

		if (!HeapTupleIsValid(tup))
			continue;
		att = (Form_pg_attribute) GETSTRUCT(tup);
		if (att->attisdropped || att->atttypid < FirstNormalObjectId ||
			upstream_column_of_type(job->upstream, NameStr(att->attname), att->atttypid))
		{
			ReleaseSysCache(tup);
			continue;
		}
		column = psprintf("%s %s", quote_identifier(NameStr(att->attname)),
						  format_type_extended(att->atttypid, att->atttypmod,
											   FORMAT_TYPE_TYPEMOD_GIVEN |
											   FORMAT_TYPE_ALLOW_INVALID));
		ReleaseSysCache(tup);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("state table %s of backfill job %lld has column %s of a type the extension did not give it",
						backfill_regclass_text(job->state_table), (long long) job->job_id, column),
				 errdetail("A job's state table holds positions and counts of the types of the system and of its upstream's key."),
				 errhint("Drop the job with backfill.drop_job(%lld) and create it again.",
						 (long long) job->job_id)));
	}
}

/* the key's columns over alias s: "s.k1, s.k2" */
static char *
state_position(const JobView *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%ss.%s", k > 0 ? ", " : "", quote_identifier(job->pk_names[k]));
	return buf.data;
}

/*
 * The rows of the kind's query must be of the function's types, as
 * PL/pgSQL's RETURN QUERY requires them: a state table whose columns its
 * owner retyped in version 1.3 may make them another.
 */
static void
check_state_result(TupleDesc got, TupleDesc expected)
{
	if (got->natts != expected->natts)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("structure of query does not match function result type"),
				 errdetail("Number of returned columns (%d) does not match expected column count (%d).",
						   got->natts, expected->natts)));
	for (int i = 0; i < expected->natts; i++)
		if (TupleDescAttr(got, i)->atttypid != TupleDescAttr(expected, i)->atttypid)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("structure of query does not match function result type"),
					 errdetail("Returned type %s does not match expected type %s in column %d.",
							   format_type_be(TupleDescAttr(got, i)->atttypid),
							   format_type_be(TupleDescAttr(expected, i)->atttypid),
							   i + 1)));
}

/*
 * backfill.job_state(job_id bigint)
 *		RETURNS TABLE (actor_id integer, vnode integer, current_pos text,
 *					   backfill_finished boolean, row_count bigint,
 *					   epoch bigint, cdc_offset jsonb)
 *		The state rows of a job the caller sees, decoded by its kind: one
 *		per vnode with its actor; a cdc job's one split; one per split of a
 *		remote job.
 */
Datum
backfill_job_state_1_4(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		job_id;
	JobView		job;
	Oid			types[2] = {INT8OID, TEXTARRAYOID};
	Datum		values[2];
	char		nulls[2] = {' ', ' '};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_id\" must not be null")));
	job_id = PG_GETARG_INT64(0);
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	(void) backfill_read_job_view(job_id, true, false, &job);
	if (!OidIsValid(job.state_table))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has no state table", (long long) job_id),
				 errdetail("The job is %s.", job.status)));
	check_state_relation(&job);
	check_state_columns(&job);

	values[0] = Int64GetDatum(job_id);
	values[1] = job.splits;
	if (job.splits_null)
		nulls[1] = 'n';
	if (SPI_execute_with_args(backfill_kind_routine(job.kind)->state_query(backfill_regclass_text(job.state_table),
																		   state_position(&job)),
							  2, types, values, nulls, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the state of backfill job %lld", (long long) job_id);
	check_state_result(SPI_tuptable->tupdesc, rsinfo->setDesc);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		row[JOB_STATE_COLUMNS];
		bool		row_nulls[JOB_STATE_COLUMNS];

		heap_deform_tuple(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, row, row_nulls);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, row_nulls);
	}
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * backfill.job_splits(job_id bigint)
 *		RETURNS TABLE (split_id integer, partition regclass, server name,
 *					   lower_bound text, upper_bound text)
 *		The splits of a job the caller sees whose kind cuts its own (a job
 *		whose upstream is on other servers); no rows for another job, for a
 *		job the caller does not see or for NULL.
 */
Datum
backfill_job_splits_1_4(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	JobView		job;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (PG_ARGISNULL(0))
		PG_RETURN_VOID();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (backfill_read_job_view(PG_GETARG_INT64(0), true, true, &job))
		foreach(lc, backfill_kind_splits(backfill_kind_routine(job.kind), &job))
		{
			JobSplit   *split = lfirst(lc);
			Datum		values[5];
			bool		nulls[5] = {false, false, false, false, false};
			NameData	server;

			values[0] = Int32GetDatum(split->split_id);
			values[1] = ObjectIdGetDatum(split->partition);
			nulls[2] = split->server == NULL;
			if (split->server)
			{
				namestrcpy(&server, split->server);
				values[2] = NameGetDatum(&server);
			}
			nulls[3] = split->lower_bound == NULL;
			if (split->lower_bound)
				values[3] = CStringGetTextDatum(split->lower_bound);
			nulls[4] = split->upper_bound == NULL;
			if (split->upper_bound)
				values[4] = CStringGetTextDatum(split->upper_bound);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		}
	SPI_finish();
	PG_RETURN_VOID();
}

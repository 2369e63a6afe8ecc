/*-------------------------------------------------------------------------
 *
 * job_load.c
 *	  Loading a job: its row of backfill.job and its actors' rows of
 *	  backfill.actor into a BackfillJob, checked for the caller who runs
 *	  it, and what a barrier reads of it again (its status, its rate
 *	  limit).
 *
 * The job's state is not read here: its kind decodes it and checks the key
 * (kinds/kind.h).  Each column a version of the extension added is read
 * when the installed catalog has it (capabilities.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/* the expressions of a job's computed columns, one per column or NULL */
static void
read_expressions(BackfillJob *job, ArrayType *array)
{
	Datum	   *elems;
	bool	   *nulls;
	int			n;

	deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	for (int i = 0; i < n && i < job->ncols; i++)
		job->col_exprs[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
}

/*
 * The upstream's side of the output columns, over alias u: each copied
 * column by its name, each computed one by its expression.
 */
static char *
select_list(BackfillJob *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < job->ncols; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		if (job->col_exprs[i])
			appendStringInfo(&buf, "(%s) AS %s", job->col_exprs[i],
							 quote_identifier(job->col_names[i]));
		else
			appendStringInfoString(&buf, quote_identifier(job->col_names[i]));
	}
	return buf.data;
}

/*
 * The job's column list and select list without the columns its downstream
 * generates: a migration's downstream computes a generated column as its
 * upstream does (src/copy/migration.c), and the old table of a cutover,
 * which follows the new one, computes its own.  No statement of the job
 * writes one.
 */
static void
leave_out_generated(BackfillJob *job)
{
	StringInfoData cols;
	StringInfoData select;
	bool		any = false;

	initStringInfo(&cols);
	initStringInfo(&select);
	for (int i = 0; i < job->ncols; i++)
	{
		AttrNumber	attnum = get_attnum(job->downstream, job->col_names[i]);
		const char *name = quote_identifier(job->col_names[i]);

		if (attnum > 0 && get_attgenerated(job->downstream, attnum) != '\0')
		{
			any = true;
			continue;
		}
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "", name);
		if (job->col_exprs[i])
			appendStringInfo(&select, "%s(%s) AS %s", select.len > 0 ? ", " : "",
							 job->col_exprs[i], name);
		else
			appendStringInfo(&select, "%s%s", select.len > 0 ? ", " : "", name);
	}
	if (any && cols.len > 0)
	{
		job->columns_sql = cols.data;
		job->select_sql = select.data;
	}
}

static BackfillJob *load_job(int64 job_id, MemoryContext cxt, bool latest);

/*
 * backfill_load_job
 *		Read a job's definition and actors into cxt.  Caller is connected to
 *		SPI.  The job's state is not read here: its kind decodes it and
 *		checks the key (kind.h).
 */
BackfillJob *
backfill_load_job(int64 job_id, MemoryContext cxt)
{
	return load_job(job_id, cxt, false);
}

/*
 * backfill_load_job_latest
 *		The same, read with a new snapshot rather than the transaction's, as
 *		the system catalogs are: for a writer's trigger, whose transaction
 *		may hold a snapshot taken before a cutover turned the job around
 *		(REPEATABLE READ), and which must act on the job as it is now, since
 *		it writes the tables as they are now.
 */
BackfillJob *
backfill_load_job_latest(int64 job_id, MemoryContext cxt)
{
	return load_job(job_id, cxt, true);
}

/* a column of an SPI result, by name (desc in scope) */
#define COLUMN(name) SPI_fnumber(desc, (name))

/*
 * Select the row of a job into SPI_tuptable: with the transaction's
 * snapshot, or with a new one (latest).  Each column a version added is
 * read when the catalog has it: one older than 1.2 has neither filters nor
 * computed columns, nor range vnodes, before their columns.
 */
static void
select_job_row(int64 job_id, bool latest)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	const BackfillCatalogCaps *caps = backfill_catalog_caps();
	char	   *sql;
	int			ret;

	sql = psprintf("SELECT job_name, kind, status, owner::pg_catalog.oid AS owner, "
				   "upstream::pg_catalog.oid AS upstream, "
				   "downstream::pg_catalog.oid AS downstream, "
				   "state_table::pg_catalog.oid AS state_table, "
				   "change_table::pg_catalog.oid AS change_table, "
				   "fragment_id, chunk_size, "
				   "(SELECT coalesce(pg_catalog.max(a.epoch), 0) FROM backfill.actor a "
				   " WHERE a.job_id = j.job_id) AS epoch, "
				   "runs, columns, pk_columns, coalesce(rate_limit, -1) AS rate_limit, "
				   "run_mode = 'background' AS background, "
				   "%s, %s, %s "
				   "FROM backfill.job j WHERE job_id = $1",
				   caps->job_expressions ? "filter, expressions, into_existing" :
				   "NULL::pg_catalog.text AS filter, NULL::pg_catalog.text[] AS expressions, "
				   "false AS into_existing",
				   caps->job_vnode_bounds ? "vnode_bounds" :
				   "NULL::pg_catalog.text[] AS vnode_bounds",
				   caps->job_remote ? "coalesce(remote, false) AS remote" : "false AS remote");
	if (latest)
	{
		SPIPlanPtr	plan = SPI_prepare(sql, 1, argtypes);

		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed for: %s", sql);
		ret = SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(),
								   InvalidSnapshot, true, false, 0);
		SPI_freeplan(plan);
	}
	else
		ret = SPI_execute_with_args(sql, 1, argtypes, values, NULL, false, 0);
	if (ret != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
}

static BackfillJob *
load_job(int64 job_id, MemoryContext cxt, bool latest)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	HeapTuple	tup;
	TupleDesc	desc;
	BackfillJob *job;
	MemoryContext oldcxt;
	bool		isnull;

	select_job_row(job_id, latest);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job %lld does not exist", (long long) job_id)));

	oldcxt = MemoryContextSwitchTo(cxt);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	job = palloc0(sizeof(BackfillJob));
	job->job_id = job_id;
	job->job_name = SPI_getvalue(tup, desc, COLUMN("job_name"));
	job->kind = backfill_parse_kind(SPI_getvalue(tup, desc, COLUMN("kind")));
	job->status = backfill_parse_status(SPI_getvalue(tup, desc, COLUMN("status")));
	job->owner = DatumGetObjectId(SPI_getbinval(tup, desc, COLUMN("owner"), &isnull));
	job->upstream = DatumGetObjectId(SPI_getbinval(tup, desc, COLUMN("upstream"), &isnull));
	job->downstream = DatumGetObjectId(SPI_getbinval(tup, desc, COLUMN("downstream"), &isnull));
	if (isnull)
		job->downstream = InvalidOid;
	job->state_table = DatumGetObjectId(SPI_getbinval(tup, desc, COLUMN("state_table"), &isnull));
	if (isnull)
		job->state_table = InvalidOid;
	job->change_table = DatumGetObjectId(SPI_getbinval(tup, desc, COLUMN("change_table"), &isnull));
	if (isnull)
		job->change_table = InvalidOid;
	job->fragment_id = DatumGetInt32(SPI_getbinval(tup, desc, COLUMN("fragment_id"), &isnull));
	job->chunk_size = DatumGetInt32(SPI_getbinval(tup, desc, COLUMN("chunk_size"), &isnull));
	job->epoch = DatumGetInt64(SPI_getbinval(tup, desc, COLUMN("epoch"), &isnull));
	job->runs = DatumGetInt32(SPI_getbinval(tup, desc, COLUMN("runs"), &isnull));
	job->columns_sql = backfill_text_array_sql(SPI_getbinval(tup, desc, COLUMN("columns"), &isnull),
									  &job->col_names, &job->ncols);
	(void) backfill_text_array_sql(SPI_getbinval(tup, desc, COLUMN("pk_columns"), &isnull), &job->pk_names, &job->npk);
	job->rate_limit = DatumGetInt32(SPI_getbinval(tup, desc, COLUMN("rate_limit"), &isnull));
	job->background = DatumGetBool(SPI_getbinval(tup, desc, COLUMN("background"), &isnull));
	job->filter = SPI_getvalue(tup, desc, COLUMN("filter"));
	job->col_exprs = palloc0(sizeof(char *) * Max(job->ncols, 1));
	{
		Datum		d = SPI_getbinval(tup, desc, COLUMN("expressions"), &isnull);

		if (!isnull)
			read_expressions(job, DatumGetArrayTypeP(d));
	}
	job->into_existing = DatumGetBool(SPI_getbinval(tup, desc, COLUMN("into_existing"), &isnull));
	{
		Datum		d = SPI_getbinval(tup, desc, COLUMN("vnode_bounds"), &isnull);

		job->vnode_bounds = isnull ? NULL : DatumGetArrayTypePCopy(d);
	}
	job->select_sql = select_list(job);
	if (DatumGetBool(SPI_getbinval(tup, desc, COLUMN("remote"), &isnull)) &&
		backfill_remote_kind(job->kind) != job->kind)
	{
		job->kind = backfill_remote_kind(job->kind);
		/* its source has no trigger of ours: a worker fetches its changes */
		job->follows = true;
	}

	/* a cancelled job has no tables left: the caller reports it */
	if (job->status != BACKFILL_STATUS_CANCELLED)
	{
		job->upstream_sql = backfill_relation_sql(job->upstream);
		job->downstream_sql = backfill_relation_sql(job->downstream);
		if (OidIsValid(job->downstream))
			leave_out_generated(job);
		job->state_sql = backfill_relation_sql(job->state_table);
		job->changes_sql = backfill_relation_sql(job->change_table);
		job->pk_types = palloc(sizeof(Oid) * job->npk);
		job->pk_collations = palloc(sizeof(Oid) * job->npk);
		for (int k = 0; k < job->npk; k++)
		{
			AttrNumber	attnum = get_attnum(job->upstream, job->pk_names[k]);
			int32		typmod;

			if (attnum == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("key column \"%s\" of backfill job %lld no longer exists in table %s",
								job->pk_names[k], (long long) job_id, job->upstream_sql)));
			get_atttypetypmodcoll(job->upstream, attnum, &job->pk_types[k], &typmod,
								  &job->pk_collations[k]);
		}
		job->search_path = backfill_safe_search_path(job->npk, job->pk_types);
		job->partitioned = get_rel_relkind(job->upstream) == RELKIND_PARTITIONED_TABLE;
	}
	MemoryContextSwitchTo(oldcxt);

	if (SPI_execute_with_args("SELECT actor_id, vnode_start, vnode_end "
							  "FROM backfill.actor a "
							  "WHERE job_id = $1 ORDER BY actor_id",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.actor");
	oldcxt = MemoryContextSwitchTo(cxt);
	job->nactors = (int) SPI_processed;
	job->actors = palloc0(sizeof(BackfillActor) * Max(job->nactors, 1));
	for (int i = 0; i < job->nactors; i++)
	{
		tup = SPI_tuptable->vals[i];
		desc = SPI_tuptable->tupdesc;
		job->actors[i].actor_id = DatumGetInt32(SPI_getbinval(tup, desc, COLUMN("actor_id"), &isnull));
		job->actors[i].vnode_start = DatumGetInt16(SPI_getbinval(tup, desc, COLUMN("vnode_start"), &isnull));
		job->actors[i].vnode_end = DatumGetInt16(SPI_getbinval(tup, desc, COLUMN("vnode_end"), &isnull));
	}
	MemoryContextSwitchTo(oldcxt);
	return job;
}

/*
 * backfill_reload_settings
 *		Re-read what may change while a job runs: its status and rate limit.
 *		A barrier calls it first, so changes take effect at the next barrier.
 */
void
backfill_reload_settings(BackfillJob *job)
{
	Oid			argtypes[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job->job_id)};
	bool		isnull;

	/* once per barrier: in a connection of its own, so nothing accumulates */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (SPI_execute_with_args("SELECT status, coalesce(rate_limit, -1) FROM backfill.job "
							  "WHERE job_id = $1",
							  1, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	job->status = SPI_processed == 0 ? BACKFILL_STATUS_DROPPED :
		backfill_parse_status(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1));
	if (SPI_processed > 0)
		job->rate_limit = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0],
													  SPI_tuptable->tupdesc, 2, &isnull));
	SPI_finish();
}

/*
 * backfill_load_job_to_run
 *		Load a job that the caller is to run or start: the caller must have
 *		the privileges of its owner, and a cancelled job is refused.
 */
BackfillJob *
backfill_load_job_to_run(int64 job_id, MemoryContext cxt)
{
	BackfillJob *job = backfill_load_job(job_id, cxt);

	backfill_check_job_owner(job_id, job->owner);
	if (job->status == BACKFILL_STATUS_CANCELLED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has been cancelled", (long long) job_id),
				 errhint("Create it again with backfill.recreate_job(%lld).",
						 (long long) job_id)));
	return job;
}

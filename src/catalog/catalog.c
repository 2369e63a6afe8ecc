/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Jobs in the catalog: their rows in backfill.job and backfill.actor,
 *	  loading a job, the job lock, the owner check, recording a failure.
 *
 * Only the extension's owner writes the catalogs; the writes here run in a
 * catalog context (privilege.c) on behalf of a caller whose right to the job
 * was checked first.  Nothing here commits: a failure recorded here stays
 * when the caller commits it (state.c, worker.c).
 *
 * The job lock is an advisory lock with field4 BACKFILL_LOCK_FIELD4, which
 * pg_advisory_lock() never uses.  run_job holds it exclusively at session
 * level for the whole run; the background actors of a job share it, each at
 * session level; start_job, cancel_job, drop_job and reschedule hold it
 * exclusively at transaction level.  Whoever cannot get it at once fails
 * with OBJECT_IN_USE, except after stopping a job's workers, when waiting
 * for them to let go of it is the point.
 *
 * Job, fragment and actor ids are taken under another advisory lock, with
 * field4 BACKFILL_ID_LOCK_FIELD4, held only while one id is taken
 * (backfill_next_id).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

static const char *const kind_names[] = {
	[BACKFILL_KIND_NO_SHUFFLE] = "no_shuffle",
	[BACKFILL_KIND_ARRANGEMENT] = "arrangement",
	[BACKFILL_KIND_SNAPSHOT] = "snapshot",
	[BACKFILL_KIND_CDC] = "cdc",
	[BACKFILL_KIND_REMOTE_CDC] = "cdc",	/* with backfill.job.remote */
};

const char *
backfill_kind_name(BackfillKind kind)
{
	return kind_names[kind];
}

/* the kind a name in backfill.job or create_job's argument stands for */
BackfillKind
backfill_parse_kind(const char *name)
{
	for (int i = 0; i < lengthof(kind_names); i++)
		if (strcmp(name, kind_names[i]) == 0)
			return (BackfillKind) i;

	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized backfill kind \"%s\"", name),
			 errhint("Valid kinds are \"no_shuffle\", \"arrangement\", \"snapshot\" and \"cdc\".")));
	pg_unreachable();
}

/*
 * backfill_remote_kind
 *		The kind a job of kind "kind" is when it reads a foreign table: cdc
 *		on a foreign table is the remote cdc kind, which follows another
 *		server's changes.  Decided here alone, for create_job (the relation
 *		is foreign, kind.c) and for a loaded job (backfill.job.remote says
 *		it was); a kind that cannot read one is the caller's to refuse.
 */
BackfillKind
backfill_remote_kind(BackfillKind kind)
{
	return kind == BACKFILL_KIND_CDC ? BACKFILL_KIND_REMOTE_CDC : kind;
}

static const char *const status_names[] = {
	[BACKFILL_STATUS_PENDING] = "pending",
	[BACKFILL_STATUS_BACKFILLING] = "backfilling",
	[BACKFILL_STATUS_FINISHED] = "finished",
	[BACKFILL_STATUS_FAILED] = "failed",
	[BACKFILL_STATUS_CANCELLED] = "cancelled",
	[BACKFILL_STATUS_DROPPED] = "dropped",
};

/* the status a word of backfill.job.status stands for */
BackfillJobStatus
backfill_parse_status(const char *name)
{
	for (int i = 0; i < lengthof(status_names); i++)
		if (strcmp(name, status_names[i]) == 0)
			return (BackfillJobStatus) i;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unrecognized backfill job status \"%s\"", name),
			 errhint("Valid statuses are \"pending\", \"backfilling\", \"finished\", \"failed\" and \"cancelled\".")));
	pg_unreachable();
}

/* "a, b": the job's key columns, for a message */
static char *
key_names_list(BackfillJob *job)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&buf, "%s%s", k > 0 ? ", " : "", quote_identifier(job->pk_names[k]));
	return buf.data;
}

/*
 * backfill_check_key_unchanged
 *		The job's key must still be the upstream's key (backfill_key_index:
 *		its primary key, or the unique index over NOT NULL columns it was
 *		created with), on the same columns, of the types of the table
 *		made_with, which the job's kind made with it (its state table, or
 * its change log): positions are compared, and bound as parameters, as those
 * types.  A key that changed (retyped, another primary key, its unique
 * index dropped) is refused here rather than misread.
 */
void
backfill_check_key_unchanged(BackfillJob *job, Oid made_with)
{
	Relation	rel = table_open(job->upstream, AccessShareLock);
	bool		ok;
	Relation	index;
	Oid			key_index = backfill_key_index(rel);
	bool		has_pk = OidIsValid(rel->rd_pkindex);

	ok = OidIsValid(key_index);
	if (ok)
	{
		index = index_open(key_index, AccessShareLock);
		ok = index->rd_index->indnkeyatts == job->npk;
		for (int k = 0; ok && k < job->npk; k++)
		{
			AttrNumber	made_attnum = get_attnum(made_with, job->pk_names[k]);

			ok = index->rd_index->indkey.values[k] == get_attnum(job->upstream, job->pk_names[k]) &&
				made_attnum != InvalidAttrNumber &&
				get_atttype(made_with, made_attnum) == job->pk_types[k];
		}
		index_close(index, AccessShareLock);
	}
	table_close(rel, AccessShareLock);
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 has_pk ?
				 errmsg("the primary key of table %s has changed since backfill job %lld was created",
						job->upstream_sql, (long long) job->job_id) :
				 errmsg("the key of table %s has changed since backfill job %lld was created",
						job->upstream_sql, (long long) job->job_id),
				 has_pk ?
				 errdetail("The job's positions are keys of the primary key it was created with.") :
				 errdetail("The job's positions are keys of its columns (%s), and the table has no primary key nor a unique index over NOT NULL columns that is its key on exactly those columns.",
						   key_names_list(job)),
				 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again.",
						 (long long) job->job_id)));
}

/*
 * backfill_partition_of
 *		Whether relid is a partition of ancestor, at any level.
 */
bool
backfill_partition_of(Oid relid, Oid ancestor)
{
	return get_rel_relispartition(relid) &&
		list_member_oid(get_partition_ancestors(relid), ancestor);
}

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

static void
job_locktag(LOCKTAG *tag, int64 job_id)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (job_id >> 32),
						 (uint32) job_id, BACKFILL_LOCK_FIELD4);
}

static void
report_job_running(int64 job_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("backfill job %lld is already running", (long long) job_id),
			 errdetail("Another session is running or changing the job."),
			 errhint("Wait for that session to finish, or stop it.")));
}

/*
 * backfill_lock_job
 *		Take the job lock in exclusive mode without waiting, at session level
 *		(run_job) or transaction level (start_job, cancel_job, drop_job).
 */
void
backfill_lock_job(int64 job_id, bool session)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	if (LockAcquire(&tag, ExclusiveLock, session, true) == LOCKACQUIRE_NOT_AVAIL)
		report_job_running(job_id);
}

void
backfill_unlock_job(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	LockRelease(&tag, ExclusiveLock, true);
}

/*
 * backfill_wait_job_lock
 *		The exclusive job lock for this transaction, waiting for it: after
 *		stopping a job's workers, which release it as they exit.
 */
void
backfill_wait_job_lock(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * backfill_lock_job_shared / backfill_unlock_job_shared
 *		The lock the actors of a job hold together, at session level, for
 *		as long as they run; they wait for it while start_job's transaction
 *		holds it exclusively.
 */
void
backfill_lock_job_shared(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	(void) LockAcquire(&tag, ShareLock, true, false);
}

void
backfill_unlock_job_shared(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	LockRelease(&tag, ShareLock, true);
}

/* whether this transaction holds the job lock exclusively */
bool
backfill_job_lock_mine(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	return LockHeldByMe(&tag, ExclusiveLock);
}

/* whether anyone holds the job lock now */
bool
backfill_job_lock_held(int64 job_id)
{
	LOCKTAG		tag;

	job_locktag(&tag, job_id);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return true;
	LockRelease(&tag, ExclusiveLock, false);
	return false;
}

/*
 * backfill_job_owner
 *		The owner of a job, read from backfill.job directly rather than with
 *		SPI, so that a writer who may not read the catalog can still find
 *		whom to act as.  InvalidOid if the job does not exist.
 */
Oid
backfill_job_owner(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "owner", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_upstream
 *		The upstream of a job, read as backfill_job_owner() reads the owner.
 *		InvalidOid if the job does not exist.
 */
Oid
backfill_job_upstream(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "upstream", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_downstream
 *		The downstream of a job, read as backfill_job_owner() reads the
 *		owner.  InvalidOid if the job does not exist or has none (cancelled).
 */
Oid
backfill_job_downstream(int64 job_id)
{
	bool		isnull;
	Datum		d = backfill_job_column(job_id, "downstream", &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*
 * backfill_job_column
 *		One column of a job's row in backfill.job, read by its primary key
 *		without SQL, so without privileges or row-level security: a writer's
 *		trigger uses it to find whom to act as and what it serves.  A copy in
 *		the current memory context; *isnull when the job does not exist, or
 *		the value is NULL.
 */
Datum
backfill_job_column(int64 job_id, const char *column, bool *isnull)
{
	Oid			nsp = get_namespace_oid(BACKFILL_SCHEMA, false);
	Oid			relid = get_relname_relid("job", nsp);
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData key;
	HeapTuple	tup;
	AttrNumber	attnum;
	Datum		result = (Datum) 0;

	*isnull = true;
	if (!OidIsValid(relid))
		return result;
	attnum = get_attnum(relid, column);
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("catalog table %s.job has no column \"%s\"", BACKFILL_SCHEMA, column),
				 errdetail("The catalog is not the one this version of the extension made."),
				 errhint("Run ALTER EXTENSION backfill UPDATE, or reinstall the extension.")));
	rel = table_open(relid, AccessShareLock);
	(void) RelationGetIndexList(rel);	/* sets rd_pkindex */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(job_id));
	scan = systable_beginscan(rel, rel->rd_pkindex, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
		Datum		d = heap_getattr(tup, attnum, RelationGetDescr(rel), isnull);

		/* the tuple goes with the scan */
		if (!*isnull)
			result = datumCopy(d, att->attbyval, att->attlen);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return result;
}

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

/*
 * backfill_owned_job_arg
 *		Argument argno (named argname) of a SQL function: a job id, not
 *		NULL, of a job whose owner's privileges the caller has.
 */
int64
backfill_owned_job_arg(FunctionCallInfo fcinfo, int argno, const char *argname)
{
	int64		job_id;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", argname)));
	job_id = PG_GETARG_INT64(argno);
	(void) backfill_require_job_owner(job_id);
	return job_id;
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

/*
 * backfill_names_changed
 *		Whether a table of the job got another name or schema since the job
 *		was loaded: the executor's plans name them, so the caller makes them
 *		again.  Locks the tables and reads the syscache only, so a barrier
 *		that has not taken its snapshot yet has not taken it after this
 *		either.
 */
bool
backfill_names_changed(BackfillJob *job)
{
	Oid			rels[4] = {job->upstream, job->downstream, job->state_table, job->change_table};
	char	  **names[4] = {&job->upstream_sql, &job->downstream_sql,
	&job->state_sql, &job->changes_sql};
	bool		changed = false;

	/*
	 * Called at every barrier, and a worker's current context lives as long
	 * as its run: the names are read in a context of their own, and only a
	 * changed one is kept, in the job's.
	 */
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "backfill names",
												  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);

	for (int i = 0; i < 4; i++)
	{
		char	   *name;

		/*
		 * Locked first, till the barrier's end: a rename that waited for the
		 * last barrier has committed by now (and the lock made us read its
		 * invalidation), and one that comes later waits for this barrier.
		 */
		backfill_lock_relation(rels[i], AccessShareLock);
		if (get_rel_name(rels[i]) == NULL)
			continue;			/* dropped: the barrier will say so */
		name = backfill_relation_sql(rels[i]);
		if (strcmp(*names[i], name) != 0)
		{
			*names[i] = MemoryContextStrdup(GetMemoryChunkContext(job), name);
			changed = true;
		}
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(scratch);
	return changed;
}

/*
 * backfill_record_failure
 *		Record a failure on the job: status failed, the error's message,
 *		detail and SQLSTATE, one more failure counted.  With only_if_backfilling, a job that is neither
 *		pending nor backfilling (a failure recorded already, a cancel) is
 *		left alone, except that a finished job gets the error without
 *		changing its status (the worker that follows its upstream failed).
 *		Caller is connected to SPI and commits.
 */
void
backfill_record_failure(int64 job_id, int sqlerrcode, const char *message,
						const char *detail, bool only_if_backfilling)
{
	Oid			argtypes[4] = {INT8OID, TEXTOID, TEXTOID, TEXTOID};
	Datum		values[4];
	char		nulls[4] = {' ', ' ', detail ? ' ' : 'n', ' '};
	RoleContext rc;

	values[0] = Int64GetDatum(job_id);
	values[1] = CStringGetTextDatum(message);
	values[2] = detail ? CStringGetTextDatum(detail) : (Datum) 0;
	values[3] = CStringGetTextDatum(unpack_sql_state(sqlerrcode));
	backfill_catalog_enter(&rc);
	/* failures counts them, for monitoring, once the catalog has it (1.3) */
	backfill_spi_exec_args(psprintf("UPDATE backfill.job SET status = %s, last_error = $2, "
									"last_error_detail = $3, last_sqlstate = $4%s WHERE job_id = $1%s",
									only_if_backfilling ?
									"CASE status WHEN 'finished' THEN status ELSE 'failed' END" :
									"'failed'",
									backfill_catalog_caps()->job_failures ?
									", failures = failures + 1" : "",
									only_if_backfilling ?
									" AND status IN ('pending', 'backfilling', 'finished')" : ""),
						   4, argtypes, values, nulls, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * A job's owner, as pg_shdepend knows it.  A job is a row of backfill.job,
 * not an object PostgreSQL knows, but its state table is one, owned by the
 * job's owner; REASSIGN OWNED gives it to another role without a word to
 * the extension, though, and would leave the job with an owner that DROP
 * ROLE may then drop.  So each job also has a policy on its state table,
 * "backfill_job_<id>_owner", FOR SELECT TO its owner: a shared dependency
 * that REASSIGN OWNED leaves alone, and DROP ROLE refuses while it exists,
 * naming it (and so the job).  DROP OWNED and REASSIGN OWNED move or drop it
 * with the job (api/ddl_owners.c).  Row-level security is not enabled on a state table,
 * so the policy is never applied; USING (false) grants nothing were it
 * enabled.
 */
static char *
owner_policy_name(int64 job_id)
{
	return psprintf("backfill_job_%lld_owner", (long long) job_id);
}

/*
 * backfill_record_owner
 *		Record the job's owner with a policy on its state table (above).
 *		Caller acts as the extension's owner, connected to SPI.
 */
void
backfill_record_owner(int64 job_id, const char *state_sql, Oid owner)
{
	backfill_spi_exec(psprintf("CREATE POLICY %s ON %s FOR SELECT TO %s USING (false)",
							   quote_identifier(owner_policy_name(job_id)), state_sql,
							   quote_identifier(GetUserNameFromId(owner, false))),
					  SPI_OK_UTILITY);
}

/*
 * backfill_move_owner
 *		Give the job to owner, who has been given its state table: the
 *		catalog's owner, and the policy that records it (made if the job,
 *		made before 1.3, had none).  Caller acts as the extension's owner,
 *		connected to SPI.
 */
void
backfill_move_owner(int64 job_id, Oid state_table, Oid owner)
{
	Oid			types[2] = {INT8OID, OIDOID};
	Datum		values[2] = {Int64GetDatum(job_id), ObjectIdGetDatum(owner)};
	Oid			policy_types[2] = {OIDOID, TEXTOID};
	Datum		policy_values[2] = {ObjectIdGetDatum(state_table),
	CStringGetTextDatum(owner_policy_name(job_id))};
	char	   *state_sql = backfill_relation_sql(state_table);
	const char *role = quote_identifier(GetUserNameFromId(owner, false));

	backfill_spi_exec_args("UPDATE backfill.job SET owner = $2::pg_catalog.regrole "
						   "WHERE job_id OPERATOR(pg_catalog.=) $1",
						   2, types, values, NULL, SPI_OK_UPDATE);
	backfill_spi_exec_args("SELECT FROM pg_catalog.pg_policy "
						   "WHERE polrelid OPERATOR(pg_catalog.=) $1 "
						   "AND polname OPERATOR(pg_catalog.=) $2::pg_catalog.name",
						   2, policy_types, policy_values, NULL, SPI_OK_SELECT);
	if (SPI_processed > 0)
		backfill_spi_exec(psprintf("ALTER POLICY %s ON %s TO %s",
								   quote_identifier(owner_policy_name(job_id)), state_sql, role),
						  SPI_OK_UTILITY);
	else
		backfill_record_owner(job_id, state_sql, owner);
}

/*
 * backfill_record_start
 *		Mark the start of a run: one more run, backfilling unless finished,
 *		the mode, and the upstream's size when total_rows >= 0 (RisingWave
 *		re-reads it on recovery too).
 */
void
backfill_record_start(BackfillJob *job, bool background, int64 total_rows)
{
	Oid			argtypes[3] = {INT8OID, BOOLOID, INT8OID};
	Datum		values[3] = {Int64GetDatum(job->job_id), BoolGetDatum(background),
	Int64GetDatum(total_rows)};
	char		nulls[3] = {' ', ' ', total_rows < 0 ? 'n' : ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("UPDATE backfill.job SET runs = runs + 1, last_error = NULL, "
						   "last_error_detail = NULL, last_sqlstate = NULL, "
						   "status = CASE status WHEN 'finished' THEN 'finished' ELSE 'backfilling' END, "
						   "run_mode = CASE WHEN $2 THEN 'background' ELSE 'foreground' END, "
						   "total_rows = coalesce($3, total_rows) "
						   "WHERE job_id = $1",
						   3, argtypes, values, nulls, SPI_OK_UPDATE);
	backfill_role_leave(&rc);
}

/*
 * backfill_next_id
 *		The next value of one of the extension's id sequences (job_id_seq,
 *		fragment_id_seq, actor_id_seq), set again with setval(): nextval()
 *		logs 32 values ahead, which a crash would skip, where setval()'s WAL
 *		record holds the value itself, so that ids stay dense across
 *		crashes.  An advisory lock of the sequence's makes the two one step
 *		for concurrent callers; it is released at once, and nextval() and
 *		setval() are not rolled back, so concurrent transactions never wait
 *		for each other's commit.
 */
int64
backfill_next_id(const char *sequence)
{
	Oid			seqid;
	List	   *names = list_make2(makeString(BACKFILL_SCHEMA),
								   makeString((char *) sequence));
	LOCKTAG		tag;
	RoleContext rc;
	int64		result;

	seqid = RangeVarGetRelid(makeRangeVarFromNameList(names), NoLock, false);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) seqid, 0, BACKFILL_ID_LOCK_FIELD4);
	backfill_catalog_enter(&rc);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	result = DatumGetInt64(DirectFunctionCall1(nextval_oid, ObjectIdGetDatum(seqid)));
	(void) DirectFunctionCall2(setval_oid, ObjectIdGetDatum(seqid), Int64GetDatum(result));
	LockRelease(&tag, ExclusiveLock, false);
	backfill_role_leave(&rc);
	return result;
}

/*
 * A catalog write of one job, made as the extension's owner once the caller's
 * right was checked: $1 the job id, $2 an optional bigint argument.  The
 * control functions' (cancel_job, drop_job, stop_job, alter_rate_limit,
 * reschedule, recreate_job) below, and the other catalog files'.
 */
void
backfill_catalog_write(const char *sql, int64 job_id, bool arg_null, int64 arg, int expected)
{
	Oid			types[2] = {INT8OID, INT8OID};
	Datum		values[2] = {Int64GetDatum(job_id), Int64GetDatum(arg)};
	char		nulls[2] = {' ', arg_null ? 'n' : ' '};
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_exec_args(sql, 2, types, values, nulls, expected);
	backfill_role_leave(&rc);
}

/* status cancelled, with no downstream, state or change table */
void
backfill_mark_cancelled(int64 job_id)
{
	backfill_catalog_write("UPDATE backfill.job SET status = 'cancelled', downstream = NULL, "
				  "state_table = NULL, change_table = NULL WHERE job_id = $1",
				  job_id, true, 0, SPI_OK_UPDATE);
}

/* the job's rows (its actors go with it) */
void
backfill_delete_job_rows(int64 job_id)
{
	backfill_catalog_write("DELETE FROM backfill.job WHERE job_id = $1", job_id, true, 0, SPI_OK_DELETE);
}

/* run_mode foreground: the launcher leaves it alone */
void
backfill_set_foreground(int64 job_id)
{
	backfill_catalog_write("UPDATE backfill.job SET run_mode = 'foreground' "
				  "WHERE job_id = $1 AND run_mode = 'background'",
				  job_id, true, 0, SPI_OK_UPDATE);
}

/* rate_limit, or none */
void
backfill_set_rate_limit(int64 job_id, bool none, int64 rows_per_second)
{
	backfill_catalog_write("UPDATE backfill.job SET rate_limit = $2::pg_catalog.int4 WHERE job_id = $1",
				  job_id, none, rows_per_second, SPI_OK_UPDATE);
}

/* job_name and ddl_statement of another job */
void
backfill_copy_names(int64 job_id, int64 from_job_id)
{
	backfill_catalog_write("UPDATE backfill.job j SET job_name = o.job_name, ddl_statement = o.ddl_statement "
				  "FROM backfill.job o WHERE j.job_id = $1 AND o.job_id = $2",
				  job_id, false, from_job_id, SPI_OK_UPDATE);
}

/*
 * backfill_replace_actors
 *		The job's actors again: parallelism of them, new ids (dense, as
 *		backfill_next_id takes them), even contiguous vnode ranges, at the
 *		epoch the old ones had reached.  Their row counts are the kind's to
 *		set (kind.h).
 */
void
backfill_replace_actors(int64 job_id, int parallelism)
{
	Oid			types[3] = {INT8OID, INT4OID, INT4ARRAYOID};
	Datum		values[3] = {Int64GetDatum(job_id), Int32GetDatum(parallelism)};
	Datum		actor_ids[BACKFILL_MAX_PARALLELISM];
	RoleContext rc;

	Assert(parallelism >= 1 && parallelism <= BACKFILL_MAX_PARALLELISM);
	for (int i = 0; i < parallelism; i++)
		actor_ids[i] = Int32GetDatum((int32) backfill_next_id("actor_id_seq"));
	values[2] = PointerGetDatum(construct_array(actor_ids, parallelism, INT4OID,
												sizeof(int32), true, TYPALIGN_INT));
	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("WITH old AS (DELETE FROM backfill.actor a WHERE a.job_id = $1 "
						   "                 RETURNING a.epoch, a.fragment_id) "
						   "INSERT INTO backfill.actor (actor_id, job_id, fragment_id, vnode_start, vnode_end, epoch) "
						   "SELECT $3[i + 1], $1, j.fragment_id, "
						   "       i * 256 / $2, (i + 1) * 256 / $2 - 1, "
						   "       (SELECT coalesce(pg_catalog.max(o.epoch), 0) FROM old o) "
						   "  FROM backfill.job j, pg_catalog.generate_series(0, $2 - 1) i "
						   " WHERE j.job_id = $1 ORDER BY i",
						   3, types, values, NULL, SPI_OK_INSERT);
	backfill_role_leave(&rc);
	backfill_catalog_write("UPDATE backfill.job SET parallelism = $2 WHERE job_id = $1",
				  job_id, false, parallelism, SPI_OK_UPDATE);
}

/*-------------------------------------------------------------------------
 *
 * estimate.c
 *	  backfill.estimate_job(): what a job would copy, write and take, before
 *	  it is created.
 *
 * The arguments are create_job's that matter, checked as create_job checks
 * them (the kind's own refusals included), but the caller only needs SELECT
 * on the upstream, which is locked ACCESS SHARE only.
 *
 * rows is the planner's estimate of the upstream's rows (estimate_rel_size:
 * reltuples scaled to the table's current size, or, for a table never
 * vacuumed or analyzed, its size over a row width guessed from its columns).
 *
 * The rest comes from a sample: the first rows of the upstream in key order,
 * at most 50,000 and about 32 MB, read once (as create_job counts the rows
 * before the job reads them), then read as a chunk reads them (the job's
 * columns, ORDER BY the key, under the caller's row-level security) and
 * inserted as a chunk inserts them (sink.c: table_multi_insert, then the
 * index entries, counting rows per vnode) into a table made as create_job
 * makes the downstream.  That happens in a subtransaction that is then
 * rolled back, so the table is gone without a trace but the WAL it wrote.
 * Per row of the sample:
 *
 *	downstream_bytes	the table's size with its index and TOAST table
 *	wal_bytes			the WAL the copy wrote (pgWalUsage)
 *	duration			the time the copy took
 *
 * each times rows.  When the sample is the whole upstream, rows is its
 * count.  With wal_level = minimal the sample's table, new in the
 * transaction, writes no WAL (the job's downstream, made by create_job
 * before its barriers, does): the WAL is then taken to be about the pages
 * the rows fill plus a record header per row, which is what a bulk insert
 * writes within a few percent on the benchmark's tables.  The duration is divided by parallelism (actors in background
 * workers, on as many free cores: bench/results/before-1.3.md, "Two
 * actors, before range vnodes", says how far the WAL's single writer lets
 * that go), and is at least wal_bytes over
 * backfill.max_wal_rate.  Not counted: the upstream's changes during the
 * backfill, the barriers' own work, and any waiting for the standbys,
 * retained WAL or a rate limit.
 *
 * backfill._upstream_size(), for backfill.progress, is the size of a job's
 * upstream as pg_stat_progress_* counts a table: its blocks, and its rows
 * as the catalog estimates them (src/copy/size.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/xlog.h"
#include "access/xlogrecord.h"
#include "catalog/catalog.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/instrument.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/syscache.h"

#include "api/create.h"
#include "api/upstream.h"
#include "catalog/catalog_access.h"
#include "copy/copy.h"
#include "kinds/kind.h"
#include "lib/lib.h"
#include "runtime/pacing.h"

PG_FUNCTION_INFO_V1(backfill_estimate_job);
PG_FUNCTION_INFO_V1(backfill_upstream_size);

/* the sample: at most this many rows, and about this many bytes */
#define ESTIMATE_SAMPLE_ROWS	50000
#define ESTIMATE_SAMPLE_BYTES	(32 * 1024 * 1024)

/* what the sample copy measured */
typedef struct SampleCopy
{
	int64		rows;
	int64		table_bytes;	/* with its index and TOAST table */
	int64		wal_bytes;
	double		seconds;
} SampleCopy;

/*
 * A job as the sink needs it to insert into the sample table: its key, the
 * upstream's, and its columns, copied or computed as the shape says.
 */
static BackfillJob *
sample_job(Relation upstream, int npk, const AttrNumber *pk, const JobShape *shape,
		   char *search_path)
{
	BackfillJob *job = palloc0(sizeof(BackfillJob));
	Oid			relid = RelationGetRelid(upstream);
	StringInfoData columns;

	initStringInfo(&columns);
	job->upstream = relid;
	job->upstream_sql = backfill_relation_sql(relid);
	job->search_path = search_path;
	job->partitioned = upstream->rd_rel->relkind == RELKIND_PARTITIONED_TABLE;
	job->npk = npk;
	job->pk_names = palloc(sizeof(char *) * npk);
	job->pk_types = palloc(sizeof(Oid) * npk);
	for (int k = 0; k < npk; k++)
	{
		job->pk_names[k] = get_attname(relid, pk[k], false);
		job->pk_types[k] = get_atttype(relid, pk[k]);
	}
	job->ncols = shape->ncols;
	job->col_names = palloc(sizeof(char *) * shape->ncols);
	for (int i = 0; i < shape->ncols; i++)
	{
		job->col_names[i] = shape->cols[i].name;
		appendStringInfo(&columns, "%s%s", i > 0 ? ", " : "",
						 quote_identifier(job->col_names[i]));
	}
	job->columns_sql = columns.data;
	job->select_sql = backfill_shape_select_list(shape);
	return job;
}

/*
 * Copy the first limit rows of the upstream in key order into a table made
 * as the job's downstream, the way a chunk does, and measure it.  In a
 * subtransaction, which the caller rolls back.
 */
static void
sample_copy(BackfillJob *job, const JobShape *shape, int64 limit, SampleCopy *sample)
{
	BarrierExecutor exec;
	char	   *table_sql = psprintf("%s.%s", BACKFILL_SCHEMA,
									 quote_identifier(psprintf("estimate_%d", MyProcPid)));
	Oid			caller = GetUserId();
	StringInfoData select;
	SPIPlanPtr	plan;
	ChunkSink  *sink;
	RoleContext rc;
	RoleContext oc;
	int			guc_level;
	Datum		limit_value = Int64GetDatum(limit);
	uint64		wal_before;
	TimestampTz started;
	bool		isnull;

	/* in the extension's schema, where the caller may not create; the caller's */
	backfill_catalog_enter(&rc);
	backfill_create_job_table(backfill_downstream_ddl(shape, table_sql, backfill_pk_list(job, NULL), NULL, NULL),
							  table_sql, caller);
	backfill_role_leave(&rc);
	job->downstream = RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(table_sql)),
									   NoLock, false);
	job->downstream_sql = table_sql;

	/*
	 * The copy runs as the job would: as its owner, the caller, in a
	 * security-restricted operation, under the job's search_path.
	 */
	backfill_owner_enter(caller, false, &oc);
	guc_level = backfill_pin_search_path(job);

	/*
	 * The executor's part the sink reads: the job, its key's types, the
	 * vnodes, and the memory its ring of buffers is made in.
	 */
	memset(&exec, 0, sizeof(exec));
	exec.job = job;
	exec.cxt = CurrentMemoryContext;
	for (int k = 0; k < job->npk; k++)
		get_typlenbyval(job->pk_types[k], &exec.typlens[k], &exec.typbyvals[k]);
	exec.vnode_hasher = palloc(sizeof(VnodeHasher));
	backfill_vnode_hasher_init(exec.vnode_hasher, job->npk, job->pk_types,
							   CurrentMemoryContext);

	initStringInfo(&select);
	appendStringInfo(&select, "SELECT %s FROM %s ORDER BY %s LIMIT $1",
					 job->select_sql, backfill_job_scan(job), backfill_pk_list(job, "u"));
	plan = SPI_prepare(select.data, 1, (Oid[]) {INT8OID});
	if (plan == NULL)
		elog(ERROR, "could not prepare the sample of %s: %s", job->upstream_sql,
			 SPI_result_code_string(SPI_result));

	/*
	 * Read the rows once first, as create_job's count does before the job
	 * reads them: the first reader of rows just written sets their hint
	 * bits, which with checksums or wal_log_hints writes whole pages to the
	 * WAL; that is not the copy's.
	 */
	backfill_spi_exec_args(psprintf("SELECT pg_catalog.count(*) FROM (%s) s", select.data),
						   1, (Oid[]) {INT8OID}, &limit_value, NULL, SPI_OK_SELECT);

	wal_before = pgWalUsage.wal_bytes;
	started = GetCurrentTimestamp();
	sink = backfill_sink_begin(&exec, -1, true);
	if (sink == NULL)
		elog(ERROR, "the sample table of %s takes no direct insert", job->upstream_sql);
	backfill_sink_run(sink, plan, &limit_value);
	sample->rows = backfill_sink_end(sink, NULL, NULL, NULL, NULL, NULL);
	sample->seconds = (double) (GetCurrentTimestamp() - started) / USECS_PER_SEC;
	sample->wal_bytes = (int64) (pgWalUsage.wal_bytes - wal_before);

	backfill_spi_exec_args("SELECT pg_catalog.pg_total_relation_size($1)", 1,
						   (Oid[]) {OIDOID}, (Datum[]) {ObjectIdGetDatum(job->downstream)},
						   NULL, SPI_OK_SELECT);
	sample->table_bytes = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
													  SPI_tuptable->tupdesc, 1, &isnull));

	/*
	 * With wal_level = minimal, a table created in the transaction is not
	 * WAL-logged, but the job's downstream, created before its barriers, is:
	 * count about the pages the rows fill and a record header per row.
	 */
	if (!XLogIsNeeded())
		sample->wal_bytes = sample->table_bytes + sample->rows * SizeOfXLogRecord;
	SPI_freeplan(plan);
	backfill_unpin_search_path(guc_level);
	backfill_role_leave(&oc);
}

/*
 * The sample copy, in a subtransaction that is rolled back whatever
 * happens, so nothing is left behind.  Caller is connected to SPI.
 */
static void
copy_sample(BackfillJob *job, const JobShape *shape, int64 limit, SampleCopy *sample)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = backfill_subxact_begin();

	PG_TRY();
	{
		sample_copy(job, shape, limit, sample);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		backfill_subxact_rollback(owner);
		ReThrowError(edata);
	}
	PG_END_TRY();
	backfill_subxact_rollback(owner);
}

/*
 * The rows to sample: all of a small table, at most about 32 MB of a big
 * one.  The upstream's size is the planner's estimate, summed over the
 * partitions of a partitioned table (which the caller has locked).
 */
static int64
sample_limit(Relation upstream, double *rows)
{
	List	   *relids = list_make1_oid(RelationGetRelid(upstream));
	double		pages = 0;
	double		width;
	ListCell   *lc;

	if (upstream->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		relids = find_all_inheritors(RelationGetRelid(upstream), NoLock, NULL);
	*rows = 0;
	foreach(lc, relids)
	{
		Relation	rel = relation_open(lfirst_oid(lc), NoLock);
		BlockNumber rel_pages = 0;
		double		rel_rows = 0;
		double		allvisfrac;

		if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind))
			estimate_rel_size(rel, NULL, &rel_pages, &rel_rows, &allvisfrac);
		relation_close(rel, NoLock);
		pages += rel_pages;
		*rows += rel_rows;
	}
	if (*rows < 1)
		return ESTIMATE_SAMPLE_ROWS;
	width = pages * BLCKSZ / *rows;
	return (int64) Max(1000, Min(ESTIMATE_SAMPLE_ROWS, ESTIMATE_SAMPLE_BYTES / Max(width, 1)));
}

/*
 * backfill.estimate_job(upstream regclass, kind text, columns text[],
 *						 parallelism int)
 *		RETURNS TABLE(rows bigint, downstream_bytes bigint, wal_bytes bigint,
 *					  duration interval)
 */
Datum
backfill_estimate_job(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	const KindRoutine *kind;
	Relation	upstream;
	int32		parallelism;
	int			npk;
	AttrNumber *pk;
	Oid		   *collations;
	Oid		   *pk_types;
	JobShape	shape;
	BackfillJob *job;
	SampleCopy	sample;
	double		rows;
	int64		limit;
	double		seconds;
	int64		wal_rate;
	Interval   *duration;
	int			guc_level;
	int			parse_level;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};
	char	   *search_path;

	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i) && i != 2)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not be null",
							(const char *[]) {"upstream", "kind", "columns", "parallelism"}[i])));
	kind = backfill_kind_routine(backfill_parse_kind(text_to_cstring(PG_GETARG_TEXT_PP(1))));
	parallelism = PG_GETARG_INT32(3);
	backfill_check_parallelism(parallelism);

	{
		static const AclMode needed[] = {ACL_SELECT};

		upstream = backfill_open_upstream(PG_GETARG_OID(0), AccessShareLock,
										  needed, lengthof(needed), false);
	}
	npk = backfill_upstream_key(upstream, &pk, &collations);
	backfill_check_key_hashable(upstream, npk, pk,
								"An estimate counts the rows of each vnode by a hash of the key.", NULL);
	pk_types = palloc(sizeof(Oid) * npk);
	for (int k = 0; k < npk; k++)
		pk_types[k] = get_atttype(RelationGetRelid(upstream), pk[k]);
	/* the columns as create_job reads them: copied or computed, no filter */
	search_path = backfill_safe_search_path(npk, pk_types);
	backfill_shape_read(upstream, PG_ARGISNULL(2) ? NULL : PG_GETARG_ARRAYTYPE_P(2), NULL,
						npk, pk, search_path, &shape);
	backfill_kind_check_create(kind, upstream, parallelism);
	job = sample_job(upstream, npk, pk, &shape, search_path);

	limit = sample_limit(upstream, &rows);
	/* the caller's names are resolved: the statements are the extension's */
	guc_level = backfill_pin_catalog_path();
	SPI_connect();
	/* the columns' stored text, read as the job would read it (shape.c) */
	parse_level = NewGUCNestLevel();
	backfill_pin_parse_settings();
	copy_sample(job, &shape, limit, &sample);
	AtEOXact_GUC(true, parse_level);
	SPI_finish();
	backfill_unpin_search_path(guc_level);
	relation_close(upstream, NoLock);

	/* the whole table fit in the sample: its count is known */
	if (sample.rows < limit)
		rows = sample.rows;
	rows = rint(rows);

	InitMaterializedSRF(fcinfo, 0);
	values[0] = Int64GetDatum((int64) rows);
	if (sample.rows > 0)
	{
		values[1] = Int64GetDatum((int64) rint((double) sample.table_bytes / sample.rows * rows));
		values[2] = Int64GetDatum((int64) rint((double) sample.wal_bytes / sample.rows * rows));
		seconds = sample.seconds / sample.rows * rows / parallelism;
	}
	else
	{
		values[1] = Int64GetDatum(sample.table_bytes);
		values[2] = Int64GetDatum(0);
		seconds = 0;
	}
	wal_rate = backfill_pacing_wal_rate();
	if (wal_rate > 0)
		seconds = Max(seconds, (double) DatumGetInt64(values[2]) / wal_rate);
	duration = palloc0(sizeof(Interval));
	duration->time = (int64) rint(seconds * 1000) * 1000;	/* to the millisecond */
	values[3] = IntervalPGetDatum(duration);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * backfill._upstream_size(upstream regclass, OUT blocks bigint,
 *						   OUT tuples bigint)
 *		The relation's blocks and estimated rows, NULL each when unknown
 *		(a relation dropped since, a foreign table, a table not analyzed).
 *		Nothing the caller could not read from pg_class and
 *		pg_relation_size(): no privilege is needed.
 */
Datum
backfill_upstream_size(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2];
	int64		blocks;
	int64		tuples;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	(void) backfill_measure_upstream(PG_GETARG_OID(0), true, &blocks, &tuples);
	values[0] = Int64GetDatum(blocks);
	nulls[0] = blocks < 0;
	values[1] = Int64GetDatum(tuples);
	nulls[1] = tuples < 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

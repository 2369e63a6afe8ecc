/*-------------------------------------------------------------------------
 *
 * kind_cdc.c
 *	  The cdc kind: fetching the changes its replication slot decodes.
 *
 * RisingWave's CDC backfill reads an external database's snapshot in key
 * order while it consumes that database's change stream; the state is one
 * row per table with the position and the stream's offset (section 5.1 of
 * the reference).  Here the change stream is this server's write-ahead log,
 * decoded through a logical replication slot the job owns, named
 * backfill_<database oid>_<job id> (slot.c), with the extension's own output
 * plugin (output_plugin.c), which emits the key of every row of the upstream a committed
 * transaction wrote, with the LSN of that transaction's commit record.
 * Writers pay nothing for it: no trigger fires while the job backfills.
 *
 * The offset is an LSN: every transaction whose commit record starts below
 * it has been consumed.  Before a barrier (each one in run_job; in a worker,
 * at most once a barrier interval, driver.c), in a transaction of its own, a
 * fetch:
 *
 * 1. advances the slot to the offset the last barrier committed, so the WAL
 *	  before it can go;
 * 2. flushes the WAL and peeks at the slot's changes up to that point, drops
 *	  those below the offset, and appends their keys to
 *	  backfill.changes_<id>;
 * 3. waits until each decoded transaction has left the process array, so
 *	  that the barrier's snapshot, taken after this transaction commits,
 *	  sees all of them.
 *
 * The barrier then runs as for the trigger kinds (kind_vnode.c): keys at or
 * below the position are forwarded by re-reading the upstream as of the
 * barrier's snapshot, the others dropped, and the fetch's end is persisted
 * as the new offset with the position.  A peek does not move the slot, and
 * the slot is advanced only to a committed offset, so a crash anywhere
 * loses nothing: the changes since the committed offset are decoded again,
 * and a key fetched twice is forwarded twice, which is harmless.
 *
 * The slot is created before the first fetch of a job's first run, in a
 * transaction of its own that has written nothing yet (PostgreSQL's rule)
 * and holds no lock on the upstream (cdc_open_stream): its creation waits
 * for every transaction that has written, and one of them may want to lock
 * the upstream (ALTER TABLE ... ADD COLUMN) before it commits.  The
 * snapshot the first barrier reads is taken after the slot is consistent,
 * so every later change is decoded.  Before
 * the first chunk every key is above the position, so what was written
 * between create_job and the slot needs no forwarding.  The final barrier
 * fetches under its lock, so it sees every write; the slot is dropped right
 * after the job has finished.  The slot and the offset belong to the
 * database and its WAL, so a job dumped and restored mid-backfill cannot
 * resume (fail_restored() below says why).
 *
 * The state is one row, (split_id, <pk columns>, backfill_finished,
 * row_count, cdc_offset), decoded in the order of RisingWave's cdc/state.rs
 * (the version with the null-offset check): row_count, backfill_finished,
 * then a NULL offset on an unfinished row ("unfinished row has null
 * cdc_offset"), then an offset that does not decode ("cdc_offset").  Its
 * split is the upstream's OID; a single row for another OID is a job dumped
 * and restored, which cannot resume unless it has finished (fail_restored()
 * says why).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "replication/slot.h"
#include "storage/lmgr.h"
#include "storage/standby.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "copy/copy.h"
#include "kinds/kind.h"
#include "lib/lib.h"

/* what the cdc kind keeps in its executor */
typedef struct CdcState
{
	char	   *slot_name;
	XLogRecPtr	offset;			/* changes below it have been consumed */
	XLogRecPtr	fetched;		/* what the next barrier persists as offset */
	bool		offset_known;	/* offset is valid */
	SPIPlanPtr	persist_plan;	/* the one state row */
	SPIPlanPtr	fetch_plan;
} CdcState;

static const char *const cdc_reserved_columns[] = {
	"split_id", "backfill_finished", "row_count", "cdc_offset", NULL
};

/*
 * A table whose deletes and key changes carry the old key in the WAL: its
 * replica identity is its key (backfill_key_index), or the full row.  With
 * REPLICA IDENTITY DEFAULT, a table without a primary key logs no old key
 * at all; with USING INDEX of another index, it logs other columns.
 */
static void
check_replica_identity(Relation rel)
{
	Oid			key_index = backfill_key_index(rel);
	char		replident = rel->rd_rel->relreplident;

	/* a table without a key is refused as such (upstream.c) */
	if (!OidIsValid(key_index))
		return;
	if (replident == REPLICA_IDENTITY_NOTHING)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has REPLICA IDENTITY NOTHING", RelationGetRelationName(rel)),
				 errdetail("A cdc job needs the key of every deleted row in the write-ahead log."),
				 OidIsValid(rel->rd_pkindex) ?
				 errhint("Use ALTER TABLE ... REPLICA IDENTITY DEFAULT.") :
				 errhint("Use ALTER TABLE ... REPLICA IDENTITY USING INDEX %s, or REPLICA IDENTITY FULL.",
						 quote_identifier(get_rel_name(key_index)))));
	if (replident == REPLICA_IDENTITY_FULL ||
		(replident == REPLICA_IDENTITY_DEFAULT && OidIsValid(rel->rd_pkindex)) ||
		(replident == REPLICA_IDENTITY_INDEX && RelationGetReplicaIndex(rel) == key_index))
		return;
	if (OidIsValid(rel->rd_pkindex))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the replica identity of table \"%s\" is not its primary key",
						RelationGetRelationName(rel)),
				 errdetail("A cdc job needs the primary key of every deleted row in the write-ahead log."),
				 errhint("Use ALTER TABLE ... REPLICA IDENTITY DEFAULT.")));
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the replica identity of table \"%s\" is not its key",
					RelationGetRelationName(rel)),
			 errdetail("Table \"%s\" has no primary key, and its key is unique index \"%s\". A cdc job needs the key of every deleted row in the write-ahead log.",
					   RelationGetRelationName(rel), get_rel_name(key_index)),
			 errhint("Use ALTER TABLE ... REPLICA IDENTITY USING INDEX %s, or REPLICA IDENTITY FULL.",
					 quote_identifier(get_rel_name(key_index)))));
}

/*
 * A table whose changes reach the WAL: an unlogged table's never do, so
 * the slot would never deliver them and the job would finish without them.
 */
static void
check_logged(Relation rel, Relation upstream)
{
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_UNLOGGED)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 rel == upstream ?
			 errmsg("table \"%s\" is unlogged", RelationGetRelationName(rel)) :
			 errmsg("partition \"%s\" of table \"%s\" is unlogged",
					RelationGetRelationName(rel), RelationGetRelationName(upstream)),
			 errdetail("A cdc job takes the upstream's changes from the write-ahead log, which holds none of an unlogged table's."),
			 errhint("Use ALTER TABLE ... SET LOGGED, or a kind that captures the changes by trigger: \"arrangement\", \"snapshot\" or \"no_shuffle\".")));
}

/* one actor, at create_job and at reschedule */
static void
cdc_check_parallelism(int parallelism)
{
	if (parallelism != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a backfill job of kind \"cdc\" must have parallelism 1"),
				 errdetail("The cdc backfill reads each table with a single actor, as RisingWave's non-parallel CDC backfill does.")));
}

/*
 * What create_job requires of a cdc job: logical decoding, the right to
 *		use it, an upstream whose changes are logged and whose deletes carry
 *		their key, one actor.
 */
static void
cdc_check_create(Relation upstream, int parallelism)
{
	ListCell   *lc;

	cdc_check_parallelism(parallelism);
	if (wal_level < WAL_LEVEL_LOGICAL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"cdc\" requires \"wal_level\" to be \"logical\""),
				 errdetail("A cdc job decodes the upstream's changes from the write-ahead log."),
				 errhint("Set wal_level = logical and restart the server, or use kind \"arrangement\".")));
	if (max_replication_slots <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"cdc\" requires \"max_replication_slots\" > 0"),
				 errdetail("A cdc job owns a logical replication slot.")));
	if (!backfill_plugin_approved())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill kind \"cdc\" requires \"backfill\" in \"output_plugin_libraries\""),
				 errdetail("A cdc job decodes the write-ahead log with the output plugin of library \"backfill\", which the server does not allow yet."),
				 errhint("Add backfill to output_plugin_libraries and reload the server configuration, or use kind \"arrangement\".")));
	if (!superuser() && !has_rolreplication(GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to create a backfill job of kind \"cdc\""),
				 errdetail("A cdc job owns a replication slot, which only superusers and roles with the REPLICATION attribute may use."),
				 errhint("Use kind \"arrangement\", or ask for the REPLICATION attribute.")));

	/*
	 * Deletes and key changes must carry the old key in the WAL: of the
	 * table, or of each of its partitions, whose rows the WAL holds.
	 */
	if (upstream->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
	{
		check_logged(upstream, upstream);
		check_replica_identity(upstream);
		return;
	}
	foreach(lc, find_all_inheritors(RelationGetRelid(upstream), NoLock, NULL))
	{
		Relation	rel = table_open(lfirst_oid(lc), NoLock);

		if (rel->rd_rel->relkind == RELKIND_RELATION)
		{
			check_logged(rel, upstream);
			check_replica_identity(rel);
		}
		table_close(rel, NoLock);
	}
}

static void
cdc_create_state_table(const JobDefinition *def)
{
	backfill_create_job_table(psprintf("CREATE TABLE %s (split_id pg_catalog.varchar PRIMARY KEY%s, "
									   "backfill_finished pg_catalog.bool, row_count pg_catalog.int8, "
									   "cdc_offset pg_catalog.jsonb)",
									   def->state_sql, def->key_ddl),
							  def->state_sql, def->owner);
}

/* a cdc split is the upstream's OID as text, shown quoted */
static void fail_with_split_error(BackfillJob *job, const char *field,
								  const char *split) pg_attribute_noreturn();

static void
fail_with_split_error(BackfillJob *job, const char *field, const char *split)
{
	backfill_split_state_error(job, field, psprintf("\"%s\"", split));
}

/* the cdc kind's one row: (split_id, pk, backfill_finished, row_count, cdc_offset) */
/*
 * Whether a cdc state row's split is another table's OID: the job's tables
 * were dumped and restored (into another database, or over their own), so
 * the upstream got another OID than the one the state was written for.
 */
static bool
written_for_another_table(BackfillJob *job, const char *split)
{
	char	   *end;
	unsigned long oid;

	if (split == NULL || !isdigit((unsigned char) split[0]))
		return false;
	errno = 0;
	oid = strtoul(split, &end, 10);
	return errno == 0 && *end == '\0' && oid != InvalidOid && oid <= PG_UINT32_MAX &&
		(Oid) oid != job->upstream;
}

static void fail_restored(BackfillJob *job, const char *split,
						  const char *offset) pg_attribute_noreturn();

/*
 * A cdc job restored from a dump mid-backfill cannot resume, and fails for
 * good.  Its offset is a position in the write-ahead log of the database it
 * was dumped from, and its slot belongs to that database.  The writes to the
 * upstream after the last barrier before the dump went to that log only:
 * they are in the restored upstream, but those at or below the position are
 * not in the restored downstream (verify_job shows them), and a slot of this
 * database, made now, would start after them.  Nothing can prove that there
 * were none, so resuming could lose rows without a word; the job fails
 * instead, recorded on it, with a hint to recreate it.  A restored job that
 * had never run has no state row and runs as any new job; a finished one
 * follows its upstream through the apply trigger and needs no slot.
 */
static void
fail_restored(BackfillJob *job, const char *split, const char *offset)
{
	char	   *message;
	char	   *detail;

	message = psprintf("cannot resume backfill job %lld after a restore", (long long) job->job_id);
	detail = psprintf("State table %s of backfill job %lld has its row for split \"%s\", "
					  "but table %s has OID %u: the job was dumped and restored. %s",
					  job->state_sql, (long long) job->job_id, split, job->upstream_sql,
					  job->upstream,
					  offset ?
					  psprintf("Its offset %s is a position in the write-ahead log of the database "
							   "it was dumped from, where the writes to the upstream since its last "
							   "barrier went, and no replication slot of this database can decode them.",
							   offset) :
					  "The writes to the upstream since its last barrier went to the write-ahead "
					  "log of the database it was dumped from, and no replication slot of this "
					  "database can decode them.");
	backfill_fail_job(job, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message, detail,
					  psprintf("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							   (long long) job->job_id, (long long) job->job_id));
}

/*
 * The cdc kind's own state of a job (BackfillJob.kind_data), which an
 * executor made again in the same run starts from.
 */
typedef struct CdcJob
{
	bool		has_offset;		/* the state row has an offset */
	XLogRecPtr	offset;			/* its LSN */
} CdcJob;

static CdcJob *
cdc_job(BackfillJob *job)
{
	if (job->kind_data == NULL)
		elog(ERROR, "the state of backfill job %lld is not loaded", (long long) job->job_id);
	return job->kind_data;
}

static void
cdc_load_state(BackfillJob *job)
{
	CdcJob	   *cj;
	StringInfoData sql;
	char	   *split = psprintf("%u", job->upstream);
	int			npk = job->npk;
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum		row_count;
	Datum		finished;
	char	   *offset_type;
	char	   *offset_lsn;
	VnodeState	vs;
	MemoryContext old;

	backfill_check_key_unchanged(job, job->state_table);
	backfill_init_vnodes(job);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT split_id, %s, backfill_finished, row_count, "
					 "pg_catalog.jsonb_typeof(cdc_offset), cdc_offset OPERATOR(pg_catalog.->>) 'lsn' "
					 "FROM %s ORDER BY split_id",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);
	if (job->kind_data == NULL)
		job->kind_data = MemoryContextAllocZero(GetMemoryChunkContext(job), sizeof(CdcJob));
	cj = job->kind_data;
	cj->has_offset = false;
	cj->offset = InvalidXLogRecPtr;
	if (SPI_processed == 0)
		return;					/* not started */
	desc = SPI_tuptable->tupdesc;
	tup = SPI_tuptable->vals[0];
	if (SPI_processed == 1 && written_for_another_table(job, SPI_getvalue(tup, desc, 1)))
	{
		/* a finished job reads nothing from it any more */
		if (job->status != BACKFILL_STATUS_FINISHED)
			fail_restored(job, SPI_getvalue(tup, desc, 1), SPI_getvalue(tup, desc, npk + 5));
	}
	else
	{
		/* one row, the table's: name a row that is not, if any */
		for (uint64 i = 0; i < SPI_processed; i++)
			if (strcmp(SPI_getvalue(SPI_tuptable->vals[i], desc, 1), split) != 0)
				fail_with_split_error(job, "split_id",
									  SPI_getvalue(SPI_tuptable->vals[i], desc, 1));
	}

	/* RisingWave's order: row_count, backfill_finished, cdc_offset */
	row_count = SPI_getbinval(tup, desc, npk + 3, &isnull);
	if (isnull || DatumGetInt64(row_count) < 0)
		fail_with_split_error(job, "row_count", split);
	finished = SPI_getbinval(tup, desc, npk + 2, &isnull);
	if (isnull)
		fail_with_split_error(job, "backfill_finished", split);
	offset_type = SPI_getvalue(tup, desc, npk + 4);
	offset_lsn = SPI_getvalue(tup, desc, npk + 5);
	if (offset_type == NULL && !DatumGetBool(finished))
		fail_with_split_error(job, "unfinished row has null cdc_offset", split);
	if (offset_type != NULL)
	{
		bool		have_error = false;

		if (strcmp(offset_type, "object") != 0 || offset_lsn == NULL)
			have_error = true;
		else
			cj->offset = pg_lsn_in_internal(offset_lsn, &have_error);
		if (have_error)
			fail_with_split_error(job, "cdc_offset", split);
		cj->has_offset = true;
	}

	/* every vnode shares the one position */
	memset(&vs, 0, sizeof(vs));
	vs.pos = job->vnodes[0].pos;
	vs.pos_null = job->vnodes[0].pos_null;
	backfill_read_position(job, &vs, tup, desc, 2);
	if (vs.has_pos)
		for (int k = 0; k < npk; k++)
			if (vs.pos_null[k])
				fail_with_split_error(job, "current_pos", split);
	old = MemoryContextSwitchTo(GetMemoryChunkContext(job));
	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		VnodeState *ws = &job->vnodes[v];

		ws->present = true;
		ws->finished = DatumGetBool(finished);
		ws->row_count = DatumGetInt64(row_count);
		ws->has_pos = vs.has_pos;
		memcpy(ws->pos_null, vs.pos_null, sizeof(bool) * npk);
		/* a copy of its own: backfill_set_position() frees a vnode's old one */
		for (int k = 0; k < npk; k++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, 1 + k);

			if (v == 0 || !vs.has_pos || vs.pos_null[k] || att->attbyval)
				ws->pos[k] = vs.pos[k];
			else
				ws->pos[k] = datumCopy(vs.pos[k], false, att->attlen);
		}
	}
	MemoryContextSwitchTo(old);
	SPI_freetuptable(SPI_tuptable);
}

/*
 * The statements of the cdc kind: the captured keys a barrier forwards
 * (those at or below the one position, or all once finished), the one state
 * row, and the fetch.
 */
static void
cdc_prepare(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	CdcState   *cdc = MemoryContextAllocZero(exec->cxt, sizeof(CdcState));
	StringInfoData sql;
	Oid			argtypes[INDEX_MAX_KEYS + 4];

	exec->kind_state = cdc;
	cdc->slot_name = MemoryContextStrdup(exec->cxt, backfill_slot_name(job->job_id));
	cdc->offset = cdc_job(job)->offset;
	cdc->offset_known = cdc_job(job)->has_offset;
	cdc->fetched = cdc_job(job)->offset;

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT %s FROM %s c JOIN %s s ON (s.backfill_finished OR %s) "
					 "WHERE %s BETWEEN $1 AND $2",
					 backfill_pk_list(job, "c"), job->changes_sql, job->state_sql,
					 backfill_key_compare(job, backfill_pk_exprs(job, "c"), BTLessEqualStrategyNumber,
										  backfill_pk_exprs(job, "s")),
					 backfill_vnode_sql(job, backfill_pk_list(job, "c")));
	backfill_prepare_forward(exec, sql.data);

	/* the one state row: $1 split, $2 finished, $3 rows, $4 offset, key */
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "INSERT INTO %s (split_id, %s, backfill_finished, row_count, cdc_offset) "
					 "VALUES ($1, %s, $2, $3, pg_catalog.jsonb_build_object('lsn', $4::pg_catalog.text)) "
					 "ON CONFLICT (split_id) DO UPDATE SET backfill_finished = EXCLUDED.backfill_finished, "
					 "row_count = EXCLUDED.row_count, cdc_offset = EXCLUDED.cdc_offset",
					 job->state_sql, backfill_pk_list(job, NULL), backfill_pk_params(job, 5));
	backfill_append_excluded_key(&sql, job);
	argtypes[0] = VARCHAROID;
	argtypes[1] = BOOLOID;
	argtypes[2] = INT8OID;
	argtypes[3] = PG_LSNOID;
	memcpy(&argtypes[4], job->pk_types, sizeof(Oid) * job->npk);
	cdc->persist_plan = backfill_keep_plan(exec->plans, sql.data, 4 + job->npk, argtypes);

	/*
	 * The decoded keys from the offset on, into the change table; returns
	 * the transactions they came from.
	 */
	resetStringInfo(&sql);
	appendStringInfo(&sql,
					 "WITH p AS MATERIALIZED (SELECT c.xid, c.data "
					 "FROM pg_catalog.pg_logical_slot_peek_changes($1, $2, NULL, 'relid', $3) c "
					 "WHERE pg_catalog.split_part(c.data, E'\\t', 1)::pg_catalog.pg_lsn >= $4), "
					 "ins AS (INSERT INTO %s SELECT (s.k).* FROM "
					 "(SELECT pg_catalog.substr(p.data, pg_catalog.strpos(p.data, E'\\t') + 1)::%s AS k FROM p) s) "
					 "SELECT DISTINCT p.xid FROM p",
					 job->changes_sql, job->changes_sql);
	argtypes[0] = NAMEOID;
	argtypes[1] = PG_LSNOID;
	argtypes[2] = TEXTOID;
	argtypes[3] = PG_LSNOID;
	cdc->fetch_plan = backfill_keep_plan(exec->plans, sql.data, 4, argtypes);

}

/* the slot's confirmed position, or InvalidXLogRecPtr if there is no slot */
static XLogRecPtr
slot_position(CdcState *cdc, bool *exists)
{
	Oid			argtypes[1] = {NAMEOID};
	Datum		values[1];
	bool		isnull;
	XLogRecPtr	result = InvalidXLogRecPtr;

	values[0] = CStringGetDatum(cdc->slot_name);
	values[0] = DirectFunctionCall1(namein, values[0]);
	if (SPI_execute_with_args("SELECT confirmed_flush_lsn FROM pg_catalog.pg_replication_slots "
							  "WHERE slot_name = $1", 1, argtypes, values, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_replication_slots");
	*exists = SPI_processed > 0;
	if (*exists)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = DatumGetLSN(d);
	}
	return result;
}

/*
 * Create the job's slot if it has none yet and has consumed nothing (see
 *		the file header).  Caller is connected to SPI, in a transaction that
 *		has written nothing and holds no lock on the upstream.  A job that
 *		has an offset and no slot is left to the fetch, which says so.
 */
static void
cdc_open_stream(BackfillJob *job)
{
	Datum		name = DirectFunctionCall1(namein,
										   CStringGetDatum(backfill_slot_name(job->job_id)));
	Oid			argtypes[1] = {NAMEOID};

	if (cdc_job(job)->has_offset)
		return;
	backfill_lock_slot_of(job->job_id);
	if (SPI_execute_with_args("SELECT FROM pg_catalog.pg_replication_slots "
							  "WHERE slot_name OPERATOR(pg_catalog.=) $1",
							  1, argtypes, &name, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_replication_slots");
	if (SPI_processed > 0)
		return;
	if (SPI_execute_with_args("SELECT pg_catalog.pg_create_logical_replication_slot($1, 'backfill')",
							  1, argtypes, &name, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not create replication slot \"%s\"", NameStr(*DatumGetName(name)));
}

/*
 * Fetch the changes decoded since the offset into the change table (see
 *		the file header).  Caller is connected to SPI, in a transaction whose
 *		snapshot the barrier does not use, or in the final barrier after its
 *		lock.
 */
static void
cdc_fetch(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	CdcState   *cdc = exec->kind_state;
	Datum		name = DirectFunctionCall1(namein, CStringGetDatum(cdc->slot_name));
	Datum		values[4];
	Oid			argtypes[2] = {NAMEOID, PG_LSNOID};
	XLogRecPtr	upto;
	bool		exists;
	XLogRecPtr	confirmed;

	backfill_lock_slot_of(job->job_id);
	confirmed = slot_position(cdc, &exists);
	if (!exists)
	{
		if (cdc->offset_known)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("replication slot \"%s\" of backfill job %lld does not exist",
							cdc->slot_name, (long long) job->job_id),
					 errdetail("The job has consumed changes up to offset %X/%X; the changes after it are lost.",
							   LSN_FORMAT_ARGS(cdc->offset)),
					 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
							 (long long) job->job_id, (long long) job->job_id)));
		if (SPI_execute_with_args("SELECT pg_catalog.pg_create_logical_replication_slot($1, 'backfill')",
								  1, argtypes, &name, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not create replication slot \"%s\"", cdc->slot_name);
		confirmed = slot_position(cdc, &exists);
	}
	/* after the slot: making the origin writes, and a slot is made before any */
	backfill_origin_enter(job->job_id);

	if (!cdc->offset_known)
	{
		/* RisingWave: no stored offset, so the source's current one */
		cdc->offset = confirmed;
		cdc->offset_known = true;
	}

	/* what was consumed can go */
	if (confirmed < cdc->offset)
	{
		values[0] = name;
		values[1] = LSNGetDatum(cdc->offset);
		if (SPI_execute_with_args("SELECT pg_catalog.pg_replication_slot_advance($1, $2)",
								  2, argtypes, values, NULL, false, 0) != SPI_OK_SELECT)
			elog(ERROR, "could not advance replication slot \"%s\"", cdc->slot_name);
	}

	/*
	 * Decoding starts at the slot's restart point, which moves only past a
	 * record of the transactions running (a standby snapshot), logged every
	 * 15 s at most while the server is busy: without one, each fetch would
	 * decode again all the WAL since the last, the advance above too.  One
	 * logged now is passed by the next fetch's advance, so the restart point
	 * stays a barrier behind.
	 */
	(void) LogStandbySnapshot();

	/* a commit made asynchronously may not be flushed yet: flush it */
	upto = backfill_flush_wal_upto();

	values[0] = name;
	values[1] = LSNGetDatum(upto);
	values[2] = CStringGetTextDatum(psprintf("%u", job->upstream));
	values[3] = LSNGetDatum(cdc->offset);
	if (SPI_execute_plan(cdc->fetch_plan, values, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not fetch the changes of replication slot \"%s\"", cdc->slot_name);

	/* committed, but maybe not visible yet to a new snapshot: wait */
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		TransactionId xid = DatumGetTransactionId(SPI_getbinval(SPI_tuptable->vals[i],
																SPI_tuptable->tupdesc, 1,
																&isnull));

		if (!isnull && TransactionIdIsValid(xid))
			XactLockTableWait(xid, NULL, NULL, XLTW_None);
	}
	SPI_freetuptable(SPI_tuptable);
	cdc->fetched = Max(upto, cdc->offset);
}

/*
 * kind.h: fetch.  A fetch reads the slot up to the WAL flushed, so it never
 * stops short.  A change fetched a barrier late is harmless: its key is
 * forwarded, if at or below the position, by re-reading the upstream as the
 * later barrier's snapshot sees it, and a key above the position is read by
 * a chunk whose snapshot holds the change either way.
 */
static bool
cdc_fetch_before_barrier(BarrierExecutor *exec)
{
	cdc_fetch(exec);
	return true;
}

/*
 * Persist the job's one state row: the position and row count all vnodes
 * share, and the offset of the last fetch.  Written at every barrier, since
 * the offset moves even when the position does not.
 */
static void
cdc_persist(BarrierExecutor *exec)
{
	BackfillJob *job = exec->job;
	CdcState   *cdc = exec->kind_state;
	VnodeState *vs = &job->vnodes[0];
	Datum		values[INDEX_MAX_KEYS + 4];
	char		nulls[INDEX_MAX_KEYS + 4];

	memset(nulls, ' ', sizeof(nulls));
	values[0] = CStringGetTextDatum(psprintf("%u", job->upstream));
	values[1] = BoolGetDatum(vs->finished);
	values[2] = Int64GetDatum(vs->row_count);
	values[3] = LSNGetDatum(cdc->fetched);
	for (int k = 0; k < job->npk; k++)
	{
		values[4 + k] = vs->has_pos ? vs->pos[k] : (Datum) 0;
		nulls[4 + k] = vs->has_pos ? ' ' : 'n';
	}
	if (SPI_execute_plan(cdc->persist_plan, values, nulls, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not write state table %s", job->state_sql);
	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		job->vnodes[v].dirty = false;
		job->vnodes[v].present = true;
	}
	cdc->offset = cdc->fetched;
	/* an executor made again in this run starts from here */
	cdc_job(job)->offset = cdc->offset;
	cdc_job(job)->has_offset = true;
}


/* the actor's rows: the one total */
static void
cdc_update_actor(BarrierExecutor *exec, BackfillActor *actor)
{
	backfill_record_actor(exec, actor, exec->job->vnodes[actor->vnode_start].row_count);
}

static bool
cdc_finished_everywhere(BackfillJob *job)
{
	return backfill_spi_true(psprintf("SELECT pg_catalog.bool_and(backfill_finished) FROM %s",
									  job->state_sql));
}

/* the slot's drop, once nothing reads it */
static void
cdc_after_finish(int64 job_id)
{
	backfill_drop_slot_now(job_id);
}

/* kind.h: drop_objects: the job's slot, when the transaction commits */
static void
cdc_drop_objects(int64 job_id)
{
	backfill_drop_slot_at_commit(job_id);
}

static void
cdc_recount_actors(int64 job_id, const char *state_sql)
{
	backfill_recount_actor_rows(job_id, psprintf("SELECT s.row_count FROM %s s", state_sql));
}

/* job_state's one row: the one split of the whole table, on the one actor */
static char *
cdc_state_query(const char *state_sql, const char *position)
{
	return psprintf("SELECT a.actor_id, NULL::integer, "
					"       CASE WHEN ROW(%1$s) IS NULL THEN NULL ELSE ROW(%1$s)::text END, "
					"       coalesce(s.backfill_finished, false), coalesce(s.row_count, 0), "
					"       NULL::bigint, s.cdc_offset "
					"  FROM backfill.actor a LEFT JOIN %2$s s ON true "
					" WHERE a.job_id = $1", position, state_sql);
}

/* its slot, from its first run until it has finished or is cancelled */
static char *
cdc_slot_name(int64 job_id, BackfillJobStatus status)
{
	if (status == BACKFILL_STATUS_FINISHED || status == BACKFILL_STATUS_CANCELLED)
		return NULL;
	return backfill_slot_name(job_id);
}

/*
 * VerifySource's decoded_param: the WAL flushed as a statement of the
 * comparison peeks at the slot, after it has taken its snapshot (NULL on a
 * standby)
 */
static Datum
cdc_verify_flushed(const VerifyJob *job pg_attribute_unused(), bool *isnull)
{
	XLogRecPtr	flushed = backfill_flush_wal_to_peek();

	*isnull = XLogRecPtrIsInvalid(flushed);
	return LSNGetDatum(flushed);
}

/*
 * kind.h: verify_source.  A backfilling job covers the keys up to its
 * position; the keys captured since its last barrier are pending, and so
 * are the changes its slot has decoded and not delivered yet, up to the WAL
 * flushed as the comparison peeks, after its snapshot (the slot decodes
 * only flushed WAL, which an asynchronous commit may not have reached), $1.
 * The slot has one user at a time: the job's fetch waits for the
 * comparison.  A finished job covers every key.
 */
static void
cdc_verify_source(const VerifyJob *job, VerifySource *source)
{
	char	   *slot = backfill_slot_name(job->job_id);

	if (job->finished)
		return;
	source->covered = psprintf("EXISTS (SELECT FROM %s s WHERE s.backfill_finished OR %s)",
							   job->state_sql,
							   backfill_key_compare_columns(job->upstream, job->npk, job->pk_names,
															"u", BTLessEqualStrategyNumber, "s"));
	if (SearchNamedReplicationSlot(slot, true) != NULL)
	{
		backfill_lock_slot_of(job->job_id);
		source->decoded =
			psprintf("SELECT ROW((substr(p.data, strpos(p.data, E'\\t') + 1)::%s).*) AS k "
					 "  FROM pg_logical_slot_peek_changes(%s, $1, NULL, 'relid', %s) p",
					 job->changes_sql, quote_literal_cstr(slot),
					 quote_literal_cstr(psprintf("%u", job->upstream)));
		source->decoded_param = cdc_verify_flushed;
		source->decoded_type = LSNOID;
	}
	source->settled = backfill_verify_settled_sql(job);
}

const KindRoutine backfill_cdc_routine = {
	.kind = BACKFILL_KIND_CDC,
	.reserved_columns = cdc_reserved_columns,
	.capture = CAPTURE_WAL,
	.recount_total = true,
	.needs_job_column = "snapshot_epoch",	/* version 1.1 */
	.check_create = cdc_check_create,
	.create_state_table = cdc_create_state_table,
	.load_state = cdc_load_state,
	.prepare = cdc_prepare,
	.open_stream = cdc_open_stream,
	.fetch = cdc_fetch_before_barrier,
	.barrier_changes = backfill_forward_actors_changes,	/* the one actor's, all vnodes */
	.read_chunk = backfill_read_chunk_per_actor,
	.persist = cdc_persist,
	.update_actor = cdc_update_actor,
	.actor_finished = backfill_vnodes_finished,
	.finished_everywhere = cdc_finished_everywhere,
	.final_changes = cdc_fetch,
	.after_finish = cdc_after_finish,
	.drop_objects = cdc_drop_objects,
	.recount_actors = cdc_recount_actors,
	.check_parallelism = cdc_check_parallelism,
	.verify_source = cdc_verify_source,
	.state_query = cdc_state_query,
	.slot_name = cdc_slot_name,
};

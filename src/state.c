/*-------------------------------------------------------------------------
 *
 * state.c
 *	  Decoding a job's state table, and the recovery check of a restart.
 *
 * A state row is (vnode, <pk columns>, backfill_finished, row_count).  It is
 * decoded as RisingWave decodes it (utils.rs, cdc/state.rs): row_count must
 * be a non-NULL, non-negative count and backfill_finished a non-NULL flag,
 * checked in that order, else the row is corrupt: DATA_CORRUPTED with
 * RisingWave's texts "invalid backfill state: row_count" and "invalid
 * backfill state: backfill_finished".  Where RisingWave would panic (the
 * legacy executor's assert that all vnodes of an actor agree) we raise the
 * same "backfill_finished" error instead.
 *
 * A snapshot state row is (vnode, epoch, row_count, is_epoch_finished,
 * <pk columns>), checked as RisingWave's snapshot backfill checks its
 * progress table (snapshot_backfill/state.rs): first the table's columns,
 * with RisingWave's texts, then each row, where RisingWave panics on a value
 * of the wrong type: here "invalid backfill state: <column>".  An unfinished
 * row's key is the next row to read, so it must be all there; a finished
 * row's key must be NULL, and, as in a release build of RisingWave, one that
 * is not draws a warning and is ignored.
 *
 * The cdc state is one row, (split_id, <pk columns>, backfill_finished,
 * row_count, cdc_offset), decoded in the order of RisingWave's cdc/state.rs
 * (the version with the null-offset check): row_count, backfill_finished,
 * then a NULL offset on an unfinished row ("unfinished row has null
 * cdc_offset"), then an offset that does not decode ("cdc_offset").  Its
 * split is the upstream's OID; a single row for another OID is a job dumped
 * and restored, which cannot resume unless it has finished (fail_restored()
 * says why).
 *
 * The recovery check is the legacy no-shuffle executor's: an actor whose
 * state is unfinished, or missing, cannot resume, and the job fails with
 * RisingWave's message.  Arrangement jobs need no check beyond decoding: each
 * vnode resumes after its own position.
 *
 * Failures are recorded on the job and committed before the error is raised,
 * so an operator who was not watching can read them in backfill.jobs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlogdefs.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/pg_lsn.h"
#include "utils/rel.h"

#include "backfill.h"

/*
 * backfill_state_error
 *		Fail the job with "invalid backfill state: <field>", recorded on the
 *		job first.  Caller is connected to SPI in a non-atomic context.
 */
static void report_state_error(BackfillJob *job, const char *message,
							   const char *detail) pg_attribute_noreturn();

void
backfill_state_error(BackfillJob *job, const char *field, const char *detail)
{
	char	   *message;

	/* the strings must survive the commit that records them */
	MemoryContextSwitchTo(GetMemoryChunkContext(job));
	message = psprintf("invalid backfill state: %s", field);
	detail = pstrdup(detail);
	report_state_error(job, message, detail);
}

static void
report_state_error(BackfillJob *job, const char *message, const char *detail)
{
	backfill_fail_job(job, ERRCODE_DATA_CORRUPTED, message, detail);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", detail)));
}

static void fail_with_state_error(BackfillJob *job, const char *field,
								  int vnode) pg_attribute_noreturn();

static void
fail_with_state_error(BackfillJob *job, const char *field, int vnode)
{
	backfill_state_error(job, field,
						 psprintf("State table %s of backfill job %lld has an invalid row for vnode %d.",
								  job->state_sql, (long long) job->job_id, vnode));
}

/* read the key columns first..first+npk-1 of a state row into vs */
static void
read_position(BackfillJob *job, VnodeState *vs, HeapTuple tup, TupleDesc desc, int first)
{
	MemoryContext cxt = GetMemoryChunkContext(job);

	vs->has_pos = false;
	for (int k = 0; k < job->npk; k++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, first + k - 1);
		Datum		d = SPI_getbinval(tup, desc, first + k, &vs->pos_null[k]);

		if (!vs->pos_null[k])
		{
			MemoryContext old = MemoryContextSwitchTo(cxt);

			vs->pos[k] = datumCopy(d, att->attbyval, att->attlen);
			MemoryContextSwitchTo(old);
			vs->has_pos = true;
		}
	}
}

/* "[vnode, epoch, ...]": the column names of a relation, for an error */
static char *
column_list(Oid relid, int *natts, Oid **types)
{
	Relation	rel = relation_open(relid, AccessShareLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	int			n = 0;

	initStringInfo(&buf);
	*types = palloc(sizeof(Oid) * Max(desc->natts, 1));
	appendStringInfoChar(&buf, '[');
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		appendStringInfo(&buf, "%s%s %s", n > 0 ? ", " : "", NameStr(att->attname),
						 format_type_be(att->atttypid));
		(*types)[n++] = att->atttypid;
	}
	appendStringInfoChar(&buf, ']');
	relation_close(rel, AccessShareLock);
	*natts = n;
	return buf.data;
}

/*
 * The snapshot kind's progress table must have RisingWave's columns:
 * smallint, bigint, bigint, boolean, then the upstream's key types.
 */
static void
check_snapshot_state_table(BackfillJob *job)
{
	int			natts;
	Oid		   *types;
	char	   *cols = column_list(job->state_table, &natts, &types);
	StringInfoData pk;
	Oid			expected[4] = {INT2OID, INT8OID, INT8OID, BOOLOID};
	bool		ok = true;
	char	   *message;

	initStringInfo(&pk);
	appendStringInfoChar(&pk, '[');
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&pk, "%s%s %s", k > 0 ? ", " : "", job->pk_names[k],
						 format_type_be(job->pk_types[k]));
	appendStringInfoChar(&pk, ']');

	if (natts != 4 + job->npk)
		message = psprintf("progress table columns len not matched with the len derived from upstream table pk. progress table: %s, pk: %s",
						   cols, pk.data);
	else
	{
		for (int i = 0; i < natts; i++)
			ok &= types[i] == (i < 4 ? expected[i] : job->pk_types[i - 4]);
		if (ok)
			return;
		message = psprintf("progress table column not matched with upstream table schema: progress table: %s, pk: %s",
						   cols, pk.data);
	}
	MemoryContextSwitchTo(GetMemoryChunkContext(job));
	report_state_error(job, pstrdup(message),
					   psprintf("State table %s of backfill job %lld does not have the layout of a snapshot backfill's progress table.",
								job->state_sql, (long long) job->job_id));
}

/* the snapshot kind's rows: (vnode, epoch, row_count, is_epoch_finished, pk) */
static void
load_snapshot_state(BackfillJob *job)
{
	StringInfoData sql;

	check_snapshot_state_table(job);
	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT vnode, epoch, row_count, is_epoch_finished, %s FROM %s ORDER BY vnode",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			vnode;
		Datum		epoch;
		Datum		row_count;
		Datum		finished;
		VnodeState *vs;

		vnode = DatumGetInt16(SPI_getbinval(tup, desc, 1, &isnull));
		if (isnull || vnode < 0 || vnode >= BACKFILL_VNODE_COUNT)
			fail_with_state_error(job, "vnode", isnull ? -1 : vnode);
		vs = &job->vnodes[vnode];

		epoch = SPI_getbinval(tup, desc, 2, &isnull);
		if (isnull || DatumGetInt64(epoch) < job->snapshot_epoch)
			backfill_state_error(job, "epoch",
								 isnull ?
								 psprintf("State table %s of backfill job %lld has an invalid row for vnode %d.",
										  job->state_sql, (long long) job->job_id, vnode) :
								 psprintf("In state table %s of backfill job %lld, vnode %d has epoch %lld, before the job's snapshot epoch %lld.",
										  job->state_sql, (long long) job->job_id, vnode,
										  (long long) DatumGetInt64(epoch),
										  (long long) job->snapshot_epoch));
		row_count = SPI_getbinval(tup, desc, 3, &isnull);
		if (isnull || DatumGetInt64(row_count) < 0)
			fail_with_state_error(job, "row_count", vnode);
		finished = SPI_getbinval(tup, desc, 4, &isnull);
		if (isnull)
			fail_with_state_error(job, "is_epoch_finished", vnode);

		vs->present = true;
		vs->epoch = DatumGetInt64(epoch);
		vs->row_count = DatumGetInt64(row_count);
		vs->finished = DatumGetBool(finished);
		read_position(job, vs, tup, desc, 5);

		if (vs->finished && vs->has_pos)
		{
			ereport(WARNING,
					(errmsg("get non-empty pk row: %s", backfill_pos_text(job, vs)),
					 errdetail("Vnode %d of backfill job %lld is finished, so its position is ignored.",
							   vnode, (long long) job->job_id)));
			vs->has_pos = false;
		}
		/* the next row to read: all of the key */
		if (!vs->finished)
			for (int k = 0; k < job->npk; k++)
				if (vs->pos_null[k])
					fail_with_state_error(job, "latest_pk", vnode);
	}
	SPI_freetuptable(SPI_tuptable);
}

static void fail_with_split_error(BackfillJob *job, const char *field,
								  const char *split) pg_attribute_noreturn();

static void
fail_with_split_error(BackfillJob *job, const char *field, const char *split)
{
	backfill_state_error(job, field,
						 psprintf("State table %s of backfill job %lld has an invalid row for split \"%s\".",
								  job->state_sql, (long long) job->job_id, split));
}

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

	/* the strings must survive the commit that records them */
	MemoryContextSwitchTo(GetMemoryChunkContext(job));
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
	backfill_fail_job(job, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message, detail);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", detail),
			 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld).",
					 (long long) job->job_id, (long long) job->job_id)));
}

/* the cdc kind's one row: (split_id, pk, backfill_finished, row_count, cdc_offset) */
static void
load_cdc_state(BackfillJob *job)
{
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

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT split_id, %s, backfill_finished, row_count, "
					 "pg_catalog.jsonb_typeof(cdc_offset), cdc_offset OPERATOR(pg_catalog.->>) 'lsn' "
					 "FROM %s ORDER BY split_id",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);
	job->has_cdc_offset = false;
	job->cdc_offset = InvalidXLogRecPtr;
	if (SPI_processed == 0)
		return;					/* not started */
	desc = SPI_tuptable->tupdesc;
	tup = SPI_tuptable->vals[0];
	if (SPI_processed == 1 && written_for_another_table(job, SPI_getvalue(tup, desc, 1)))
	{
		/* a finished job reads nothing from it any more */
		if (strcmp(job->status, "finished") != 0)
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
			job->cdc_offset = pg_lsn_in_internal(offset_lsn, &have_error);
		if (have_error)
			fail_with_split_error(job, "cdc_offset", split);
		job->has_cdc_offset = true;
	}

	/* every vnode shares the one position */
	memset(&vs, 0, sizeof(vs));
	vs.pos = job->vnodes[0].pos;
	vs.pos_null = job->vnodes[0].pos_null;
	read_position(job, &vs, tup, desc, 2);
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
 * backfill_load_state
 *		Read and decode every row of the job's state table into job->vnodes.
 *		Caller is connected to SPI in a non-atomic context.
 */
void
backfill_load_state(BackfillJob *job)
{
	MemoryContext cxt = GetMemoryChunkContext(job);
	StringInfoData sql;
	int			npk = job->npk;

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		VnodeState *vs = &job->vnodes[v];

		vs->present = vs->finished = vs->has_pos = vs->dirty = false;
		vs->row_count = 0;
		vs->epoch = 0;
		vs->pos = MemoryContextAllocZero(cxt, sizeof(Datum) * npk);
		vs->pos_null = MemoryContextAllocZero(cxt, sizeof(bool) * npk);
	}
	if (job->kind == BACKFILL_KIND_SNAPSHOT)
	{
		load_snapshot_state(job);
		return;
	}
	if (job->kind == BACKFILL_KIND_CDC)
	{
		load_cdc_state(job);
		return;
	}

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT vnode, %s, backfill_finished, row_count FROM %s ORDER BY vnode",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int			vnode;
		Datum		finished;
		Datum		row_count;
		bool		finished_null;
		bool		row_count_null;
		VnodeState *vs;

		vnode = DatumGetInt16(SPI_getbinval(tup, desc, 1, &isnull));
		if (isnull || vnode < 0 || vnode >= BACKFILL_VNODE_COUNT)
			fail_with_state_error(job, "vnode", isnull ? -1 : vnode);
		vs = &job->vnodes[vnode];

		/* RisingWave's order: row_count, then backfill_finished */
		row_count = SPI_getbinval(tup, desc, npk + 3, &row_count_null);
		if (row_count_null || DatumGetInt64(row_count) < 0)
			fail_with_state_error(job, "row_count", vnode);
		finished = SPI_getbinval(tup, desc, npk + 2, &finished_null);
		if (finished_null)
			fail_with_state_error(job, "backfill_finished", vnode);

		vs->present = true;
		vs->finished = DatumGetBool(finished);
		vs->row_count = DatumGetInt64(row_count);
		read_position(job, vs, tup, desc, 2);

		/* a position is all of the key or nothing */
		if (vs->has_pos)
			for (int k = 0; k < npk; k++)
				if (vs->pos_null[k])
					fail_with_state_error(job, "current_pos", vnode);
	}
	SPI_freetuptable(SPI_tuptable);
}

/* one value of a row literal, quoted as record_out quotes it */
void
backfill_append_record_field(StringInfo buf, const char *value)
{
	bool		quote = (value[0] == '\0');

	for (const char *p = value; *p && !quote; p++)
		if (*p == '"' || *p == '\\' || *p == '(' || *p == ')' || *p == ',' ||
			isspace((unsigned char) *p))
			quote = true;
	if (!quote)
	{
		appendStringInfoString(buf, value);
		return;
	}
	appendStringInfoChar(buf, '"');
	for (const char *p = value; *p; p++)
	{
		if (*p == '"' || *p == '\\')
			appendStringInfoChar(buf, *p);
		appendStringInfoChar(buf, *p);
	}
	appendStringInfoChar(buf, '"');
}

/*
 * backfill_pos_text
 *		A vnode's position as a row literal, "(1024)" or "(7,abc)", or "NULL"
 *		when it has none.
 */
char *
backfill_pos_text(BackfillJob *job, VnodeState *vs)
{
	StringInfoData buf;

	if (!vs->present || !vs->has_pos)
		return "NULL";
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '(');
	for (int k = 0; k < job->npk; k++)
	{
		Oid			outfunc;
		bool		isvarlena;

		if (k > 0)
			appendStringInfoChar(&buf, ',');
		if (vs->pos_null[k])
			continue;
		getTypeOutputInfo(job->pk_types[k], &outfunc, &isvarlena);
		backfill_append_record_field(&buf, OidOutputFunctionCall(outfunc, vs->pos[k]));
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * backfill_recovery_check
 *		The check a restart runs before anything else.  For a legacy
 *		no-shuffle job, every actor must have finished: the state of the
 *		actor's first vnode decides, as in RisingWave, after checking that
 *		all of the actor's vnodes agree.  Arrangement jobs always pass.
 */
void
backfill_recovery_check(BackfillJob *job)
{
	MemoryContext oldcxt;

	if (job->kind != BACKFILL_KIND_NO_SHUFFLE)
		return;

	/* the strings must survive the commit that records them */
	oldcxt = MemoryContextSwitchTo(GetMemoryChunkContext(job));

	for (int a = 0; a < job->nactors; a++)
	{
		BackfillActor *actor = &job->actors[a];
		VnodeState *first = &job->vnodes[actor->vnode_start];
		bool		first_finished = first->present && first->finished;
		char	   *message;
		char	   *detail;

		for (int v = actor->vnode_start + 1; v <= actor->vnode_end; v++)
		{
			VnodeState *vs = &job->vnodes[v];

			if ((vs->present && vs->finished) != first_finished)
			{
				message = "invalid backfill state: backfill_finished";
				detail = psprintf("In state table %s of backfill job %lld, vnodes %d and %d of actor %d disagree on whether the actor has finished.",
								  job->state_sql, (long long) job->job_id,
								  actor->vnode_start, v, actor->actor_id);
				backfill_fail_job(job, ERRCODE_DATA_CORRUPTED, message, detail);
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg_internal("%s", message),
						 errdetail_internal("%s", detail)));
			}
		}

		if (first_finished)
			continue;

		message = psprintf("legacy no-shuffle backfill recovered unfinished progress; "
						   "cancel and recreate the streaming job. "
						   "upstream_table_id=%u, fragment_id=%d, actor_id=%d, "
						   "current_pos=%s, row_count=%lld",
						   job->upstream, job->fragment_id, actor->actor_id,
						   backfill_pos_text(job, first),
						   (long long) (first->present ? first->row_count : 0));
		detail = psprintf("Backfill job %lld copies table %s with the legacy no-shuffle backfill, which cannot resume an interrupted backfill.",
						  (long long) job->job_id, job->upstream_sql);
		backfill_fail_job(job, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message, detail);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg_internal("%s", message),
				 errdetail_internal("%s", detail),
				 errhint("Cancel the job with backfill.cancel_job(%lld) and create it again with backfill.recreate_job(%lld), which can also move it to kind \"arrangement\".",
						 (long long) job->job_id, (long long) job->job_id)));
	}
	MemoryContextSwitchTo(oldcxt);
}

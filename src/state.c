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
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "backfill.h"

static void
fail_with_state_error(BackfillJob *job, const char *field, int vnode)
{
	char	   *message;
	char	   *detail;

	/* the strings must survive the commit that records them */
	MemoryContextSwitchTo(GetMemoryChunkContext(job));
	message = psprintf("invalid backfill state: %s", field);
	detail = psprintf("State table %s of backfill job %lld has an invalid row for vnode %d.",
					  job->state_sql, (long long) job->job_id, vnode);

	backfill_fail_job(job, ERRCODE_DATA_CORRUPTED, message, detail);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg_internal("%s", message),
			 errdetail_internal("%s", detail)));
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

	initStringInfo(&sql);
	appendStringInfo(&sql,
					 "SELECT vnode, %s, backfill_finished, row_count FROM %s ORDER BY vnode",
					 backfill_pk_list(job, NULL), job->state_sql);
	if (SPI_execute(sql.data, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read state table %s", job->state_sql);

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		VnodeState *vs = &job->vnodes[v];

		vs->present = vs->finished = vs->has_pos = vs->dirty = false;
		vs->row_count = 0;
		vs->pos = MemoryContextAllocZero(cxt, sizeof(Datum) * npk);
		vs->pos_null = MemoryContextAllocZero(cxt, sizeof(bool) * npk);
	}

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
		vs->has_pos = false;
		for (int k = 0; k < npk; k++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, k + 1);
			Datum		d = SPI_getbinval(tup, desc, k + 2, &vs->pos_null[k]);

			if (!vs->pos_null[k])
			{
				MemoryContext old = MemoryContextSwitchTo(cxt);

				vs->pos[k] = datumCopy(d, att->attbyval, att->attlen);
				MemoryContextSwitchTo(old);
				vs->has_pos = true;
			}
		}

		/* a position is all of the key or nothing */
		if (vs->has_pos)
			for (int k = 0; k < npk; k++)
				if (vs->pos_null[k])
					fail_with_state_error(job, "current_pos", vnode);
	}
	SPI_freetuptable(SPI_tuptable);
}

/* one value of a row literal, quoted as record_out quotes it */
static void
append_record_field(StringInfo buf, const char *value)
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
		append_record_field(&buf, OidOutputFunctionCall(outfunc, vs->pos[k]));
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

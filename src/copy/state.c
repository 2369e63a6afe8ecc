/*-------------------------------------------------------------------------
 *
 * state.c
 *	  What every kind's state table shares: positions, the errors of a state
 *	  that cannot be decoded, the persisting of per-vnode rows, and making a
 *	  job's own tables.
 *
 * Each kind decodes its own state table (kind_vnode.c, kind_snapshot.c,
 * kind_cdc.c) as RisingWave decodes it; what it cannot decode fails the job
 * with RisingWave's text, "invalid backfill state: <field>", as
 * DATA_CORRUPTED.  A failure is recorded on the job and committed before the
 * error is raised, so an operator who was not watching can read it in
 * backfill.jobs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/regproc.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "catalog/barrier_rows.h"
#include "catalog/catalog_access.h"
#include "catalog/job_run_rows.h"
#include "copy/barrier_io.h"
#include "copy/copy.h"
#include "lib/lib.h"

/*
 * backfill_init_vnodes
 *		Every vnode "not started", with room for a position, before a kind
 *		decodes its state rows.
 */
void
backfill_init_vnodes(BackfillJob *job)
{
	MemoryContext cxt = GetMemoryChunkContext(job);

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		VnodeState *vs = &job->vnodes[v];

		vs->present = vs->finished = vs->has_pos = vs->dirty = false;
		vs->row_count = 0;
		vs->epoch = 0;
		vs->pos = MemoryContextAllocZero(cxt, sizeof(Datum) * job->npk);
		vs->pos_null = MemoryContextAllocZero(cxt, sizeof(bool) * job->npk);
	}
}

/*
 * backfill_fail_job
 *		Record a failure on the job, commit it, and raise it.  Caller is
 *		connected to SPI in a non-atomic context.
 */
void
backfill_fail_job(BackfillJob *job, int sqlerrcode, const char *message,
				  const char *detail, const char *hint)
{
	/* the strings must survive the commit that records them */
	MemoryContextSwitchTo(GetMemoryChunkContext(job));
	message = pstrdup(message);
	detail = detail ? pstrdup(detail) : NULL;
	hint = hint ? pstrdup(hint) : NULL;
	backfill_record_failure(job->job_id, sqlerrcode, message, detail, false);
	backfill_commit();
	ereport(ERROR,
			(errcode(sqlerrcode),
			 errmsg_internal("%s", message),
			 detail ? errdetail_internal("%s", detail) : 0,
			 hint ? errhint("%s", hint) : 0));
	pg_unreachable();
}

/*
 * backfill_state_error
 *		Fail the job with "invalid backfill state: <field>".
 */
void
backfill_state_error(BackfillJob *job, const char *field, const char *detail)
{
	backfill_fail_job(job, ERRCODE_DATA_CORRUPTED,
					  psprintf("invalid backfill state: %s", field), detail, NULL);
}

/* the same, for a split's row: split as the message shows it */
void
backfill_split_state_error(BackfillJob *job, const char *field, const char *split)
{
	backfill_state_error(job, field,
						 psprintf("State table %s of backfill job %lld has an invalid row for split %s.",
								  job->state_sql, (long long) job->job_id, split));
}

/* the same, for a vnode's row */
void
backfill_vnode_state_error(BackfillJob *job, const char *field, int vnode)
{
	backfill_state_error(job, field,
						 psprintf("State table %s of backfill job %lld has an invalid row for vnode %d.",
								  job->state_sql, (long long) job->job_id, vnode));
}

/*
 * backfill_read_position
 *		Read the key columns first..first+npk-1 of a state row into vs.
 */
void
backfill_read_position(BackfillJob *job, VnodeState *vs, HeapTuple tup, TupleDesc desc, int first)
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
char *
backfill_column_list(Oid relid, int *natts, Oid **types)
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
 * backfill_persist_vnodes
 *		Persist every dirty vnode, one statement per set of vnodes that share
 *		position, flag and epoch (the snapshot kind's; 0 for the others).
 *		The persist plans of the vnode layouts take the same parameters: the
 *		vnodes, their row counts, the flag, the epoch, then the position.
 */
void
backfill_persist_vnodes(BarrierExecutor *exec, SPIPlanPtr plan)
{
	BackfillJob *job = exec->job;
	bool		done[BACKFILL_VNODE_COUNT] = {0};

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		VnodeState *vs = &job->vnodes[v];
		Datum		vnodes[BACKFILL_VNODE_COUNT];
		Datum		counts[BACKFILL_VNODE_COUNT];
		int			n = 0;
		Datum		values[INDEX_MAX_KEYS + 4];
		char		nulls[INDEX_MAX_KEYS + 4];

		if (!vs->dirty || done[v])
			continue;
		for (int w = v; w < BACKFILL_VNODE_COUNT; w++)
		{
			VnodeState *ws = &job->vnodes[w];

			if (ws->dirty && !done[w] && ws->finished == vs->finished &&
				ws->epoch == vs->epoch && backfill_same_position(exec, vs, ws))
			{
				vnodes[n] = Int16GetDatum((int16) w);
				counts[n] = Int64GetDatum(ws->row_count);
				n++;
				done[w] = true;
			}
		}
		values[0] = PointerGetDatum(construct_array(vnodes, n, INT2OID, 2, true, TYPALIGN_SHORT));
		values[1] = PointerGetDatum(construct_array(counts, n, INT8OID, 8,
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[2] = BoolGetDatum(vs->finished);
		values[3] = Int64GetDatum(vs->epoch);
		memset(nulls, ' ', sizeof(nulls));
		for (int k = 0; k < job->npk; k++)
		{
			values[4 + k] = vs->has_pos ? vs->pos[k] : (Datum) 0;
			nulls[4 + k] = vs->has_pos ? ' ' : 'n';
		}
		if (SPI_execute_plan(plan, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not write state table %s", job->state_sql);
	}

	for (int v = 0; v < BACKFILL_VNODE_COUNT; v++)
	{
		job->vnodes[v].dirty = false;
		job->vnodes[v].present |= done[v];
	}
}

/*
 * backfill_record_actor
 *		An actor's barrier in backfill.actor: the job's epoch and the rows
 *		the actor has read, with the executor's actor plan.
 */
void
backfill_record_actor(BarrierExecutor *exec, BackfillActor *actor, int64 rows)
{
	backfill_run_record_actor(exec->actor_plan, actor->actor_id, exec->job->epoch, rows);
}

/*
 * backfill_state_row_vnode
 *		The vnode of a state row whose first column is the vnode, or the
 *		job's failure when it is not one.
 */
VnodeState *
backfill_state_row_vnode(BackfillJob *job, HeapTuple tup, TupleDesc desc)
{
	bool		isnull;
	int			vnode = DatumGetInt16(SPI_getbinval(tup, desc, 1, &isnull));

	if (isnull || vnode < 0 || vnode >= BACKFILL_VNODE_COUNT)
		backfill_vnode_state_error(job, "vnode", isnull ? -1 : vnode);
	return &job->vnodes[vnode];
}

/*
 * backfill_recount_vnode_actors
 *		After a reschedule, the row counts of a job's new actors from its
 *		per-vnode state rows: the sum of their vnodes', or with one_total the
 *		total the legacy layout stores on every vnode of an actor.  The
 *		vnodes keep their progress wherever they land.
 */
void
backfill_recount_vnode_actors(int64 job_id, const char *state_sql, bool one_total)
{
	backfill_recount_actor_rows(job_id,
								psprintf("SELECT CASE WHEN %s THEN pg_catalog.max(s.row_count) FILTER (WHERE s.vnode = a.vnode_start) "
										 "ELSE pg_catalog.sum(s.row_count) END "
										 "FROM %s s WHERE s.vnode BETWEEN a.vnode_start AND a.vnode_end",
										 one_total ? "true" : "false", state_sql));
}

/*
 * Give the object made by create, a table or a type named sql_name, to
 * owner, and make it part of the extension's data: DROP EXTENSION refuses
 * while it exists, and CASCADE drops it.  It is not a member, so pg_dump
 * keeps it.
 */
static void
create_job_object(const char *create, const char *sql_name, bool is_type, Oid owner)
{
	ObjectAddress extension;
	ObjectAddress object;

	backfill_spi_exec(create, SPI_OK_UTILITY);
	backfill_spi_exec(psprintf("ALTER %s %s OWNER TO %s", is_type ? "TYPE" : "TABLE", sql_name,
							   quote_identifier(GetUserNameFromId(owner, false))),
					  SPI_OK_UTILITY);
	ObjectAddressSet(extension, ExtensionRelationId,
					 get_extension_oid(BACKFILL_SCHEMA, false));
	if (is_type)
		ObjectAddressSet(object, TypeRelationId,
						 DatumGetObjectId(DirectFunctionCall1(regtypein,
															  CStringGetDatum(sql_name))));
	else
		ObjectAddressSet(object, RelationRelationId,
						 RangeVarGetRelid(makeRangeVarFromNameList(stringToQualifiedNameList(sql_name)),
										  NoLock, false));
	recordDependencyOn(&object, &extension, DEPENDENCY_NORMAL);
}

/*
 * backfill_create_job_table
 *		Run create (a CREATE TABLE of the table named table_sql, in the
 *		extension's schema), then give the table to owner and make it part
 *		of the extension's data (see create_job_object).  Caller acts as the
 *		extension's owner, who alone creates tables there, and is connected
 *		to SPI.
 */
void
backfill_create_job_table(const char *create, const char *table_sql, Oid owner)
{
	create_job_object(create, table_sql, false, owner);
}

/*
 * backfill_create_job_type
 *		The same for a type of the extension's schema.
 */
void
backfill_create_job_type(const char *create, const char *type_sql, Oid owner)
{
	create_job_object(create, type_sql, true, owner);
}

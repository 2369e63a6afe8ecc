/*-------------------------------------------------------------------------
 *
 * pgoutput.c
 *	  Decoding the messages of PostgreSQL's pgoutput plugin, protocol
 *	  version 1, as pg_logical_slot_peek_binary_changes() returns them: one
 *	  message per row.
 *
 * The messages are read with PostgreSQL's own readers, those its apply
 * worker uses (logicalrep_read_*, src/backend/replication/logical/proto.c):
 * Begin, Commit, Relation, Insert, Update, Delete and Truncate; Type,
 * Origin and logical messages carry nothing a job needs.  A column of a
 * tuple is null, text, or unchanged: a TOASTed value an update did not
 * touch, which the WAL does not carry.
 *
 * Only the job's tables are decoded (one, or those of the source's
 * partitions of a sharded upstream): a Relation message gives a table's OID
 * and the position of each of the job's columns among its attributes (by
 * name, as each table may order them its own way).  Each change becomes a
 * RemoteChange with its table's part of the job and the values of the
 * job's columns as text:
 *   - an insert, or an update, is an upsert of its new row, or a refetch
 *	   when a column of it is unchanged;
 *   - a delete is a delete of its old key;
 *   - an update whose old key is in the message (the key changed, or
 *	   REPLICA IDENTITY FULL) and differs from the new one is a delete of
 *	   the old key, then the upsert.
 * A Truncate of one of them is an error the caller reports.  Data of other
 * tables (none: the publication has only the job's) is skipped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "replication/logicalproto.h"

#include "remote/remote.h"

/* the job's table of the source whose OID is relid, or NULL: another table's */
static RemoteDecoderTable *
table_of(RemoteDecoder *dec, LogicalRepRelId relid)
{
	for (int t = 0; t < dec->ntables; t++)
		if (dec->tables[t].relid == relid && relid != 0)
			return &dec->tables[t];
	return NULL;
}

/*
 * the job's columns of one tuple of table t, as text, and whether any of
 * them was unchanged (not in the message)
 */
static char **
job_values(RemoteDecoder *dec, RemoteDecoderTable *t, LogicalRepTupleData *tuple,
		   bool *unchanged)
{
	char	  **values = palloc0(sizeof(char *) * dec->ncols);

	*unchanged = false;
	if (tuple->ncols != t->natts)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a change of table \"%s.%s\" has %d columns, its relation message %d",
						t->nspname, t->relname, tuple->ncols, t->natts)));
	for (int i = 0; i < tuple->ncols; i++)
	{
		int			col = t->att_col[i];

		if (col < 0)
			continue;
		switch (tuple->colstatus[i])
		{
			case LOGICALREP_COLUMN_NULL:
				break;
			case LOGICALREP_COLUMN_UNCHANGED:
				*unchanged = true;
				break;
			case LOGICALREP_COLUMN_TEXT:
				values[col] = tuple->colvalues[i].data;
				break;
			default:
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("unexpected data kind \"%c\" in a change of table \"%s.%s\"",
								tuple->colstatus[i], t->nspname, t->relname)));
		}
	}
	return values;
}

static void
add_change(RemoteDecoder *dec, RemoteDecoderTable *t, RemoteChangeKind kind, char **values)
{
	RemoteChange *c = palloc(sizeof(RemoteChange));

	c->kind = kind;
	c->part = t->part;
	c->commit_lsn = dec->commit_lsn;
	c->xid = dec->xid;
	c->seq = dec->seq++;
	c->values = values;
	dec->changes = lappend(dec->changes, c);
}

/* whether two tuples have the same key */
static bool
same_key(RemoteDecoder *dec, char **a, char **b)
{
	for (int k = 0; k < dec->npk; k++)
	{
		char	   *x = a[dec->pk_cols[k]];
		char	   *y = b[dec->pk_cols[k]];

		if (x == NULL || y == NULL || strcmp(x, y) != 0)
			return false;
	}
	return true;
}

/*
 * a Relation message: the OID of one of the job's tables and the place of
 * its columns (each table of the source has its own order of them)
 */
static void
read_relation(RemoteDecoder *dec, StringInfo msg)
{
	LogicalRepRelation *rel = logicalrep_read_rel(msg);
	RemoteDecoderTable *t = NULL;
	bool	   *seen;

	for (int i = 0; i < dec->ntables; i++)
		if (strcmp(rel->nspname, dec->tables[i].nspname) == 0 &&
			strcmp(rel->relname, dec->tables[i].relname) == 0)
			t = &dec->tables[i];
	if (t == NULL)
		return;
	t->relid = rel->remoteid;
	t->natts = rel->natts;
	t->att_col = palloc(sizeof(int) * Max(rel->natts, 1));
	seen = palloc0(sizeof(bool) * Max(dec->ncols, 1));
	for (int i = 0; i < rel->natts; i++)
	{
		t->att_col[i] = -1;
		for (int c = 0; c < dec->ncols; c++)
			if (strcmp(rel->attnames[i], dec->col_names[c]) == 0)
			{
				t->att_col[i] = c;
				seen[c] = true;
			}
	}
	for (int c = 0; c < dec->ncols; c++)
		if (!seen[c])
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of table \"%s.%s\" no longer exists on the source",
							dec->col_names[c], t->nspname, t->relname)));
}

/* an Insert, Update or Delete: of one of the job's tables, its changes */
static void
read_row_change(RemoteDecoder *dec, LogicalRepMsgType action, StringInfo msg)
{
	LogicalRepTupleData oldtup;
	LogicalRepTupleData newtup;
	bool		has_old = false;
	LogicalRepRelId relid;
	RemoteDecoderTable *t;
	char	  **old = NULL;
	char	  **new;
	bool		unchanged;

	if (action == LOGICAL_REP_MSG_INSERT)
		relid = logicalrep_read_insert(msg, &newtup);
	else if (action == LOGICAL_REP_MSG_UPDATE)
		relid = logicalrep_read_update(msg, &has_old, &oldtup, &newtup);
	else
	{
		relid = logicalrep_read_delete(msg, &oldtup);
		has_old = true;
	}
	t = table_of(dec, relid);
	if (t == NULL)
		return;					/* another table's */
	if (has_old)
		old = job_values(dec, t, &oldtup, &unchanged);
	if (action == LOGICAL_REP_MSG_DELETE)
	{
		add_change(dec, t, REMOTE_DELETE, old);
		return;
	}
	new = job_values(dec, t, &newtup, &unchanged);
	if (old != NULL && !same_key(dec, old, new))
		add_change(dec, t, REMOTE_DELETE, old);
	add_change(dec, t, unchanged ? REMOTE_REFETCH : REMOTE_UPSERT, new);
}

/* a Truncate: an error if it names one of the job's tables */
static void
read_truncate(RemoteDecoder *dec, StringInfo msg)
{
	bool		cascade;
	bool		restart_seqs;
	ListCell   *lc;

	foreach(lc, logicalrep_read_truncate(msg, &cascade, &restart_seqs))
	{
		RemoteDecoderTable *t = table_of(dec, lfirst_oid(lc));

		if (t != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("table \"%s.%s\" was truncated on the source",
							t->nspname, t->relname),
					 errdetail("A job whose upstream is on another server does not follow TRUNCATE."),
					 errhint("Drop the job and create it again.")));
	}
}

/*
 * backfill_pgoutput_decode
 *		Decode one message, appending the changes of the job's table to
 *		dec->changes.
 */
void
backfill_pgoutput_decode(RemoteDecoder *dec, const char *data, int len)
{
	StringInfoData msg;
	LogicalRepMsgType action;

	msg.data = (char *) data;
	msg.len = len;
	msg.maxlen = len;
	msg.cursor = 0;
	action = pq_getmsgbyte(&msg);
	switch (action)
	{
		case LOGICAL_REP_MSG_BEGIN:
			{
				LogicalRepBeginData begin;

				logicalrep_read_begin(&msg, &begin);
				dec->commit_lsn = begin.final_lsn;
				dec->xid = begin.xid;
				dec->seq = 0;
				break;
			}
		case LOGICAL_REP_MSG_COMMIT:
			{
				LogicalRepCommitData commit;

				logicalrep_read_commit(&msg, &commit);
				dec->last_end = commit.end_lsn;
				dec->last_commit_time = commit.committime;
				break;
			}
		case LOGICAL_REP_MSG_RELATION:
			read_relation(dec, &msg);
			break;
		case LOGICAL_REP_MSG_INSERT:
		case LOGICAL_REP_MSG_UPDATE:
		case LOGICAL_REP_MSG_DELETE:
			read_row_change(dec, action, &msg);
			break;
		case LOGICAL_REP_MSG_TRUNCATE:
			read_truncate(dec, &msg);
			break;
		case LOGICAL_REP_MSG_TYPE:
		case LOGICAL_REP_MSG_ORIGIN:
		case LOGICAL_REP_MSG_MESSAGE:
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unrecognized pgoutput message type \"%c\"", action)));
	}
}

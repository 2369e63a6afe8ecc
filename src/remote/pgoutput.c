/*-------------------------------------------------------------------------
 *
 * pgoutput.c
 *	  Decoding the messages of PostgreSQL's pgoutput plugin, protocol
 *	  version 1, as pg_logical_slot_peek_binary_changes() returns them: one
 *	  message per row.
 *
 * The messages (src/backend/replication/logical/proto.c) are Begin ('B':
 * final LSN, commit time, xid), Commit ('C': flags, commit LSN, end LSN,
 * commit time), Relation ('R': OID, schema, name, replica identity,
 * columns with their flags, names, types and modifiers), Type ('Y'),
 * Origin ('O'), Insert ('I': OID, 'N', new tuple), Update ('U': OID, an
 * optional 'K' old key or 'O' old row, 'N', new tuple), Delete ('D': OID,
 * 'K' or 'O', old tuple), Truncate ('T') and logical messages ('M').  A
 * tuple is a column count and, per column, 'n' (null), 'u' (unchanged
 * TOASTed value: an update did not touch it and the WAL does not carry
 * it), 't' (text: length, bytes) or 'b' (binary, not asked for here).
 *
 * Only the job's tables are decoded (one, or those of the source's
 * partitions of a sharded upstream): a Relation message gives a table's OID
 * and the position of each of the job's columns among its attributes (by
 * name, as each table may order them its own way).  Each change becomes a
 * RemoteChange with its table's part of the job and the values of the
 * job's columns as text:
 *   - an insert, or an update, is an upsert of its new row, or a refetch
 *	   when a column of it is 'u';
 *   - a delete is a delete of its old key;
 *   - an update whose old key is in the message ('K' or 'O': the key
 *	   changed, or REPLICA IDENTITY FULL) and differs from the new one is a
 *	   delete of the old key, then the upsert.
 * A Truncate of one of them is an error the caller reports.  Data of other
 * tables (none: the publication has only the job's) is skipped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "libpq/pqformat.h"

#include "remote/remote.h"

/* the job's table of the source whose OID is relid, or NULL: another table's */
static RemoteDecoderTable *
table_of(RemoteDecoder *dec, uint32 relid)
{
	for (int t = 0; t < dec->ntables; t++)
		if (dec->tables[t].relid == relid && relid != 0)
			return &dec->tables[t];
	return NULL;
}

/* one tuple of a message of table t: the job's columns, and whether any was 'u' */
static char **
read_tuple(RemoteDecoder *dec, RemoteDecoderTable *t, StringInfo msg, bool *unchanged)
{
	int			natts = pq_getmsgint(msg, 2);
	char	  **values = palloc0(sizeof(char *) * dec->ncols);

	*unchanged = false;
	if (natts != t->natts)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("a change of table \"%s.%s\" has %d columns, its relation message %d",
						t->nspname, t->relname, natts, t->natts)));
	for (int i = 0; i < natts; i++)
	{
		char		kind = pq_getmsgbyte(msg);
		int			col = t->att_col[i];

		switch (kind)
		{
			case 'n':
				break;
			case 'u':
				if (col >= 0)
					*unchanged = true;
				break;
			case 't':
				{
					int			len = pq_getmsgint(msg, 4);
					const char *bytes = pq_getmsgbytes(msg, len);

					if (col >= 0)
						values[col] = pnstrdup(bytes, len);
					break;
				}
			default:
				ereport(ERROR,
						(errcode(ERRCODE_PROTOCOL_VIOLATION),
						 errmsg("unrecognized tuple data kind \"%c\" in a change of table \"%s.%s\"",
								kind, t->nspname, t->relname)));
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
	uint32		relid = pq_getmsgint(msg, 4);
	const char *nspname = pq_getmsgstring(msg);
	const char *relname = pq_getmsgstring(msg);
	int			natts;
	bool	   *seen;
	RemoteDecoderTable *t = NULL;

	(void) pq_getmsgbyte(msg);	/* replica identity */
	natts = pq_getmsgint(msg, 2);
	for (int i = 0; i < dec->ntables; i++)
		if (strcmp(nspname, dec->tables[i].nspname) == 0 &&
			strcmp(relname, dec->tables[i].relname) == 0)
			t = &dec->tables[i];
	if (t == NULL)
		return;
	t->relid = relid;
	t->natts = natts;
	t->att_col = palloc(sizeof(int) * Max(natts, 1));
	seen = palloc0(sizeof(bool) * Max(dec->ncols, 1));
	for (int i = 0; i < natts; i++)
	{
		const char *attname;

		(void) pq_getmsgbyte(msg);	/* flags */
		attname = pq_getmsgstring(msg);
		(void) pq_getmsgint(msg, 4);	/* type */
		(void) pq_getmsgint(msg, 4);	/* typmod */
		t->att_col[i] = -1;
		for (int c = 0; c < dec->ncols; c++)
			if (strcmp(attname, dec->col_names[c]) == 0)
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

/* an Insert, Update or Delete of the job's table */
static void
read_row_change(RemoteDecoder *dec, char action, StringInfo msg)
{
	RemoteDecoderTable *t = table_of(dec, pq_getmsgint(msg, 4));
	char		tag;
	char	  **old = NULL;
	char	  **new;
	bool		unchanged;

	if (t == NULL)
		return;					/* another table's */
	tag = pq_getmsgbyte(msg);
	if (action != 'I' && (tag == 'K' || tag == 'O'))
	{
		old = read_tuple(dec, t, msg, &unchanged);
		if (action == 'D')
		{
			add_change(dec, t, REMOTE_DELETE, old);
			return;
		}
		tag = pq_getmsgbyte(msg);
	}
	if (tag != 'N')
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected tag \"%c\" in a change of table \"%s.%s\"",
						tag, t->nspname, t->relname)));
	new = read_tuple(dec, t, msg, &unchanged);
	if (old != NULL && !same_key(dec, old, new))
		add_change(dec, t, REMOTE_DELETE, old);
	add_change(dec, t, unchanged ? REMOTE_REFETCH : REMOTE_UPSERT, new);
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
	char		action;

	msg.data = (char *) data;
	msg.len = len;
	msg.maxlen = len;
	msg.cursor = 0;
	action = pq_getmsgbyte(&msg);
	switch (action)
	{
		case 'B':
			dec->commit_lsn = pq_getmsgint64(&msg);
			(void) pq_getmsgint64(&msg);	/* commit time */
			dec->xid = pq_getmsgint(&msg, 4);
			dec->seq = 0;
			break;
		case 'C':
			(void) pq_getmsgbyte(&msg); /* flags */
			(void) pq_getmsgint64(&msg);	/* commit LSN */
			dec->last_end = pq_getmsgint64(&msg);
			dec->last_commit_time = pq_getmsgint64(&msg);
			break;
		case 'R':
			read_relation(dec, &msg);
			break;
		case 'I':
		case 'U':
		case 'D':
			read_row_change(dec, action, &msg);
			break;
		case 'T':
			{
				int			nrels = pq_getmsgint(&msg, 4);

				(void) pq_getmsgbyte(&msg); /* options */
				for (int i = 0; i < nrels; i++)
				{
					RemoteDecoderTable *t = table_of(dec, pq_getmsgint(&msg, 4));

					if (t != NULL)
						ereport(ERROR,
								(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
								 errmsg("table \"%s.%s\" was truncated on the source",
										t->nspname, t->relname),
								 errdetail("A job whose upstream is on another server does not follow TRUNCATE."),
								 errhint("Drop the job and create it again.")));
				}
				break;
			}
		case 'Y':
		case 'O':
		case 'M':
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("unrecognized pgoutput message type \"%c\"", action)));
	}
}

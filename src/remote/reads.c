/*-------------------------------------------------------------------------
 *
 * reads.c
 *	  Reading rows of a source table into a table here: a chunk of a split
 *	  in one snapshot of the source, and the rows of given keys again.
 *
 * A chunk is read on the source in one REPEATABLE READ READ ONLY
 * transaction (the design is in kinds/remote/kind_remote.c): first its snapshot
 * and pg_current_wal_insert_lsn(), the chunk's offset, then COPY of its
 * rows in key order straight into the downstream (COPY FROM,
 * backfill_remote_copy_into in remote.c), then COMMIT.  The last row that
 * COPY sent ends the chunk; its key is read out of COPY's text format.
 * The conditions on the keys are the caller's, written for the source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/pg_lsn.h"

#include "remote/remote.h"

/*
 * backfill_remote_chunk_start
 *		Begin a chunk's transaction on the source: its snapshot (text of a
 *		pg_snapshot) and offset.
 */
void
backfill_remote_chunk_start(RemoteConn *conn, char **snapshot, XLogRecPtr *lsn)
{
	RemoteRows *rows;
	bool		err = false;

	(void) backfill_remote_query(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL);
	rows = backfill_remote_query(conn, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text, "
								 "pg_catalog.pg_current_snapshot()::text", 0, NULL);
	*lsn = pg_lsn_in_internal(backfill_remote_value(rows, 0, 0), &err);
	*snapshot = backfill_remote_value(rows, 0, 1);
}

/* backfill_remote_chunk_end: commit a chunk's transaction on the source */
void
backfill_remote_chunk_end(RemoteConn *conn)
{
	(void) backfill_remote_query(conn, "COMMIT", 0, NULL);
}

/*
 * backfill_remote_read_range
 *		COPY into rel's attnames the columns columns_sql of the source table
 *		qualified (alias t) that meet cond, in the order order_by, limit of
 *		them at most, or send them to dest if not NULL (as
 *		backfill_remote_copy_into); *last_row: the last row sent, in COPY's
 *		text format.  Returns the rows copied.
 */
uint64
backfill_remote_read_range(RemoteConn *conn, Relation rel, List *attnames,
						   const char *columns_sql, const char *qualified, const char *cond,
						   const char *order_by, int64 limit, DestReceiver *dest,
						   char **last_row)
{
	return backfill_remote_copy_into(conn, psprintf("COPY (SELECT %s FROM %s t WHERE %s ORDER BY %s LIMIT %lld) TO STDOUT",
													columns_sql, qualified, cond,
													order_by, (long long) limit),
									 rel, attnames, dest, last_row);
}

/*
 * backfill_remote_read_keys
 *		COPY into rel's attnames the columns columns_sql of the rows of the
 *		source table qualified (alias t) whose key (key_list, t's columns) is
 *		one of keys ("(v1, v2), (v1, v2)...", written for the source).
 */
uint64
backfill_remote_read_keys(RemoteConn *conn, Relation rel, List *attnames,
						  const char *columns_sql, const char *qualified, const char *key_list,
						  const char *keys)
{
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfo(&sql, "COPY (SELECT %s FROM %s t WHERE (%s) IN (%s)) TO STDOUT",
					 columns_sql, qualified, key_list, keys);
	return backfill_remote_copy_into(conn, sql.data, rel, attnames, NULL, NULL);
}

/*
 * backfill_remote_copy_row_key
 *		The key of a row as COPY's text format sends it: the job's ncols
 *		columns in order, separated by tabs, with backslash escapes (\b, \f,
 *		\n, \r, \t, \v, and a backslash before a backslash); a key column is
 *		never null.  pk_cols: per key column, its index in the columns.
 */
char **
backfill_remote_copy_row_key(const char *line, int ncols, int npk, const int *pk_cols)
{
	char	  **fields = palloc0(sizeof(char *) * ncols);
	char	  **key = palloc(sizeof(char *) * npk);
	const char *p = line;

	for (int c = 0; c < ncols; c++)
	{
		StringInfoData f;

		initStringInfo(&f);
		for (; *p != '\0' && *p != '\t' && *p != '\n'; p++)
		{
			char		ch = *p;

			if (ch == '\\' && p[1] != '\0')
			{
				ch = *++p;
				ch = ch == 'b' ? '\b' : ch == 'f' ? '\f' : ch == 'n' ? '\n' :
					ch == 'r' ? '\r' : ch == 't' ? '\t' : ch == 'v' ? '\v' : ch;
			}
			appendStringInfoChar(&f, ch);
		}
		fields[c] = f.data;
		if (*p == '\t')
			p++;
	}
	for (int k = 0; k < npk; k++)
		key[k] = fields[pk_cols[k]];
	return key;
}

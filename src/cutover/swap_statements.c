/*-------------------------------------------------------------------------
 *
 * swap_statements.c
 *	  What the swap reads of src before the renames, row by row: each
 *	  definition or statement a carry makes again after them.
 *
 * The definitions print src's name, which dst has after the renames, so
 * they are read first, all of a query's rows before the first statement
 * is made, as a query's rows are read under the snapshot it started with.
 * The query runs as the caller in its SPI connection.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "cutover/swap_internal.h"

/*
 * swap_read_statements
 *		The rows of a query of src ($1) and dst ($2), each a statement or a
 *		definition (column 1) with the relation, the name and the state in
 *		columns relcol, namecol and statecol (0: none).  Read whole before
 *		the first is made, as a query's rows are read under the snapshot it
 *		started with.
 */
List *
swap_read_statements(const char *sql, Oid src, Oid dst, int relcol, int namecol, int statecol)
{
	List	   *statements = NIL;

	cutover_query_pair(sql, false, src, dst);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		SwapStatement *stmt = palloc0(sizeof(SwapStatement));
		char	   *state;

		stmt->sql = cutover_value(i, 1);
		if (relcol > 0)
			stmt->rel = cutover_oid(i, relcol);
		if (namecol > 0)
			stmt->name = cutover_value(i, namecol);
		state = statecol > 0 ? cutover_value(i, statecol) : NULL;
		stmt->state = state ? state[0] : '\0';
		statements = lappend(statements, stmt);
	}
	return statements;
}

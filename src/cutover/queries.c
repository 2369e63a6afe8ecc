/*-------------------------------------------------------------------------
 *
 * queries.c
 *	  The SPI steps every part of the cutover takes: a catalog query, a
 *	  statement run as the caller, the values of a query's rows.
 *
 * The cutover's functions were SQL and PL/pgSQL, run by the caller with
 * the caller's rights; in C they run the same catalog queries and the same
 * statements through SPI, still as the caller, under the search_path the
 * function's SET clause pins (pg_catalog, pg_temp), so that a regclass
 * prints as the SQL version printed it.  A STABLE function's query reads
 * with its caller's snapshot (read_only), as a SQL or PL/pgSQL function of
 * that volatility does.  The caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "cutover/queries.h"

/*
 * cutover_statement_begin, cutover_statement_end
 *		Around a check that _cutover_check makes through another: the
 *		snapshot the PL/pgSQL took for each statement of the VOLATILE
 *		function, which the STABLE check it called then read with, after
 *		the same command counter increment as SPI's.
 */
void
cutover_statement_begin(void)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
}

void
cutover_statement_end(void)
{
	PopActiveSnapshot();
}

/*
 * cutover_query
 *		Run a catalog query with $1 to $nargs, each an OID (InvalidOid:
 *		NULL), and return the number of its rows, in SPI_tuptable.
 */
int
cutover_query(const char *sql, bool read_only, int nargs, Oid *types, Datum *values)
{
	char		nulls[FUNC_MAX_ARGS + 1];
	int			rc;

	Assert(nargs <= FUNC_MAX_ARGS);
	for (int i = 0; i < nargs; i++)
		nulls[i] = OidIsValid(DatumGetObjectId(values[i])) ? ' ' : 'n';
	nulls[nargs] = '\0';
	rc = SPI_execute_with_args(sql, nargs, types, values, nulls, read_only, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed (%d): %s", rc, sql);
	return (int) SPI_processed;
}

/* column col (from 1) of row row (from 0) of the last query, as text; NULL for NULL */
char *
cutover_value(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* a boolean column of the last query, NULL as false (as IF takes it) */
bool
cutover_bool(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return !isnull && DatumGetBool(d);
}

/*
 * cutover_query_pair
 *		Run a catalog query whose $1 and $2 are the regclasses src and dst
 *		(InvalidOid for SQL NULL); its rows are in SPI_tuptable.
 */
void
cutover_query_pair(const char *sql, bool read_only, Oid src, Oid dst)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};

	(void) cutover_query(sql, read_only, 2, types, values);
}

/*
 * cutover_query_rel_text
 *		Run a catalog query whose $1 is the regclass rel and $2 a text (a
 *		column's or a constraint's name, a definition); its rows are in
 *		SPI_tuptable.
 */
void
cutover_query_rel_text(const char *sql, Oid rel, const char *text)
{
	Oid			types[2] = {REGCLASSOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(rel), CStringGetTextDatum(text)};
	int			rc = SPI_execute_with_args(sql, 2, types, values, NULL, false, 0);

	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed (%d): %s", rc, sql);
}

/* run one statement of the swap as the caller, as PL/pgSQL's EXECUTE did */
void
cutover_run(const char *sql)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc < 0)
		elog(ERROR, "SPI_execute failed (%d): %s", rc, sql);
}

/* column col of row row of SPI_tuptable, an oid or regclass; InvalidOid for NULL */
Oid
cutover_oid(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

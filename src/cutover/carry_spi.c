/*-------------------------------------------------------------------------
 *
 * carry_spi.c
 *	  The SPI steps the cutover's carry functions share.
 *
 * The carry functions were SQL and PL/pgSQL, run by the caller with the
 * caller's rights; in C they run the same catalog queries and the same
 * statements through SPI, still as the caller, under the search_path the
 * function's SET clause pins (pg_catalog, pg_temp), so that a regclass
 * prints as the SQL version printed it.  A STABLE function's query reads
 * with its caller's snapshot (read_only), as a SQL or PL/pgSQL function of
 * that volatility does.  The caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "cutover/carry_internal.h"

/*
 * cutover_query
 *		Run a catalog query whose $1 and $2 are the regclasses src and dst
 *		(InvalidOid for SQL NULL); its rows are in SPI_tuptable.
 */
void
cutover_query(const char *sql, bool read_only, Oid src, Oid dst)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	char		nulls[2] = {OidIsValid(src) ? ' ' : 'n', OidIsValid(dst) ? ' ' : 'n'};
	int			rc = SPI_execute_with_args(sql, 2, types, values, nulls, read_only, 0);

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

/* a relation's name as regclass prints it, qualified where the path needs */
char *
cutover_regclass(Oid relid)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
}

/* column col (from 1) of row row of SPI_tuptable, as text; NULL for NULL */
char *
cutover_text(int row, int col)
{
	return SPI_getvalue(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col);
}

/* column col of row row of SPI_tuptable, an oid or regclass; InvalidOid for NULL */
Oid
cutover_oid(int row, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, col, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/*-------------------------------------------------------------------------
 *
 * matview_definitions.c
 *	  The materialized views over the old table, each with what makes it
 *	  again, printed before the swap's renames: its query then names the
 *	  old table by the name the new table takes (carry_matviews.c); and the
 *	  array they are printed in read back after the renames.
 *
 * A catalog query run as the caller with the snapshot of the calling
 * statement, as the SQL function it was.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"

#include "cutover/carry_internal.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_matviews);

#define MATVIEWS \
	"SELECT coalesce(jsonb_agg(jsonb_build_object(" \
	"           'mv', m.oid, 'schema', n.nspname, 'name', m.relname, 'owner', m.relowner::regrole::text," \
	"           'populated', m.relispopulated," \
	"           'options', CASE WHEN m.reloptions IS NOT NULL" \
	"                           THEN format(' WITH (%s)', array_to_string(m.reloptions, ', ')) ELSE '' END," \
	"           'tablespace', CASE WHEN m.reltablespace <> 0" \
	"                              THEN format(' TABLESPACE %I', (SELECT spcname FROM pg_tablespace WHERE oid = m.reltablespace))" \
	"                              ELSE '' END," \
	"           'query', rtrim(pg_get_viewdef(m.oid), ';')," \
	"           'comments', (SELECT coalesce(jsonb_agg(jsonb_build_object('column', a.attname, 'text', d.description)" \
	"                                                  ORDER BY a.attnum), '[]')" \
	"                          FROM (SELECT 0::int2 AS attnum, NULL::name AS attname" \
	"                                UNION ALL" \
	"                                SELECT attnum, attname FROM pg_attribute" \
	"                                 WHERE attrelid = m.oid AND attnum > 0 AND NOT attisdropped) a" \
	"                          JOIN pg_description d ON d.classoid = 'pg_class'::regclass AND d.objoid = m.oid" \
	"                                               AND d.objsubid = a.attnum)," \
	"           'indexes', (SELECT coalesce(jsonb_agg(pg_get_indexdef(x.indexrelid) ORDER BY x.indexrelid), '[]')" \
	"                         FROM pg_index x WHERE x.indrelid = m.oid))" \
	"         ORDER BY m.oid), '[]')" \
	"  FROM pg_class m JOIN pg_namespace n ON n.oid = m.relnamespace" \
	" WHERE m.relkind = 'm'" \
	"   AND m.oid IN (SELECT rw.ev_class FROM pg_depend dep JOIN pg_rewrite rw ON rw.oid = dep.objid" \
	"                  WHERE dep.classid = 'pg_rewrite'::regclass AND dep.refclassid = 'pg_class'::regclass" \
	"                    AND dep.refobjid = $1 AND dep.deptype = 'n')"

/*
 * cutover_matviews
 *		The materialized views over src (InvalidOid: none), each with what
 *		makes it again, printed with the names they have now: a jsonb array
 *		in the caller's memory context, or *isnull.
 */
Datum
cutover_matviews(Oid src, bool *isnull)
{
	Datum		result;

	backfill_spi_enter();
	cutover_query_pair(MATVIEWS, true, src, InvalidOid);
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, isnull);
	if (!*isnull)
		result = SPI_datumTransfer(result, false, -1);
	backfill_spi_leave();
	return result;
}

/* backfill._cutover_matviews(src regclass) RETURNS jsonb */
Datum
backfill_cutover_matviews(PG_FUNCTION_ARGS)
{
	bool		isnull;
	Datum		result = cutover_matviews(PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0), &isnull);

	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/* the fields of one element of _cutover_matviews' array, in its order */
#define MATVIEW_FIELDS \
	"SELECT (m->>'mv')::oid::regclass, m->>'schema', m->>'name', m->>'owner'," \
	"       m->>'options', m->>'tablespace', m->>'query', (m->>'populated')::boolean" \
	"  FROM jsonb_array_elements($1) m"

/*
 * cutover_read_matviews
 *		The materialized views of matviews, an array as cutover_matviews
 *		printed it, in its order; *n of them.  The caller is connected to
 *		SPI.
 */
Matview *
cutover_read_matviews(Datum matviews, int *n)
{
	Oid			types[1] = {JSONBOID};
	Matview    *mvs;

	if (SPI_execute_with_args(MATVIEW_FIELDS, 1, types, &matviews, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", MATVIEW_FIELDS);
	*n = (int) SPI_processed;
	mvs = palloc0(sizeof(Matview) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
	{
		mvs[i].old = cutover_oid(i, 1);
		mvs[i].schema = cutover_value(i, 2);
		mvs[i].name = cutover_value(i, 3);
		mvs[i].owner = cutover_value(i, 4);
		mvs[i].options = cutover_value(i, 5);
		mvs[i].tablespace = cutover_value(i, 6);
		mvs[i].query = cutover_value(i, 7);
		mvs[i].populated = cutover_bool(i, 8);
		mvs[i].nth = i;
	}
	return mvs;
}

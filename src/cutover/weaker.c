/*-------------------------------------------------------------------------
 *
 * weaker.c
 *	  What the old table of a cutover enforces that the new one does not,
 *	  and the refusal of a cutover that would lose it unless the caller
 *	  accepts each kind of loss by name.
 *
 * The swap carries src's defaults and identity to columns of dst that have
 * none, the foreign keys of other tables that reference src and src's own
 * to itself; what it does not carry is the table's own: NOT NULL, CHECK,
 * UNIQUE (a unique index or constraint, the primary key too), EXCLUDE, its
 * foreign keys to other tables, generated columns and partitioning.  A
 * default or an identity of dst's own that differs from src's stays dst's,
 * so it is listed too.  Constraints compare by their definitions as
 * PostgreSQL prints them (a NOT VALID one on dst checks new rows as src's
 * does), indexes as the swap pairs them: one catalog query, whose rows
 * each carry the word cutover's "accept" takes for them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "cutover/check.h"

PG_FUNCTION_INFO_V1(backfill_cutover_weaker);
PG_FUNCTION_INFO_V1(backfill_cutover_accepts);

/* the words of "accept", one per kind of loss, in the order of the query */
static const char *const accept_words[] = {
	"not_null", "check", "unique", "exclusion", "foreign_key", "generated",
	"default", "identity", "partitioning"
};

/* what $1 (src) enforces that $2 (dst) does not: (kind, detail) rows */
static const char weaker_sql[] =
	"WITH cols AS (\n"
	"    SELECT sa.attname, sa.attnotnull AS s_notnull, da.attnotnull AS d_notnull,\n"
	"           sa.attidentity AS s_identity, da.attidentity AS d_identity,\n"
	"           sa.attgenerated AS s_generated, da.attgenerated AS d_generated,\n"
	"           pg_get_expr(sd.adbin, sd.adrelid) AS s_expr, pg_get_expr(dd.adbin, dd.adrelid) AS d_expr,\n"
	"           (SELECT relname FROM pg_class WHERE oid = $1) AS tab\n"
	"      FROM pg_attribute sa\n"
	"      JOIN pg_attribute da ON da.attrelid = $2 AND da.attname = sa.attname\n"
	"                          AND da.attnum > 0 AND NOT da.attisdropped\n"
	"      LEFT JOIN pg_attrdef sd ON sd.adrelid = $1 AND sd.adnum = sa.attnum\n"
	"      LEFT JOIN pg_attrdef dd ON dd.adrelid = $2 AND dd.adnum = da.attnum\n"
	"     WHERE sa.attrelid = $1 AND sa.attnum > 0 AND NOT sa.attisdropped\n"
	"), cons AS (\n"
	"    SELECT c.conname, c.contype, c.conrelid, c.conindid, c.confrelid,\n"
	"           regexp_replace(pg_get_constraintdef(c.oid), ' NOT VALID$', '') AS def\n"
	"      FROM pg_constraint c WHERE c.conrelid IN ($1, $2)\n"
	"), idx AS (\n"
	"    SELECT x.indrelid, i.relname, x.indisvalid,\n"
	"           substr(pg_get_indexdef(i.oid), strpos(pg_get_indexdef(i.oid), ' USING ')) AS tail,\n"
	"           (SELECT c.conname FROM pg_constraint c WHERE c.conindid = i.oid AND c.conrelid = x.indrelid\n"
	"                                                   AND c.contype IN ('p', 'u')) AS conname,\n"
	"           (SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conindid = i.oid AND c.conrelid = x.indrelid\n"
	"                                                                  AND c.contype IN ('p', 'u')) AS condef\n"
	"      FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid\n"
	"     WHERE x.indrelid IN ($1, $2) AND x.indisunique\n"
	")\n"
	"SELECT w.kind, w.detail FROM (\n"
	"    -- the swap makes a column it carries an identity to NOT NULL\n"
	"    SELECT 1 AS o, 'not_null' AS kind, format('Column %I.%I is NOT NULL on the old table only.', tab, attname) AS detail, attname::text AS name\n"
	"      FROM cols WHERE s_notnull AND NOT d_notnull AND NOT (s_identity <> '' AND d_identity = '')\n"
	"    UNION ALL\n"
	"    SELECT 2, 'check', format('Constraint %I (%s) is on the old table only.', s.conname, s.def), s.conname\n"
	"      FROM cons s\n"
	"     WHERE s.conrelid = $1 AND s.contype = 'c'\n"
	"       AND NOT EXISTS (SELECT FROM cons d WHERE d.conrelid = $2 AND d.contype = 'c' AND d.def = s.def)\n"
	"    UNION ALL\n"
	"    SELECT 3, 'unique', format('%s %I (%s) is on the old table only.',\n"
	"                               CASE WHEN s.conname IS NULL THEN 'Unique index' ELSE 'Constraint' END,\n"
	"                               coalesce(s.conname, s.relname), coalesce(s.condef, 'UNIQUE' || s.tail)),\n"
	"           coalesce(s.conname, s.relname)\n"
	"      FROM idx s\n"
	"     WHERE s.indrelid = $1 AND s.indisvalid\n"
	"       AND NOT EXISTS (SELECT FROM idx d WHERE d.indrelid = $2 AND d.indisvalid AND d.tail = s.tail)\n"
	"    UNION ALL\n"
	"    SELECT 4, 'exclusion', format('Constraint %I (%s) is on the old table only.', s.conname, s.def), s.conname\n"
	"      FROM cons s\n"
	"     WHERE s.conrelid = $1 AND s.contype = 'x'\n"
	"       AND NOT EXISTS (SELECT FROM cons d WHERE d.conrelid = $2 AND d.contype = 'x' AND d.def = s.def)\n"
	"    UNION ALL\n"
	"    SELECT 5, 'foreign_key', format('Foreign key %I (%s) is on the old table only.', s.conname, s.def), s.conname\n"
	"      FROM cons s\n"
	"     WHERE s.conrelid = $1 AND s.contype = 'f' AND s.confrelid <> $1\n"
	"       AND NOT EXISTS (SELECT FROM cons d WHERE d.conrelid = $2 AND d.contype = 'f' AND d.def = s.def)\n"
	"    UNION ALL\n"
	"    SELECT 6, 'generated',\n"
	"           CASE WHEN d_generated = ''\n"
	"                THEN format('Column %I.%I is generated on the old table only: GENERATED ALWAYS AS (%s) STORED.', tab, attname, s_expr)\n"
	"                ELSE format('Column %I.%I is generated as (%s) on the old table and as (%s) on the new one.', tab, attname, s_expr, d_expr) END,\n"
	"           attname\n"
	"      FROM cols WHERE s_generated <> '' AND (d_generated = '' OR s_expr IS DISTINCT FROM d_expr)\n"
	"    UNION ALL\n"
	"    SELECT 7, 'default', format('The default of column %I.%I is %s on the old table and %s on the new one.', tab, attname, s_expr, d_expr), attname\n"
	"      FROM cols WHERE s_generated = '' AND d_generated = '' AND s_expr IS NOT NULL AND d_expr IS NOT NULL\n"
	"                  AND s_expr <> d_expr\n"
	"    UNION ALL\n"
	"    SELECT 8, 'identity', format('Column %I.%I is GENERATED %s AS IDENTITY on the old table and %s on the new one.', tab, attname,\n"
	"                                 CASE s_identity WHEN 'a' THEN 'ALWAYS' ELSE 'BY DEFAULT' END,\n"
	"                                 CASE d_identity WHEN 'a' THEN 'GENERATED ALWAYS AS IDENTITY'\n"
	"                                                 WHEN 'd' THEN 'GENERATED BY DEFAULT AS IDENTITY'\n"
	"                                                 ELSE 'has a default of its own' END), attname\n"
	"      FROM cols WHERE s_identity <> '' AND (d_identity NOT IN ('', s_identity) OR (d_identity = '' AND d_expr IS NOT NULL))\n"
	"    UNION ALL\n"
	"    SELECT 9, 'partitioning',\n"
	"           CASE WHEN d.relkind = 'p'\n"
	"                THEN format('Table %I is partitioned by %s; the new table by %s.', s.relname, pg_get_partkeydef(s.oid), pg_get_partkeydef(d.oid))\n"
	"                ELSE format('Table %I is partitioned by %s; the new table is not partitioned.', s.relname, pg_get_partkeydef(s.oid)) END,\n"
	"           s.relname\n"
	"      FROM pg_class s, pg_class d\n"
	"     WHERE s.oid = $1 AND d.oid = $2 AND s.relkind = 'p'\n"
	"       AND (d.relkind <> 'p' OR pg_get_partkeydef(s.oid) <> pg_get_partkeydef(d.oid))\n"
	") w\n"
	"ORDER BY w.o, w.name\n";

/*
 * backfill._cutover_weaker(src regclass, dst regclass)
 * RETURNS TABLE (kind text, detail text)
 */
Datum
backfill_cutover_weaker(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {PG_GETARG_DATUM(0), PG_GETARG_DATUM(1)};
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	cutover_spi_begin();
	n = cutover_query(weaker_sql, true, 2, types, values);
	for (int i = 0; i < n; i++)
	{
		Datum		row[2];
		bool		isnull[2];

		row[0] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull[0]);
		row[1] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull[1]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, row, isnull);
	}
	cutover_spi_end();
	return (Datum) 0;
}

/* refuse an "accept" of two dimensions, with a NULL, or with a word not known */
static void
check_accept(ArrayType *accept)
{
	Datum	   *elems;
	int			nelems;

	if (ARR_NDIM(accept) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("argument \"accept\" must be a one-dimensional array")));
	if (array_contains_nulls(accept))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"accept\" must not contain nulls")));
	deconstruct_array(accept, TEXTOID, -1, false, TYPALIGN_INT, &elems, NULL, &nelems);
	for (int i = 0; i < nelems; i++)
	{
		char	   *word = TextDatumGetCString(elems[i]);
		bool		known = false;
		StringInfoData all;

		for (int w = 0; w < lengthof(accept_words); w++)
			known |= strcmp(word, accept_words[w]) == 0;
		if (known)
			continue;
		initStringInfo(&all);
		for (int w = 0; w < lengthof(accept_words); w++)
			appendStringInfo(&all, "%s%s", w > 0 ? ", " : "", accept_words[w]);
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unrecognized value \"%s\" in argument \"accept\"", word),
				 errdetail("The values are %s.", all.data)));
	}
}

/*
 * backfill._cutover_accepts(j backfill.job, accept text[]) RETURNS void
 *		Refuse the cutover of job j when its downstream would enforce less
 *		than its upstream did (backfill._cutover_weaker), unless accept
 *		names each kind of loss.
 */
Datum
backfill_cutover_accepts(PG_FUNCTION_ARGS)
{
	CutoverJob	job;
	Oid			types[3] = {REGCLASSOID, REGCLASSOID, TEXTARRAYOID};
	Datum		values[3];
	char		nulls[3] = {' ', ' ', ' '};
	int			rc;
	char	   *lost;

	cutover_job_arg(fcinfo, 0, &job);
	if (!PG_ARGISNULL(1))
		check_accept(PG_GETARG_ARRAYTYPE_P(1));
	values[0] = ObjectIdGetDatum(job.upstream);
	values[1] = ObjectIdGetDatum(job.downstream);
	values[2] = PG_ARGISNULL(1) ? (Datum) 0 : PG_GETARG_DATUM(1);
	nulls[0] = OidIsValid(job.upstream) ? ' ' : 'n';
	nulls[1] = OidIsValid(job.downstream) ? ' ' : 'n';
	nulls[2] = PG_ARGISNULL(1) ? 'n' : ' ';
	cutover_spi_begin();
	rc = SPI_execute_with_args("SELECT pg_catalog.array_agg(DISTINCT w.kind ORDER BY w.kind)::pg_catalog.text,"
							   "       pg_catalog.string_agg(w.detail, E'\\n')"
							   "  FROM backfill._cutover_weaker($1, $2) w"
							   " WHERE w.kind <> ALL (coalesce($3, '{}'))",
							   3, types, values, nulls, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed (%d)", rc);
	lost = cutover_value(0, 1);
	if (lost != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cut over backfill job %s because table %s does not enforce all that table %s does",
						job.id_raise, cutover_rel_raise(job.downstream),
						cutover_rel_raise(job.upstream)),
				 errdetail("%s", cutover_value(0, 2)),
				 errhint("Give table %s what it lacks before the cutover, or accept the loss: backfill.cutover(%s, accept => %s).",
						 cutover_rel_format(job.downstream), job.id_format,
						 quote_literal_cstr(lost))));
	cutover_spi_end();
	PG_RETURN_VOID();
}

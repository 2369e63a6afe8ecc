/*-------------------------------------------------------------------------
 *
 * accepts.c
 *	  The refusal of a cutover whose new table would enforce less than the
 *	  old one did (weaker.c), unless the caller accepts each kind of loss by
 *	  name in cutover's "accept".
 *
 * "accept" is checked before anything is read: one dimension, no NULL,
 * only the words of weaker.c's rows.  The refusal lists every loss not
 * accepted, one line each, and its HINT the call that would accept them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "cutover/check.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_accepts);

/* the words of "accept", one per kind of loss, in the order of weaker.c's rows */
static const char *const accept_words[] = {
	"not_null", "check", "unique", "exclusion", "foreign_key", "generated",
	"default", "identity", "partitioning"
};

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
 * cutover_accepts
 *		Refuse the cutover of job when its downstream would enforce less
 *		than its upstream did (weaker.c), unless accept (NULL: none) names
 *		each kind of loss.  The caller is connected to SPI.
 */
void
cutover_accepts(CutoverJob *job, ArrayType *accept)
{
	Oid			types[3] = {REGCLASSOID, REGCLASSOID, TEXTARRAYOID};
	Datum		values[3];
	char		nulls[3];
	int			rc;
	char	   *lost;

	if (accept != NULL)
		check_accept(accept);
	values[0] = ObjectIdGetDatum(job->upstream);
	values[1] = ObjectIdGetDatum(job->downstream);
	values[2] = PointerGetDatum(accept);
	nulls[0] = OidIsValid(job->upstream) ? ' ' : 'n';
	nulls[1] = OidIsValid(job->downstream) ? ' ' : 'n';
	nulls[2] = accept == NULL ? 'n' : ' ';
	rc = SPI_execute_with_args(psprintf("SELECT pg_catalog.array_agg(DISTINCT w.kind ORDER BY w.kind)::pg_catalog.text,"
										"       pg_catalog.string_agg(w.detail, E'\\n')"
										"  FROM (%s) w"
										" WHERE w.kind <> ALL (coalesce($3, '{}'))",
										cutover_weaker_sql),
							   3, types, values, nulls, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed (%d)", rc);
	lost = cutover_value(0, 1);
	if (lost != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cut over backfill job %s because table %s does not enforce all that table %s does",
						job->id_raise, cutover_rel_raise(job->downstream),
						cutover_rel_raise(job->upstream)),
				 errdetail("%s", cutover_value(0, 2)),
				 errhint("Give table %s what it lacks before the cutover, or accept the loss: backfill.cutover(%s, accept => %s).",
						 cutover_rel_format(job->downstream), job->id_format,
						 quote_literal_cstr(lost))));
}

/*
 * backfill._cutover_accepts(j backfill.job, accept text[]) RETURNS void
 *		cutover_accepts, for a caller of SQL.
 */
Datum
backfill_cutover_accepts(PG_FUNCTION_ARGS)
{
	CutoverJob	job;

	cutover_job_arg(fcinfo, 0, &job);
	backfill_spi_enter();
	cutover_accepts(&job, PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1));
	backfill_spi_leave();
	PG_RETURN_VOID();
}

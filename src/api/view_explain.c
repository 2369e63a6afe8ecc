/*-------------------------------------------------------------------------
 *
 * view_explain.c
 *	  backfill.explain_view_job(): what a view job over a query would be,
 *	  before it is made: the shape of the query, its tables in the order
 *	  they would be scanned with their keys, and the downstream's key.
 *
 * As RisingWave's EXPLAIN CREATE MATERIALIZED VIEW shows the plan of a
 * view before it is built, this shows what a view job's refusals, key and
 * backfill order would be, without making anything: the query is analyzed
 * as the caller (views/query_shape.c), who would own the job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/tuplestore.h"

#include "lib/lib.h"
#include "views/views.h"

PG_FUNCTION_INFO_V1(backfill_explain_view_job);

/* one line of the result */
static void
put_line(ReturnSetInfo *rsinfo, char *line)
{
	Datum		value = CStringGetTextDatum(line);
	bool		isnull = false;

	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &value, &isnull);
}

/* "name (expression, hidden, nullable)" for each key column, what applies */
static char *
key_line(const ViewShape *shape)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfoString(&buf, "downstream key:");
	if (shape->key == NIL)
		appendStringInfoString(&buf, " none (one row)");
	foreach(lc, shape->key)
	{
		ViewKeyColumn *col = lfirst(lc);
		List	   *notes = NIL;

		if (strcmp(col->expression, col->name) != 0)
			notes = lappend(notes, col->expression);
		if (col->hidden)
			notes = lappend(notes, "hidden");
		if (col->nullable)
			notes = lappend(notes, "nullable");
		appendStringInfo(&buf, "%s %s", foreach_current_index(lc) ? "," : "",
						 quote_identifier(col->name));
		if (notes != NIL)
		{
			ListCell   *lc2;

			appendStringInfoString(&buf, " (");
			foreach(lc2, notes)
				appendStringInfo(&buf, "%s%s", foreach_current_index(lc2) ? ", " : "",
								 (char *) lfirst(lc2));
			appendStringInfoChar(&buf, ')');
		}
	}
	return buf.data;
}

/* "scan n: table AS alias, key (a, b)[, joined on its key][, nullable side]" */
static char *
scan_line(const ViewUpstream *up)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "scan %d: %s", up->scan_order, backfill_regclass_text(up->relid));
	if (strcmp(up->alias, get_rel_name(up->relid)) != 0)
		appendStringInfo(&buf, " AS %s", quote_identifier(up->alias));
	appendStringInfoString(&buf, ", key (");
	foreach(lc, up->key_columns)
		appendStringInfo(&buf, "%s%s", foreach_current_index(lc) ? ", " : "",
						 quote_identifier(lfirst(lc)));
	appendStringInfoChar(&buf, ')');
	if (up->joined_on_key)
		appendStringInfoString(&buf, ", joined on its key");
	if (up->nullable)
		appendStringInfoString(&buf, ", on the nullable side of a left join");
	return buf.data;
}

/*
 * backfill.explain_view_job(query text, backfill_order text DEFAULT 'auto')
 *		RETURNS SETOF text
 */
Datum
backfill_explain_view_job(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	ViewShape  *shape;
	ListCell   *lc;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "query")));
	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	shape = backfill_view_shape(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	backfill_view_scan_order(shape, PG_ARGISNULL(1) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(1)));
	put_line(rsinfo, psprintf("view job: %s over %d table%s%s", backfill_view_shape_name(shape),
							  list_length(shape->upstreams),
							  list_length(shape->upstreams) == 1 ? "" : "s",
							  shape->has_outer_join ? ", with a left join" : ""));
	foreach(lc, shape->upstreams)
		put_line(rsinfo, scan_line(lfirst(lc)));
	put_line(rsinfo, key_line(shape));
	return (Datum) 0;
}

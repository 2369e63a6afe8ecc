/*-------------------------------------------------------------------------
 *
 * old_name.c
 *	  The name the old table gets at the cutover, checked before anything
 *	  is locked: the name given, or one made of its own and the job's id.
 *
 * The query runs as the caller through SPI, as steps.c's do; the caller is
 * connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "cutover/steps.h"
#include "lib/lib.h"

/*
 * cutover_old_name
 *		The name the old table gets: old_name, or <name>_before_cutover_<job
 *		id> when it is NULL; a valid table name not taken in its schema.
 */
char *
cutover_old_name(CutoverJobRow *job, text *given)
{
	char	   *src_name = cutover_rel_name(job->upstream);
	char	   *old_name;
	bool		isnull;

	if (given != NULL)
		old_name = text_to_cstring(given);
	else
		old_name = psprintf("%s_before_cutover_" INT64_FORMAT, src_name ? src_name : "",
							job->job_id);
	if (old_name[0] == '\0' || strlen(old_name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_NAME),
				 errmsg("old name \"%s\" is not a valid table name", old_name),
				 errdetail("A table name is 1 to 63 bytes long."),
				 errhint("Give a shorter name as old_name.")));
	cutover_job_query("SELECT EXISTS (SELECT FROM pg_class WHERE relname = $5"
					  "   AND relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $3))",
					  job, TEXTOID, CStringGetTextDatum(old_name), false);
	if (DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists in the schema of table %s", old_name,
						backfill_regclass_text(job->upstream)),
				 errhint("Give another name as old_name.")));
	return old_name;
}

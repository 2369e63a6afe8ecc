/*-------------------------------------------------------------------------
 *
 * job_names.c
 *	  A job's id from its name, as the caller sees the jobs: what the
 *	  overloads of the API that take a job_name text resolve it with.
 *
 * A job's name (backfill.job.job_name, the name create_job was given) is
 * not unique: two roles may each have an "orders_mv", and one role may
 * create a job again under the name of a cancelled one.  The name is
 * looked up in backfill.job as the caller, so row-level security shows it
 * only the jobs of the roles whose privileges it has (a superuser, every
 * job), as a regclass input finds only what the search_path shows: a name
 * that is another role's job is as unknown as one that is no job at all.
 * Two visible jobs of one name are an error, not a guess; the caller names
 * the job by its id then.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "backfill.h"
#include "catalog/catalog_access.h"
#include "lib/lib.h"

/* the ids listed in the DETAIL of an ambiguous name, at most */
#define BACKFILL_AMBIGUOUS_IDS 10

/*
 * backfill_job_id_by_name
 *		The id of the one job named "name" that the caller sees.  Errors
 *		(undefined_object) when it sees none, (ambiguous_parameter) when it
 *		sees several.  Connects to SPI itself.
 */
int64
backfill_job_id_by_name(const char *name)
{
	Oid			types[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(name)};
	uint64		found;
	int64		job_id = 0;

	backfill_spi_enter();
	/* one more than is listed: enough to tell that there are more */
	if (SPI_execute_with_args("SELECT job_id FROM backfill.job "
							  " WHERE job_name OPERATOR(pg_catalog.=) $1 ORDER BY job_id",
							  1, types, values, NULL, true,
							  BACKFILL_AMBIGUOUS_IDS + 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read backfill.job");
	found = SPI_processed;
	if (found == 1)
	{
		bool		isnull;

		job_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
											 SPI_tuptable->tupdesc, 1, &isnull));
	}
	else if (found > 1)
	{
		StringInfoData ids;

		initStringInfo(&ids);
		for (uint64 i = 0; i < Min(found, BACKFILL_AMBIGUOUS_IDS); i++)
		{
			bool		isnull;

			appendStringInfo(&ids, "%s%lld", i > 0 ? ", " : "",
							 (long long) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
																	 SPI_tuptable->tupdesc,
																	 1, &isnull)));
		}
		if (found > BACKFILL_AMBIGUOUS_IDS)
			appendStringInfoString(&ids, ", ...");
		ereport(ERROR,
				(errcode(ERRCODE_AMBIGUOUS_FUNCTION),
				 errmsg("backfill job name \"%s\" is ambiguous", name),
				 errdetail("Jobs %s are named \"%s\".", ids.data, name),
				 errhint("Name the job by its id.")));
	}
	backfill_spi_leave();
	if (found == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("backfill job \"%s\" does not exist", name),
				 errhint("backfill.jobs lists the jobs you can see, by job_name.")));
	return job_id;
}

/*
 * backfill_job_name_arg
 *		The id of the job that argument argno of a job_name overload names:
 *		NULL is refused (null_value_not_allowed), as a NULL job_id is.
 */
int64
backfill_job_name_arg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"job_name\" must not be null")));
	return backfill_job_id_by_name(text_to_cstring(PG_GETARG_TEXT_PP(argno)));
}

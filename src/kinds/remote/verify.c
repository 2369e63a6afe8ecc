/*-------------------------------------------------------------------------
 *
 * verify.c
 *	  The remote cdc kind's part of verify_job: which keys are compared, and
 *	  which are pending in the change table or in the source's slot.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "kinds/kind.h"
#include "kinds/remote/job.h"
#include "lib/lib.h"

/*
 * kind.h: verify_source, and what it reads.  The keys of splits not
 * finished yet are not compared, on either side (a split's position lives
 * in its actor's memory); the keys of changes the job fetched and has not
 * applied (its change table) and of those the source committed that it has
 * not fetched (its slot, read after the source's snapshot was taken) are
 * pending, also after the finish, since the job follows its source
 * asynchronously.
 */

/*
 * The keys of the finished splits: [bound split_id - 1, bound split_id),
 * compared through the key type's btree operators, as the splits were cut
 * (an hstore key has no >= of that name), and, over several servers, in
 * the split's partition: its partition constraint, on the key's columns,
 * which hold the partition keys (a NULL bound is the partition's start or
 * end).  The splits of the partitions are read as the caller sees them.
 */
static char *
remote_verify_covered(const VerifyJob *job)
{
	char	   *first = (char *) quote_identifier(job->pk_names[0]);
	char	   *bounds = quote_literal_cstr(job->splits ? job->splits : "{}");
	char	   *part_cases = "";

	if (job->partitions != NIL)
	{
		Oid			types[1] = {INT8OID};
		Datum		values[1] = {Int64GetDatum(job->job_id)};
		bool		isnull;
		Datum		d;

		backfill_spi_exec_args("SELECT pg_catalog.format(' AND CASE s.split_id %s END', "
							   "  pg_catalog.string_agg(pg_catalog.format('WHEN %s THEN (%s)', p.split_id, "
							   "    pg_catalog.pg_get_partition_constraintdef(p.partition)), "
							   "    ' ' ORDER BY p.split_id)) "
							   "  FROM backfill.job_splits($1) p",
							   1, types, values, NULL, SPI_OK_SELECT);
		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		part_cases = isnull ? "" : TextDatumGetCString(d);
	}
	return psprintf("EXISTS (SELECT FROM %1$s s WHERE s.backfill_finished "
					"AND ((%2$s::text[])[s.split_id] IS NULL OR EXISTS (SELECT FROM "
					"(SELECT ((%2$s::text[])[s.split_id])::%4$s AS %3$s) b WHERE %5$s)) "
					"AND ((%2$s::text[])[s.split_id + 1] IS NULL OR EXISTS (SELECT FROM "
					"(SELECT ((%2$s::text[])[s.split_id + 1])::%4$s AS %3$s) b WHERE %6$s))%7$s)",
					job->state_sql, bounds, first, job->pk_types_sql[0],
					backfill_key_compare_columns(job->upstream, 1, job->pk_names, "u",
												 BTGreaterEqualStrategyNumber, "b"),
					backfill_key_compare_columns(job->upstream, 1, job->pk_names, "u",
												 BTLessStrategyNumber, "b"),
					part_cases);
}

/*
 * The source's snapshot, before the comparison reads the slot: postgres_fdw
 * takes it per server at a first read of each foreign table as the job's
 * owner, whose user mappings the comparison uses (a LIMIT over the
 * partitioned table would read its first partition only).
 */
static void
remote_verify_first_reads(const VerifyJob *job)
{
	List	   *tables = job->partitions != NIL ? job->partitions :
		list_make1_oid(job->upstream);
	StringInfoData sql;
	ListCell   *lc;
	RoleContext oc;

	initStringInfo(&sql);
	foreach(lc, tables)
		appendStringInfo(&sql, "%s(SELECT NULL::text, NULL::text FROM %s LIMIT 1)",
						 foreach_current_index(lc) > 0 ? " UNION ALL " : "",
						 backfill_regclass_text(lfirst_oid(lc)));
	backfill_owner_enter(job->owner, true, &oc);
	backfill_spi_exec(sql.data, SPI_OK_SELECT);
	backfill_role_leave(&oc);
}

void
remote_verify_source(const VerifyJob *job, VerifySource *source)
{
	StringInfoData key_types;

	initStringInfo(&key_types);
	for (int k = 0; k < job->npk; k++)
		appendStringInfo(&key_types, "%s$1[p.i][%d]::%s", k > 0 ? ", " : "", k + 1,
						 job->pk_types_sql[k]);
	if (!job->finished)
	{
		source->covered = remote_verify_covered(job);
		source->scan_d = psprintf("(SELECT u.* FROM %s u WHERE %s)",
								  job->downstream_sql, source->covered);
	}
	/* no fetch from here on: the source's snapshot, then what its slot holds */
	backfill_lock_slot_of(job->job_id);
	remote_verify_first_reads(job);
	/* from the offset the comparison sees; over several servers each reads its own */
	source->decoded = psprintf("SELECT ROW(%s) AS k FROM pg_catalog.generate_subscripts($1, 1) p(i)",
							   key_types.data);
	source->decoded_param = remote_verify_unfetched;
	source->decoded_type = TEXTARRAYOID;
	source->settled = backfill_verify_settled_sql(job);
}

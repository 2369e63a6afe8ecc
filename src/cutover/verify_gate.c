/*-------------------------------------------------------------------------
 *
 * verify_gate.c
 *	  The gate of backfill.cutover(verify => true): verify_job of the job
 *	  (method auto: by checksums, where they are computed where the rows
 *	  are), run as the caller just before the lock is taken (the
 *	  switchover, for a remote job); a difference refuses the cutover, its
 *	  first ten named in the error's DETAIL.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "cutover/steps.h"
#include "lib/lib.h"

/* how many differences verify_job found, and the first ten of them */
#define DIFFERENCES \
	"SELECT count(*), string_agg(v.pk || ' ' || v.problem, ', ' ORDER BY v.n) FILTER (WHERE v.n <= 10)" \
	"  FROM (SELECT f.pk, f.problem, row_number() OVER () AS n" \
	"          FROM backfill.verify_job($1) f) v"

/*
 * cutover_verify_gate
 *		Refuse the cutover of a job whose downstream verify_job finds
 *		different from its upstream.  The caller is connected to SPI.
 */
void
cutover_verify_gate(int64 job_id)
{
	bool		isnull;
	int64		found;
	char	   *shown;

	cutover_job_id_query(DIFFERENCES, job_id);
	found = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (found <= 0)
		return;
	shown = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot cut over backfill job " INT64_FORMAT " because its downstream differs from its upstream",
					job_id),
			 errdetail("backfill.verify_job(" INT64_FORMAT ") found " INT64_FORMAT " difference%s: %s%s.",
					   job_id, found, found == 1 ? "" : "s", shown ? shown : "",
					   found > 10 ? ", ..." : ""),
			 errhint("Compare them with backfill.verify_job(" INT64_FORMAT "), mend the downstream or copy the table again with backfill.recreate_job(" INT64_FORMAT "), then cut over again.",
					 job_id, job_id)));
}

/*-------------------------------------------------------------------------
 *
 * finish_lock.c
 *	  The lock under which backfill.finish_cutover() lets the job go of the
 *	  old table: the job is then cancelled and its triggers dropped
 *	  (api/job_drop.c).
 *
 * The old table's triggers go under ACCESS EXCLUSIVE on both tables, taken
 * as the cutover takes it: each attempt waits at most a second (the
 * cutover's default lock_timeout), 20 attempts, so that writers queued
 * behind an attempt wait no longer than that, rather than for the longest
 * transaction on the table.  Dropping the old table drops its foreign
 * keys' triggers on the tables they reference, under ACCESS EXCLUSIVE:
 * those tables are locked in the same attempts, first, as an application
 * that writes a parent row and then a child locks them, so that the DROP
 * never waits behind a writer that waits for the finish.  Each attempt
 * looks for a deadlock after half its lock_timeout, as the cutover's lock
 * step does (lock.c): in a deadlock with an application, the attempt that
 * gives way is the finish's.  The caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "cutover/finish.h"
#include "cutover/lock_step.h"
#include "lib/lib.h"

/* each attempt's lock_timeout, and the attempts */
#define FINISH_LOCK_MS 1000
#define FINISH_ATTEMPTS 20

/*
 * the tables the old table's foreign keys reference, outside the table and
 * its partitions (pg_partition_tree has no row for a table that is not
 * partitioned)
 */
#define REFERENCED \
	"WITH tree AS (SELECT $1::oid AS relid UNION SELECT relid FROM pg_partition_tree($1))" \
	"SELECT string_agg(k.confrelid::regclass::text, ', ' ORDER BY k.confrelid)" \
	"  FROM (SELECT DISTINCT confrelid FROM pg_constraint" \
	"         WHERE contype = 'f'" \
	"           AND conrelid IN (SELECT relid FROM tree)" \
	"           AND confrelid NOT IN (SELECT relid FROM tree)) k"

/* one attempt's statement: the referenced tables, then the upstream and the downstream */
#define LOCK_STATEMENT \
	"SELECT format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE'," \
	"              concat_ws(', ', $1," \
	"                        (SELECT c2.oid::regclass::text FROM pg_class c2 WHERE c2.oid = $2)," \
	"                        (SELECT c2.oid::regclass::text FROM pg_class c2 WHERE c2.oid = $3)))"

/* the tables the old table's foreign keys reference, to lock first */
static void
read_referenced(CutoverFinish *f)
{
	Oid			types[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(cutover_finish_old_table(f))};

	f->referenced = NULL;
	if (f->keep || !cutover_finish_old_table_exists(f))
		return;
	backfill_spi_exec_args(REFERENCED, 1, types, values, NULL, SPI_OK_SELECT);
	f->referenced = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* one attempt's LOCK TABLE, for backfill_subxact_call */
static void
lock_once(void *arg)
{
	CutoverFinish *f = (CutoverFinish *) arg;
	Oid			types[3] = {TEXTOID, OIDOID, OIDOID};
	Datum		values[3] = {f->referenced ? CStringGetTextDatum(f->referenced) : (Datum) 0,
		ObjectIdGetDatum(f->job.upstream), ObjectIdGetDatum(f->job.downstream)};
	char		nulls[3] = {f->referenced ? ' ' : 'n', OidIsValid(f->job.upstream) ? ' ' : 'n',
	OidIsValid(f->job.downstream) ? ' ' : 'n'};
	int			timeout_level = NewGUCNestLevel();
	int			deadlock_level;
	char	   *lock;

	(void) set_config_option("lock_timeout", psprintf("%dms", FINISH_LOCK_MS),
							 superuser() ? PGC_SUSET : PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	backfill_spi_exec_args(LOCK_STATEMENT, 3, types, values, nulls, SPI_OK_SELECT);
	lock = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	deadlock_level = backfill_cutover_deadlock_begin();
	backfill_spi_exec(lock, SPI_OK_UTILITY);
	backfill_cutover_deadlock_end(deadlock_level);
	AtEOXact_GUC(true, timeout_level);
}

/*
 * The old table and the new one, and the tables the old one references,
 * locked ACCESS EXCLUSIVE in attempts of a second (see the file header)
 */
static void
lock_tables(CutoverFinish *f)
{
	for (int tries = 1;; tries++)
	{
		ErrorData  *edata = backfill_subxact_call(lock_once, f);

		if (edata == NULL)
			return;
		if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE &&
			edata->sqlerrcode != ERRCODE_T_R_DEADLOCK_DETECTED)
			ReThrowError(edata);
		FreeErrorData(edata);
		ereport(NOTICE,
				(errmsg("finish of the cutover of backfill job " INT64_FORMAT ": attempt %d of %d could not lock table %s within %d ms",
						f->job.job_id, tries, FINISH_ATTEMPTS,
						backfill_regclass_text(f->job.upstream), FINISH_LOCK_MS)));
		if (tries >= FINISH_ATTEMPTS)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock table %s to finish the cutover of backfill job " INT64_FORMAT " in %d attempts",
							backfill_regclass_text(f->job.upstream), f->job.job_id, FINISH_ATTEMPTS),
					 errdetail("Each attempt waited at most %d ms for the lock; another transaction held it or was ahead in the queue each time. Nothing was changed.",
							   FINISH_LOCK_MS),
					 errhint("Find the long transaction on the table in pg_locks and pg_stat_activity, then try again.")));
		backfill_cutover_pause(tries);
	}
}

/*
 * cutover_finish_lock_tables
 *		The lock of both tables, under which the old table stops following
 *		the new one: the caller (api/cutover_finish.c) then cancels the job
 *		and drops its triggers.
 */
void
cutover_finish_lock_tables(CutoverFinish *f)
{
	read_referenced(f);
	lock_tables(f);
}

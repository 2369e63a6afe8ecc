/*-------------------------------------------------------------------------
 *
 * cutover_finish.c
 *	  backfill.finish_cutover(): the end of a cutover.  The foreign keys it
 *	  carried are validated, the old table stops following the new one
 *	  (the job is cancelled) and is dropped, unless keep.
 *
 * Only the job's own old table is dropped (its downstream since the swap,
 * or its upstream still when the cutover could not be rolled back and let
 * the job go), owned by the owner of the new one, whatever the cutover row
 * says.
 *
 * The locks.  The old table's triggers go under ACCESS EXCLUSIVE on both
 * tables, taken as the cutover takes it: each attempt waits at most a
 * second (the cutover's default lock_timeout), 20 attempts, so that
 * writers queued behind an attempt wait no longer than that, rather than
 * for the longest transaction on the table.  Dropping the old table drops
 * its foreign keys' triggers on the tables they reference, under ACCESS
 * EXCLUSIVE: those tables are locked in the same attempts, first, as an
 * application that writes a parent row and then a child locks them, so
 * that the DROP never waits behind a writer that waits for the finish.
 * Each attempt looks for a deadlock after half its lock_timeout, as the
 * cutover's lock step does (src/cutover/lock.c): in a deadlock with an
 * application, the attempt that gives way is the finish's.
 *
 * Everything runs as the caller, through SPI, with the extension's SQL
 * functions for the job's row, its cancellation, the drop of its objects,
 * the cutover row and the line in pg_stat_activity: the caller needs the
 * privileges each statement needs typed by hand.  The job is read again
 * once the cutover's advisory lock on it is held: a rollback or cutover
 * that held it meanwhile has turned the job around.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"

#include "cutover/lock_step.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_finish_cutover);

/* each attempt's lock_timeout, and the attempts */
#define FINISH_LOCK_MS 1000
#define FINISH_ATTEMPTS 20

/* the cutover row, the fields _cutover_record is given again, in its order */
#define CUTOVER_ROW \
	"SELECT c.attempts, c.old_table, c.new_table, c.old_name, c.new_schema, c.new_name," \
	"       c.into_existing, c.lock_held_ms, c.state, c.to_validate" \
	"  FROM backfill.job_cutover c WHERE c.job_id = $1"

enum
{
	ROW_ATTEMPTS = 1, ROW_OLD_TABLE, ROW_NEW_TABLE, ROW_OLD_NAME, ROW_NEW_SCHEMA,
	ROW_NEW_NAME, ROW_INTO_EXISTING, ROW_LOCK_HELD_MS, ROW_STATE, ROW_TO_VALIDATE
};

/* whether the old table is one finish_cutover must not drop */
#define NOT_OURS \
	"SELECT EXISTS (SELECT FROM pg_class WHERE oid = $1)" \
	"   AND ($1 IS DISTINCT FROM $2 AND $1 IS DISTINCT FROM $3" \
	"        OR (SELECT o.relowner FROM pg_class o WHERE o.oid = $1)" \
	"           IS DISTINCT FROM (SELECT n.relowner FROM pg_class n WHERE n.oid = $4))"

/* the foreign keys the swap added NOT VALID, not valid yet */
#define TO_VALIDATE \
	"SELECT k.conrelid::regclass, k.conname FROM pg_constraint k" \
	" WHERE k.oid = ANY ($1) AND NOT k.convalidated"

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

/* one finish: the job's row as read under the advisory lock, and its cutover row */
typedef struct Finish
{
	int64		job_id;
	bool		keep;
	Datum		job;			/* backfill.job */
	Oid			job_type;
	Oid			upstream;
	Oid			downstream;
	char	   *status;
	HeapTuple	row;			/* CUTOVER_ROW's, or NULL */
	TupleDesc	row_desc;
	char	   *referenced;		/* NULL: none */
} Finish;

/* a query with $1.. of the given types, its rows in SPI_tuptable */
static void
query(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls)
{
	backfill_spi_exec_args(sql, nargs, types, values, nulls, SPI_OK_SELECT);
}

/* a field of the cutover row; isnull set */
static Datum
row_field(Finish *f, int field, bool *isnull)
{
	return heap_getattr(f->row, field, f->row_desc, isnull);
}

static Oid
row_oid(Finish *f, int field)
{
	bool		isnull;
	Datum		d = row_field(f, field, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/* a field of the job's row, NULL as InvalidOid */
static Oid
job_oid(Finish *f, const char *field)
{
	bool		isnull;
	Datum		d = GetAttributeByName(DatumGetHeapTupleHeader(f->job), field, &isnull);

	return isnull ? InvalidOid : DatumGetObjectId(d);
}

/* the job's row, backfill._get_job's, as the caller */
static void
read_job(Finish *f)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(f->job_id)};
	bool		isnull;
	Datum		d;
	Datum		status;

	query("SELECT backfill._get_job($1)", 1, types, values, NULL);
	d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	f->job_type = SPI_gettypeid(SPI_tuptable->tupdesc, 1);
	f->job = datumCopy(d, false, -1);
	f->upstream = job_oid(f, "upstream");
	f->downstream = job_oid(f, "downstream");
	status = GetAttributeByName(DatumGetHeapTupleHeader(f->job), "status", &isnull);
	/* NOT NULL in the catalog; a NULL would compare as neither */
	f->status = isnull ? "cancelled" : TextDatumGetCString(status);
}

/* the cutover row, or NULL */
static void
read_cutover_row(Finish *f)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(f->job_id)};

	query(CUTOVER_ROW, 1, types, values, NULL);
	f->row_desc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
	f->row = SPI_processed > 0 ? SPI_copytuple(SPI_tuptable->vals[0]) : NULL;
}

/* a cutover's state in words: rolled_back is "rolled back" */
static char *
state_words(const char *state)
{
	char	   *words = pstrdup(state);

	for (char *c = words; *c; c++)
		if (*c == '_')
			*c = ' ';
	return words;
}

/* a cutover to finish: the job has been cut over, and not rolled back or finished */
static void
check_cut_over(Finish *f)
{
	char	   *state = f->row ? SPI_getvalue(f->row, f->row_desc, ROW_STATE) : NULL;

	if (state == NULL || strcmp(state, "cut_over") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job " INT64_FORMAT " has not been cut over", f->job_id),
				 state == NULL ? errdetail("It has no cutover to finish.") :
				 errdetail("Its cutover is %s.", state_words(state))));
}

/* the old table, if it exists, is the job's own and its owner the new one's */
static void
check_old_table(Finish *f)
{
	Oid			types[4] = {OIDOID, OIDOID, OIDOID, OIDOID};
	Datum		values[4] = {ObjectIdGetDatum(row_oid(f, ROW_OLD_TABLE)),
		ObjectIdGetDatum(f->upstream), ObjectIdGetDatum(f->downstream),
	ObjectIdGetDatum(row_oid(f, ROW_NEW_TABLE))};
	char		nulls[4];
	bool		isnull;
	Datum		refuse;

	for (int i = 0; i < 4; i++)
		nulls[i] = OidIsValid(DatumGetObjectId(values[i])) ? ' ' : 'n';
	query(NOT_OURS, 4, types, values, nulls);
	refuse = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull && DatumGetBool(refuse))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot drop table %s at the end of the cutover of backfill job " INT64_FORMAT,
						backfill_regclass_text(row_oid(f, ROW_OLD_TABLE)), f->job_id),
				 errdetail("The old table of a cutover must be a table of the job, owned by the owner of the new table."),
				 errhint("Drop the table yourself if it is the one to drop, then use backfill.finish_cutover(" INT64_FORMAT ", keep => true).",
						 f->job_id)));
}

/* whether the old table exists */
static bool
old_table_exists(Finish *f)
{
	Oid			types[1] = {OIDOID};
	Datum		values[1] = {ObjectIdGetDatum(row_oid(f, ROW_OLD_TABLE))};

	bool		isnull;

	query("SELECT EXISTS (SELECT FROM pg_class WHERE oid = $1)", 1, types, values, NULL);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/* the foreign keys the swap added NOT VALID are validated, as the caller */
static void
validate_keys(Finish *f)
{
	Oid			types[1] = {OIDARRAYOID};
	bool		isnull;
	Datum		values[1] = {row_field(f, ROW_TO_VALIDATE, &isnull)};
	char		nulls[1] = {isnull ? 'n' : ' '};
	int			n;
	Oid		   *children;
	char	  **names;

	query(TO_VALIDATE, 1, types, values, nulls);
	n = (int) SPI_processed;
	children = palloc(sizeof(Oid) * Max(n, 1));
	names = palloc(sizeof(char *) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		children[i] = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
													 1, &isnull));
		names[i] = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
	}
	for (int i = 0; i < n; i++)
		backfill_spi_exec(psprintf("ALTER TABLE %s VALIDATE CONSTRAINT %s",
								   backfill_regclass_text(children[i]), quote_identifier(names[i])),
						  SPI_OK_UTILITY);
}

/* the tables the old table's foreign keys reference, to lock first */
static void
read_referenced(Finish *f)
{
	Oid			types[1] = {REGCLASSOID};
	Datum		values[1] = {ObjectIdGetDatum(row_oid(f, ROW_OLD_TABLE))};

	f->referenced = NULL;
	if (f->keep || !old_table_exists(f))
		return;
	query(REFERENCED, 1, types, values, NULL);
	f->referenced = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/* one attempt's LOCK TABLE, for backfill_subxact_call */
static void
lock_once(void *arg)
{
	Finish	   *f = (Finish *) arg;
	Oid			types[3] = {TEXTOID, OIDOID, OIDOID};
	Datum		values[3] = {f->referenced ? CStringGetTextDatum(f->referenced) : (Datum) 0,
		ObjectIdGetDatum(f->upstream), ObjectIdGetDatum(f->downstream)};
	char		nulls[3] = {f->referenced ? ' ' : 'n', OidIsValid(f->upstream) ? ' ' : 'n',
	OidIsValid(f->downstream) ? ' ' : 'n'};
	int			timeout_level = NewGUCNestLevel();
	int			deadlock_level;
	char	   *lock;

	(void) set_config_option("lock_timeout", psprintf("%dms", FINISH_LOCK_MS),
							 superuser() ? PGC_SUSET : PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	query(LOCK_STATEMENT, 3, types, values, nulls);
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
lock_tables(Finish *f)
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
						f->job_id, tries, FINISH_ATTEMPTS, backfill_regclass_text(f->upstream),
						FINISH_LOCK_MS)));
		if (tries >= FINISH_ATTEMPTS)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock table %s to finish the cutover of backfill job " INT64_FORMAT " in %d attempts",
							backfill_regclass_text(f->upstream), f->job_id, FINISH_ATTEMPTS),
					 errdetail("Each attempt waited at most %d ms for the lock; another transaction held it or was ahead in the queue each time. Nothing was changed.",
							   FINISH_LOCK_MS),
					 errhint("Find the long transaction on the table in pg_locks and pg_stat_activity, then try again.")));
		backfill_cutover_pause(tries);
	}
}

/* the old table stops following the new one: the job is cancelled, its triggers dropped */
static void
let_job_go(Finish *f)
{
	Oid			types[2] = {INT8OID, f->job_type};
	Datum		values[2] = {Int64GetDatum(f->job_id), f->job};

	read_referenced(f);
	lock_tables(f);
	query("SELECT backfill._mark_cancelled($1)", 1, types, values, NULL);
	query("SELECT backfill._drop_job_objects($2, false)", 2, types, values, NULL);
}

/* the cutover row says finished, and pg_stat_activity too */
static void
record_finished(Finish *f)
{
	Oid			types[11];
	Datum		values[11];
	char		nulls[11];
	int			fields[8] = {ROW_ATTEMPTS, ROW_OLD_TABLE, ROW_NEW_TABLE, ROW_OLD_NAME,
		ROW_NEW_SCHEMA, ROW_NEW_NAME, ROW_INTO_EXISTING, ROW_LOCK_HELD_MS};

	types[0] = INT8OID;
	values[0] = Int64GetDatum(f->job_id);
	nulls[0] = ' ';
	for (int i = 0; i < 8; i++)
	{
		bool		isnull;

		types[i + 1] = TupleDescAttr(f->row_desc, fields[i] - 1)->atttypid;
		values[i + 1] = row_field(f, fields[i], &isnull);
		nulls[i + 1] = isnull ? 'n' : ' ';
	}
	query("SELECT backfill._cutover_record($1, 'finished', $2, $3, $4, $5, $6, $7, false, $8,"
		  "                                $9, NULL, true)", 9, types, values, nulls);
	types[1] = TEXTOID;
	values[1] = CStringGetTextDatum("finished");
	query("SELECT backfill._cutover_report($1, $2)", 2, types, values, NULL);
}

/*
 * backfill.finish_cutover(job_id bigint, keep boolean DEFAULT false)
 *		RETURNS void
 *		End the cutover of a job: validate the foreign keys it carried,
 *		stop the old table following the new one (the job is then
 *		cancelled) and drop the old table, unless keep (see the file
 *		header).
 */
Datum
backfill_finish_cutover(PG_FUNCTION_ARGS)
{
	Finish		f;
	Oid			types[1] = {INT8OID};
	Datum		values[1];

	memset(&f, 0, sizeof(Finish));
	backfill_spi_enter();
	if (PG_ARGISNULL(0))
		query("SELECT backfill._get_job(NULL)", 0, NULL, NULL, NULL);
	f.job_id = PG_GETARG_INT64(0);
	read_job(&f);
	if (XactIsoLevel != XACT_READ_COMMITTED)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TRANSACTION_STATE),
				 errmsg("backfill.finish_cutover() must run at isolation level READ COMMITTED"),
				 errdetail("It reads the job as the cutover calls it waited for left it.")));
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"keep\" must not be null")));
	f.keep = PG_GETARG_BOOL(1);

	values[0] = Int64GetDatum(f.job_id);
	query("SELECT pg_advisory_xact_lock(hashtext('backfill.cutover'), $1::integer)", 1, types,
		  values, NULL);
	read_job(&f);
	read_cutover_row(&f);
	check_cut_over(&f);
	if (!f.keep)
		check_old_table(&f);
	validate_keys(&f);
	if (strcmp(f.status, "cancelled") != 0)
		let_job_go(&f);
	if (!f.keep && old_table_exists(&f))
		backfill_spi_exec(psprintf("DROP TABLE %s", backfill_regclass_text(row_oid(&f, ROW_OLD_TABLE))),
						  SPI_OK_UTILITY);
	record_finished(&f);
	backfill_spi_leave();
	PG_RETURN_VOID();
}

/*-------------------------------------------------------------------------
 *
 * verification_rows.c
 *	  A job's rows of backfill.verification: the end of its last verify
 *	  (src/api/verify_job.c) and the progress of its last
 *	  repair (src/api/repair.c).
 *
 * Only the extension's owner writes the catalogs: each function here acts
 * in a catalog context (privilege.c) on behalf of a caller who owns the
 * job.  Nothing here commits; a repair commits its row itself, so that
 * other sessions see it go.  In a read-only transaction (a standby,
 * default_transaction_read_only) nothing is written: a verify there is
 * still a verify, its record just is not kept.
 *
 * A verify's row is written in its caller's transaction, which may last:
 * a second verify of the job does not wait for it.  A transaction-level
 * advisory lock (field4 BACKFILL_VERIFY_LOCK_FIELD4) is taken without
 * waiting before the row is written; a verify that cannot have it leaves
 * the row to the transaction that has, whose verify it then is.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/builtins.h"

#include "catalog/verification_rows.h"
#include "lib/lib.h"

/* the repair's figures as parameters $2..$7 */
static void
figures_args(const RepairFigures *f, Datum *values, char *nulls)
{
	values[0] = Int64GetDatum(f->ranges);
	values[1] = Int64GetDatum(f->ranges_total);
	nulls[1] = f->ranges_total < 0 ? 'n' : ' ';
	values[2] = Int64GetDatum(f->differences);
	nulls[2] = f->differences < 0 ? 'n' : ' ';
	values[3] = Int64GetDatum(f->missing);
	values[4] = Int64GetDatum(f->extra);
	values[5] = Int64GetDatum(f->different);
}

/* one statement on backfill.verification, as the extension's owner */
static void
write_row(const char *sql, int nargs, Oid *types, Datum *values, const char *nulls,
		  int expected)
{
	RoleContext rc;

	backfill_catalog_enter(&rc);
	backfill_spi_enter();
	backfill_spi_exec_args(sql, nargs, types, values, nulls, expected);
	backfill_spi_leave();
	backfill_role_leave(&rc);
}

/*
 * backfill_record_verify_row
 *		The job's verify row: a verify by method with range_rows, started at
 *		started, whose figures are the ranges compared, the ranges there
 *		are, the rows read and the differences (each NULL where figure_nulls
 *		says).  Returns whether it was written: not in a read-only
 *		transaction, nor while another transaction holds the row (see the
 *		file header).
 */
bool
backfill_record_verify_row(int64 job_id, const char *method, int range_rows,
						   TimestampTz started, const Datum *figures,
						   const bool *figure_nulls)
{
	LOCKTAG		tag;
	Oid			types[8] = {INT8OID, TEXTOID, INT4OID, TIMESTAMPTZOID, INT8OID, INT8OID, INT8OID,
	INT8OID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	if (XactReadOnly)
		return false;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (job_id >> 32),
						 (uint32) job_id, BACKFILL_VERIFY_LOCK_FIELD4);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
		return false;
	values[0] = Int64GetDatum(job_id);
	values[1] = CStringGetTextDatum(method);
	values[2] = Int32GetDatum(range_rows);
	values[3] = TimestampTzGetDatum(started);
	for (int i = 0; i < 4; i++)
	{
		values[4 + i] = figures[i];
		nulls[4 + i] = figure_nulls[i] ? 'n' : ' ';
	}
	write_row("INSERT INTO backfill.verification AS v (job_id, operation, method, range_rows, "
			  " pid, started_at, finished_at, ranges_done, ranges_total, rows_read, differences) "
			  "VALUES ($1, 'verify', $2, $3, pg_catalog.pg_backend_pid(), $4, "
			  " pg_catalog.clock_timestamp(), $5, $6, $7, $8) "
			  "ON CONFLICT (job_id, operation) DO UPDATE SET method = $2, range_rows = $3, "
			  " pid = pg_catalog.pg_backend_pid(), started_at = $4, "
			  " finished_at = pg_catalog.clock_timestamp(), ranges_done = $5, "
			  " ranges_total = $6, rows_read = $7, differences = $8",
			  8, types, values, nulls, SPI_OK_INSERT);
	return true;
}

/*
 * backfill_repair_row_start
 *		The job's repair row, started by this backend now with range_rows,
 *		nothing known or done yet.  Caller connected to SPI and holding the
 *		job lock; it commits.
 */
void
backfill_repair_row_start(int64 job_id, int range_rows)
{
	Oid			types[2] = {INT8OID, INT4OID};
	Datum		values[2] = {Int64GetDatum(job_id), Int32GetDatum(range_rows)};

	if (XactReadOnly)
		return;
	write_row("INSERT INTO backfill.verification AS v (job_id, operation, range_rows, pid, "
			  " started_at, ranges_done, missing, extra, different) "
			  "VALUES ($1, 'repair', $2, pg_catalog.pg_backend_pid(), "
			  " pg_catalog.clock_timestamp(), 0, 0, 0, 0) "
			  "ON CONFLICT (job_id, operation) DO UPDATE SET method = NULL, range_rows = $2, "
			  " pid = pg_catalog.pg_backend_pid(), started_at = pg_catalog.clock_timestamp(), "
			  " finished_at = NULL, ranges_done = 0, ranges_total = NULL, rows_read = NULL, "
			  " differences = NULL, missing = 0, extra = 0, different = 0, clean = NULL",
			  2, types, values, NULL, SPI_OK_INSERT);
}

/*
 * backfill_repair_row_progress
 *		What the job's repair has done so far, in the caller's transaction,
 *		which it commits with the range it repaired.
 */
void
backfill_repair_row_progress(int64 job_id, const RepairFigures *figures)
{
	Oid			types[7] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID};
	Datum		values[7];
	char		nulls[7] = {' ', ' ', ' ', ' ', ' ', ' ', ' '};

	if (XactReadOnly)
		return;
	values[0] = Int64GetDatum(job_id);
	figures_args(figures, values + 1, nulls + 1);
	write_row("UPDATE backfill.verification SET ranges_done = $2, ranges_total = $3, "
			  " differences = $4, missing = $5, extra = $6, different = $7 "
			  "WHERE job_id = $1 AND operation = 'repair'",
			  7, types, values, nulls, SPI_OK_UPDATE);
}

/*
 * backfill_repair_row_finish
 *		The end of the job's repair: its figures, whether the job is clean,
 *		finished now.
 */
void
backfill_repair_row_finish(int64 job_id, const RepairFigures *figures, bool clean)
{
	Oid			types[8] = {INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, BOOLOID};
	Datum		values[8];
	char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

	if (XactReadOnly)
		return;
	values[0] = Int64GetDatum(job_id);
	figures_args(figures, values + 1, nulls + 1);
	values[7] = BoolGetDatum(clean);
	write_row("UPDATE backfill.verification SET ranges_done = $2, ranges_total = $3, "
			  " differences = $4, missing = $5, extra = $6, different = $7, clean = $8, "
			  " finished_at = pg_catalog.clock_timestamp() "
			  "WHERE job_id = $1 AND operation = 'repair'",
			  8, types, values, nulls, SPI_OK_UPDATE);
}

/*-------------------------------------------------------------------------
 *
 * verify_state.c
 *	  What verify_job(job, 'changed') keeps of a job between its calls:
 *	  backfill.verification_state and backfill.verification_range, read
 *	  and written as the extension's owner.
 *
 * A call locks the job's state row first (and makes it if there is none),
 * so that two calls of one job run one after the other: each writes every
 * page list of the job, and the second must start from the first's.  The
 * rows are written in the caller's transaction: a call that fails or is
 * rolled back leaves the state of the call before, which is still true.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/pg_lsn.h"

#include "api/verify.h"
#include "lib/lib.h"

/* a column of row i of the last result, as text; NULL for NULL */
static char *
text_of(uint64 i, int c)
{
	return SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c);
}

/* the Oids of an oid[] column of the one row read */
static Oid *
oids_of(int c, int *n)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c, &isnull);
	Datum	   *elems;
	Oid		   *oids;

	deconstruct_array(DatumGetArrayTypeP(d), OIDOID, sizeof(Oid), true, TYPALIGN_INT,
					  &elems, NULL, n);
	oids = palloc(sizeof(Oid) * Max(*n, 1));
	for (int i = 0; i < *n; i++)
		oids[i] = DatumGetObjectId(elems[i]);
	return oids;
}

/* the job's ranges, read into state */
static void
read_ranges(int64 job_id, VerifyState *state)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	uint64		n;

	backfill_spi_exec_args("SELECT range_no, lower_key, upper_key, upstream_rows, "
						   "       downstream_rows, checksum, checked_at, differs "
						   "  FROM backfill.verification_range WHERE job_id = $1 ORDER BY range_no",
						   1, types, values, NULL, SPI_OK_SELECT);
	n = SPI_processed;
	state->nranges = (int) n;
	state->bounds = palloc0(sizeof(char *) * (n + 1));
	state->upstream_rows = palloc0(sizeof(int64) * Max(n, 1));
	state->downstream_rows = palloc0(sizeof(int64) * Max(n, 1));
	state->checksums = palloc0(sizeof(char *) * Max(n, 1));
	state->checked_at = palloc0(sizeof(char *) * Max(n, 1));
	state->differs = palloc0(sizeof(bool) * Max(n, 1));
	for (uint64 i = 0; i < n; i++)
	{
		char	   *rows_u = text_of(i, 4);
		char	   *rows_d = text_of(i, 5);

		/* ranges numbered from 0 in order, each starting where the last one ends */
		if (strtoi64(text_of(i, 1), NULL, 10) != (int64) i ||
			(i == 0) != (text_of(i, 2) == NULL) ||
			(i > 0 && strcmp(text_of(i, 2), state->bounds[i]) != 0) ||
			(i == n - 1) != (text_of(i, 3) == NULL))
		{
			state->found = false;
			return;
		}
		state->bounds[i] = text_of(i, 2);
		state->bounds[i + 1] = text_of(i, 3);
		state->upstream_rows[i] = rows_u ? strtoi64(rows_u, NULL, 10) : -1;
		state->downstream_rows[i] = rows_d ? strtoi64(rows_d, NULL, 10) : -1;
		state->checksums[i] = text_of(i, 6);
		state->checked_at[i] = text_of(i, 7);
		state->differs[i] = strcmp(text_of(i, 8), "t") == 0;
	}
}

/*
 * verify_state_lock
 *		Lock the job's state row, made empty if there is none, and read what
 *		it keeps; state->found says whether it keeps anything.
 */
void
verify_state_lock(int64 job_id, VerifyState *state)
{
	Oid			types[1] = {INT8OID};
	Datum		values[1] = {Int64GetDatum(job_id)};
	RoleContext rc;
	bool		isnull;

	memset(state, 0, sizeof(VerifyState));
	backfill_catalog_enter(&rc);
	backfill_spi_exec_args("INSERT INTO backfill.verification_state "
						   "VALUES ($1, '0/0', pg_catalog.now(), '', '{}', '{}', '{}') "
						   "ON CONFLICT (job_id) DO NOTHING",
						   1, types, values, NULL, SPI_OK_INSERT);
	backfill_spi_exec_args("SELECT checked_lsn, shape, relations, filenodes, pages "
						   "  FROM backfill.verification_state WHERE job_id = $1 FOR UPDATE",
						   1, types, values, NULL, SPI_OK_SELECT);
	if (SPI_processed != 1)
		elog(ERROR, "the verification state of backfill job " INT64_FORMAT " is gone", job_id);
	state->lsn = DatumGetLSN(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										   &isnull));
	state->shape = text_of(0, 2);
	state->found = strlen(state->shape) > 0;
	if (state->found)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5, &isnull);
		Datum	   *elems;
		int			n;

		state->relations = oids_of(3, &state->nrelations);
		state->filenodes = oids_of(4, &n);
		deconstruct_array(DatumGetArrayTypeP(d), BYTEAOID, -1, false, TYPALIGN_INT,
						  &elems, NULL, &n);
		state->pages = palloc(sizeof(bytea *) * Max(n, 1));
		for (int i = 0; i < n; i++)
			state->pages[i] = DatumGetByteaPCopy(elems[i]);
		if (n != state->nrelations)
			state->found = false;
		else
			read_ranges(job_id, state);
	}
	backfill_role_leave(&rc);
}

/* an array of n elements of a type */
static Datum
array_of(Datum *elems, int n, Oid type, int16 len, bool byval, char align)
{
	return PointerGetDatum(construct_array(elems, n, type, len, byval, align));
}

/*
 * verify_state_save
 *		Keep what this call compared: the state (its position, shape,
 *		relations and page lists) and, with all, every range (the ranges
 *		were cut again), else those whose place in rechecked is set; those
 *		compared now, the others as they were.
 */
void
verify_state_save(int64 job_id, const VerifyState *state, bool all, const bool *rechecked)
{
	Oid			stypes[6] = {INT8OID, LSNOID, TEXTOID, OIDARRAYOID, OIDARRAYOID, BYTEAARRAYOID};
	Datum		svalues[6];
	Oid			rtypes[9] = {INT8OID, INT4OID, TEXTARRAYOID, TEXTARRAYOID, INT8OID, INT8OID, NUMERICOID,
	TIMESTAMPTZOID, BOOLOID};
	Datum	   *elems = palloc(sizeof(Datum) * Max(state->nrelations, 1));
	RoleContext rc;

	backfill_catalog_enter(&rc);
	svalues[0] = Int64GetDatum(job_id);
	svalues[1] = LSNGetDatum(state->lsn);
	svalues[2] = CStringGetTextDatum(state->shape);
	for (int i = 0; i < state->nrelations; i++)
		elems[i] = ObjectIdGetDatum(state->relations[i]);
	svalues[3] = array_of(elems, state->nrelations, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
	for (int i = 0; i < state->nrelations; i++)
		elems[i] = ObjectIdGetDatum(state->filenodes[i]);
	svalues[4] = array_of(elems, state->nrelations, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
	for (int i = 0; i < state->nrelations; i++)
		elems[i] = PointerGetDatum(state->pages[i]);
	svalues[5] = array_of(elems, state->nrelations, BYTEAOID, -1, false, TYPALIGN_INT);
	backfill_spi_exec_args("UPDATE backfill.verification_state SET checked_lsn = $2, "
						   " checked_at = pg_catalog.now(), shape = $3, relations = $4, "
						   " filenodes = $5, pages = $6 WHERE job_id = $1",
						   6, stypes, svalues, NULL, SPI_OK_UPDATE);
	if (all)
		backfill_spi_exec_args("DELETE FROM backfill.verification_range WHERE job_id = $1",
							   1, stypes, svalues, NULL, SPI_OK_DELETE);
	for (int r = 0; r < state->nranges; r++)
	{
		Datum		rvalues[9];
		char		nulls[9] = {' ', ' ', ' ', ' ', ' ', ' ', ' ', ' ', ' '};

		if (!all && !rechecked[r])
			continue;
		rvalues[0] = Int64GetDatum(job_id);
		rvalues[1] = Int32GetDatum(r);
		for (int b = 0; b < 2; b++)
		{
			const char *bound = state->bounds[r + b];

			nulls[2 + b] = bound == NULL ? 'n' : ' ';
			rvalues[2 + b] = bound == NULL ? (Datum) 0 :
				OidInputFunctionCall(F_ARRAY_IN, (char *) bound, TEXTOID, -1);
		}
		rvalues[4] = Int64GetDatum(state->upstream_rows[r]);
		rvalues[5] = Int64GetDatum(state->downstream_rows[r]);
		nulls[4] = state->upstream_rows[r] < 0 ? 'n' : ' ';
		nulls[5] = state->downstream_rows[r] < 0 ? 'n' : ' ';
		rvalues[8] = BoolGetDatum(state->differs[r]);
		nulls[6] = state->checksums[r] == NULL ? 'n' : ' ';
		rvalues[6] = state->checksums[r] == NULL ? (Datum) 0 :
			DirectFunctionCall3(numeric_in, CStringGetDatum(state->checksums[r]),
								ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		/* a range not compared now keeps when it was */
		nulls[7] = rechecked[r] || state->checked_at[r] == NULL ? 'n' : ' ';
		rvalues[7] = nulls[7] == 'n' ? (Datum) 0 :
			DirectFunctionCall3(timestamptz_in, CStringGetDatum(state->checked_at[r]),
								ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		backfill_spi_exec_args("INSERT INTO backfill.verification_range "
							   "VALUES ($1, $2, $3, $4, $5, $6, $7, "
							   "        coalesce($8, pg_catalog.now()), $9) "
							   "ON CONFLICT (job_id, range_no) DO UPDATE SET "
							   " upstream_rows = $5, downstream_rows = $6, checksum = $7, "
							   " checked_at = coalesce($8, pg_catalog.now()), differs = $9",
							   9, rtypes, rvalues, nulls, SPI_OK_INSERT);
	}
	backfill_role_leave(&rc);
}

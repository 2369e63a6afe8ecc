/*-------------------------------------------------------------------------
 *
 * lock.c
 *	  The cutover's locks: everything the swap alters, taken ACCESS
 *	  EXCLUSIVE before the swap starts, in one order.
 *
 * The order: the tables whose foreign keys reference src, the views and
 * materialized views that select from it, the sequences of its columns,
 * then src and dst with their partitions.  An application holds the first
 * ones before it touches src (it wrote a child row, it updated through a
 * view, it drew a value from a sequence and then inserts): the cutover
 * waits for them while it holds nothing the application needs next, and
 * the swap, which holds src, never waits for a lock.  Each wait is bounded
 * by the caller's lock_timeout; each attempt (attempt_once.c) sets it.
 *
 * An application that takes src before a child table or a view can still
 * meet the cutover in a deadlock: the waits check for one early
 * (deadlock.c), so that the attempt that gives way is the cutover's.
 *
 * The tables are locked by LOCK TABLE, run as the caller, so PostgreSQL
 * checks the caller's right to each lock, and takes the partitions of each
 * with it.  LOCK TABLE takes neither a sequence nor a view alone (it locks
 * the view's tables too), so those are locked one relation at a time, for
 * a caller with the privileges of their owner, which the swap needs to
 * alter them anyway.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"

#include "cutover/lock_step.h"
#include "lib/lib.h"

PG_FUNCTION_INFO_V1(backfill_cutover_lock_dependents);

/* the tables whose foreign keys reference src, but src and dst */
static const char *const referencing_sql =
"SELECT DISTINCT c.conrelid::regclass AS child FROM pg_constraint c"
" WHERE c.contype = 'f' AND c.confrelid = $1 AND c.conrelid NOT IN ($1, $2)"
" ORDER BY 1";

/* the views and materialized views whose rules select from src */
static const char *const views_sql =
"SELECT DISTINCT rw.ev_class::regclass AS v"
"  FROM pg_depend dep JOIN pg_rewrite rw ON rw.oid = dep.objid"
"  JOIN pg_class vc ON vc.oid = rw.ev_class AND vc.relkind IN ('v', 'm')"
" WHERE dep.classid = 'pg_rewrite'::regclass AND dep.refclassid = 'pg_class'::regclass"
"   AND dep.refobjid = $1 AND dep.deptype = 'n' AND rw.ev_class <> $1"
" ORDER BY 1";

/* the sequences of src's columns: serial (auto) and identity (internal) */
static const char *const sequences_sql =
"SELECT DISTINCT dep.objid::regclass AS seq"
"  FROM pg_depend dep JOIN pg_class sc ON sc.oid = dep.objid AND sc.relkind = 'S'"
" WHERE dep.classid = 'pg_class'::regclass AND dep.refclassid = 'pg_class'::regclass"
"   AND dep.refobjid = $1 AND dep.deptype IN ('a', 'i')"
" ORDER BY 1";

/*
 * The relations one query of the file's finds for src and dst, in its
 * order.  Read whole before the first is locked, as a query's rows are
 * read under the one snapshot it started with.
 */
static List *
relations_of(const char *sql, Oid src, Oid dst)
{
	Oid			types[2] = {REGCLASSOID, REGCLASSOID};
	Datum		values[2] = {ObjectIdGetDatum(src), ObjectIdGetDatum(dst)};
	MemoryContext caller = CurrentMemoryContext;
	List	   *rels = NIL;

	backfill_spi_enter();
	backfill_spi_exec_args(sql, 2, types, values, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		rel = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		MemoryContext old = MemoryContextSwitchTo(caller);

		rels = lappend_oid(rels, DatumGetObjectId(rel));
		MemoryContextSwitchTo(old);
	}
	backfill_spi_leave();
	return rels;
}

/* LOCK TABLE of the tables, as the caller: its right to each is checked */
static void
lock_tables(const char *tables)
{
	backfill_spi_enter();
	backfill_spi_exec(psprintf("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", tables),
					  SPI_OK_UTILITY);
	backfill_spi_leave();
}

/*
 * backfill_cutover_lock_all
 *		Lock ACCESS EXCLUSIVE what the swap of src and dst alters, in the
 *		order of the file header.
 */
void
backfill_cutover_lock_all(Oid src, Oid dst)
{
	ListCell   *lc;
	int			level = backfill_cutover_deadlock_begin();

	foreach(lc, relations_of(referencing_sql, src, dst))
		lock_tables(backfill_regclass_text(lfirst_oid(lc)));
	foreach(lc, relations_of(views_sql, src, dst))
		backfill_cutover_lock_one(lfirst_oid(lc));
	foreach(lc, relations_of(sequences_sql, src, dst))
		backfill_cutover_lock_one(lfirst_oid(lc));
	/* src first, the table writers queue on */
	lock_tables(psprintf("%s, %s", backfill_regclass_text(src),
						 backfill_regclass_text(dst)));
	backfill_cutover_deadlock_end(level);
}

/*
 * backfill._cutover_lock_dependents(src regclass, dst regclass)
 *		RETURNS void
 *		What the swap of src and dst alters, locked in the order of the
 *		file header, each wait bounded by the caller's lock_timeout.
 */
Datum
backfill_cutover_lock_dependents(PG_FUNCTION_ARGS)
{
	backfill_cutover_lock_all(PG_GETARG_OID(0), PG_GETARG_OID(1));
	PG_RETURN_VOID();
}

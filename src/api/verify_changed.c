/*-------------------------------------------------------------------------
 *
 * verify_changed.c
 *	  verify_job(job, 'changed'): compare by checksums only the ranges of
 *	  keys written since the last such call.
 *
 * The keys are cut into ranges once (the job's range vnodes, or every so
 * many keys of the downstream), and each range compared by checksums as
 * the checksum method compares its ranges (verify_ranges.c).  What a call
 * finds is kept (verify_state.c): each range's sums, and for each page of
 * each side the ranges its rows fall in (copy/page_ranges.c).  The next
 * call reads the pages again, not their rows: only a page whose LSN is past
 * where the last call started was written since, and only the ranges it
 * held then or holds now, and those that differed last time, are compared
 * again.  A table rewritten or truncated since (a new file), partitions
 * attached or detached, or another comparison (the job's columns, its
 * filter) make every range compared again, cut anew.
 *
 * Why no write is missed:
 *  - The call takes its position in the WAL, then waits for every
 *    transaction that holds a lock to write any of the tables, as CREATE
 *    INDEX CONCURRENTLY waits for older transactions: a change the
 *    comparisons do not see is then by a transaction that started writing
 *    after the position, so its page has a later LSN, and the next call
 *    reads that page again.
 *  - A row the comparisons saw and that is deleted later leaves no key once
 *    pruned; its page's list must already hold its range.  The call holds
 *    a snapshot from before its comparisons to its end, so that no row they
 *    see can be pruned, and reads again, after them, the pages written
 *    since its position: their lists then hold every row the comparisons
 *    saw.
 *  - Only logged tables have an LSN on their pages: an unlogged or
 *    temporary table, or a foreign one, is refused.  A file written
 *    without WAL (wal_level minimal) is a new file: compared whole.
 *
 * The comparisons run as the job's owner (verify_compare.c), the state is
 * read and written as the extension's owner (verify_state.c), the pages
 * are read in C, where no SQL of anyone's runs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "api/verify.h"
#include "api/verify_changed.h"
#include "catalog/catalog_access.h"
#include "copy/page_ranges.h"
#include "lib/lib.h"

/* refuse a call that could miss a write, or keep nothing */
static void
check_call(const VerifyPlan *plan)
{
	if (plan->remote)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("verify method \"changed\" cannot verify backfill job %lld",
						(long long) plan->job.job_id),
				 errdetail("Its upstream is on another server, whose pages this server cannot read."),
				 errhint("Use method checksum.")));
	if (!plan->job.finished)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("backfill job %lld has not finished", (long long) plan->job.job_id),
				 errdetail("Verify method \"changed\" compares what was written since its last call, and a job that copies writes everywhere."),
				 errhint("Use method checksum until the job has finished.")));
	if (XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("verify method \"changed\" cannot run in a read-only transaction"),
				 errdetail("It keeps what it compared in backfill.verification_range.")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("verify method \"changed\" cannot run in a transaction of isolation level %s",
						IsolationIsSerializable() ? "SERIALIZABLE" : "REPEATABLE READ"),
				 errdetail("It waits for the tables' writers, then compares what they wrote, which a snapshot taken before would not see."),
				 errhint("Call it in a READ COMMITTED transaction.")));
}

/* a relation whose pages say when they were written, or the error */
static void
check_leaf(const VerifyPlan *plan, Oid relid)
{
	char		relkind = get_rel_relkind(relid);

	if ((relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW) ||
		get_rel_persistence(relid) != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("verify method \"changed\" cannot verify backfill job %lld",
						(long long) plan->job.job_id),
				 errdetail("Relation %s is %s: its pages do not say when they were written.",
						   backfill_regclass_text(relid),
						   relkind == RELKIND_FOREIGN_TABLE ? "a foreign table" :
						   get_rel_persistence(relid) == RELPERSISTENCE_UNLOGGED ? "unlogged" :
						   get_rel_persistence(relid) == RELPERSISTENCE_TEMP ? "temporary" :
						   "not a table"),
				 errhint("Use method checksum.")));
}

/* the relations whose pages hold a side's rows: it, or its partitions' */
static List *
leaves_of(const VerifyPlan *plan, Oid relid)
{
	List	   *leaves = NIL;
	ListCell   *lc;

	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
	{
		check_leaf(plan, relid);
		return list_make1_oid(relid);
	}
	foreach(lc, find_all_inheritors(relid, AccessShareLock, NULL))
	{
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_PARTITIONED_TABLE)
			continue;
		check_leaf(plan, lfirst_oid(lc));
		leaves = lappend_oid(leaves, lfirst_oid(lc));
	}
	return leaves;
}

/* the key's types (the upstream's, which the downstream's must be) and each side's collations */
static void
key_types(Changed *ch, Oid downstream, Oid *coll_u, Oid *coll_d)
{
	const VerifyJob *job = &ch->plan->job;

	for (int k = 0; k < job->npk; k++)
	{
		AttrNumber	att_u = get_attnum(job->upstream, job->pk_names[k]);
		AttrNumber	att_d = get_attnum(downstream, job->pk_names[k]);
		Oid			type_d;
		int32		typmod;

		if (att_u <= 0 || att_d <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("key column \"%s\" of backfill job %lld no longer exists",
							job->pk_names[k], (long long) job->job_id)));
		get_atttypetypmodcoll(job->upstream, att_u, &ch->types[k], &typmod, &coll_u[k]);
		get_atttypetypmodcoll(downstream, att_d, &type_d, &typmod, &coll_d[k]);
		if (type_d != ch->types[k])
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("verify method \"changed\" cannot verify backfill job %lld",
							(long long) job->job_id),
					 errdetail("Key column \"%s\" is of type %s in the upstream and %s in the downstream.",
							   job->pk_names[k], format_type_be(ch->types[k]),
							   format_type_be(type_d)),
					 errhint("Use method checksum.")));
	}
}

/*
 * Read again the pages of every relation written since a position (all of
 * them for a state cut anew), and those whose lists name a range cut in
 * parts, their lists into the state; the ranges they held and hold set in
 * touched (when given).
 */
static void
scan_pages(Changed *ch, bool all, XLogRecPtr since, bool *touched)
{
	VerifyState *state = ch->state;
	bool	   *ignored = palloc0(sizeof(bool) * state->nranges);

	for (int i = 0; i < state->nrelations; i++)
	{
		PageRanges *old = all ? NULL : page_ranges_decode(state->pages[i], state->nranges);
		KeyRanges  *order = i < ch->nupstream ? &ch->order_u : &ch->order_d;
		PageRanges *pages;

		if (!all && old == NULL)
			elog(ERROR, "the page lists of backfill job " INT64_FORMAT " cannot be read",
				 ch->plan->job.job_id);
		pages = page_ranges_scan(state->relations[i], ch->plan->job.pk_names, order, old, since,
								 ch->parts, touched ? touched : ignored);
		state->pages[i] = page_ranges_encode(pages);
	}
}

/*
 * Whether the two sides are equal as a whole: both sides' count and sum of
 * every row in one statement, the checksum method's first one, which reads
 * both sides at once (in parallel workers where it can).  Cheaper than a
 * statement per range when many ranges are to be compared; when the sums
 * agree, so do each range's, with the odds of the checksum itself (a
 * difference in one range that the others' would hide is as unlikely as
 * one that its own rows' would).  Each range is then equal, its own counts
 * and sum not known.
 */
static bool
equal_as_a_whole(Changed *ch, VerifyCounts *counts)
{
	VerifySums	sums = verify_range_sums(ch->plan, "", "", "");

	counts->ranges++;
	counts->rows_read += sums.n_u;
	if (sums.equal)
		for (int r = 0; r < ch->state->nranges; r++)
		{
			ch->state->upstream_rows[r] = -1;
			ch->state->downstream_rows[r] = -1;
			ch->state->checksums[r] = NULL;
			ch->state->differs[r] = false;
			ch->rechecked[r] = true;
		}
	return sums.equal;
}

/* told of a range compared: keep its counts and checksum */
static void
range_done(void *arg, int range, int64 upstream_rows, int64 downstream_rows, const char *sum)
{
	Changed    *ch = (Changed *) arg;
	const char *space = sum ? strchr(sum, ' ') : NULL;

	ch->state->upstream_rows[range] = upstream_rows;
	ch->state->downstream_rows[range] = downstream_rows;
	ch->state->checksums[range] = space ? pstrdup(space + 1) : NULL;
	ch->state->differs[range] = sum == NULL;
	ch->rechecked[range] = true;
}

/* whether what is kept was made for these relations, files and comparison */
static bool
state_fits(const VerifyState *kept, const VerifyState *now)
{
	if (!kept->found || strcmp(kept->shape, now->shape) != 0 ||
		kept->nrelations != now->nrelations || kept->nranges < 1)
		return false;
	for (int i = 0; i < now->nrelations; i++)
		if (kept->relations[i] != now->relations[i] || kept->filenodes[i] != now->filenodes[i])
			return false;
	for (int i = 0; i < kept->nrelations; i++)
		if (page_ranges_decode(kept->pages[i], kept->nranges) == NULL)
			return false;
	return true;
}

/* the relations of both sides, their files, and the comparison's SQL */
static void
describe(Changed *ch, Oid downstream, VerifyState *now)
{
	const VerifyPlan *plan = ch->plan;
	List	   *leaves = leaves_of(plan, plan->job.upstream);

	ch->nupstream = list_length(leaves);
	leaves = list_concat(leaves, leaves_of(plan, downstream));
	now->nrelations = list_length(leaves);
	now->relations = palloc(sizeof(Oid) * now->nrelations);
	now->filenodes = palloc(sizeof(Oid) * now->nrelations);
	for (int i = 0; i < now->nrelations; i++)
	{
		Relation	rel = table_open(list_nth_oid(leaves, i), AccessShareLock);

		now->relations[i] = RelationGetRelid(rel);
		now->filenodes[i] = rel->rd_node.relNode;
		table_close(rel, NoLock);
	}
	now->shape = psprintf("%s|%s|%s|%s|%s|%s", plan->job.key_u, plan->cols_u, plan->hash_u,
						  plan->hash_d, plan->source.covered, plan->scan_u);
}

/*
 * Wait for every transaction that holds a lock to write any of the
 * relations (ROW EXCLUSIVE or stronger), as pg_locks shows it, fast-path
 * locks included.  Not for VACUUM or ANALYZE (SHARE UPDATE EXCLUSIVE),
 * which write no row: a wait for a lock mode that conflicts with writers
 * would wait for them too.
 */
static void
wait_for_writers(const Changed *ch, Oid downstream)
{
	const VerifyState *now = ch->state;
	List	   *relids = list_make2_oid(ch->plan->job.upstream, downstream);
	LOCKMASK	writes = LOCKBIT_ON(RowExclusiveLock) | LOCKBIT_ON(ShareRowExclusiveLock) |
		LOCKBIT_ON(ExclusiveLock) | LOCKBIT_ON(AccessExclusiveLock);
	LockData   *locks;
	List	   *writers = NIL;
	ListCell   *lc;

	for (int i = 0; i < now->nrelations; i++)
		relids = lappend_oid(relids, now->relations[i]);
	locks = GetLockStatusData();
	for (int i = 0; i < locks->nelements; i++)
	{
		LockInstanceData *lock = &locks->locks[i];
		VirtualTransactionId *vxid;

		if (lock->locktag.locktag_type != LOCKTAG_RELATION ||
			lock->locktag.locktag_field1 != MyDatabaseId ||
			!list_member_oid(relids, lock->locktag.locktag_field2) ||
			(lock->holdMask & writes) == 0 || lock->pid == MyProcPid)
			continue;
		vxid = palloc(sizeof(VirtualTransactionId));
		vxid->backendId = lock->backend;
		vxid->localTransactionId = lock->lxid;
		writers = lappend(writers, vxid);
	}
	foreach(lc, writers)
	{
		CHECK_FOR_INTERRUPTS();
		(void) VirtualXactLock(*(VirtualTransactionId *) lfirst(lc), true);
	}
}

/*
 * verify_changed
 *		Compare by checksums the ranges of a finished local job written since
 *		the last call (all of them at the first), returning the differences
 *		to the caller of verify_job; the ranges and parts of them compared,
 *		the upstream's rows read and the differences into *counts, the
 *		ranges compared again into *ranges_rechecked, the ranges there are
 *		into *ranges_total.
 */
void
verify_changed(const VerifyPlan *plan, Oid downstream, ReturnSetInfo *rsinfo,
			   VerifyCounts *counts, int64 *ranges_rechecked, int64 *ranges_total)
{
	Changed		ch = {0};
	VerifyState kept;
	VerifyState now = {0};
	Oid			coll_u[FUNC_MAX_ARGS];
	Oid			coll_d[FUNC_MAX_ARGS];
	XLogRecPtr	position;
	Snapshot	holding;
	bool		fits;
	bool	   *compare;
	Datum	   *keys;
	List	   *which = NIL;

	check_call(plan);
	ch.plan = plan;
	ch.state = &now;
	key_types(&ch, downstream, coll_u, coll_d);
	describe(&ch, downstream, &now);
	verify_state_lock(plan->job.job_id, &kept);

	/* where this call starts; then no writer of before it is left */
	position = GetXLogInsertRecPtr();
	wait_for_writers(&ch, downstream);
	/* no row the comparisons see is pruned until the pages are read after them */
	holding = RegisterSnapshot(GetLatestSnapshot());

	fits = state_fits(&kept, &now);
	if (fits)
	{
		now.nranges = kept.nranges;
		now.bounds = kept.bounds;
		now.upstream_rows = kept.upstream_rows;
		now.downstream_rows = kept.downstream_rows;
		now.checksums = kept.checksums;
		now.differs = kept.differs;
		now.checked_at = kept.checked_at;
		now.pages = kept.pages;
	}
	else
		verify_cut_ranges(&ch);
	keys = verify_bound_keys(&ch);
	key_ranges_init(&ch.order_u, plan->job.npk, ch.types, coll_u, now.nranges, keys);
	key_ranges_init(&ch.order_d, plan->job.npk, ch.types, coll_d, now.nranges, keys);
	compare = palloc0(sizeof(bool) * now.nranges);
	if (fits)
	{
		scan_pages(&ch, false, kept.lsn, compare);
		for (int r = 0; r < now.nranges; r++)
			compare[r] |= now.differs[r];
		verify_cut_large_ranges(&ch, &compare);
		keys = verify_bound_keys(&ch);
		key_ranges_init(&ch.order_u, plan->job.npk, ch.types, coll_u, now.nranges, keys);
		key_ranges_init(&ch.order_d, plan->job.npk, ch.types, coll_d, now.nranges, keys);
	}
	ch.rechecked = palloc0(sizeof(bool) * now.nranges);
	for (int r = 0; r < now.nranges; r++)
		if (!fits || compare[r])
			which = lappend_int(which, r);

	*ranges_rechecked = list_length(which);
	/* many ranges to compare: all of them at once first, range by range if they differ */
	if ((!fits || list_length(which) > now.nranges / 8) && verify_rate(plan) == 0 &&
		equal_as_a_whole(&ch, counts))
		which = NIL;
	verify_given_ranges(plan, rsinfo, counts, now.bounds, which, range_done, &ch);

	/*
	 * The lists of the pages written since the position, comparisons
	 * included; none when nothing at all was written to the WAL since.
	 */
	if (!fits || ch.recut || GetXLogInsertRecPtr() != position)
		scan_pages(&ch, !fits, position, NULL);
	now.lsn = position;
	verify_state_save(plan->job.job_id, &now, !fits || ch.recut, ch.rechecked);
	UnregisterSnapshot(holding);
	*ranges_total = now.nranges;
}

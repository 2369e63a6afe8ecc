/*-------------------------------------------------------------------------
 *
 * kind.h
 *	  The interface every kind of job implements: one struct of callbacks,
 *	  as a table access method fills a TableAmRoutine.
 *
 * A kind owns its state table (its layout, creating, decoding, persisting
 * it) and decides what a barrier forwards and what a chunk reads.  The
 * executor, the driver and the entry points call a kind only through its
 * routine, found with backfill_kind_routine(); they never ask which kind a
 * job is.  A kind's file calls only the layers below it, never another
 * kind's file.
 *
 * Callbacks are called with SPI connected; "run" callbacks run as the job's
 * owner under its pinned search_path, in the barrier's transaction.
 * Optional callbacks may be NULL.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_KIND_H
#define BACKFILL_KIND_H

#include "barrier.h"
#include "capture/capture.h"
#include "catalog/catalog_access.h"
#include "copy/barrier_io.h"
#include "copy/copy.h"

/* what create_job has decided before a kind makes its tables */
typedef struct JobDefinition
{
	int64		job_id;
	Oid			owner;			/* the caller, who owns the job */
	const char *name;			/* as the caller gave it */
	Relation	upstream;		/* locked SHARE ROW EXCLUSIVE */
	const char *upstream_sql;
	const char *downstream_sql;
	const char *state_sql;		/* backfill.state_<id> */
	const char *changes_sql;	/* backfill.changes_<id> */
	const char *key_ddl;		/* ", k1 type1 COLLATE ..., k2 ..." */
	const char *key_list;		/* "k1, k2" */
	int			parallelism;
} JobDefinition;

/* one split of a job whose kind cuts its own, as backfill.job_splits() shows it */
typedef struct JobSplit
{
	int32		split_id;
	Oid			partition;		/* the foreign table it reads */
	char	   *server;			/* that table's server; NULL: none */
	char	   *lower_bound;	/* on the first key column; NULL: unbounded */
	char	   *upper_bound;
} JobSplit;

/*
 * What verify_job knows of a job before its kind says what of it to
 * compare (src/api/verify_job.c): the catalog row as the caller reads it
 * and the SQL of its key.  Names are as regclass prints them.
 */
typedef struct VerifyJob
{
	int64		job_id;
	Oid			owner;
	Oid			upstream;
	bool		finished;		/* its status is "finished" */
	char	   *downstream_sql;
	char	   *state_sql;
	char	   *changes_sql;
	int			npk;
	char	  **pk_names;		/* unquoted */
	char	  **pk_types_sql;	/* the downstream's type of each, format_type */
	char	   *key_u;			/* the key over alias u: "u.k1, u.k2" */
	char	   *key_c;			/* over alias c */
	char	   *vnode_u;		/* the vnode of key_u in the job */
	char	   *splits;			/* remote_splits as text; NULL: none */
	List	   *partitions;		/* remote_partitions, Oids; NIL: none */
} VerifyJob;

/*
 * What verify_job's comparison reads of a job now, as its kind says.  Each
 * is SQL text; the comparison runs as the job's owner.  decoded may take a
 * parameter, $1 of type decoded_type, whose value decoded_param computes
 * as each statement of the comparison runs, once the statement has taken
 * its snapshot (what a slot holds up to the WAL flushed then, say), as the
 * job's owner; NULL when decoded takes none.
 */
typedef struct VerifySource
{
	char	   *covered;		/* over the upstream's row u: whether the
								 * downstream holds its key now */
	char	   *scan_d;			/* the downstream's side, a FROM item */
	char	   *decoded;		/* a query of the keys not fetched yet, as
								 * records (column k) */
	char	   *settled;		/* over a difference x: whether its key x.k is
								 * pending nowhere (changes w: decoded) */
	Datum		(*decoded_param) (const VerifyJob *job, bool *isnull);
	Oid			decoded_type;
} VerifySource;

typedef struct KindRoutine
{
	BackfillKind kind;

	/* names of its state and change tables' own columns: a key cannot take one */
	const char *const *reserved_columns;

	/* how its changes are captured while it backfills */
	CaptureMode capture;

	/*
	 * whether a restart takes the catalog's estimate of the upstream's rows
	 * for the progress total (src/copy/size.c)
	 */
	bool		recount_total;

	/* the catalog column it needs that an older catalog lacks, if any */
	const char *needs_job_column;
	/* the version that brought that column, when it is not 1.1 */
	const char *needs_version;

	/*
	 * Whether it cuts the key range into splits of its own, so that
	 * create_job cuts no range vnodes for it (ranges.c).
	 */
	bool		cuts_splits;

	/*
	 * Whether nothing reads or writes its downstream by key until every
	 * vnode has finished its snapshot, so that it builds the downstream's
	 * indexes once, after the snapshot (index_build.c): a kind that sets
	 * it calls backfill_indexes_built() before it writes by key.
	 */
	bool		builds_indexes_once;

	/*
	 * Whether it is RisingWave's snapshot backfill: its progress goes
	 * through the phases backfill.jobs shows (Snapshot, LogStore,
	 * Finishing), and backfill.ddl_progress calls it SNAPSHOT_BACKFILL.
	 */
	bool		snapshot_backfill;

	/* ---- create_job ---- */

	/*
	 * The upstream's key when it is not the local table's primary key (a
	 * foreign table's, read from its source): attribute numbers in key
	 * order and collations.  Set for a kind whose upstream is a foreign
	 * table (optional).
	 */
	int			(*upstream_key) (Relation upstream, AttrNumber **attnums, Oid **collations);

	/* refuse columns, a row filter or a downstream it cannot serve (optional) */
	void		(*check_shape) (Relation upstream, const JobShape *shape, bool into_existing);

	/* refuse what the kind cannot serve (optional) */
	void		(*check_create) (Relation upstream, int parallelism);

	/* make the state table (acting as the extension's owner) */
	void		(*create_state_table) (const JobDefinition *def);

	/* after the catalog rows exist (optional) */
	void		(*after_create) (const JobDefinition *def);

	/* ---- a run ---- */

	/* decode the state table into job->vnodes, checking the job's key */
	void		(*load_state) (BackfillJob *job);

	/* the check a restart runs before anything else (optional) */
	void		(*recovery_check) (BackfillJob *job);

	/* prepare the kind's statements for the executor */
	void		(*prepare) (BarrierExecutor *exec);

	/*
	 * Before a run's first fetch, in a transaction of its own that holds no
	 * lock on the upstream and has written nothing: make what the fetches
	 * read, if it is not there yet (optional).  Something that waits for the
	 * transactions in flight, as a slot's creation does, must not wait
	 * under a lock one of them may want.
	 */
	void		(*open_stream) (BackfillJob *job);

	/*
	 * Fetch changes before a barrier, in a transaction of its own
	 * (optional).  Returns whether it fetched every change there was; false
	 * when it stopped at a limit of its own and more are waiting.  The kind
	 * must allow a change to be fetched after the barrier whose snapshot
	 * holds it: a worker fetches before a barrier only when it has not
	 * fetched in the last barrier interval or its last fetch stopped short
	 * (driver.c).
	 */
	bool		(*fetch) (BarrierExecutor *exec);

	/*
	 * The changes part of a barrier of actors first..last, before any chunk.
	 * May sleep until deadline when there is nothing to do but wait.
	 */
	void		(*barrier_changes) (BarrierExecutor *exec, int first, int last,
									TimestampTz deadline);

	/* read one chunk of a group of vnodes; returns the rows read */
	int64		(*read_chunk) (BarrierExecutor *exec, VnodeGroup *group, int64 limit);

	/* whether an actor's barrier should commit now, read or not (optional) */
	bool		(*barrier_full) (BarrierExecutor *exec, int actor);

	/* persist the dirty state, at the end of a barrier */
	void		(*persist) (BarrierExecutor *exec);

	/* record an actor's barrier in backfill.actor */
	void		(*update_actor) (BarrierExecutor *exec, BackfillActor *actor);

	/*
	 * The phase an actor is in when it is one of the kind's own, as
	 * backfill.progress shows it (optional: NULL for "snapshot" or "done")
	 */
	const char *(*actor_phase) (BackfillJob *job, int actor);

	/*
	 * The backlog of an actor (its index; -1: every actor) catching up: the
	 * changes captured while it read its snapshot that it has still to
	 * apply; -1 when it is not catching up (optional: the kinds that apply
	 * changes from the first barrier on have no catch-up).  As the job's
	 * owner, connected to SPI, in a barrier's transaction.
	 */
	int64		(*backlog) (BackfillJob *job, int actor);

	/* whether an actor has nothing left but the final barrier */
	bool		(*actor_finished) (BackfillJob *job, int actor);

	/* whether every actor has finished, as committed in the state table */
	bool		(*finished_everywhere) (BackfillJob *job);

	/* the final barrier's last look at changes, under its lock (optional) */
	void		(*final_changes) (BarrierExecutor *exec);

	/* after the final barrier's commit, and at any later start (optional) */
	void		(*after_finish) (int64 job_id);

	/*
	 * drop what the job owns outside its tables (a slot here, a slot and a
	 * publication on another server), for cancel_job and drop_job (optional)
	 */
	void		(*drop_objects) (int64 job_id);

	/*
	 * For verify_job: the keys of the changes its upstream committed from
	 * the offset "since" on (as text) that the job has not fetched, as text[]
	 * Datums (optional).
	 */
	List	   *(*unfetched_keys) (int64 job_id, const char *since);

	/*
	 * The switchover of a job that follows another server, for cutover and
	 * backfill._remote_switchover (optional, both or neither: a job of a
	 * kind without them does not switch over).  check_switchover refuses a
	 * job, loaded to run, that cannot switch over now, before its workers
	 * are stopped; switchover switches the job over once the caller has
	 * stopped them and holds the job lock, and returns the source's LSN it
	 * switched at (InvalidXLogRecPtr: each of several servers at its own).
	 * As the caller, who has the privileges of the job's owner, connected to
	 * SPI.
	 */
	void		(*check_switchover) (BackfillJob *job);
	XLogRecPtr	(*switchover) (int64 job_id, bool fence, int lock_timeout_ms, int attempts);

	/* set the row counts of a job's new actors after a reschedule */
	void		(*recount_actors) (int64 job_id, const char *state_sql);

	/*
	 * Why a job that has not finished cannot be rescheduled, as RisingWave
	 * refuses to reschedule a creating job whose scan type is not
	 * reschedulable (StreamScanType::is_reschedulable): the DETAIL and HINT
	 * of the refusal (optional: NULL when it can be rescheduled at any time)
	 */
	void		(*reschedule_refusal) (int64 job_id, char **detail, char **hint);

	/*
	 * Refuse a parallelism the kind cannot run, for reschedule (optional:
	 * any parallelism create_job allows).
	 */
	void		(*check_parallelism) (int parallelism);

	/*
	 * For verify_job: what to compare of the job now, into *source, which
	 * holds what a finished job of this server compares (every key, nothing
	 * pending).  As the caller, who has the privileges of the job's owner,
	 * connected to SPI; it may take the locks the comparison needs.
	 */
	void		(*verify_source) (const VerifyJob *job, VerifySource *source);

	/* ---- showing a job ---- */

	/*
	 * For backfill.job_state(): the query that decodes the state table
	 * state_sql into the function's rows, in their order: actor_id integer,
	 * vnode integer, current_pos text, backfill_finished boolean, row_count
	 * bigint, epoch bigint, cdc_offset jsonb.  Its parameters: $1 the job's
	 * id (bigint), $2 the inner bounds of its splits (text[], NULL when it
	 * has none); position lists the key's columns over alias s ("s.k1,
	 * s.k2").  It runs with the rights of the caller, who sees the job.
	 */
	char	   *(*state_query) (const char *state_sql, const char *position);

	/*
	 * For backfill.job_splits(): the splits of the job, JobSplit's in their
	 * order (optional: a kind that cuts no splits of its own has none).
	 */
	List	   *(*splits) (const JobView *job);

	/*
	 * For backfill.jobs: the replication slot a job in the given status
	 * holds, by name (optional: a kind that holds no slot).
	 */
	char	   *(*slot_name) (int64 job_id, BackfillJobStatus status);
} KindRoutine;

/*
 * The optional callbacks, called through these wrappers as tableam.h's
 * table_* functions call a TableAmRoutine: each does what a kind that does
 * not set the callback means (nothing, no refusal, no key of its own).
 */

/* the upstream's key when the kind reads it elsewhere; 0 and nothing set: the primary key's */
static inline int
backfill_kind_upstream_key(const KindRoutine *kind, Relation upstream,
						   AttrNumber **attnums, Oid **collations)
{
	return kind->upstream_key ? kind->upstream_key(upstream, attnums, collations) : 0;
}

static inline void
backfill_kind_check_shape(const KindRoutine *kind, Relation upstream, const JobShape *shape,
						  bool into_existing)
{
	if (kind->check_shape)
		kind->check_shape(upstream, shape, into_existing);
}

static inline void
backfill_kind_check_create(const KindRoutine *kind, Relation upstream, int parallelism)
{
	if (kind->check_create)
		kind->check_create(upstream, parallelism);
}

static inline void
backfill_kind_after_create(const KindRoutine *kind, const JobDefinition *def)
{
	if (kind->after_create)
		kind->after_create(def);
}

static inline void
backfill_kind_recovery_check(const KindRoutine *kind, BackfillJob *job)
{
	if (kind->recovery_check)
		kind->recovery_check(job);
}

static inline void
backfill_kind_open_stream(const KindRoutine *kind, BackfillJob *job)
{
	if (kind->open_stream)
		kind->open_stream(job);
}

static inline bool
backfill_kind_fetch(const KindRoutine *kind, BarrierExecutor *exec)
{
	return kind->fetch ? kind->fetch(exec) : true;
}

static inline bool
backfill_kind_barrier_full(const KindRoutine *kind, BarrierExecutor *exec, int actor)
{
	return kind->barrier_full != NULL && kind->barrier_full(exec, actor);
}

/* NULL when the kind holds no slot */
static inline char *
backfill_kind_slot_name(const KindRoutine *kind, int64 job_id, BackfillJobStatus status)
{
	return kind->slot_name ? kind->slot_name(job_id, status) : NULL;
}

/* NULL when the kind has no phase of its own for the actor now */
static inline const char *
backfill_kind_actor_phase(const KindRoutine *kind, BackfillJob *job, int actor)
{
	return kind->actor_phase ? kind->actor_phase(job, actor) : NULL;
}

/* -1 when no actor asked for is catching up */
static inline int64
backfill_kind_backlog(const KindRoutine *kind, BackfillJob *job, int actor)
{
	return kind->backlog ? kind->backlog(job, actor) : -1;
}

static inline void
backfill_kind_final_changes(const KindRoutine *kind, BarrierExecutor *exec)
{
	if (kind->final_changes)
		kind->final_changes(exec);
}

static inline void
backfill_kind_after_finish(const KindRoutine *kind, int64 job_id)
{
	if (kind->after_finish)
		kind->after_finish(job_id);
}

static inline void
backfill_kind_drop_objects(const KindRoutine *kind, int64 job_id)
{
	if (kind->drop_objects)
		kind->drop_objects(job_id);
}

/* NIL when the kind cannot tell */
static inline List *
backfill_kind_unfetched_keys(const KindRoutine *kind, int64 job_id, const char *since)
{
	return kind->unfetched_keys ? kind->unfetched_keys(job_id, since) : NIL;
}

/* whether the job can be rescheduled now; if not, the refusal's DETAIL and HINT */
static inline bool
backfill_kind_reschedulable(const KindRoutine *kind, int64 job_id, char **detail, char **hint)
{
	*detail = NULL;
	*hint = NULL;
	if (kind->reschedule_refusal == NULL)
		return true;
	kind->reschedule_refusal(job_id, detail, hint);
	return false;
}

/* kind.c */
extern const KindRoutine *backfill_kind_routine(BackfillKind kind);
extern void backfill_kind_check_parallelism(const KindRoutine *kind, int parallelism);
extern List *backfill_kind_splits(const KindRoutine *kind, const JobView *job);
extern void backfill_kind_verify_source(const KindRoutine *kind, const VerifyJob *job,
										VerifySource *source);
extern void backfill_kind_check_switchover(const KindRoutine *kind, BackfillJob *job);
extern XLogRecPtr backfill_kind_switchover(const KindRoutine *kind, int64 job_id, bool fence,
										   int lock_timeout_ms, int attempts);

/* verify_pending.c */
extern char *backfill_verify_settled_sql(const VerifyJob *job);
extern void backfill_verify_vnode_source(const VerifyJob *job, VerifySource *source,
										 const char *finished, int strategy);
extern BackfillKind backfill_kind_for_upstream(BackfillKind kind, Oid upstream);

/* the kinds' routines */
extern const KindRoutine backfill_no_shuffle_routine;
extern const KindRoutine backfill_arrangement_routine;
extern const KindRoutine backfill_snapshot_routine;
extern const KindRoutine backfill_cdc_routine;
extern const KindRoutine backfill_remote_cdc_routine;

#endif							/* BACKFILL_KIND_H */

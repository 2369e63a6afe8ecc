/*-------------------------------------------------------------------------
 *
 * backfill.h
 *	  Declarations shared by the files of the backfill extension.
 *
 * A streaming job copies an upstream table into a downstream table while
 * the upstream keeps changing.  Its definition lives in backfill.job and
 * backfill.actor; its progress lives in its own state table,
 * backfill.state_<job_id>, laid out as RisingWave's state tables of its kind:
 *
 *	no_shuffle, arrangement:
 *		vnode smallint PRIMARY KEY, <pk columns>, backfill_finished boolean,
 *		row_count bigint
 *	snapshot:
 *		vnode smallint PRIMARY KEY, epoch bigint, row_count bigint,
 *		is_epoch_finished boolean, <pk columns>
 *	cdc:
 *		split_id varchar PRIMARY KEY, <pk columns>, backfill_finished boolean,
 *		row_count bigint, cdc_offset jsonb
 *
 * The keys touched by upstream writes while it backfills go to
 * backfill.changes_<job_id>: written by a row trigger on the upstream
 * (no_shuffle, arrangement), by the same trigger with the row's image as of
 * the snapshot epoch (snapshot), or decoded from the write-ahead log through
 * the job's replication slot (cdc).
 *
 * src/catalog.c	 create_job, loading a job, the job lock
 * src/capture.c	 the capture and apply triggers on the upstream
 * src/state.c		 decoding the state table, the recovery check
 * src/executor.c	 one barrier: changes, snapshot chunks, state
 * src/sink.c		 inserting a chunk's rows downstream in batches
 * src/snapshot.c	 the snapshot kind: reading as of the snapshot epoch, the log store
 * src/cdc.c		 the cdc kind: the replication slot, fetching its changes
 * src/decode.c		 the logical decoding output plugin of the cdc kind
 * src/run.c		 run_job: the barrier loop, one transaction per barrier
 * src/vnode.c		 the vnode of a key
 * src/privilege.c	 acting as the job's owner or as the extension's owner
 * src/jobs.c		 the catalog writes of the SQL functions
 * src/ddl.c		 DDL on a job's tables that is refused
 * src/shmem.c		 the registry of background workers, launching them
 * src/worker.c		 the actor workers and the launcher
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_H
#define BACKFILL_H

#include "access/attnum.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/rel.h"
#include "utils/palloc.h"

/* RisingWave's vnode count, kept for compatibility (VirtualNode::COUNT) */
#define BACKFILL_VNODE_COUNT 256

/* upper bound of parallelism: one actor per vnode */
#define BACKFILL_MAX_PARALLELISM BACKFILL_VNODE_COUNT

/* the schema the extension lives in (backfill.control: relocatable = false) */
#define BACKFILL_SCHEMA "backfill"

/* field4 of the advisory lock tag that marks a job as being run or changed */
#define BACKFILL_LOCK_FIELD4 0x6266

/* field4 of the advisory lock tag that guards a cdc job's replication slot */
#define BACKFILL_SLOT_LOCK_FIELD4 0x6267

typedef enum BackfillKind
{
	BACKFILL_KIND_NO_SHUFFLE,	/* legacy: cannot resume */
	BACKFILL_KIND_ARRANGEMENT,	/* per-vnode progress, resumes */
	BACKFILL_KIND_SNAPSHOT,
	BACKFILL_KIND_CDC
} BackfillKind;

/*
 * The progress of one vnode, as decoded from its state row.  A vnode without
 * a row is "not started": no position, not finished, no rows.
 */
typedef struct VnodeState
{
	bool		present;		/* a state row exists */
	bool		finished;		/* backfill_finished */
	bool		has_pos;		/* current_pos is not NULL */
	Datum	   *pos;			/* current_pos, npk values */
	bool	   *pos_null;
	int64		row_count;
	int64		epoch;			/* snapshot kind: the epoch of row_count */
	bool		dirty;			/* changed since the last persisted barrier */
} VnodeState;

typedef struct BackfillActor
{
	int32		actor_id;
	int			vnode_start;	/* inclusive */
	int			vnode_end;		/* inclusive */

	/* snapshot kind: the log store phase (snapshot.c) */
	bool		in_log_store;	/* consumes the log store */
	bool		caught_up;		/* its last log store barrier found little */
	int64		lag_ms;			/* age of the oldest change it last consumed */
} BackfillActor;

/*
 * A job as loaded by run_job.  Lives in the run's memory context, which
 * survives the commit of each barrier.
 */
typedef struct BackfillJob
{
	int64		job_id;
	char	   *job_name;
	BackfillKind kind;
	char	   *status;
	Oid			owner;
	Oid			upstream;
	Oid			downstream;
	Oid			state_table;
	Oid			change_table;
	int32		fragment_id;
	int			chunk_size;
	int			rate_limit;		/* rows/s per actor; 0 paused; -1 none */
	bool		background;		/* run_mode 'background' */
	int64		epoch;			/* of the last barrier, any actor */
	int64		snapshot_epoch; /* snapshot kind: the epoch it reads as of */
	bool		has_cdc_offset; /* cdc kind: the state row has an offset */
	uint64		cdc_offset;		/* cdc kind: its LSN */
	int32		runs;

	/* SQL names, quoted and schema-qualified, fixed for the run */
	char	   *upstream_sql;
	char	   *downstream_sql;
	char	   *state_sql;
	char	   *changes_sql;

	/* output columns (quoted, comma-separated) and the key */
	char	   *columns_sql;
	int			ncols;
	char	  **col_names;		/* unquoted */
	int			npk;
	char	  **pk_names;		/* unquoted */
	Oid		   *pk_types;
	char	   *search_path;	/* to plan and run the job's SQL under */

	int			nactors;
	BackfillActor *actors;

	VnodeState	vnodes[BACKFILL_VNODE_COUNT];
} BackfillJob;

/* what an actor worker gets in bgw_extra (shmem.c writes, worker.c reads) */
typedef struct ActorArgs
{
	int64		job_id;
	int32		actor_id;
	Oid			dboid;			/* database */
	Oid			owner;			/* the job's owner, whom the worker runs as */
} ActorArgs;

/* backfill.c */
extern int	backfill_barrier_interval_ms;

/* what a change of the current role saved (privilege.c) */
typedef struct RoleContext
{
	Oid			save_userid;
	int			save_sec_context;
	int			guc_level;		/* -1 when the search_path was not pinned */
} RoleContext;

/* kinds that store one position and one count for all of an actor's vnodes */
#define BACKFILL_KIND_ONE_POSITION(kind) \
	((kind) == BACKFILL_KIND_NO_SHUFFLE || (kind) == BACKFILL_KIND_CDC)

/* catalog.c */
extern const char *backfill_kind_name(BackfillKind kind);
extern BackfillJob *backfill_load_job(int64 job_id, MemoryContext cxt);
extern void backfill_lock_job(int64 job_id, bool session);
extern void backfill_unlock_job(int64 job_id);
extern void backfill_wait_job_lock(int64 job_id);
extern void backfill_lock_job_shared(int64 job_id);
extern void backfill_unlock_job_shared(int64 job_id);
extern bool backfill_job_lock_held(int64 job_id);
extern bool backfill_job_lock_mine(int64 job_id);
extern int	backfill_pin_search_path(BackfillJob *job);
extern void backfill_unpin_search_path(int level);
extern Oid	backfill_job_owner(int64 job_id);
extern Oid	backfill_job_upstream(int64 job_id);
extern Datum backfill_job_column(int64 job_id, const char *column, bool *isnull);
extern BackfillJob *backfill_load_job_to_run(int64 job_id, MemoryContext cxt);
extern void backfill_fail_job(BackfillJob *job, int sqlerrcode,
							  const char *message, const char *detail);
extern char *backfill_pk_list(BackfillJob *job, const char *alias);

/* capture.c */
extern void backfill_assert_triggers(BackfillJob *job);

/* state.c */
extern void backfill_load_state(BackfillJob *job);
extern void backfill_recovery_check(BackfillJob *job);
extern char *backfill_pos_text(BackfillJob *job, VnodeState *vs);
extern void backfill_append_record_field(StringInfo buf, const char *value);
extern void backfill_state_error(BackfillJob *job, const char *field,
								 const char *detail) pg_attribute_noreturn();

/* executor.c */
typedef struct BarrierExecutor BarrierExecutor;
extern BarrierExecutor *backfill_executor_create(BackfillJob *job);
extern void backfill_executor_free(BarrierExecutor *exec);
extern bool backfill_all_finished(BackfillJob *job);
extern bool backfill_actor_finished(BackfillJob *job, int actor);
extern bool backfill_job_finished_everywhere(BackfillJob *job);
extern int64 backfill_run_barrier(BarrierExecutor *exec, int actor, int interval_ms,
								  int rate_limit);
extern bool backfill_run_finish_barrier(BarrierExecutor *exec);
extern void backfill_reload_settings(BackfillJob *job);
extern bool backfill_names_changed(BackfillJob *job);
extern BarrierExecutor *backfill_executor_refresh(BarrierExecutor *exec);
extern void backfill_sleep_ms(long ms);
extern int64 backfill_next_epoch(int64 previous);
extern bool backfill_needs_fetch(BackfillJob *job);
extern void backfill_run_fetch(BarrierExecutor *exec);
extern void backfill_after_finish(BackfillJob *job);

/* privilege.c */
extern void backfill_catalog_enter(RoleContext *rc);
extern void backfill_owner_enter(Oid owner, bool pin_search_path, RoleContext *rc);
extern void backfill_role_leave(RoleContext *rc);
extern void backfill_check_job_owner(int64 job_id, Oid owner);
extern bool backfill_may_write_catalogs(void);

/* jobs.c */
extern Oid	backfill_require_job_owner(int64 job_id);

/* vnode.c: the hash functions of a key's types, looked up once */
typedef struct VnodeHasher
{
	int			nkeys;
	FmgrInfo	procs[FUNC_MAX_ARGS];
} VnodeHasher;

extern void backfill_vnode_hasher_init(VnodeHasher *hasher, int nkeys,
									   const Oid *types, MemoryContext cxt);
extern int16 backfill_vnode_of(VnodeHasher *hasher, const Datum *values,
							   const bool *isnull);

/* cdc.c */
extern char *backfill_slot_name(int64 job_id);
extern void backfill_cdc_check_create(Relation upstream, int parallelism);
extern void backfill_cdc_drop_slot(int64 job_id);
extern void backfill_cdc_lock_slot(int64 job_id);
extern void backfill_cdc_origin_enter(int64 job_id);
extern void backfill_cdc_origin_leave(void);

/* run.c */
extern bool backfill_prepare_run(BackfillJob *job, bool background);
extern void backfill_commit(void);
extern void backfill_next_barrier(bool with_snapshot);

/* shmem.c */
extern bool backfill_preloaded;
extern void backfill_shmem_init(void);
extern void backfill_launch_job(BackfillJob *job, bool from_launcher);
extern bool backfill_stop_workers(int64 job_id, bool immediate);
extern bool backfill_stop_requested(int64 job_id);
extern bool backfill_claim_prepare(int64 job_id);
extern void backfill_finish_prepare(int64 job_id, bool ok);
extern void backfill_unclaim_prepare(int64 job_id);
extern bool backfill_wait_prepared(int64 job_id);
extern void backfill_attach_worker(int64 job_id, int32 actor_id);
extern void backfill_worker_locked_job(void);

/* worker.c */
extern char *backfill_database;
extern void backfill_register_launcher(void);

#endif							/* BACKFILL_H */

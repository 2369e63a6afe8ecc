/*-------------------------------------------------------------------------
 *
 * job.h
 *	  What the files of the remote cdc kind share among themselves: the
 *	  kind's state of a job (RemoteJob, job.c), its key conditions
 *	  (KeyCond, keys.c), the change stream (fetch.c, apply.c), and the
 *	  callbacks that kind_remote.c gathers in the kind's routine.
 *
 * Only the files of kinds/remote/ include this; everything else reaches
 * the kind through its routine (kinds/kind.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_KINDS_REMOTE_JOB_H
#define BACKFILL_KINDS_REMOTE_JOB_H

#include "access/xlogdefs.h"
#include "executor/spi.h"

#include "kinds/kind.h"
#include "remote/remote.h"

/* splits per actor create_job aims at */
#define BACKFILL_REMOTE_SPLITS_PER_ACTOR 8

/* messages one fetch peeks at most */
#define BACKFILL_REMOTE_FETCH_CHANGES 20000

/*
 * fetches one after_finish makes at most in a background worker, which calls
 * it again after checking whether it is asked to stop (driver.c)
 */
#define BACKFILL_REMOTE_FOLLOW_FETCHES 50

/* keys read again from the source per statement */
#define BACKFILL_REMOTE_REFETCH_BATCH 500

/*
 * A part of the job's upstream: the foreign table itself, or one of the
 * foreign partitions of a sharded upstream (a partitioned table whose
 * leaves are foreign tables), with the server it is read from.
 */
typedef struct RemotePart
{
	Oid			relid;			/* the foreign table here */
	RemoteTable table;			/* where it lives */
	int			source;			/* its server, an index into sources */
	char	   *constraint_sql; /* sharded: its partition constraint, else NULL */
} RemotePart;

/* a server the job reads: its slot, publication and offset are its own */
typedef struct RemoteSource
{
	Oid			serverid;
	char	   *server_name;
} RemoteSource;

/* what the kind keeps for a job: its splits, its sources, its statements */
typedef struct RemoteJob
{
	BackfillJob *job;
	bool		sharded;		/* the upstream is partitioned */
	int			nparts;
	RemotePart *parts;
	int			nsources;
	RemoteSource *sources;
	char	   *name;			/* of the slot and the publication, on each source */
	int			nsplits;
	char	  **bounds;			/* nsplits - 1 inner bounds, text; NULL between parts */
	int		   *split_part;		/* per split, its part */
	char	  **key_types;		/* per key column, its type's name */
	char	  **col_types;		/* per column */
	int		   *pk_cols;		/* per key column, its index in the columns */

	/* per actor: its splits, the current one, its position in it */
	int		   *first_split;
	int		   *end_split;		/* exclusive */
	char	 ***pos;			/* NULL: the current split is not started */
	bool	   *full;			/* a split finished in this barrier */
	bool		indexes_built;	/* seen built once: they stay so for the run */

	/* per split: the offsets of its reading */
	XLogRecPtr *low;
	XLogRecPtr *high;

	SPIPlanPtr	apply_plan;
	SPIPlanPtr	insert_plan;
	SPIPlanPtr	persist_plan;
	KeptPlans  *plans;
} RemoteJob;

/* job.c: names and splits */
extern char *remote_object_name(int64 job_id, bool prefix_only);
extern int	split_vnode(RemoteJob *rj, int actor, int j);
extern char *split_lo(RemoteJob *rj, int j);
extern char *split_hi(RemoteJob *rj, int j);
extern RemotePart *part_of_split(RemoteJob *rj, int j);
extern RemoteJob *remote_job_make(BackfillJob *job);
extern SPIPlanPtr remote_plan(RemoteJob *rj, const char *sql, int nargs, Oid *types);
extern RemoteConn *remote_source_connect(RemoteJob *rj, int source);
extern RemoteConn *remote_job_connect(RemoteJob *rj);

/* keys.c: key conditions, for the source (literals) or here (parameters) */
typedef struct KeyCond
{
	StringInfoData sql;
	RemoteConn *conn;			/* literals for it, or NULL: parameters */
	int			nparams;
	Datum		values[2 * INDEX_MAX_KEYS + 4];
	Oid			types[2 * INDEX_MAX_KEYS + 4];
} KeyCond;

extern void cond_value(KeyCond *kc, const char *value, const char *type);
extern void cond_compare(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, char **key,
						 bool one_column);
extern void cond_key(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, char **key);
extern void cond_bound(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy,
					   const char *bound);
extern void cond_range(KeyCond *kc, RemoteJob *rj, const char *alias, int j, char **after,
					   char **upto);
extern void spi_cond(KeyCond *kc, const char *sql, int expected);

/* fetch.c: the change stream, fetched */
extern void prepare_insert(RemoteJob *rj);
extern XLogRecPtr ensure_slot(RemoteJob *rj, RemoteConn *conn, int source, bool has_offset);
extern void sweep_orphans(RemoteConn *conn, Oid serverid);
extern void store_changes(RemoteJob *rj, RemoteDecoder *dec, XLogRecPtr offset, uint64 xmax);
extern bool committed_offset(RemoteJob *rj, int source, XLogRecPtr *offset);
extern bool snapshot_sees_offset(RemoteJob *rj, int source, bool has_offset, XLogRecPtr offset);
extern void record_offset(RemoteJob *rj, int source, XLogRecPtr offset, XLogRecPtr source_end,
						  TimestampTz commit_time);
extern void decode_messages(RemoteJob *rj, int source, RemoteRows *rows, RemoteDecoder *dec);
extern bool fetch_once(RemoteJob *rj, bool first, bool tolerant);

/* apply.c: the change stream, applied */
extern void prepare_apply(RemoteJob *rj);
extern void refetch(RemoteJob *rj, SPITupleTable *tuptable, uint64 nkeys);
extern void apply_changes(RemoteJob *rj, int actor);

/* the callbacks of the kind's routine (kind_remote.c), by file */

/* create.c: create_job */
extern int	remote_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations);
extern void remote_check_shape(Relation upstream, const JobShape *shape, bool into_existing);
extern void remote_check_create(Relation upstream, int parallelism);
extern void remote_create_state_table(const JobDefinition *def);
extern void remote_after_create(const JobDefinition *def);

/* state.c: the state table */
extern void remote_load_state(BackfillJob *job);
extern void prepare_persist(RemoteJob *rj);
extern void remote_persist(BarrierExecutor *exec);
extern void remote_update_actor(BarrierExecutor *exec, BackfillActor *actor);
extern bool remote_finished_everywhere(BackfillJob *job);
extern void remote_recount_actors(int64 job_id, const char *state_sql);
extern char *remote_state_query(const char *state_sql, const char *position);
extern List *remote_splits(const JobView *job);

/* chunk.c: the snapshot reads */
extern int64 remote_read_chunk(BarrierExecutor *exec, VnodeGroup *group, int64 limit);
extern bool remote_barrier_full(BarrierExecutor *exec, int actor);

/* stream.c: the change stream's callbacks */
extern bool remote_fetch(BarrierExecutor *exec);
extern void remote_barrier_changes(BarrierExecutor *exec, int first, int last,
								   TimestampTz deadline);
extern void remote_final_changes(BarrierExecutor *exec);
extern void remote_after_finish(int64 job_id);
extern void remote_drop_objects(int64 job_id);

/* verify.c: verify_job */
extern void remote_verify_source(const VerifyJob *job, VerifySource *source);

/* unfetched.c: the keys of the changes the job has not fetched, for verify_job */
extern List *remote_unfetched_keys(int64 job_id, const char *since_text);
extern Datum remote_verify_unfetched(const VerifyJob *job, bool *isnull);

#endif							/* BACKFILL_KINDS_REMOTE_JOB_H */

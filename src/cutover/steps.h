/*-------------------------------------------------------------------------
 *
 * steps.h
 *	  The steps backfill.cutover() and backfill.rollback_cutover() share
 *	  with finish_cutover (steps.c, job_row.c, arguments.c, attempts.c,
 *	  record.c), what cutover() checks before it locks anything
 *	  (start_checks.c, old_name.c, irreversible.c), and the gate of
 *	  cutover(verify => true) (verify_gate.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_STEPS_H
#define BACKFILL_CUTOVER_STEPS_H

#include "access/htup.h"
#include "fmgr.h"

/* a job's row, as the caller sees it (cutover_get_job) */
typedef struct CutoverJobRow
{
	int64		job_id;
	Datum		job;			/* backfill.job */
	Oid			job_type;
	Oid			upstream;
	Oid			downstream;
	Oid			owner;
	char	   *status;
	bool		remote;
	bool		into_existing;
} CutoverJobRow;

/* what the attempts (attempts.c) did */
typedef struct CutoverSwapped
{
	int32		tries;
	double		lock_held_ms;
	bool		lock_held_null;
	Datum		to_validate;	/* oid[] */
	bool		to_validate_null;
} CutoverSwapped;

/* job_row.c */
extern Datum cutover_get_job(int64 job_id, bool job_null, Oid *type);
extern void cutover_read_job(CutoverJobRow *job, bool job_null);

/* steps.c */
extern void cutover_job_id_query(const char *sql, int64 job_id);
extern int	cutover_job_query(const char *sql, CutoverJobRow *job, Oid arg_type, Datum arg,
							  bool arg_null);
extern void cutover_swap_attempts(CutoverJobRow *job, const char *new_name,
								  FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg,
								  CutoverSwapped *swapped);
extern char *cutover_ms_text(CutoverSwapped *swapped);
extern char *cutover_rel_name(Oid relid);
extern char *cutover_state_words(const char *state);

/* attempts.c */
extern void cutover_attempts(const int64 *job_id, Oid src, Oid dst, const char *src_new_name,
							 FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg,
							 CutoverSwapped *swapped);

/* start_checks.c */
extern void cutover_check_not_cut_over(CutoverJobRow *job);
extern void cutover_check_swap(CutoverJobRow *job);
extern char *cutover_check_local(CutoverJobRow *job, Datum accept, bool accept_null,
								 const char *old_name);

/* arguments.c */
extern void cutover_lock_arguments(Datum lock_timeout, bool lock_timeout_null, int32 attempts,
								   bool attempts_null);
extern void cutover_require_read_committed(const char *function);
extern void cutover_refuse_null(FunctionCallInfo fcinfo, int argno, const char *name);
extern void cutover_check_arguments(FunctionCallInfo fcinfo, int timeout_arg, int attempts_arg);

/* old_name.c */
extern char *cutover_old_name(CutoverJobRow *job, text *given);

/* irreversible.c */
extern char *cutover_irreversible(HeapTupleHeader job);

/* record_checks.c: the checks of a cutover row, and of its tables' owners */
extern void cutover_require_table_owner(Oid relid, const char *argname, bool missing_ok);
extern void cutover_check_record_arguments(const Datum *values, const bool *nulls);

/* record.c */
extern void cutover_record(const Datum *values, const bool *nulls);
extern void cutover_record_attempts(Datum *values, bool *nulls, const CutoverSwapped *swapped);

/* report.c */
extern void cutover_report(int64 job_id, const char *what);

/* verify_gate.c */
extern void cutover_verify_gate(int64 job_id);

#endif							/* BACKFILL_CUTOVER_STEPS_H */

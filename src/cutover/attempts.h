/*-------------------------------------------------------------------------
 *
 * attempts.h
 *	  One cutover's attempts (attempts.c): their arguments
 *	  (attempt_arguments.c), one attempt (attempt_once.c), and what they
 *	  say (attempt_lines.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_ATTEMPTS_H
#define BACKFILL_CUTOVER_ATTEMPTS_H

#include "backfill.h"

/* one cutover's attempts: its arguments, and what the attempts found */
typedef struct Attempts
{
	int64		job_id;
	bool		job_null;
	Oid			src;			/* InvalidOid: NULL */
	Oid			dst;
	const char *src_new_name;	/* NULL: NULL */
	char	   *timeout_ms;		/* lock_timeout in ms, as text; NULL: NULL */
	char	   *attempts;		/* as text; NULL: NULL */
	int32		max_tries;
	int32		tries;
	double		line_every_us;	/* between two lines of the wait */
	TimestampTz wait_began;
	TimestampTz told_at;
	TimestampTz locked_at;
	Datum		to_validate;	/* the swap's result, in the caller's context */
	MemoryContext caller;
} Attempts;

/* attempt_arguments.c */
extern double backfill_attempt_line_interval(void);
extern void backfill_attempt_read_arguments(Attempts *a, const int64 *job_id, Oid src, Oid dst,
											const char *src_new_name, FunctionCallInfo fcinfo,
											int timeout_arg, int attempts_arg);

/* attempt_once.c: one attempt, whether it swapped */
extern bool backfill_attempt_try_once(Attempts *a, const char *saved);

/* attempt_lines.c */
extern void backfill_attempt_report(Attempts *a, const char *what);
extern char *backfill_attempt_rel(Oid relid);
extern void backfill_attempt_failed(Attempts *a, bool deadlock);
extern void backfill_attempt_give_up(Attempts *a);

#endif							/* BACKFILL_CUTOVER_ATTEMPTS_H */

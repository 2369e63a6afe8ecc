/*-------------------------------------------------------------------------
 *
 * verify_changed.h
 *	  verify_job(job, 'changed'): what its two files share.
 *	  verify_changed.c is the method; verify_changed_ranges.c cuts its
 *	  ranges of keys.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_VERIFY_CHANGED_H
#define BACKFILL_API_VERIFY_CHANGED_H

#include "api/verify.h"
#include "copy/key_ranges.h"

/*
 * A range cut anew holds at least this many times range_rows keys; one to
 * be compared again that held more (a table that grows at its end grows its
 * last range) is cut in four times as many parts first.  There are at most
 * CHANGED_MAX_RANGES ranges.
 */
#define CHANGED_RANGE_FACTOR 16
#define CHANGED_MAX_RANGES 4096

/* a call: the job's sides and what is kept of them */
typedef struct Changed
{
	const VerifyPlan *plan;
	VerifyState *state;
	int			nupstream;		/* the first relations are the upstream's */
	Oid			types[FUNC_MAX_ARGS];	/* the key's */
	KeyRanges	order_u;		/* under each side's collations */
	KeyRanges	order_d;
	bool		recut;			/* ranges were cut in parts: all renumbered */
	bool	   *parts;			/* then, the parts: the page lists name them all */
	bool	   *rechecked;
} Changed;

/* verify_changed_ranges.c */
extern void verify_cut_ranges(Changed *ch);
extern Datum *verify_bound_keys(Changed *ch);
extern void verify_cut_large_ranges(Changed *ch, bool **compare);

#endif							/* BACKFILL_API_VERIFY_CHANGED_H */

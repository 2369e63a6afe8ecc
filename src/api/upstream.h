/*-------------------------------------------------------------------------
 *
 * upstream.h
 *	  Which tables may be an upstream, and its key (upstream.c): what
 *	  create_job (create.c) and estimate_job (estimate.c) share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_API_UPSTREAM_H
#define BACKFILL_API_UPSTREAM_H

#include "storage/lockdefs.h"
#include "utils/acl.h"
#include "utils/relcache.h"

#include "backfill.h"

extern Relation backfill_open_upstream(Oid upstream_oid, LOCKMODE lockmode,
									   const AclMode *needed, int nneeded, bool foreign);
extern int	backfill_upstream_key(Relation rel, AttrNumber **attnums, Oid **collations);
extern void backfill_check_key_hashable(Relation rel, int npk, const AttrNumber *pk, const char *why,
										const char *hint);

#endif							/* BACKFILL_API_UPSTREAM_H */

/*-------------------------------------------------------------------------
 *
 * carry_internal.h
 *	  What the files of the cutover's carry functions share (their SPI
 *	  steps are queries.c's): what a materialized view made again gets of
 *	  the old one (matview_parts.c), and the renames of partitions that
 *	  follow their table's name (partitions_of.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_CARRY_INTERNAL_H
#define BACKFILL_CUTOVER_CARRY_INTERNAL_H

#include "cutover/queries.h"

/* one materialized view to make again, as _cutover_matviews printed it */
typedef struct Matview
{
	Oid			old;
	char	   *schema;
	char	   *name;
	char	   *owner;
	char	   *options;
	char	   *tablespace;
	char	   *query;
	bool		populated;
	int			nth;			/* its place in the array, from 0 */
} Matview;

extern void cutover_matview_owner_and_acl(const Matview *mv, Oid fresh);
extern void cutover_matview_comments(const Matview *mv, Oid fresh, Datum matviews);
extern void cutover_matview_indexes(const Matview *mv, Datum matviews);
extern void cutover_matview_fill(const Matview *mv, Oid fresh, Oid dst);

extern char *cutover_renamed_partition(const char *relname, const char *before,
									   const char *after);
extern void cutover_rename_partitions_of(Oid rel, const char *before, const char *after);

#endif							/* BACKFILL_CUTOVER_CARRY_INTERNAL_H */

/*-------------------------------------------------------------------------
 *
 * carry_internal.h
 *	  What the files of the cutover's carry functions share: the small SPI
 *	  steps (carry_spi.c: a catalog query run with the snapshot its SQL
 *	  version ran with, a statement run as the caller, a name as a
 *	  statement prints it), what a materialized view made again gets of
 *	  the old one (matview_parts.c), and the renames of partitions that
 *	  follow their table's name (partitions_of.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_CARRY_INTERNAL_H
#define BACKFILL_CUTOVER_CARRY_INTERNAL_H

#include "executor/spi.h"

extern void cutover_query(const char *sql, bool read_only, Oid src, Oid dst);
extern void cutover_run(const char *sql);
extern char *cutover_regclass(Oid relid);
extern char *cutover_text(int row, int col);
extern Oid	cutover_oid(int row, int col);

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

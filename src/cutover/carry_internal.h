/*-------------------------------------------------------------------------
 *
 * carry_internal.h
 *	  What the files of the cutover's carry functions share (their SPI
 *	  steps are queries.c's): the materialized views printed and read back
 *	  (matview_definitions.c), what a materialized view made again gets of
 *	  the old one (matview_parts.c), the privileges (carry_acl.c,
 *	  acl_items.c), the functions of the row type and the subscriptions
 *	  (carry_functions.c, carry_subscriptions.c), the renames of
 *	  partitions that follow their table's name (partitions_of.c), and the
 *	  pairs of partitions of the swap's two tables, with their names and
 *	  their indexes' names (partition_pair_names.c,
 *	  partition_index_names.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef BACKFILL_CUTOVER_CARRY_INTERNAL_H
#define BACKFILL_CUTOVER_CARRY_INTERNAL_H

#include "access/htup.h"
#include "utils/acl.h"
#include "utils/relcache.h"

#include "cutover/queries.h"

/* one materialized view to make again, as cutover_matviews printed it */
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

/* matview_definitions.c: the materialized views printed, and read back */
extern Datum cutover_matviews(Oid src, bool *isnull);
extern Matview *cutover_read_matviews(Datum matviews, int *n);

/* carry_matviews.c, carry_sequences.c, matview_parts.c */
extern void cutover_carry_matviews(Oid src, Oid dst, Datum matviews);
extern void cutover_carry_identity(Oid src, Oid dst);
extern void cutover_matview_owner_and_acl(const Matview *mv, Oid fresh);
extern void cutover_matview_comments(const Matview *mv, Oid fresh, Datum matviews);
extern void cutover_matview_indexes(const Matview *mv, Datum matviews);
extern void cutover_matview_fill(const Matview *mv, Oid fresh, Oid dst);

/* carry_acl.c, acl_items.c */
extern void cutover_copy_acl(Oid src, Oid dst);
extern Acl *cutover_tuple_acl(HeapTuple tuple, TupleDesc desc, int attno);
extern void cutover_replace_acl(Relation catalog, HeapTuple tuple, int attno, Acl *acl,
								Oid dst, int32 subid, Oid owner);
extern void cutover_copy_column_acls(Oid src, Oid dst, Oid owner, int natts);

/* a row type and its array type, and the new table's (function_retype.c) */
typedef struct CutoverTypeMap
{
	Oid			from_row;
	Oid			from_array;
	Oid			to_row;
	Oid			to_array;
} CutoverTypeMap;

/* same_row_type.c */
extern bool cutover_same_row_type(Oid src, Oid dst);

/* function_retype.c */
extern void cutover_retype_function(Relation pg_proc, Oid procoid, const CutoverTypeMap *map);

/* carry_functions.c, carry_subscriptions.c */
extern void cutover_carry_functions(Oid src, Oid dst);
extern void cutover_carry_subscriptions(Oid src, Oid dst);

/* partitions_of.c */
extern char *cutover_renamed_partition(const char *relname, const char *before,
									   const char *after);
extern void cutover_rename_partitions_of(Oid rel, const char *before, const char *after);

/* one partition of src with the one of dst of the same bounds */
typedef struct PartitionPair
{
	Oid			old_part;
	Oid			new_part;
	char	   *name;			/* old_part's name before the renames */
	char	   *new_name;		/* new_part's name before the renames */
	char	   *schema;			/* old_part's schema */
} PartitionPair;

/* partition_pair_names.c, partition_index_names.c */
extern PartitionPair *cutover_partition_pairs(Oid src, Oid dst, int *n);
extern void cutover_swap_index_names(const PartitionPair *pair);

#endif							/* BACKFILL_CUTOVER_CARRY_INTERNAL_H */

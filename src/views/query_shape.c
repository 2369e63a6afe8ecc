/*-------------------------------------------------------------------------
 *
 * query_shape.c
 *	  Whether a query can be the definition of a view job, and the
 *	  downstream's key it gives.
 *
 * The query is one SELECT over local tables (plain or partitioned, each
 * with a key as a table job's upstream has one, lib/key_index.c), joined by
 * inner or left joins, with any immutable filter, projection, GROUP BY,
 * HAVING, aggregates or DISTINCT.  A barrier computes again, from the live
 * tables, the rows a change touches: the join rows of the changed keys, the
 * groups of the changed rows; so whatever those constructs compute comes
 * out exact, and no state of the query's own is kept.  What cannot be
 * computed again row by row, or would give another result each time, is
 * refused at creation with an error that names it (0A000): a subquery, a
 * WITH, a set operation, a window function, a set-returning function in the
 * select list, LIMIT, OFFSET, ORDER BY, FOR UPDATE, DISTINCT ON, grouping
 * sets, a function that is not immutable, a right or full join, and any
 * relation that is not a table with a key (a view, a function, VALUES).
 *
 * The downstream's key: for a join (or one table) without aggregates, the
 * key columns of every table, taken from the select list where the query
 * selects them and added, hidden, where it does not; a table on the
 * nullable side of a left join has NULL there for an unmatched row, so
 * those key columns may be NULL.  For GROUP BY or aggregates, the group
 * key (every GROUP BY expression must be selected; no GROUP BY: one row).
 * For DISTINCT, every output column.
 *
 * The query is analyzed as its caller, who will own the job, in a
 * security-restricted operation: analysis runs no user code but a type's
 * input function for a literal, and that runs with the rights a query of
 * the job's would run it with.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/prep.h"
#include "parser/analyze.h"
#include "parser/parser.h"
#include "parser/parsetree.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "lib/lib.h"
#include "views/views.h"

/* refuse a construct of the query, by name */
static void
refuse(const char *construct, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("the query of a view job cannot use %s", construct),
			 errdetail("A view job computes again, from the live tables, the rows each change touches."),
			 hint ? errhint("%s", hint) : 0));
}

/* the one SELECT of the text, raw */
static RawStmt *
parse_one_select(const char *text)
{
	List	   *raw = raw_parser(text, RAW_PARSE_DEFAULT);
	RawStmt    *stmt;

	if (list_length(raw) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a view job must be one SELECT statement"),
				 errdetail("The text holds %d statements.", list_length(raw))));
	stmt = linitial_node(RawStmt, raw);
	if (!IsA(stmt->stmt, SelectStmt))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a view job must be one SELECT statement")));
	if (((SelectStmt *) stmt->stmt)->intoClause != NULL)
		refuse("SELECT INTO", "Give the downstream's name to the job instead.");
	return stmt;
}

/* analyze as the caller, in a security-restricted operation */
static Query *
analyze_as_caller(RawStmt *raw, const char *text)
{
	RoleContext rc;
	Query	   *query;

	backfill_owner_enter(GetUserId(), false, &rc);
	query = parse_analyze_fixedparams(raw, text, NULL, 0, NULL);
	backfill_role_leave(&rc);
	return query;
}

/* the constructs of the query itself, before its relations */
static void
check_constructs(Query *q)
{
	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a view job must be one SELECT statement")));
	if (q->cteList != NIL)
		refuse("WITH", "Write the common table expression into the query's FROM clause as a join.");
	if (q->setOperations != NULL)
		refuse("UNION, INTERSECT or EXCEPT", "Make one view job per branch.");
	if (q->hasSubLinks)
		refuse("a subquery", "Write it as a join.");
	if (q->hasWindowFuncs)
		refuse("a window function", NULL);
	if (q->hasTargetSRFs)
		refuse("a set-returning function in the select list", NULL);
	if (q->limitCount != NULL || q->limitOffset != NULL)
		refuse("LIMIT or OFFSET", NULL);
	if (q->sortClause != NIL)
		refuse("ORDER BY", "A table has no order: order the rows where you read them.");
	if (q->rowMarks != NIL)
		refuse("FOR UPDATE or FOR SHARE", NULL);
	if (q->hasDistinctOn)
		refuse("DISTINCT ON", NULL);
	if (q->groupingSets != NIL)
		refuse("GROUPING SETS, CUBE or ROLLUP", "Make one view job per grouping.");
	if (contain_mutable_functions((Node *) q))
		refuse("a function that is not immutable",
			   "The result of the query must depend on the tables' rows alone: a barrier computes it again later.");
}

/* the names of the key columns of a table with a key, which rel is */
static List *
key_column_names(Relation rel)
{
	Oid			indexoid = backfill_key_index(rel);
	HeapTuple	tup;
	Form_pg_index index;
	List	   *names = NIL;

	if (!OidIsValid(indexoid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table %s has no key a view job can use", RelationGetRelationName(rel)),
				 errdetail("A view job reads each of its tables in key order, as a table job reads its upstream."),
				 errhint("Add a primary key to the table.")));
	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for index %u", indexoid);
	index = (Form_pg_index) GETSTRUCT(tup);
	for (int i = 0; i < index->indnkeyatts; i++)
		names = lappend(names, get_attname(RelationGetRelid(rel), index->indkey.values[i], false));
	ReleaseSysCache(tup);
	return names;
}

/* one relation of the range table: a table with a key */
static ViewUpstream *
upstream_of(RangeTblEntry *rte, Index rtindex)
{
	ViewUpstream *up = palloc0(sizeof(ViewUpstream));
	Relation	rel;

	switch (rte->rtekind)
	{
		case RTE_RELATION:
			break;
		case RTE_SUBQUERY:
			refuse("a subquery", "Write it as a join.");
			break;
		case RTE_FUNCTION:
		case RTE_TABLEFUNC:
			refuse("a function in the FROM clause", NULL);
			break;
		case RTE_VALUES:
			refuse("VALUES", NULL);
			break;
		default:
			refuse("this kind of FROM item", NULL);
	}
	if (rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(rte->relid)),
				 errdetail("A view job reads local tables, whose changes it captures; a view, a materialized view or a foreign table is none."),
				 errhint("Name the tables it reads in the query instead.")));
	if (rte->relkind == RELKIND_RELATION && rte->inh && has_subclass(rte->relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("table %s has inheritance children", get_rel_name(rte->relid)),
				 errdetail("A view job captures the changes of the table itself, not of its children."),
				 errhint("Name it with ONLY, or make its children partitions of a partitioned table.")));
	/* the job reads it as its owner, who is the caller */
	if (pg_class_aclcheck(rte->relid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(rte->relid));
	rel = table_open(rte->relid, AccessShareLock);
	up->relid = rte->relid;
	up->alias = pstrdup(rte->eref->aliasname);
	up->rtindex = rtindex;
	up->key_columns = key_column_names(rel);
	table_close(rel, NoLock);
	return up;
}

/* mark the tables under a node of the join tree nullable */
static void
mark_nullable(Node *node, bool *nullable)
{
	int			varno = -1;
	Relids		rels = get_relids_in_jointree(node, false);

	while ((varno = bms_next_member(rels, varno)) >= 0)
		nullable[varno] = true;
}

/* walk the join tree: the join types, and the nullable side of each left join */
static void
walk_joins(Query *q, Node *node, bool *nullable, bool *outer)
{
	if (node == NULL || IsA(node, RangeTblRef))
		return;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) node)->fromlist)
			walk_joins(q, lfirst(lc), nullable, outer);
		return;
	}
	if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		switch (j->jointype)
		{
			case JOIN_INNER:
				break;
			case JOIN_LEFT:
				mark_nullable(j->rarg, nullable);
				*outer = true;
				break;
			case JOIN_RIGHT:
				refuse("a RIGHT JOIN", "Write it as a LEFT JOIN, its tables the other way round.");
				break;
			default:
				refuse("a FULL JOIN", NULL);
		}
		walk_joins(q, j->larg, nullable, outer);
		walk_joins(q, j->rarg, nullable, outer);
		return;
	}
	elog(ERROR, "unrecognized node type: %d", (int) nodeTag(node));
}

/* the tables of the query, with what the join tree says of each */
static List *
collect_upstreams(Query *q, bool *outer)
{
	bool	   *nullable = palloc0(sizeof(bool) * (list_length(q->rtable) + 1));
	List	   *ups = NIL;
	ListCell   *lc;
	Index		rtindex = 0;

	walk_joins(q, (Node *) q->jointree, nullable, outer);
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);
		ViewUpstream *up;

		rtindex++;
		if (rte->rtekind == RTE_JOIN)
			continue;
		up = upstream_of(rte, rtindex);
		up->nullable = nullable[rtindex];
		ups = lappend(ups, up);
	}
	if (ups == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("the query of a view job must read at least one table")));
	return ups;
}

/* a downstream key column */
static ViewKeyColumn *
key_column(const char *name, const char *expression, bool hidden, bool nullable)
{
	ViewKeyColumn *col = palloc0(sizeof(ViewKeyColumn));

	col->name = pstrdup(name);
	col->expression = pstrdup(expression);
	col->hidden = hidden;
	col->nullable = nullable;
	return col;
}

/* the output column that is the column attno of table rtindex itself, or NULL */
static TargetEntry *
selected_column(Query *q, Index rtindex, AttrNumber attno)
{
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (!tle->resjunk && IsA(var, Var) && var->varno == rtindex &&
			var->varattno == attno && var->varlevelsup == 0)
			return tle;
	}
	return NULL;
}

/* every table's key, selected or hidden */
static List *
rows_key(Query *q, List *upstreams)
{
	List	   *key = NIL;
	ListCell   *lc,
			   *lc2;

	foreach(lc, upstreams)
	{
		ViewUpstream *up = lfirst(lc);

		foreach(lc2, up->key_columns)
		{
			char	   *col = lfirst(lc2);
			TargetEntry *tle = selected_column(q, up->rtindex,
											   get_attnum(up->relid, col));
			char	   *expr = psprintf("%s.%s", quote_identifier(up->alias),
										quote_identifier(col));

			if (tle != NULL)
				key = lappend(key, key_column(tle->resname, expr, false, up->nullable));
			else
			{
				char	   *name = psprintf("_bf_%s_%s", up->alias, col);

				name[pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1)] = '\0';
				key = lappend(key, key_column(name, expr, true, up->nullable));
			}
		}
	}
	return key;
}

/* the group key: every GROUP BY expression, selected */
static List *
groups_key(Query *q)
{
	List	   *key = NIL;
	ListCell   *lc;

	foreach(lc, q->groupClause)
	{
		SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
		TargetEntry *tle = get_sortgroupclause_tle(sgc, q->targetList);

		if (tle->resjunk)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("every GROUP BY expression of a view job's query must be selected"),
					 errdetail("The group key is the downstream's key."),
					 errhint("Add the expression to the select list.")));
		key = lappend(key, key_column(tle->resname, tle->resname, false, true));
	}
	return key;
}

/* every output column */
static List *
distinct_key(Query *q)
{
	List	   *key = NIL;
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (!tle->resjunk)
			key = lappend(key, key_column(tle->resname, tle->resname, false, true));
	}
	return key;
}

/* the output columns' names, each once: they name the downstream's columns */
static void
check_output_names(Query *q)
{
	List	   *seen = NIL;
	ListCell   *lc;

	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		ListCell   *lc2;

		if (tle->resjunk)
			continue;
		foreach(lc2, seen)
			if (strcmp(lfirst(lc2), tle->resname) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" is selected twice by the query of a view job",
								tle->resname),
						 errdetail("Each output column is a column of the downstream."),
						 errhint("Give each output column a name of its own with AS.")));
		seen = lappend(seen, tle->resname);
	}
}

/*
 * backfill_view_shape
 *		The shape of query_text as a view job's definition, or an error
 *		that names what it cannot be.
 */
ViewShape *
backfill_view_shape(const char *query_text)
{
	ViewShape  *shape = palloc0(sizeof(ViewShape));
	Query	   *q = analyze_as_caller(parse_one_select(query_text), query_text);

	check_constructs(q);
	check_output_names(q);
	shape->query = q;
	shape->upstreams = collect_upstreams(q, &shape->has_outer_join);
	if (q->distinctClause != NIL &&
		(q->hasAggs || q->groupClause != NIL || q->havingQual != NULL))
		refuse("DISTINCT with GROUP BY or aggregates", "Group by the columns DISTINCT would compare.");
	if (q->hasAggs || q->groupClause != NIL || q->havingQual != NULL)
	{
		shape->kind = VIEW_SHAPE_GROUPS;
		shape->key = groups_key(q);
	}
	else if (q->distinctClause != NIL)
	{
		shape->kind = VIEW_SHAPE_DISTINCT;
		shape->key = distinct_key(q);
	}
	else
	{
		shape->kind = VIEW_SHAPE_ROWS;
		shape->key = rows_key(q, shape->upstreams);
	}
	return shape;
}

/* what the shape computes, in a word for EXPLAIN-like output */
const char *
backfill_view_shape_name(const ViewShape *shape)
{
	switch (shape->kind)
	{
		case VIEW_SHAPE_ROWS:
			return list_length(shape->upstreams) > 1 ? "join" : "rows";
		case VIEW_SHAPE_GROUPS:
			return "groups";
		case VIEW_SHAPE_DISTINCT:
			return "distinct";
	}
	return "?";
}

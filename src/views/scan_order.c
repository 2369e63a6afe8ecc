/*-------------------------------------------------------------------------
 *
 * scan_order.c
 *	  The order in which a view job scans its tables: each to its end
 *	  before the next starts, as RisingWave's backfill order does.
 *
 * A join whose tables are all scanned at once computes, at each barrier,
 * the join of what each scan has reached: a fact row whose dimension row
 * is not reached yet is computed again once it is.  Scanning the dimension
 * tables first (the tables joined on their whole key) makes each fact row
 * join what it will join in the end the first time it is read, so nothing
 * is computed twice, and the work of a barrier is bounded by its chunk.
 *
 * backfill_order is RisingWave's: 'auto' (or NULL) takes the tables joined
 * on their key first, in the query's order, then the others;
 * 'fixed(a -> b -> c)' names every table of the query once, by the name
 * the query gives it (its alias, else its name), in the order to scan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"

#include "views/views.h"

/* the table at range table index rtindex */
static ViewUpstream *
upstream_at(List *upstreams, Index rtindex)
{
	ListCell   *lc;

	foreach(lc, upstreams)
	{
		ViewUpstream *up = lfirst(lc);

		if (up->rtindex == rtindex)
			return up;
	}
	return NULL;
}

/* a Var under its implicit casts, or NULL */
static Var *
plain_var(Node *node)
{
	while (node && IsA(node, RelabelType))
		node = (Node *) ((RelabelType *) node)->arg;
	return node && IsA(node, Var) && ((Var *) node)->varlevelsup == 0 ? (Var *) node : NULL;
}

/* a column of up equated with a column of another table: note it in covered */
static void
note_equality(List *upstreams, Var *var, Var *other, Bitmapset **covered)
{
	ViewUpstream *up = upstream_at(upstreams, var->varno);

	if (up == NULL || other->varno == var->varno)
		return;
	covered[var->varno] = bms_add_member(covered[var->varno], var->varattno);
}

/* the top-level equalities of quals between two tables' columns */
static void
collect_equalities(List *upstreams, Node *quals, Bitmapset **covered)
{
	if (quals == NULL)
		return;
	if (IsA(quals, List))
	{
		ListCell   *lc;

		foreach(lc, (List *) quals)
			collect_equalities(upstreams, lfirst(lc), covered);
	}
	else if (is_andclause(quals))
		collect_equalities(upstreams, (Node *) ((BoolExpr *) quals)->args, covered);
	else if (IsA(quals, OpExpr) && list_length(((OpExpr *) quals)->args) == 2)
	{
		OpExpr	   *op = (OpExpr *) quals;
		Var		   *l = plain_var(linitial(op->args));
		Var		   *r = plain_var(lsecond(op->args));
		char	   *name = get_opname(op->opno);

		if (l && r && name && strcmp(name, "=") == 0)
		{
			note_equality(upstreams, l, r, covered);
			note_equality(upstreams, r, l, covered);
		}
	}
}

/* the quals of the join tree: its joins' ON clauses and the WHERE clause */
static void
join_tree_equalities(List *upstreams, Node *node, Bitmapset **covered)
{
	if (node == NULL || IsA(node, RangeTblRef))
		return;
	if (IsA(node, FromExpr))
	{
		ListCell   *lc;

		collect_equalities(upstreams, ((FromExpr *) node)->quals, covered);
		foreach(lc, ((FromExpr *) node)->fromlist)
			join_tree_equalities(upstreams, lfirst(lc), covered);
	}
	else if (IsA(node, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) node;

		collect_equalities(upstreams, j->quals, covered);
		join_tree_equalities(upstreams, j->larg, covered);
		join_tree_equalities(upstreams, j->rarg, covered);
	}
}

/* mark the tables an equality with another table covers the whole key of */
static void
mark_joined_on_key(ViewShape *shape)
{
	Bitmapset **covered = palloc0(sizeof(Bitmapset *) * (list_length(shape->query->rtable) + 1));
	ListCell   *lc,
			   *lc2;

	join_tree_equalities(shape->upstreams, (Node *) shape->query->jointree, covered);
	foreach(lc, shape->upstreams)
	{
		ViewUpstream *up = lfirst(lc);

		up->joined_on_key = list_length(shape->upstreams) > 1;
		foreach(lc2, up->key_columns)
			if (!bms_is_member(get_attnum(up->relid, lfirst(lc2)), covered[up->rtindex]))
				up->joined_on_key = false;
	}
}

/* the tables joined on their key first, then the others, each in the query's order */
static List *
auto_order(ViewShape *shape)
{
	List	   *ordered = NIL;
	ListCell   *lc;

	foreach(lc, shape->upstreams)
		if (((ViewUpstream *) lfirst(lc))->joined_on_key)
			ordered = lappend(ordered, lfirst(lc));
	foreach(lc, shape->upstreams)
		if (!((ViewUpstream *) lfirst(lc))->joined_on_key)
			ordered = lappend(ordered, lfirst(lc));
	return ordered;
}

/* a refusal of a backfill_order */
static void
bad_order(const char *order, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid backfill order \"%s\"", order),
			 errdetail("%s", detail),
			 errhint("Use 'auto', or 'fixed(a -> b)' naming every table of the query once, as the query names it.")));
}

/* the tables in the order 'fixed(a -> b -> ...)' names them */
static List *
fixed_order(ViewShape *shape, const char *order)
{
	size_t		len = strlen(order);
	char	   *names;
	List	   *ordered = NIL;
	char	   *name;
	char	   *save;

	if (len < 7 || pg_strncasecmp(order, "fixed(", 6) != 0 || order[len - 1] != ')')
		bad_order(order, "It is neither auto nor fixed(...).");
	names = pnstrdup(order + 6, len - 7);
	for (name = strtok_r(names, ">", &save); name; name = strtok_r(NULL, ">", &save))
	{
		char	   *trimmed = name;
		char	   *end;
		ViewUpstream *found = NULL;
		ListCell   *lc;

		while (*trimmed == ' ')
			trimmed++;
		end = trimmed + strlen(trimmed);
		while (end > trimmed && (end[-1] == ' ' || end[-1] == '-'))
			*--end = '\0';
		foreach(lc, shape->upstreams)
			if (strcmp(((ViewUpstream *) lfirst(lc))->alias, trimmed) == 0)
				found = lfirst(lc);
		if (found == NULL)
			bad_order(order, psprintf("The query reads no table it names \"%s\".", trimmed));
		if (list_member_ptr(ordered, found))
			bad_order(order, psprintf("It names \"%s\" twice.", trimmed));
		ordered = lappend(ordered, found);
	}
	if (list_length(ordered) != list_length(shape->upstreams))
		bad_order(order, "It does not name every table of the query.");
	return ordered;
}

/*
 * backfill_view_scan_order
 *		Order shape->upstreams as backfill_order says (NULL: auto) and number
 *		them from 1.
 */
void
backfill_view_scan_order(ViewShape *shape, const char *backfill_order)
{
	ListCell   *lc;
	int			n = 0;

	mark_joined_on_key(shape);
	if (backfill_order == NULL || pg_strcasecmp(backfill_order, "auto") == 0)
		shape->upstreams = auto_order(shape);
	else
		shape->upstreams = fixed_order(shape, backfill_order);
	foreach(lc, shape->upstreams)
		((ViewUpstream *) lfirst(lc))->scan_order = ++n;
}

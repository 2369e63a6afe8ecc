/*-------------------------------------------------------------------------
 *
 * keys.c
 *	  The conditions on a remote job's keys: a split's range, a position in
 *	  it, given keys; written for the source (literals, quoted by libpq) or
 *	  for this server (parameters).
 *
 * A KeyCond gathers the text of a condition and, for this server, its
 * parameters (text, cast to the key columns' types).  Here, the keys are
 * compared with the operators of the key types' btree classes, as every
 * comparison of keys in this server's SQL is written (sql.c); for the
 * source, with the operators' names, which its own catalogs resolve.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"

#include "kinds/remote/job.h"
#include "lib/lib.h"

void
cond_value(KeyCond *kc, const char *value, const char *type)
{
	if (kc->conn != NULL)
		appendStringInfo(&kc->sql, "%s::%s", backfill_remote_literal(kc->conn, value), type);
	else
	{
		kc->values[kc->nparams] = CStringGetTextDatum(value);
		kc->types[kc->nparams] = TEXTOID;
		appendStringInfo(&kc->sql, "$%d::%s", ++kc->nparams, type);
	}
}

/*
 * AND (alias.k1, ...) op (key), or for its first column only (one_column).
 * Here, with the operators of the key types' btree classes, as every
 * comparison of keys in this server's SQL is written (sql.c); for the
 * source, with the operators' names, which its own catalogs resolve.
 */
void
cond_compare(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, char **key,
			 bool one_column)
{
	static const char *const names[] = {"", "<", "<=", "=", ">=", ">"};
	BackfillJob *job = rj->job;
	int			n = one_column ? 1 : job->npk;
	char	  **left = backfill_pk_exprs(job, alias);
	char	  **right = palloc(sizeof(char *) * n);
	StringInfoData saved = kc->sql;

	for (int k = 0; k < n; k++)
	{
		initStringInfo(&kc->sql);
		cond_value(kc, key[k], rj->key_types[k]);
		right[k] = kc->sql.data;
	}
	kc->sql = saved;
	if (kc->conn == NULL)
		appendStringInfo(&kc->sql, " AND %s",
						 backfill_key_compare_types(n, job->pk_types, left, strategy, right));
	else
	{
		appendStringInfoString(&kc->sql, " AND (");
		for (int k = 0; k < n; k++)
			appendStringInfo(&kc->sql, "%s%s", k > 0 ? ", " : "", left[k]);
		appendStringInfo(&kc->sql, ") %s (", names[strategy]);
		for (int k = 0; k < n; k++)
			appendStringInfo(&kc->sql, "%s%s", k > 0 ? ", " : "", right[k]);
		appendStringInfoChar(&kc->sql, ')');
	}
}

/* AND (alias.k1, ...) op (key) */
void
cond_key(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, char **key)
{
	cond_compare(kc, rj, alias, strategy, key, false);
}

/* AND alias.k1 op bound, when there is a bound */
void
cond_bound(KeyCond *kc, RemoteJob *rj, const char *alias, int strategy, const char *bound)
{
	char	   *key[1];

	if (bound == NULL)
		return;
	key[0] = (char *) bound;
	cond_compare(kc, rj, alias, strategy, key, true);
}

/* "true" and the conditions of a key range of split j */
void
cond_range(KeyCond *kc, RemoteJob *rj, const char *alias, int j, char **after, char **upto)
{
	initStringInfo(&kc->sql);
	appendStringInfoString(&kc->sql, "true");
	cond_bound(kc, rj, alias, BTGreaterEqualStrategyNumber, split_lo(rj, j));
	cond_bound(kc, rj, alias, BTLessStrategyNumber, split_hi(rj, j));
	if (after != NULL)
		cond_key(kc, rj, alias, BTGreaterStrategyNumber, after);
	if (upto != NULL)
		cond_key(kc, rj, alias, BTLessEqualStrategyNumber, upto);
}

void
spi_cond(KeyCond *kc, const char *sql, int expected)
{
	backfill_spi_exec_args(sql, kc->nparams, kc->types, kc->values, NULL, expected);
}

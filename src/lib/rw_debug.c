/*-------------------------------------------------------------------------
 *
 * rw_debug.c
 *	  PostgreSQL values printed as RisingWave prints its own with {:?}.
 *
 * RisingWave's error texts format rows with Rust's derived Debug: the legacy
 * backfill's "current_pos={:?}" of an Option<OwnedRow> prints
 * Some(OwnedRow([Some(Int64(96322))])), or None.  Each datum is None or
 * Some(<ScalarImpl variant>(<the value's Debug form>)), the variant being
 * the one RisingWave stores a column of that type in:
 *
 *	int2, int4, int8		Int16(7), Int32(7), Int64(7)
 *	oid						Int64(7), as RisingWave's PostgreSQL source reads it
 *	boolean					Bool(true)
 *	real, double precision	Float32(1.5), Float64(1e16): Rust's shortest
 *							form, exponential below 1e-4 and from 1e16 on
 *	numeric					Decimal(Normalized(1.50)), Decimal(NaN),
 *							Decimal(PositiveInf), Decimal(NegativeInf)
 *	date					Date(2024-01-31), chrono's form
 *	time					Time(12:30:00.250)
 *	timestamp				Timestamp(2024-01-31T12:30:00)
 *	timestamptz				Timestamptz(1706704200000000): microseconds
 *							since 1970-01-01 00:00 UTC
 *	interval				Interval(Interval { months: 1, days: 2, usecs: 3 })
 *	bytea					Bytea([0, 255])
 *	text, varchar			Utf8("a\"b"), with Rust's escapes
 *	arrays					List([Some(Int32(1)), None]), nested per dimension
 *	composite types			Struct(StructValue { fields: [Some(Int32(1))] })
 *
 * A domain prints as its base type.  Every other type (uuid, char(n),
 * jsonb, enums, ...), and a value RisingWave's type cannot hold (an
 * infinite date or timestamp, time 24:00:00, a year chrono cannot
 * represent, a numeric beyond rust_decimal's 28 digits of scale or 96 bits
 * of mantissa), prints as Utf8 of its PostgreSQL text form, as RisingWave's
 * PostgreSQL source reads uuid and char(n).
 *
 * Strings are escaped as Rust's Debug of str escapes them: \0 \t \r \n \\
 * \", and \u{hex} for control characters, combining marks (PostgreSQL's
 * table of them), format characters, separators other than the ASCII
 * space, private-use characters, noncharacters and the unassigned planes 4
 * to 14.  Unassigned code points inside planes 0 to 3 print as they are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "common/shortest_dec.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/datetime.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/typcache.h"

#include "backfill.h"
#include "lib/lib.h"

/* chrono's NaiveDate range (chrono 0.4.44, as RisingWave builds it) */
#define CHRONO_MIN_YEAR (-262143)
#define CHRONO_MAX_YEAR 262142

/* rust_decimal: at most 28 digits of scale, a mantissa below 2^96 */
#define RUST_DECIMAL_MAX_SCALE 28
#define RUST_DECIMAL_MAX_MANTISSA "79228162514264337593543950335"

struct mbinterval
{
	unsigned int first;
	unsigned int last;
};

/* combining marks (Mn, Me): Rust escapes them as grapheme extenders */
#include "common/unicode_combining_table.h"

/*
 * Format characters (Cf), separators (Zs, Zl, Zp) and private use (Co)
 * above U+009F, from Unicode 14.0, the version of PostgreSQL 15's tables:
 * Rust's Debug escapes them as not printable.
 */
static const struct mbinterval not_printable[] = {
	{0x00A0, 0x00A0}, {0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C},
	{0x06DD, 0x06DD}, {0x070F, 0x070F}, {0x0890, 0x0891}, {0x08E2, 0x08E2},
	{0x1680, 0x1680}, {0x180E, 0x180E}, {0x2000, 0x200F}, {0x2028, 0x202F},
	{0x205F, 0x2064}, {0x2066, 0x206F}, {0x3000, 0x3000}, {0xE000, 0xF8FF},
	{0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB}, {0x110BD, 0x110BD},
	{0x110CD, 0x110CD}, {0x13430, 0x13438}, {0x1BCA0, 0x1BCA3},
	{0x1D173, 0x1D17A},
};

static void append_datum(StringInfo buf, Datum value, bool isnull, Oid typid,
						 bool owned);

static bool
in_table(pg_wchar c, const struct mbinterval *table, int n)
{
	int			lo = 0;
	int			hi = n - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (c < table[mid].first)
			hi = mid - 1;
		else if (c > table[mid].last)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* whether Rust's Debug of str writes the character as \u{hex} */
static bool
rust_escapes(pg_wchar c)
{
	if (c < 0x20 || (c >= 0x7F && c < 0xA0))
		return true;
	if (c < 0x7F)
		return false;
	if ((c >= 0xFDD0 && c <= 0xFDEF) || (c & 0xFFFE) == 0xFFFE)
		return true;			/* noncharacters */
	if (c >= 0x40000)
		return true;			/* unassigned, tags, variation selectors, private use */
	return in_table(c, combining, lengthof(combining)) ||
		in_table(c, not_printable, lengthof(not_printable));
}

/* "..." as Rust's Debug of str writes it; s is in the server's encoding */
static void
append_rust_str(StringInfo buf, const char *s)
{
	const unsigned char *p = (const unsigned char *) pg_server_to_any(s, strlen(s), PG_UTF8);

	appendStringInfoChar(buf, '"');
	while (*p)
	{
		int			len = pg_utf_mblen(p);
		pg_wchar	c;

		/* not UTF-8 (SQL_ASCII): U+FFFD, as String::from_utf8_lossy */
		if (strnlen((const char *) p, len) < len || !pg_utf8_islegal(p, len))
		{
			appendStringInfoString(buf, "\xEF\xBF\xBD");
			p++;
			continue;
		}
		c = utf8_to_unicode(p);
		switch (c)
		{
			case '\0':
				appendStringInfoString(buf, "\\0");
				break;
			case '\t':
				appendStringInfoString(buf, "\\t");
				break;
			case '\r':
				appendStringInfoString(buf, "\\r");
				break;
			case '\n':
				appendStringInfoString(buf, "\\n");
				break;
			case '\\':
				appendStringInfoString(buf, "\\\\");
				break;
			case '"':
				appendStringInfoString(buf, "\\\"");
				break;
			default:
				if (rust_escapes(c))
					appendStringInfo(buf, "\\u{%x}", c);
				else
					appendBinaryStringInfo(buf, (const char *) p, len);
		}
		p += len;
	}
	appendStringInfoChar(buf, '"');
}

/* Utf8 of the value's text form: the rule for what has no counterpart */
static void
append_as_text(StringInfo buf, Datum value, Oid typid)
{
	Oid			outfunc;
	bool		isvarlena;

	getTypeOutputInfo(typid, &outfunc, &isvarlena);
	appendStringInfoString(buf, "Utf8(");
	append_rust_str(buf, OidOutputFunctionCall(outfunc, value));
	appendStringInfoChar(buf, ')');
}

static void
append_zeros(StringInfo buf, int n)
{
	for (int i = 0; i < n; i++)
		appendStringInfoChar(buf, '0');
}

/*
 * A finite float as Rust's {:?} writes it: the shortest digits that read
 * back as the same value (PostgreSQL's shortest output has the same
 * digits), exponential when exp is set, else with at least one decimal.
 */
static void
append_rust_float(StringInfo buf, const char *shortest, bool exp)
{
	const char *p = shortest;
	char		digits[64];
	int			ndigits = 0;
	int			point = -1;		/* digits before the decimal point */
	int			start;

	if (*p == '-')
		appendStringInfoChar(buf, *p++);
	for (; *p && *p != 'e'; p++)
	{
		if (*p == '.')
			point = ndigits;
		else if (ndigits < (int) sizeof(digits) - 1)
			digits[ndigits++] = *p;
	}
	digits[ndigits] = '\0';
	if (point < 0)
		point = ndigits;
	if (*p == 'e')
		point += atoi(p + 1);
	/* value = 0.<digits> * 10^point, without leading or trailing zeros */
	for (start = 0; start < ndigits && digits[start] == '0'; start++)
		point--;
	while (ndigits > start && digits[ndigits - 1] == '0')
		ndigits--;
	digits[ndigits] = '\0';
	if (start == ndigits)
	{
		appendStringInfoString(buf, "0.0");
		return;
	}
	if (exp)
	{
		appendStringInfoChar(buf, digits[start]);
		if (ndigits - start > 1)
			appendStringInfo(buf, ".%s", digits + start + 1);
		appendStringInfo(buf, "e%d", point - 1);
	}
	else if (point <= 0)
	{
		appendStringInfoString(buf, "0.");
		append_zeros(buf, -point);
		appendStringInfoString(buf, digits + start);
	}
	else if (point >= ndigits - start)
	{
		appendStringInfoString(buf, digits + start);
		append_zeros(buf, point - (ndigits - start));
		appendStringInfoString(buf, ".0");
	}
	else
		appendStringInfo(buf, "%.*s.%s", point, digits + start, digits + start + point);
}

static void
append_float8(StringInfo buf, double d)
{
	char		shortest[DOUBLE_SHORTEST_DECIMAL_LEN];

	if (isnan(d))
		appendStringInfoString(buf, "NaN");
	else if (isinf(d))
		appendStringInfoString(buf, d < 0 ? "-inf" : "inf");
	else
	{
		double_to_shortest_decimal_buf(d, shortest);
		append_rust_float(buf, shortest,
						  (d != 0 && fabs(d) < 1e-4) || fabs(d) >= 1e16);
	}
}

static void
append_float4(StringInfo buf, float f)
{
	char		shortest[FLOAT_SHORTEST_DECIMAL_LEN];

	if (isnan(f))
		appendStringInfoString(buf, "NaN");
	else if (isinf(f))
		appendStringInfoString(buf, f < 0 ? "-inf" : "inf");
	else
	{
		float_to_shortest_decimal_buf(f, shortest);
		append_rust_float(buf, shortest,
						  (f != 0 && fabsf(f) < 1e-4f) || fabsf(f) >= 1e16f);
	}
}

/* Decimal(...), or false when rust_decimal cannot hold the value */
static bool
append_decimal(StringInfo buf, Datum value)
{
	char	   *text = DatumGetCString(DirectFunctionCall1(numeric_out, value));
	const char *digits = text + (text[0] == '-');
	const char *dot = strchr(digits, '.');
	int			scale = dot ? (int) strlen(dot + 1) : 0;
	StringInfoData mantissa;

	if (strcmp(text, "NaN") == 0)
		appendStringInfoString(buf, "Decimal(NaN)");
	else if (strcmp(text, "Infinity") == 0)
		appendStringInfoString(buf, "Decimal(PositiveInf)");
	else if (strcmp(text, "-Infinity") == 0)
		appendStringInfoString(buf, "Decimal(NegativeInf)");
	else
	{
		initStringInfo(&mantissa);
		for (const char *p = digits; *p; p++)
			if (*p != '.' && (mantissa.len > 0 || *p != '0'))
				appendStringInfoChar(&mantissa, *p);
		if (scale > RUST_DECIMAL_MAX_SCALE ||
			mantissa.len > (int) strlen(RUST_DECIMAL_MAX_MANTISSA) ||
			(mantissa.len == (int) strlen(RUST_DECIMAL_MAX_MANTISSA) &&
			 strcmp(mantissa.data, RUST_DECIMAL_MAX_MANTISSA) > 0))
			return false;
		appendStringInfo(buf, "Decimal(Normalized(%s))", text);
	}
	return true;
}

/* chrono's Debug of a NaiveDate; false outside chrono's range */
static bool
append_chrono_date(StringInfo buf, int days)
{
	int			year;
	int			month;
	int			day;

	j2date(days + POSTGRES_EPOCH_JDATE, &year, &month, &day);
	if (year < CHRONO_MIN_YEAR || year > CHRONO_MAX_YEAR)
		return false;
	if (year >= 0 && year <= 9999)
		appendStringInfo(buf, "%04d-%02d-%02d", year, month, day);
	else
		appendStringInfo(buf, "%+05d-%02d-%02d", year, month, day);
	return true;
}

/* chrono's Debug of a NaiveTime of microseconds since midnight */
static void
append_chrono_time(StringInfo buf, int64 usecs)
{
	int64		secs = usecs / USECS_PER_SEC;
	int			frac = (int) (usecs % USECS_PER_SEC);

	appendStringInfo(buf, "%02d:%02d:%02d", (int) (secs / 3600), (int) (secs / 60 % 60),
					 (int) (secs % 60));
	if (frac != 0 && frac % 1000 == 0)
		appendStringInfo(buf, ".%03d", frac / 1000);
	else if (frac != 0)
		appendStringInfo(buf, ".%06d", frac);
}

/* Timestamp(...), or false when chrono cannot hold it */
static bool
append_timestamp(StringInfo buf, Timestamp ts)
{
	int64		days = ts / USECS_PER_DAY;
	int64		usecs = ts % USECS_PER_DAY;
	int			len = buf->len;

	if (TIMESTAMP_NOT_FINITE(ts))
		return false;
	if (usecs < 0)
	{
		days--;
		usecs += USECS_PER_DAY;
	}
	appendStringInfoString(buf, "Timestamp(");
	if (!append_chrono_date(buf, (int) days))
	{
		buf->len = len;
		buf->data[len] = '\0';
		return false;
	}
	appendStringInfoChar(buf, 'T');
	append_chrono_time(buf, usecs);
	appendStringInfoChar(buf, ')');
	return true;
}

/* List([...]) of the elements of dimensions dim.., from *next on */
static void
append_list(StringInfo buf, int ndim, const int *dims, int dim, Datum *elems,
			bool *nulls, int *next, Oid elemtype)
{
	appendStringInfoString(buf, "List([");
	for (int i = 0; i < (ndim == 0 ? 0 : dims[dim]); i++)
	{
		if (i > 0)
			appendStringInfoString(buf, ", ");
		if (dim + 1 < ndim)
		{
			appendStringInfoString(buf, "Some(");
			append_list(buf, ndim, dims, dim + 1, elems, nulls, next, elemtype);
			appendStringInfoChar(buf, ')');
		}
		else
		{
			append_datum(buf, elems[*next], nulls[*next], elemtype, false);
			(*next)++;
		}
	}
	appendStringInfoString(buf, "])");
}

static void
append_array(StringInfo buf, Datum value, Oid elemtype)
{
	ArrayType  *array = DatumGetArrayTypeP(value);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			nelems;
	int			next = 0;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign, &elems, &nulls, &nelems);
	append_list(buf, ARR_NDIM(array), ARR_DIMS(array), 0, elems, nulls, &next, elemtype);
}

/*
 * Struct(...): an owned StructValue prints its fields as a derived Debug,
 * one inside a list (a StructRef) prints them bare
 */
static void
append_struct(StringInfo buf, Datum value, bool owned)
{
	HeapTupleHeader rec = DatumGetHeapTupleHeader(value);
	TupleDesc	desc = lookup_rowtype_tupdesc(HeapTupleHeaderGetTypeId(rec),
											  HeapTupleHeaderGetTypMod(rec));
	HeapTupleData tuple;
	Datum	   *values = palloc(sizeof(Datum) * Max(desc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(desc->natts, 1));
	int			n = 0;

	tuple.t_len = HeapTupleHeaderGetDatumLength(rec);
	ItemPointerSetInvalid(&tuple.t_self);
	tuple.t_tableOid = InvalidOid;
	tuple.t_data = rec;
	heap_deform_tuple(&tuple, desc, values, nulls);

	appendStringInfoString(buf, owned ? "Struct(StructValue { fields: [" : "Struct(");
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		if (n++ > 0)
			appendStringInfoString(buf, ", ");
		append_datum(buf, values[i], nulls[i], att->atttypid, owned);
	}
	appendStringInfoString(buf, owned ? "] })" : ")");
	ReleaseTupleDesc(desc);
}

/* the scalar of a non-NULL value: owned is false for a list's elements */
static void
append_scalar(StringInfo buf, Datum value, Oid typid, bool owned)
{
	Oid			base = getBaseType(typid);
	Oid			elemtype;

	switch (base)
	{
		case INT2OID:
			appendStringInfo(buf, "Int16(%d)", DatumGetInt16(value));
			return;
		case INT4OID:
			appendStringInfo(buf, "Int32(%d)", DatumGetInt32(value));
			return;
		case INT8OID:
			appendStringInfo(buf, "Int64(" INT64_FORMAT ")", DatumGetInt64(value));
			return;
		case OIDOID:
			appendStringInfo(buf, "Int64(%u)", DatumGetObjectId(value));
			return;
		case BOOLOID:
			appendStringInfo(buf, "Bool(%s)", DatumGetBool(value) ? "true" : "false");
			return;
		case FLOAT4OID:
			appendStringInfoString(buf, "Float32(");
			append_float4(buf, DatumGetFloat4(value));
			appendStringInfoChar(buf, ')');
			return;
		case FLOAT8OID:
			appendStringInfoString(buf, "Float64(");
			append_float8(buf, DatumGetFloat8(value));
			appendStringInfoChar(buf, ')');
			return;
		case NUMERICOID:
			if (append_decimal(buf, value))
				return;
			break;
		case DATEOID:
			if (!DATE_NOT_FINITE(DatumGetDateADT(value)))
			{
				int			len = buf->len;

				appendStringInfoString(buf, "Date(");
				if (append_chrono_date(buf, DatumGetDateADT(value)))
				{
					appendStringInfoChar(buf, ')');
					return;
				}
				buf->len = len;
				buf->data[len] = '\0';
			}
			break;
		case TIMEOID:
			if (DatumGetTimeADT(value) < USECS_PER_DAY)
			{
				appendStringInfoString(buf, "Time(");
				append_chrono_time(buf, DatumGetTimeADT(value));
				appendStringInfoChar(buf, ')');
				return;
			}
			break;
		case TIMESTAMPOID:
			if (append_timestamp(buf, DatumGetTimestamp(value)))
				return;
			break;
		case TIMESTAMPTZOID:
			if (!TIMESTAMP_NOT_FINITE(DatumGetTimestampTz(value)))
			{
				appendStringInfo(buf, "Timestamptz(" INT64_FORMAT ")",
								 DatumGetTimestampTz(value) +
								 (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
				return;
			}
			break;
		case INTERVALOID:
			{
				Interval   *iv = DatumGetIntervalP(value);

				appendStringInfo(buf, "Interval(Interval { months: %d, days: %d, usecs: " INT64_FORMAT " })",
								 iv->month, iv->day, iv->time);
				return;
			}
		case BYTEAOID:
			{
				bytea	   *b = DatumGetByteaPP(value);
				const unsigned char *p = (const unsigned char *) VARDATA_ANY(b);

				appendStringInfoString(buf, "Bytea([");
				for (int i = 0; i < VARSIZE_ANY_EXHDR(b); i++)
					appendStringInfo(buf, "%s%u", i > 0 ? ", " : "", p[i]);
				appendStringInfoString(buf, "])");
				return;
			}
		case TEXTOID:
		case VARCHAROID:
			appendStringInfoString(buf, "Utf8(");
			append_rust_str(buf, TextDatumGetCString(value));
			appendStringInfoChar(buf, ')');
			return;
		default:
			if (type_is_rowtype(base))
			{
				append_struct(buf, value, owned);
				return;
			}
			elemtype = get_element_type(base);
			if (OidIsValid(elemtype) && get_typlen(base) == -1)
			{
				append_array(buf, value, elemtype);
				return;
			}
			break;
	}
	append_as_text(buf, value, base);
}

static void
append_datum(StringInfo buf, Datum value, bool isnull, Oid typid, bool owned)
{
	if (isnull)
	{
		appendStringInfoString(buf, "None");
		return;
	}
	appendStringInfoString(buf, "Some(");
	append_scalar(buf, value, typid, owned);
	appendStringInfoChar(buf, ')');
}

/*
 * backfill_rw_debug_row
 *		RisingWave's {:?} of an Option<OwnedRow>: "None" when !some, else
 *		"Some(OwnedRow([...]))" of the n values, each of its type.
 */
char *
backfill_rw_debug_row(bool some, int n, const Datum *values, const bool *isnull,
					  const Oid *types)
{
	StringInfoData buf;

	if (!some)
		return pstrdup("None");
	initStringInfo(&buf);
	appendStringInfoString(&buf, "Some(OwnedRow([");
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
			appendStringInfoString(&buf, ", ");
		append_datum(&buf, values[i], isnull[i], types[i], true);
	}
	appendStringInfoString(&buf, "]))");
	return buf.data;
}

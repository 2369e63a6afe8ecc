-- The extension installs into schema "backfill" and cannot be relocated.
CREATE EXTENSION backfill;
SELECT extname, extversion, extrelocatable, extnamespace::regnamespace
  FROM pg_extension WHERE extname = 'backfill';
ALTER EXTENSION backfill SET SCHEMA public;
-- For the files that follow: the fields of the error a statement raises,
-- the job's id as N (other files make jobs first), or 'no error'.
CREATE FUNCTION public.job_error(query text, job bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    EXECUTE query;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL,
                            hnt = PG_EXCEPTION_HINT;
    RETURN regexp_replace(concat_ws(E'\n', st || ': ' || msg, 'DETAIL: ' || nullif(det, ''),
                                    'HINT: ' || nullif(hnt, '')),
                          '(job |_job\()' || job || '\M', '\1N', 'g');
END
$$;

-- A key with two live answers replays the newer one.
--
-- Why: an answer is live while `expires_at > now()`, and `now()` is when the retry's
-- transaction began, not when it got its key's lock. At the end of an answer's TTL, a retry
-- that began just before it (answer A still live by its clock) can be served after one that
-- began just after it, found A expired, drew B and stored it. The late retry then found A and
-- B both live and replayed the older, A, while every retry after it got B: the one key
-- answered B, A, B. Replaying the newer keeps every answer from B on the same. Two live
-- answers for one key arise only so; the values of both went out once each.
--
-- The test `idempotency_batches::a_retry_begun_before_its_answer_expired_replays_the_newest_answer`
-- covers it.

CREATE OR REPLACE FUNCTION seqvend.stored_answers(p_owners text[], p_keys text[]) RETURNS TABLE(i integer, request text, status smallint, vals bigint[], runs_first bigint[], runs_last bigint[], lease_expires_at timestamp with time zone)
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    -- PL/pgSQL, not SQL: its plan is kept for the session instead of made on every call.
    RETURN QUERY
    WITH asked AS (
        SELECT u.i::integer AS i, u.o, u.k COLLATE "C" AS k
          FROM unnest(p_owners, p_keys) WITH ORDINALITY AS u(o, k, i)
         WHERE u.k IS NOT NULL
    ), found AS (
        SELECT asked.i, k.request, k.status, k.vals, k.runs_first, k.runs_last,
               k.lease_expires_at, k.created_at
          FROM asked
          JOIN seqvend.idempotency_keys k
            ON k.owner = asked.o AND k.key = asked.k AND k.expires_at > now()
        UNION ALL
        SELECT asked.i, a.requests[p],
               (CASE WHEN a.lasts[p] >= a.firsts[p] THEN 200 ELSE 409 END)::smallint,
               a.vals[a.firsts[p]:a.lasts[p]], NULL, NULL, NULL, a.created_at
          FROM seqvend.vend_answers a
         CROSS JOIN LATERAL generate_subscripts(a.keys, 1) AS p
          JOIN asked ON asked.o = a.owners[p] AND asked.k = a.keys[p]
         WHERE a.keys && ARRAY(SELECT asked.k FROM asked)
           AND a.expires_at > now()
    )
    SELECT DISTINCT ON (f.i) f.i, f.request, f.status, f.vals, f.runs_first, f.runs_last,
           f.lease_expires_at
      FROM found f
     ORDER BY f.i, f.created_at DESC;
END
$$;

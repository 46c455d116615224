-- The purge of stored answers always gets somewhere, however far a token is over its bound.
--
-- Before, a batch row that lost every live answer to the bound was rewritten with all its keys
-- blanked, and kept until it expired (a day by default). Rewriting a row costs a new heap tuple
-- and a GIN entry for each of its slots; and every blanked slot was still counted and unnested
-- by each later purge. Under keyed vends at full speed on one token (25,000 a second here, so a
-- million and a half new answers a minute against the default bound of a million), one purge
-- of 4 million stored answers took 9.3 s, 6.1 s of it rewriting 186,000 rows. That is past
-- the registry's statement timeout (5 s): the purge was cancelled every minute, nothing it did
-- stayed, and the expired answers it deletes first went back with it. Answers piled up for as
-- long as the instances ran.
--
-- Now:
--   1. a row the purge leaves with no live answer is deleted, not rewritten (a row with no key
--      cannot be found by any retry: `stored_answers` and `idempotent_answers` look rows up
--      by key). Only rows that keep some answer, another token's or the boundary's, are
--      rewritten as before;
--   2. expired answers and crowded ones are purged in two transactions (seqvend calls the two
--      functions below one after the other, each whether or not the other failed), so the
--      expired ones go even when the crowded purge fails;
--   3. an answer that has expired but is not deleted yet (see 4) is not counted as one of a
--      token's newest (a retry no longer finds it), so it cannot push live answers beyond the
--      bound;
--   4. an answer is deleted a minute after it expires, not at once: a retry judges expiry by
--      its own transaction's start, and one begun just before its answer expired must still
--      find it when it reads it, after a purge begun later;
--   5. each of those takes the purges' lock (SVPU, 1398165589, 0) without waiting: when
--      another instance's purge holds it, that purge does the work, and this one answers NULL
--      at once rather than holding a connection while it waits.
-- seqvend also gives the purge a statement timeout of its own, longer than a request's
-- (src/registry/idempotency.rs). purge_answers() keeps its meaning for instances of the
-- version before, which call it: both steps in one transaction, waiting for the lock.
CREATE OR REPLACE FUNCTION seqvend.purge_crowded_answers(p_max bigint)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    stored bigint;
    purged bigint;
BEGIN
    -- No token holds more answers than are stored in all.
    SELECT (SELECT coalesce(sum(cardinality(a.keys)), 0) FROM seqvend.vend_answers a)
         + (SELECT count(*) FROM seqvend.idempotency_keys)
      INTO stored;
    IF stored <= p_max THEN
        RETURN 0;
    END IF;

    WITH shares AS (
        -- A token's live answers in one batch row (n of them), or one row of idempotency_keys.
        -- Live: not blanked, and not expired, as a retry finds them (stored_answers).
        SELECT u.owner, a.created_at, a.id, a.ctid AS row, NULL::text AS key, count(*) AS n
          FROM seqvend.vend_answers a, unnest(a.owners, a.keys) AS u(owner, key)
         WHERE u.key IS NOT NULL AND a.expires_at > now()
         GROUP BY u.owner, a.created_at, a.id, a.ctid
        UNION ALL
        SELECT k.owner, k.created_at, NULL, NULL, k.key, 1
          FROM seqvend.idempotency_keys k
         WHERE k.expires_at > now()
    ), kept AS (
        -- How many of each crowded token's shares stay: what still fits under p_max once
        -- the token's newer shares are counted. Ties in time go by the row's id (the same
        -- order in every purge), batch rows before idempotency_keys rows, which go by key.
        SELECT s.owner, s.created_at, s.row, s.key, s.n,
               greatest(0, least(s.n, p_max - ((sum(s.n) OVER newest_first)::bigint - s.n))) AS keep
          FROM shares s
         WHERE s.owner IN (SELECT owner FROM shares GROUP BY owner HAVING sum(n) > p_max)
        WINDOW newest_first AS (PARTITION BY s.owner
                                ORDER BY s.created_at DESC, s.row IS NULL, s.id DESC, s.key
                                ROWS UNBOUNDED PRECEDING)
    ), losing AS (
        -- Each batch row that loses answers, once (a row shared by crowded tokens is folded
        -- first), and whether it loses all it holds: every token's live answers in it.
        SELECT d.row, d.owners, d.keeps, d.gone, d.gone = l.live AS emptied
          FROM (SELECT row, array_agg(owner) AS owners, array_agg(keep) AS keeps,
                       sum(n - keep)::bigint AS gone
                  FROM kept
                 WHERE row IS NOT NULL AND keep < n
                 GROUP BY row) AS d
          JOIN (SELECT row, sum(n)::bigint AS live
                  FROM shares
                 WHERE row IS NOT NULL
                 GROUP BY row) AS l ON l.row = d.row
    ), deleted AS (
        DELETE FROM seqvend.idempotency_keys k
         USING kept d
         WHERE d.row IS NULL AND d.keep = 0 AND k.owner = d.owner AND k.key = d.key
           AND k.created_at = d.created_at
        RETURNING 1
    ), emptied AS (
        DELETE FROM seqvend.vend_answers a
         USING losing d
         WHERE a.ctid = d.row AND d.emptied
        RETURNING d.gone
    ), blanked AS (
        UPDATE seqvend.vend_answers a
           SET keys = seqvend.blank_beyond_newest(a.owners, a.keys, d.owners, d.keeps)
          FROM losing d
         WHERE a.ctid = d.row AND NOT d.emptied
        RETURNING d.gone
    )
    SELECT (SELECT count(*) FROM deleted) + (SELECT coalesce(sum(gone), 0) FROM emptied)
         + (SELECT coalesce(sum(gone), 0) FROM blanked)
      INTO purged;
    RETURN purged;
END
$$;

-- Expired answers, unless another purge is running (NULL: it purges them).
CREATE FUNCTION seqvend.purge_expired_answers_in_turn()
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(1398165589, 0) THEN
        RETURN NULL;
    END IF;
    RETURN seqvend.purge_expired_answers();
END
$$;

-- Each token's answers beyond its newest p_max, unless another purge is running (NULL).
CREATE FUNCTION seqvend.purge_crowded_answers_in_turn(p_max bigint)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF NOT pg_try_advisory_xact_lock(1398165589, 0) THEN
        RETURN NULL;
    END IF;
    RETURN seqvend.purge_crowded_answers(p_max);
END
$$;

-- As in 20261126100300, a minute late (item 4 above).
CREATE OR REPLACE FUNCTION seqvend.purge_expired_answers()
    RETURNS bigint
    LANGUAGE sql
AS $$
    WITH legacy AS (
        DELETE FROM seqvend.idempotency_keys WHERE expires_at <= now() - interval '1 minute'
        RETURNING 1
    ), batched AS (
        DELETE FROM seqvend.vend_answers WHERE expires_at <= now() - interval '1 minute'
        RETURNING cardinality(array_remove(keys, NULL)) AS live
    )
    SELECT (SELECT count(*) FROM legacy) + (SELECT coalesce(sum(live), 0) FROM batched)::bigint
$$;

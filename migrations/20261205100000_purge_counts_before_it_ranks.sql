-- The purge of crowded answers (run every minute by every instance) counts before it ranks.
-- Before, it took every stored key of every answer row apart by subscript, whether or not any
-- token was near its bound: with 750,000 keys stored under a 1,000,000 bound it took 1.9–2.7 s
-- of one core each minute, and strict vends at 2,000 req/s beside it saw a p99 of 44 ms
-- against 11 ms. Now:
--   1. all the answers stored (blanked slots included) bound what any one token holds: when
--      they are within p_max, nothing is read further (about 13 ms for 800,000 keys);
--   2. otherwise, each token's live answers are counted per row (one pass of unnest over the
--      rows' arrays, about 130 ms for 800,000 keys), and only tokens beyond p_max go on;
--   3. their answers are ranked per row, not per key: each row keeps the token's newest
--      answers that still fit under p_max, and only rows that lose some are rewritten.
-- What goes is what went before: each token's answers beyond its newest p_max, newest first
-- by the statement's time and, within one row, by position (the later served later); a lease's
-- or an earlier version's answer (a row of idempotency_keys) comes after a batch row of the
-- same time.
--
-- Rows stored in the same microsecond (created_at is the statement's transaction start) are
-- now ordered by an id of their own. Every purge must rank in the same order, or two purges on
-- either side of a third's rewrite of a row could each keep a different one of two tied rows
-- and blank the other: a token would be left with fewer than p_max answers, and a retry of a
-- blanked key would draw again. A row's physical place (ctid) moves when a purge rewrites it,
-- and a key's position in its row (the old order's tie-break) does not tell two rows apart
-- either. The id is added here without rewriting the table (a default for the rows already
-- stored would, under an exclusive lock, while other instances serve keyed vends); the next
-- migration gives those rows theirs, in a transaction of its own that locks only rows.
--
-- One purge at a time, across instances: each instance purges every minute, and purges that
-- overlap only repeat each other's work and rank rows another purge is rewriting. The purge
-- takes a transaction advisory lock before anything else, SVPU (1398165589, 0), and waits for
-- the one running; the next migration takes the same lock before it touches a row.
--
-- A row of idempotency_keys is deleted only as the purge saw it (its created_at too): an
-- expired key is stored again in place, with a new created_at, and a purge that ranked the
-- old answer must not delete the new one when its DELETE meets the updated row.
CREATE SEQUENCE seqvend.vend_answer_ids AS bigint;
-- ADD COLUMN waits for the table's exclusive lock, and every keyed vend queues behind it while
-- it waits: waiting out the purge of the version before (seconds with many answers stored)
-- would hold keyed vends past their own lock_timeout. So it waits 50 ms at a time, and lets
-- them through in between.
DO $$
DECLARE
    callers text := current_setting('lock_timeout');
BEGIN
    LOOP
        BEGIN
            PERFORM set_config('lock_timeout', '50ms', true);
            ALTER TABLE seqvend.vend_answers ADD COLUMN id bigint;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', callers, true);
END
$$;
ALTER TABLE seqvend.vend_answers ALTER COLUMN id SET DEFAULT nextval('seqvend.vend_answer_ids');
ALTER SEQUENCE seqvend.vend_answer_ids OWNED BY seqvend.vend_answers.id;

-- p_keys with each crowded token's live keys blanked but for its p_keep newest (the highest
-- positions): token p_crowded[i] keeps p_keep[i]. Other tokens' keys are left as they are.
-- Each token is named once in p_crowded (the purge folds a row's tokens first), and p_keys
-- is never empty (a row is stored only with keys).
CREATE FUNCTION seqvend.blank_beyond_newest(p_owners text[], p_keys text[],
                                            p_crowded text[], p_keep bigint[])
    RETURNS text[]
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT array_agg(CASE WHEN c.keep IS NOT NULL AND k.newer >= c.keep THEN NULL ELSE k.key END
                     ORDER BY k.pos)
      FROM (SELECT u.owner, u.key, u.pos,
                   -- the token's live keys after this one in the row
                   count(u.key) OVER (PARTITION BY u.owner ORDER BY u.pos DESC
                                      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newer
              FROM unnest(p_owners, p_keys) WITH ORDINALITY AS u(owner, key, pos)) AS k
      LEFT JOIN unnest(p_crowded, p_keep) AS c(owner, keep) ON c.owner = k.owner
$$;

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
        SELECT u.owner, a.created_at, a.id, a.ctid AS row, NULL::text AS key, count(*) AS n
          FROM seqvend.vend_answers a, unnest(a.owners, a.keys) AS u(owner, key)
         WHERE u.key IS NOT NULL
         GROUP BY u.owner, a.created_at, a.id, a.ctid
        UNION ALL
        SELECT k.owner, k.created_at, NULL, NULL, k.key, 1
          FROM seqvend.idempotency_keys k
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
    ), deleted AS (
        DELETE FROM seqvend.idempotency_keys k
         USING kept d
         WHERE d.row IS NULL AND d.keep = 0 AND k.owner = d.owner AND k.key = d.key
           AND k.created_at = d.created_at
        RETURNING 1
    ), blanked AS (
        -- One source row per target row: a row shared by crowded tokens is folded first.
        UPDATE seqvend.vend_answers a
           SET keys = seqvend.blank_beyond_newest(a.owners, a.keys, d.owners, d.keeps)
          FROM (SELECT row, array_agg(owner) AS owners, array_agg(keep) AS keeps,
                       sum(n - keep)::bigint AS gone
                  FROM kept
                 WHERE row IS NOT NULL AND keep < n
                 GROUP BY row) AS d
         WHERE a.ctid = d.row
        RETURNING d.gone
    )
    SELECT (SELECT count(*) FROM deleted) + (SELECT coalesce(sum(gone), 0) FROM blanked)
      INTO purged;
    RETURN purged;
END
$$;

-- As in 20261126100300, but one at a time across instances (SVPU, above): taken before any
-- row is locked, the lock cannot close a cycle with the rows purges lock.
CREATE OR REPLACE FUNCTION seqvend.purge_answers(p_max_per_owner bigint)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    expired bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(1398165589, 0);
    expired := seqvend.purge_expired_answers();
    RETURN expired + seqvend.purge_crowded_answers(p_max_per_owner);
END
$$;

DROP FUNCTION seqvend.blank(anyarray, integer[]);

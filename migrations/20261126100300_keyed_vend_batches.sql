-- Keyed vends stored per statement: the answers of one coalesced vend statement's keyed
-- requests go into one row (`seqvend.vend_answers`), found through a GIN index over its keys,
-- and purged in bulk by expiry. Before, each keyed request wrote its own row and two
-- index entries (`seqvend.idempotency_keys`), and keyed vends ran at about a seventh of
-- unkeyed ones.
--
-- What the unique key of `idempotency_keys` gave, one answer per (token, key) even when a retry
-- races its first attempt on another instance, now comes from a transaction-scoped advisory
-- lock per key, taken before the stored answers are read: a racing retry waits for the first
-- statement's commit (which releases the lock only once durable and visible) and replays its
-- answer, or, past lock_timeout, is answered 'key_in_flight' (409). It no longer draws values
-- that become a gap. Advisory lock key: SVKY (1398164313) + hashtext(key || ' ' || owner);
-- keys are always locked before any sequence or range lock, in hash order (no deadlock).
--
-- Keyed leases keep their row per key in `idempotency_keys` (they are rarer, and store runs);
-- they take the same lock, and both stores are read for every key, so a key used for a lease
-- and then a vend (or the other way round) is still 'key_reused'. Answers stored by earlier
-- versions stay in `idempotency_keys` and are replayed from there until they expire.

-- The answers of one vend statement's keyed requests. Request p (1-based, in the order the
-- statement stored them) is the token owners[p]'s key keys[p], sent with requests[p] (what was
-- asked, e.g. 'next:fedex-1:count=5'); it was given vals[firsts[p]:lasts[p]], and 409 (the
-- sequence had none left) when lasts[p] < firsts[p]. `vals` holds the values of every sequence
-- with a keyed request in the statement, unkeyed requests' included: concatenating whole
-- arrays is cheaper than cutting out each share. The per-token bound blanks a purged key's
-- keys[p] (the others of the row stay). Keys compare bytewise (COLLATE "C"): cheaper than a
-- locale's rules, and keys are ASCII.
CREATE TABLE seqvend.vend_answers (
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    owners     text[] NOT NULL,
    keys       text[] COLLATE "C" NOT NULL,
    requests   text[] NOT NULL,
    firsts     integer[] NOT NULL,
    lasts      integer[] NOT NULL,
    vals       bigint[] NOT NULL,
    CHECK (cardinality(owners) = cardinality(keys)
           AND cardinality(requests) = cardinality(keys)
           AND cardinality(firsts) = cardinality(keys)
           AND cardinality(lasts) = cardinality(keys))
);
-- Lookups: one GIN entry per key (a key two tokens sent is one entry listing both rows). No
-- pending list: every lookup would scan all of it, and keys sent in sequence (order numbers, a
-- client's counter) land on the same leaf pages when inserted directly.
CREATE INDEX vend_answers_keys ON seqvend.vend_answers USING gin (keys)
    WITH (fastupdate = off);
-- The purge: rows are written in expiry order (now() + a TTL that rarely changes), so a BRIN
-- summary per 128 pages finds the expired ones for almost nothing per insert.
CREATE INDEX vend_answers_expiry ON seqvend.vend_answers USING brin (expires_at);

-- Every stored answer, one row per key, from both stores: for operators and tests.
CREATE VIEW seqvend.idempotent_answers AS
SELECT owner, key, request, status, vals, runs_first, runs_last, lease_expires_at,
       created_at, expires_at
  FROM seqvend.idempotency_keys
UNION ALL
SELECT a.owners[p], a.keys[p], a.requests[p],
       (CASE WHEN a.lasts[p] >= a.firsts[p] THEN 200 ELSE 409 END)::smallint,
       a.vals[a.firsts[p]:a.lasts[p]], NULL, NULL, NULL, a.created_at, a.expires_at
  FROM seqvend.vend_answers a, generate_subscripts(a.keys, 1) AS p
 WHERE a.keys[p] IS NOT NULL;

-- Locks the keys p_keys[i] of tokens p_owners[i] (NULL keys skipped) for this transaction, in
-- hash order, waiting at most lock_timeout (seqvend.lock_timeout, else 200 ms) for all of them.
-- Returns the indexes of the keys it could not lock: another transaction still serves them.
-- A key sent twice in one batch (an instance never does: it serves a key once at a time) is
-- busy from its second time on, so it can never be given two answers.
CREATE FUNCTION seqvend.lock_keys(p_owners text[], p_keys text[])
    RETURNS integer[]
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    callers text := current_setting('lock_timeout');
    busy    integer[];
BEGIN
    PERFORM set_config('lock_timeout',
                       coalesce(nullif(current_setting('seqvend.lock_timeout', true), ''), '200'),
                       true);
    BEGIN
        -- Sorted below, locked above: the locks are taken in hash order whatever the plan.
        SELECT coalesce(array_agg(l.i) FILTER (WHERE l.again), '{}') INTO busy
          FROM (SELECT s.i,
                       (s.o, s.k) IS NOT DISTINCT FROM (lag(s.o) OVER w, lag(s.k) OVER w)
                           AS again,
                       pg_advisory_xact_lock(1398164313, s.h) AS locked
                  FROM (SELECT u.i::integer AS i, u.o, u.k, hashtext(u.k || ' ' || u.o) AS h
                          FROM unnest(p_owners, p_keys) WITH ORDINALITY AS u(o, k, i)
                         WHERE u.k IS NOT NULL
                         ORDER BY 4, 3, 2, 1) AS s
                WINDOW w AS (ORDER BY s.h, s.k, s.o, s.i)) AS l;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        -- Undone: each key on its own now, without waiting (the busy one has had its time).
        busy := ARRAY(SELECT u.i::integer
                        FROM unnest(p_owners, p_keys) WITH ORDINALITY AS u(o, k, i)
                       WHERE u.k IS NOT NULL
                         AND (NOT pg_try_advisory_xact_lock(1398164313,
                                                            hashtext(u.k || ' ' || u.o))
                              OR EXISTS (SELECT 1 FROM unnest(p_owners, p_keys)
                                                  WITH ORDINALITY AS e(o, k, i)
                                          WHERE e.o = u.o AND e.k = u.k AND e.i < u.i))
                       ORDER BY u.i);
    END;
    PERFORM set_config('lock_timeout', callers, true);
    RETURN busy;
END
$$;

-- The unexpired answers stored for the keys p_keys[i] of tokens p_owners[i], from both stores:
-- i, and the answer (the earliest, should a key have two).
CREATE FUNCTION seqvend.stored_answers(p_owners text[], p_keys text[])
    RETURNS TABLE (i integer, request text, status smallint, vals bigint[], runs_first bigint[],
                   runs_last bigint[], lease_expires_at timestamptz)
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
     ORDER BY f.i, f.created_at;
END
$$;

-- p_batch with the keyed shares of one sequence's values appended: p_vals were drawn for the
-- requests p_requests (indexes into p_counts, p_owners, p_keys, p_asked), each taking what it
-- asked for while values last, in order (as the instance hands them out).
CREATE FUNCTION seqvend.add_shares(p_batch seqvend.vend_answers, p_requests integer[],
                                   p_vals bigint[], p_counts integer[], p_owners text[],
                                   p_keys text[], p_asked text[])
    RETURNS seqvend.vend_answers
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    base   integer := cardinality(p_batch.vals);
    shares record;
BEGIN
    SELECT array_agg(p_owners[s.o] ORDER BY s.n) AS owners,
           array_agg(p_keys[s.o] ORDER BY s.n) AS keys,
           array_agg(p_asked[s.o] ORDER BY s.n) AS asked,
           array_agg(base + s.off + 1 ORDER BY s.n) AS firsts,
           array_agg(base + least(s.off + p_counts[s.o], cardinality(p_vals)) ORDER BY s.n)
               AS lasts
      INTO shares
      FROM (SELECT u.o, u.n,
                   (sum(p_counts[u.o]) OVER (ORDER BY u.n) - p_counts[u.o])::integer AS off
              FROM unnest(p_requests) WITH ORDINALITY AS u(o, n)) AS s
     WHERE p_keys[s.o] IS NOT NULL;
    IF shares.owners IS NULL THEN
        RETURN p_batch;
    END IF;
    p_batch.owners := p_batch.owners || shares.owners;
    p_batch.keys := p_batch.keys || shares.keys;
    p_batch.requests := p_batch.requests || shares.asked;
    p_batch.firsts := p_batch.firsts || shares.firsts;
    p_batch.lasts := p_batch.lasts || shares.lasts;
    p_batch.vals := p_batch.vals || p_vals;
    RETURN p_batch;
END
$$;

-- A stored answer may be replayed here before it is durable: when its first commit's wait for
-- the synchronous standby was cancelled, PostgreSQL committed it locally with only a WARNING
-- (seqvend answered 503), and a failover to the standby would lose it and hand its values out
-- again. So a statement that replays writes WAL of its own: its commit then flushes and waits
-- for the standby up to a point past the answer's commit, or fails the same way and the replay
-- is withheld too. A transaction id alone writes no WAL and its commit waits for nothing.
CREATE FUNCTION seqvend.replay_durably() RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM pg_logical_emit_message(true, 'seqvend', 'replay');
END
$$;

-- seqvend.vend() for a batch where some requests carry a key (p_keys NULL where not).
-- 1. The batch's keys are locked; a key another transaction still serves past lock_timeout
--    gets a row 'key_in_flight' and is not drawn for.
-- 2. A request whose key already has an answer is not drawn for: its row says 'replayed' (or
--    'key_reused' when the key came with another request), the stored status in detail.
-- 3. The others are drawn as by vend(), and the keyed ones' shares are stored in one row, with
--    the draw. Under the locks no other answer for these keys can commit meanwhile.
CREATE OR REPLACE FUNCTION seqvend.vend_keyed(p_names text[], p_counts integer[],
                                              p_owners text[], p_keys text[],
                                              p_requests text[], p_ttl interval)
    RETURNS TABLE (requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    busy     integer[];
    skipped  integer[];
    draw_map integer[];
    names    text[];
    counts   integer[];
    known    record;
    drawn    record;
    batch    seqvend.vend_answers := ROW(NULL, NULL, '{}', '{}', '{}', '{}', '{}', '{}');
BEGIN
    -- 1. The locks: this transaction's first, so keys are always locked before any sequence.
    busy := seqvend.lock_keys(p_owners, p_keys);
    skipped := busy;
    FOR known IN SELECT b FROM unnest(busy) AS b LOOP
        requests := ARRAY[known.b];
        outcome := 'key_in_flight';
        RETURN NEXT;
    END LOOP;

    -- 2. The answers already stored, in one read. A new statement: it sees what committed
    --    while the locks were awaited.
    FOR known IN
        SELECT * FROM seqvend.stored_answers(
            p_owners, ARRAY(SELECT CASE WHEN i = ANY (busy) THEN NULL ELSE p_keys[i] END
                              FROM generate_subscripts(p_keys, 1) AS i ORDER BY i))
    LOOP
        requests := ARRAY[known.i];
        detail := known.status::text;
        IF known.request = p_requests[known.i] THEN
            PERFORM seqvend.replay_durably();
            outcome := 'replayed';
            vals := known.vals;
        ELSE
            outcome := 'key_reused';
            vals := NULL;
        END IF;
        skipped := skipped || known.i;
        RETURN NEXT;
    END LOOP;
    SELECT array_agg(i ORDER BY i), array_agg(p_names[i] ORDER BY i),
           array_agg(p_counts[i] ORDER BY i)
      INTO draw_map, names, counts
      FROM generate_subscripts(p_names, 1) AS i
     WHERE NOT (i = ANY (skipped));
    IF draw_map IS NULL THEN
        RETURN;
    END IF;

    -- 3. The draw, as for any batch, and the keyed shares of what it drew, stored in one row.
    detail := NULL;
    FOR drawn IN
        SELECT * FROM seqvend.vend(names, counts)
    LOOP
        requests := ARRAY(SELECT draw_map[r] FROM unnest(drawn.requests) WITH ORDINALITY AS u(r, n)
                           ORDER BY n);
        outcome := drawn.outcome;
        vals := drawn.vals;
        detail := drawn.detail;
        RETURN NEXT;
        IF drawn.outcome = 'ok' THEN
            batch := seqvend.add_shares(batch, requests, drawn.vals, p_counts, p_owners, p_keys,
                                        p_requests);
        END IF;
    END LOOP;
    IF cardinality(batch.keys) > 0 THEN
        INSERT INTO seqvend.vend_answers (expires_at, owners, keys, requests, firsts, lasts, vals)
        VALUES (now() + p_ttl, batch.owners, batch.keys, batch.requests, batch.firsts,
                batch.lasts, batch.vals);
    END IF;
END
$$;

-- seqvend.lease_keyed() as before, with the key locked first (a key another transaction still
-- serves past lock_timeout is answered 'key_in_flight') and both stores read for its answer.
CREATE OR REPLACE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text,
                                               p_holder text, p_ttl interval, p_owner text,
                                               p_key text, p_request text, p_key_ttl interval)
    RETURNS TABLE (outcome text, vals bigint[], detail text, lease_id bigint,
                   expires_at timestamptz, increment bigint, runs_first bigint[],
                   runs_last bigint[])
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    known record;
    drawn record;
BEGIN
    -- The stored answer is what a retry gets: it must be as durable as the lease it replays.
    PERFORM set_config('synchronous_commit', 'on', true);
    IF cardinality(seqvend.lock_keys(ARRAY[p_owner], ARRAY[p_key])) > 0 THEN
        outcome := 'key_in_flight';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
    IF NOT FOUND THEN
        SELECT * INTO drawn FROM seqvend.lease(p_name, p_count, p_kind, p_holder, p_ttl);
        outcome := drawn.outcome;
        vals := drawn.vals;
        detail := drawn.detail;
        lease_id := drawn.lease_id;
        expires_at := drawn.expires_at;
        IF drawn.outcome <> 'ok' THEN
            RETURN NEXT;
            RETURN;
        END IF;
        SELECT r.runs_first, r.runs_last INTO runs_first, runs_last
          FROM seqvend.lease_runs(drawn.vals, increment) AS r;
        IF seqvend.store_answer(p_owner, p_key, p_request,
                                CASE WHEN cardinality(drawn.vals) > 0 THEN 200 ELSE 409 END::smallint,
                                NULL, coalesce(runs_first, '{}'), coalesce(runs_last, '{}'),
                                drawn.expires_at, p_key_ttl) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        -- Only an answer written without the key's lock (by hand) can be there: it stands, and
        -- this lease's values are a gap.
        SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
    END IF;
    IF known.request = p_request THEN
        PERFORM seqvend.replay_durably();
    END IF;
    outcome := CASE WHEN known.request = p_request THEN 'replayed' ELSE 'key_reused' END;
    vals := NULL;
    detail := known.status::text;
    lease_id := NULL;
    expires_at := known.lease_expires_at;
    runs_first := known.runs_first;
    runs_last := known.runs_last;
    RETURN NEXT;
END
$$;

-- p_array with the elements at p_positions set to NULL.
CREATE FUNCTION seqvend.blank(p_array anyarray, p_positions integer[])
    RETURNS anyarray
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT array_agg(CASE WHEN u.n = ANY (p_positions) THEN NULL ELSE u.x END ORDER BY u.n)
      FROM unnest(p_array) WITH ORDINALITY AS u(x, n)
$$;

-- Each token's answers beyond its newest p_max, from both stores: rows of idempotency_keys are
-- deleted, keys of vend_answers blanked (the row's other keys stay; it goes when it expires).
-- Returns how many answers went.
CREATE FUNCTION seqvend.purge_crowded_answers(p_max bigint)
    RETURNS bigint
    LANGUAGE sql VOLATILE
AS $$
    WITH live AS (
        SELECT k.owner, k.key, k.created_at, NULL::tid AS row, NULL::integer AS pos
          FROM seqvend.idempotency_keys k
        UNION ALL
        SELECT a.owners[p], a.keys[p], a.created_at, a.ctid, p
          FROM seqvend.vend_answers a, generate_subscripts(a.keys, 1) AS p
         WHERE a.keys[p] IS NOT NULL
    ), doomed AS (
        SELECT * FROM (SELECT l.*, row_number() OVER (PARTITION BY l.owner
                                                      ORDER BY l.created_at DESC, l.pos DESC NULLS LAST) AS n
                         FROM live l
                        WHERE l.owner IN (SELECT owner FROM live GROUP BY owner
                                           HAVING count(*) > p_max)) AS ranked
         WHERE ranked.n > p_max
    ), deleted AS (
        DELETE FROM seqvend.idempotency_keys k
         USING doomed d
         WHERE d.row IS NULL AND k.owner = d.owner AND k.key = d.key
        RETURNING 1
    ), blanked AS (
        UPDATE seqvend.vend_answers a
           SET keys = seqvend.blank(a.keys, d.positions)
          FROM (SELECT row, array_agg(pos) AS positions, count(*) AS gone
                  FROM doomed WHERE row IS NOT NULL GROUP BY row) AS d
         WHERE a.ctid = d.row
        RETURNING d.gone
    )
    SELECT (SELECT count(*) FROM deleted) + (SELECT coalesce(sum(gone), 0) FROM blanked)::bigint
$$;

-- Expired answers, from both stores: a statement's answers all expire together, so its row
-- goes whole. Returns how many answers went.
CREATE FUNCTION seqvend.purge_expired_answers()
    RETURNS bigint
    LANGUAGE sql VOLATILE
AS $$
    WITH legacy AS (
        DELETE FROM seqvend.idempotency_keys WHERE expires_at <= now() RETURNING 1
    ), batched AS (
        DELETE FROM seqvend.vend_answers WHERE expires_at <= now()
        RETURNING cardinality(array_remove(keys, NULL)) AS live
    )
    SELECT (SELECT count(*) FROM legacy) + (SELECT coalesce(sum(live), 0) FROM batched)::bigint
$$;

-- The purge run every minute: expired answers, then each token's beyond p_max_per_owner
-- (counted after the expired went). Returns how many answers went.
CREATE FUNCTION seqvend.purge_answers(p_max_per_owner bigint)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    expired bigint;
BEGIN
    expired := seqvend.purge_expired_answers();
    RETURN expired + seqvend.purge_crowded_answers(p_max_per_owner);
END
$$;

-- Read only one store; seqvend.stored_answers reads both.
DROP FUNCTION seqvend.idempotent_answer(text, text);

-- Idempotency keys: a vend or lease sent with an `Idempotency-Key` stores its answer in the
-- same transaction as its draw, so a retry (from any instance) gets the same values instead
-- of burning new ones.

CREATE TABLE seqvend.idempotency_keys (
    -- The name of the token that sent it: keys are per token (names are never reused).
    owner       text NOT NULL,
    key         text NOT NULL CHECK (key ~ '^[!-~]{1,255}$'),
    -- What was asked (e.g. 'next:fedex-1:count=5'): the same key with another request is
    -- refused.
    request     text NOT NULL,
    -- The answer: 200 with values, or 409 when the sequence had none left.
    status      smallint NOT NULL CHECK (status IN (200, 409)),
    -- A vend's values; a lease's blocks as runs (first and last value of each).
    vals        bigint[],
    runs_first  bigint[],
    runs_last   bigint[],
    lease_expires_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (owner, key)
);
-- For the purge of expired answers. (The bound per token is enforced by a rarer scan: one
-- index less to write on the vend path.)
CREATE INDEX idempotency_keys_expiry ON seqvend.idempotency_keys (expires_at);

-- The answer stored under (owner, key), if it has not expired.
CREATE FUNCTION seqvend.idempotent_answer(p_owner text, p_key text)
    RETURNS SETOF seqvend.idempotency_keys
    LANGUAGE sql STABLE
AS $$
    SELECT * FROM seqvend.idempotency_keys
     WHERE owner = p_owner AND key = p_key AND expires_at > now()
$$;

-- Stores an answer; false when an unexpired answer is already there (a duplicate served by
-- another instance committed first: its answer stands).
CREATE FUNCTION seqvend.store_answer(p_owner text, p_key text, p_request text,
                                     p_status smallint, p_vals bigint[], p_runs_first bigint[],
                                     p_runs_last bigint[], p_lease_expires_at timestamptz,
                                     p_ttl interval)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    INSERT INTO seqvend.idempotency_keys AS k
           (owner, key, request, status, vals, runs_first, runs_last, lease_expires_at,
            expires_at)
    VALUES (p_owner, p_key, p_request, p_status, p_vals, p_runs_first, p_runs_last,
            p_lease_expires_at, now() + p_ttl)
    ON CONFLICT (owner, key) DO UPDATE
       SET request = excluded.request, status = excluded.status, vals = excluded.vals,
           runs_first = excluded.runs_first, runs_last = excluded.runs_last,
           lease_expires_at = excluded.lease_expires_at, created_at = now(),
           expires_at = excluded.expires_at
     WHERE k.expires_at <= now();
    RETURN FOUND;
END
$$;

-- seqvend.vend() for a batch where some requests carry a key (p_keys NULL where not).
-- Requests whose key already has an answer are not drawn for: their row says 'replayed' (or
-- 'key_reused' when the key came with another request). The others are drawn as by vend(),
-- and each keyed one's share of its sequence's values is stored with the draw. A keyed request
-- whose answer another instance stored first gets an extra row, after its sequence's row,
-- replaying that answer (the values drawn for it here become a gap). Set-based: one read of
-- the answers for the whole batch, one insert per sequence.
CREATE FUNCTION seqvend.vend_keyed(p_names text[], p_counts integer[], p_owners text[],
                                   p_keys text[], p_requests text[], p_ttl interval)
    RETURNS TABLE (requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    known       record;
    answered    integer[] := '{}';
    draw_names  text[];
    draw_counts integer[];
    draw_map    integer[];
    drawn       record;
    lost        integer[];
BEGIN
    -- 1. The answers already stored, in one read.
    FOR known IN
        SELECT u.i::integer AS i, k.request, k.status, k.vals
          FROM unnest(p_owners, p_keys) WITH ORDINALITY AS u(owner, key, i)
          JOIN seqvend.idempotency_keys k
            ON k.owner = u.owner AND k.key = u.key AND k.expires_at > now()
    LOOP
        requests := ARRAY[known.i];
        detail := known.status::text;
        IF known.request = p_requests[known.i] THEN
            outcome := 'replayed';
            vals := known.vals;
        ELSE
            outcome := 'key_reused';
            vals := NULL;
        END IF;
        answered := answered || known.i;
        RETURN NEXT;
    END LOOP;
    SELECT array_agg(p_names[i] ORDER BY i), array_agg(p_counts[i] ORDER BY i),
           array_agg(i ORDER BY i)
      INTO draw_names, draw_counts, draw_map
      FROM generate_subscripts(p_names, 1) AS i
     WHERE NOT (i = ANY (answered));
    IF draw_names IS NULL THEN
        RETURN;
    END IF;

    -- 2. The draw, as for any batch.
    FOR drawn IN SELECT * FROM seqvend.vend(draw_names, draw_counts) LOOP
        requests := ARRAY(SELECT draw_map[r] FROM unnest(drawn.requests) WITH ORDINALITY AS u(r, n)
                           ORDER BY n);
        outcome := drawn.outcome;
        vals := drawn.vals;
        detail := drawn.detail;
        RETURN NEXT;
        CONTINUE WHEN drawn.outcome <> 'ok';

        -- 3. Each keyed request's share (what it asked for while values last, in order, as the
        --    instance hands them out), stored in one statement. A key another instance stored
        --    first keeps its answer: those requests are the lost ones.
        WITH shares AS (
            SELECT u.o, (sum(p_counts[u.o]) OVER (ORDER BY u.n) - p_counts[u.o])::integer AS off
              FROM unnest(requests) WITH ORDINALITY AS u(o, n)
        ), mine AS (
            SELECT o, drawn.vals[off + 1 : off + p_counts[o]] AS got
              FROM shares WHERE p_keys[o] IS NOT NULL
        ), stored AS (
            INSERT INTO seqvend.idempotency_keys AS k (owner, key, request, status, vals, expires_at)
            SELECT p_owners[o], p_keys[o], p_requests[o],
                   CASE WHEN cardinality(got) > 0 THEN 200 ELSE 409 END, got, now() + p_ttl
              FROM mine
            ON CONFLICT (owner, key) DO UPDATE
               SET request = excluded.request, status = excluded.status, vals = excluded.vals,
                   runs_first = NULL, runs_last = NULL, lease_expires_at = NULL,
                   created_at = now(), expires_at = excluded.expires_at
             WHERE k.expires_at <= now()
            RETURNING k.owner, k.key
        )
        SELECT array_agg(m.o) INTO lost
          FROM mine m
         WHERE NOT EXISTS (SELECT 1 FROM stored s
                            WHERE s.owner = p_owners[m.o] AND s.key = p_keys[m.o]);
        FOR known IN
            SELECT l.o, k.request, k.status, k.vals
              FROM unnest(lost) AS l(o)
              JOIN seqvend.idempotency_keys k ON k.owner = p_owners[l.o] AND k.key = p_keys[l.o]
        LOOP
            requests := ARRAY[known.o];
            detail := known.status::text;
            outcome := CASE WHEN known.request = p_requests[known.o] THEN 'replayed'
                            ELSE 'key_reused' END;
            vals := known.vals;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$$;

-- seqvend.lease() with a key: a lease already answered under it is replayed (its blocks as
-- runs, its expiry); otherwise the lease is drawn and its answer stored with it. The extra
-- columns: 'replayed' or 'key_reused' in outcome, the stored status in detail, and the runs.
CREATE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text, p_holder text,
                                    p_ttl interval, p_owner text, p_key text, p_request text,
                                    p_key_ttl interval)
    RETURNS TABLE (outcome text, vals bigint[], detail text, lease_id bigint,
                   expires_at timestamptz, increment bigint, runs_first bigint[],
                   runs_last bigint[])
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    known seqvend.idempotency_keys;
    drawn record;
BEGIN
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    SELECT * INTO known FROM seqvend.idempotent_answer(p_owner, p_key);
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
        -- The values as runs: within a run, value - position * increment is constant.
        SELECT array_agg(r.first ORDER BY r.pos), array_agg(r.last ORDER BY r.pos)
          INTO runs_first, runs_last
          FROM (SELECT min(u.n) AS pos,
                       (array_agg(u.v ORDER BY u.n))[1] AS first,
                       (array_agg(u.v ORDER BY u.n DESC))[1] AS last
                  FROM unnest(drawn.vals) WITH ORDINALITY AS u(v, n)
                 GROUP BY u.v - u.n * increment) AS r;
        IF seqvend.store_answer(p_owner, p_key, p_request,
                                CASE WHEN cardinality(drawn.vals) > 0 THEN 200 ELSE 409 END::smallint,
                                NULL, coalesce(runs_first, '{}'), coalesce(runs_last, '{}'),
                                drawn.expires_at, p_key_ttl) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        -- Another instance stored an answer first: it stands (this lease's values are a gap).
        SELECT * INTO known FROM seqvend.idempotent_answer(p_owner, p_key);
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

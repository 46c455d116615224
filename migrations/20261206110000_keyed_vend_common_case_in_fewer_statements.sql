-- A keyed vend statement's common case in fewer statements: every request keyed and drawn
-- for, on one sequence (a lane's batch is on one sequence, and a client that keys its requests
-- keys them all).
--
-- Why: a keyed statement's own work, around its draw, cost more than the draw. Measured in
-- one session (pgbench, prepared, jit and sequential scans off as on seqvend's vend
-- connections, backend CPU per committed statement, 2,000,000 answers stored, 3 interleaved
-- rounds of 6 s, medians): one request 611 µs before, 533 µs as below; 32 requests 876 µs
-- before, 779 µs as below. What goes: the list of keys in flight read when there is none, the list of requests to
-- draw for made when it is all of them, vend()'s set-returning call and the list of requests
-- it returns, and add_shares() (a function call and its window query): the common case draws
-- with vend_one_sequence(), as vend() does for it, and stores its answers with one INSERT
-- that works the shares out from the counts.
--
-- Unchanged: the keys' locks first, the stored answers read after them, replays, reuse and
-- keys in flight, and every other batch. When vend_one_sequence() answers NULL (nothing handed
-- out: the sequence is short of values, moved back, or anything else its common case does not
-- serve), the general statement vend_batch() runs in the same statement, as in vend(); an
-- empty answer (a lock not granted within lock_timeout) is 'unavailable' with vend()'s words,
-- and nothing is stored.
CREATE OR REPLACE FUNCTION seqvend.vend_keyed(p_names text[], p_counts integer[], p_owners text[],
                                              p_keys text[], p_requests text[], p_ttl interval)
    RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    busy     integer[];
    skipped  integer[];
    draw_map integer[];
    names    text[];
    counts   integer[];
    known    record;
    drawn    record;
    tried_one boolean := false;
    batch    seqvend.vend_answers := ROW(NULL, NULL, '{}', '{}', '{}', '{}', '{}', '{}');
BEGIN
    -- 1. The locks: this transaction's first, so keys are always locked before any sequence.
    busy := seqvend.lock_keys(p_owners, p_keys);
    skipped := busy;
    IF cardinality(busy) > 0 THEN
        FOR known IN SELECT b FROM unnest(busy) AS b LOOP
            requests := ARRAY[known.b];
            outcome := 'key_in_flight';
            RETURN NEXT;
        END LOOP;
    END IF;

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
    IF cardinality(skipped) = 0 THEN
        names := p_names;  -- every request is drawn for: draw_map stays NULL (the identity)
        counts := p_counts;
    ELSE
        SELECT array_agg(i ORDER BY i), array_agg(p_names[i] ORDER BY i),
               array_agg(p_counts[i] ORDER BY i)
          INTO draw_map, names, counts
          FROM generate_subscripts(p_names, 1) AS i
         WHERE NOT (i = ANY (skipped));
        IF draw_map IS NULL THEN
            RETURN;
        END IF;
    END IF;

    -- 3. The common case: every request keyed and drawn for, on one sequence. Drawn as vend()
    --    draws it (vend_one_sequence), its answers stored in one statement.
    detail := NULL;
    IF draw_map IS NULL AND p_names[1] = ALL (p_names) AND array_position(p_keys, NULL) IS NULL
    THEN
        tried_one := true;
        vals := seqvend.vend_one_sequence(p_names[1], p_counts);
        IF vals IS NOT NULL THEN
            requests := ARRAY(SELECT generate_series(1, cardinality(p_names)));
            IF cardinality(vals) = 0 THEN
                outcome := 'unavailable';
                vals := NULL;
                detail := 'a lock it needs was not granted within lock_timeout: another session '
                          'holds its PostgreSQL sequence (an open ALTER SEQUENCE?), its '
                          'range''s registry row or its range''s mark (seqvend.range_marks)';
                RETURN NEXT;
                RETURN;
            END IF;
            -- vend_one_sequence draws every value asked for or none: request i's share ends
            -- at the running total of the counts.
            INSERT INTO seqvend.vend_answers (expires_at, owners, keys, requests, firsts, lasts, vals)
            SELECT now() + p_ttl, p_owners, p_keys, p_requests,
                   array_agg(s.last - s.count + 1 ORDER BY s.i), array_agg(s.last ORDER BY s.i),
                   vals
              FROM (SELECT u.i, u.count, (sum(u.count) OVER (ORDER BY u.i))::integer AS last
                      FROM unnest(p_counts) WITH ORDINALITY AS u(count, i)) AS s;
            outcome := 'ok';
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    -- 4. Any other batch, as vend() draws it, and the keyed shares of what it drew, stored in
    --    one row. When the common case was tried and answered NULL (nothing handed out), the
    --    general statement runs, as vend() would run it next: not vend_one_sequence again.
    FOR drawn IN
        SELECT * FROM seqvend.vend_batch(names, counts) WHERE tried_one
        UNION ALL
        SELECT * FROM seqvend.vend(names, counts) WHERE NOT tried_one
    LOOP
        IF draw_map IS NULL THEN
            requests := drawn.requests;
        ELSE
            requests := ARRAY(SELECT draw_map[r]
                                FROM unnest(drawn.requests) WITH ORDINALITY AS u(r, n)
                               ORDER BY n);
        END IF;
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

-- A retired sequence's stored answers are not replayed.
--
-- Why: a keyed vend or lease stores its answer with its draw. If the client never got it (it
-- gave up while the statement waited, or the answer was lost), and the sequence was then
-- retired, a retry with the same key replayed the stored values after DELETE had answered,
-- though docs/api.md says that from then on no instance vends from it (a lease was replayed
-- with minutes of its time left). Nothing went out twice: the values were drawn once, before
-- the retirement, and are never drawn again.
--
-- Now a retry whose stored answer is for a sequence retired since is answered 'retired' (410),
-- as an unkeyed request is. The status is read after the key's lock, in a statement of its own,
-- so a retirement that answered before the retry was sent is seen. A retirement in flight
-- while the retry is served is concurrent with it, either order being right; replays draw
-- nothing, so DELETE has no draw of theirs to wait for.
--
-- The tests `idempotency::a_keyed_vend_is_not_replayed_once_its_sequence_is_retired` and
-- `idempotency::a_keyed_lease_is_not_replayed_once_its_sequence_is_retired` cover it.

CREATE OR REPLACE FUNCTION seqvend.vend_keyed(p_names text[], p_counts integer[], p_owners text[], p_keys text[], p_requests text[], p_ttl interval) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
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
        IF known.request = p_requests[known.i]
           AND EXISTS (SELECT 1 FROM seqvend.sequences s
                        WHERE s.name = p_names[known.i] AND s.status = 'retired') THEN
            -- Retired since it was answered: no value of it leaves after DELETE answered.
            outcome := 'retired';
            vals := NULL;
            detail := NULL;
        ELSIF known.request = p_requests[known.i] THEN
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

CREATE OR REPLACE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text, p_holder text, p_ttl interval, p_owner text, p_key text, p_request text, p_key_ttl interval) RETURNS TABLE(outcome text, runs_first bigint[], runs_last bigint[], value_count bigint, detail text, lease_id bigint, expires_at timestamp with time zone, increment bigint, ran_out boolean)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    known   record;
    drawn   record;
    retired boolean;
BEGIN
    -- The stored answer is what a retry gets: it must be as durable as the lease it replays.
    PERFORM set_config('synchronous_commit', 'on', true);
    -- The key's lock first (20261126100300): a key another transaction still serves past
    -- lock_timeout is answered 'key_in_flight', nothing drawn.
    IF cardinality(seqvend.lock_keys(ARRAY[p_owner], ARRAY[p_key])) > 0 THEN
        outcome := 'key_in_flight';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT s.increment, s.status = 'retired' INTO increment, retired
      FROM seqvend.sequences s WHERE s.name = p_name;
    SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
    IF NOT FOUND THEN
        SELECT * INTO drawn FROM seqvend.lease(p_name, p_count, p_kind, p_holder, p_ttl);
        outcome := drawn.outcome;
        runs_first := drawn.runs_first;
        runs_last := drawn.runs_last;
        value_count := drawn.value_count;
        ran_out := drawn.ran_out;
        detail := drawn.detail;
        lease_id := drawn.lease_id;
        expires_at := drawn.expires_at;
        IF drawn.outcome <> 'ok' THEN
            RETURN NEXT;
            RETURN;
        END IF;
        IF seqvend.store_answer(p_owner, p_key, p_request,
                                CASE WHEN drawn.value_count > 0 THEN 200 ELSE 409 END::smallint,
                                NULL, coalesce(drawn.runs_first, '{}'),
                                coalesce(drawn.runs_last, '{}'), drawn.expires_at,
                                p_key_ttl, drawn.ran_out) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        -- Only an answer written without the key's lock (by hand) can be there: it stands, and
        -- this lease's values are a gap.
        SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
    END IF;
    IF known.request = p_request AND retired THEN
        -- Retired since it was answered: no value of it leaves after DELETE answered.
        outcome := 'retired';
        RETURN NEXT;
        RETURN;
    END IF;
    IF known.request = p_request THEN
        PERFORM seqvend.replay_durably();
        -- Whether it came back short because the sequence ran out, as first answered (NULL
        -- for an answer stored before this was kept).
        SELECT k.ran_out INTO ran_out
          FROM seqvend.idempotency_keys k
         WHERE k.owner = p_owner AND k.key = p_key AND k.expires_at > now();
    END IF;
    outcome := CASE WHEN known.request = p_request THEN 'replayed' ELSE 'key_reused' END;
    detail := known.status::text;
    lease_id := NULL;
    expires_at := known.lease_expires_at;
    runs_first := coalesce(known.runs_first, '{}');
    runs_last := coalesce(known.runs_last, '{}');
    value_count := NULL;
    RETURN NEXT;
END
$$;

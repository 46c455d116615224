-- Leases larger than 100,000 values (the service now accepts up to 10,000,000), kept cheap
-- where their block is declined.
--
-- lease() is 20261126100600's, with two changes only: what lease_blocks() did not draw (its
-- block declined: the sequence's lock not had within 20 ms, seqvend not its owner, another
-- increment, a rewind) vend() draws value by value up to 100,000 values, no more, so a large
-- lease then comes back short, as at a range's end, instead of as millions of nextval calls
-- and an array as long; and a new column `ran_out` tells a lease cut there (false) from one
-- the sequence's end cut (true), which the service answers as `exhausted`.
-- lease_keyed() is 20261126100600's, passing `ran_out` through (NULL on a replay).
-- Their answers gain a column: both are dropped and made again.

DROP FUNCTION seqvend.lease_keyed(text, integer, text, text, interval, text, text, text, interval);
DROP FUNCTION seqvend.lease(text, integer, text, text, interval);

-- Draws p_count values of the sequence p_name for a lease held by p_kind/p_holder for p_ttl,
-- and records the lease. Answers 'ok' with the values as runs in vend order (runs_first[i] to
-- runs_last[i] by `increment`; value_count of them, fewer than asked when the sequence ran
-- out, none when it had) and the lease, or vend()'s other outcomes with no values.
-- More than 64 values are drawn in blocks (lease_blocks); whatever they did not draw (a block
-- declined, or none tried), vend() draws value by value, at most 100,000 of them: a lease
-- whose block was declined is answered short, `ran_out` false. `ran_out` is true only when
-- the sequence had fewer values left than asked. Should vend() then fail, the values the
-- blocks drew are gaps: the answer carries none of them.
CREATE FUNCTION seqvend.lease(p_name text, p_count integer, p_kind text, p_holder text,
                              p_ttl interval)
    RETURNS TABLE (outcome text, runs_first bigint[], runs_last bigint[], value_count bigint,
                   detail text, lease_id bigint, expires_at timestamptz, increment bigint,
                   ran_out boolean)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    drawn    record;
    rest     record;
    -- The most values drawn value by value: a 10,000,000-value lease whose block is declined
    -- must not become 10,000,000 nextval calls in one statement and an array that long.
    fallback integer;
BEGIN
    -- The lease row and the draw's mark must survive a crash before any value leaves.
    PERFORM set_config('synchronous_commit', 'on', true);
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    outcome := 'ok';
    runs_first := '{}';
    runs_last := '{}';
    value_count := 0;
    ran_out := false;
    IF p_count > 64 AND increment IS NOT NULL THEN
        BEGIN
            SELECT b.runs_first, b.runs_last, b.taken INTO runs_first, runs_last, value_count
              FROM seqvend.lease_blocks(p_name, p_count) AS b;
        EXCEPTION WHEN OTHERS THEN
            -- Undone (values it claimed are gaps): vend() draws them all, and answers for
            -- whatever went wrong.
            runs_first := '{}';
            runs_last := '{}';
            value_count := 0;
        END;
    END IF;
    IF value_count < p_count THEN
        fallback := least(p_count - value_count, 100000);
        SELECT v.outcome, v.vals, v.detail INTO drawn
          FROM seqvend.vend(ARRAY[p_name], ARRAY[fallback]) AS v;
        detail := drawn.detail;
        IF drawn.outcome <> 'ok' THEN
            outcome := drawn.outcome;
            runs_first := '{}';
            runs_last := '{}';
            value_count := 0;
            RETURN NEXT;
            RETURN;
        END IF;
        SELECT l.runs_first, l.runs_last INTO rest FROM seqvend.lease_runs(drawn.vals, increment) AS l;
        SELECT j.firsts, j.lasts INTO runs_first, runs_last
          FROM seqvend.join_runs(runs_first, runs_last, rest.runs_first, rest.runs_last,
                                 increment) AS j;
        value_count := value_count + cardinality(drawn.vals);
        ran_out := cardinality(drawn.vals) < fallback;
    END IF;
    IF value_count > 0 THEN
        INSERT INTO seqvend.leases AS l (sequence_id, kind, holder, value_count, expires_at)
        SELECT s.id, p_kind, p_holder, value_count, now() + p_ttl
          FROM seqvend.sequences s WHERE s.name = p_name
        RETURNING l.id, l.expires_at INTO lease_id, expires_at;
    END IF;
    RETURN NEXT;
END
$$;

-- lease() with an idempotency key: a lease's answer (its runs) is stored with the draw, or
-- the stored one replayed ('replayed', or 'key_reused' when the key came with another
-- request; `detail` the stored status, the runs and expiry those stored; `ran_out` NULL).
CREATE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text,
                                    p_holder text, p_ttl interval, p_owner text,
                                    p_key text, p_request text, p_key_ttl interval)
    RETURNS TABLE (outcome text, runs_first bigint[], runs_last bigint[], value_count bigint,
                   detail text, lease_id bigint, expires_at timestamptz, increment bigint,
                   ran_out boolean)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    known record;
    drawn record;
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
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
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
                                p_key_ttl) THEN
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
    detail := known.status::text;
    lease_id := NULL;
    expires_at := known.lease_expires_at;
    runs_first := coalesce(known.runs_first, '{}');
    runs_last := coalesce(known.runs_last, '{}');
    value_count := NULL;
    RETURN NEXT;
END
$$;

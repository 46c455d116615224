-- A keyed lease is replayed with the `exhausted` it was first answered.
--
-- Why: a replayed lease said `exhausted` whenever it held fewer values than asked. A lease cut
-- at 100,000 values because its block was declined (a pg_dump holding the sequence) is short
-- without the sequence having run out: first answered `exhausted: false`, its retry was told
-- `exhausted: true`, and a client taking that at its word stops drawing from a sequence with
-- values left. The stored answer now keeps whether the lease ran out (`ran_out`), and the
-- replay answers it.

-- Whether a stored lease came back short because its sequence ran out; NULL for a vend's
-- answer, and for a lease's stored before it was kept (replayed as before: short means ran out).
ALTER TABLE seqvend.idempotency_keys ADD COLUMN ran_out boolean;

-- The same function with `p_ran_out` (NULL by default, so that every call without it is
-- unchanged); a parameter cannot be added in place.
DROP FUNCTION seqvend.store_answer(text, text, text, smallint, bigint[], bigint[], bigint[],
                                   timestamptz, interval);

CREATE FUNCTION seqvend.store_answer(p_owner text, p_key text, p_request text,
                                     p_status smallint, p_vals bigint[], p_runs_first bigint[],
                                     p_runs_last bigint[], p_lease_expires_at timestamptz,
                                     p_ttl interval, p_ran_out boolean DEFAULT NULL)
    RETURNS boolean
    LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO seqvend.idempotency_keys AS k
           (owner, key, request, status, vals, runs_first, runs_last, lease_expires_at,
            expires_at, ran_out)
    VALUES (p_owner, p_key, p_request, p_status, p_vals, p_runs_first, p_runs_last,
            p_lease_expires_at, now() + p_ttl, p_ran_out)
    ON CONFLICT (owner, key) DO UPDATE
       SET request = excluded.request, status = excluded.status, vals = excluded.vals,
           runs_first = excluded.runs_first, runs_last = excluded.runs_last,
           lease_expires_at = excluded.lease_expires_at, created_at = now(),
           expires_at = excluded.expires_at, ran_out = excluded.ran_out
     WHERE k.expires_at <= now();
    RETURN FOUND;
END
$$;

-- As in 20261126130000, but storing whether the lease ran out, and answering it on a replay.
CREATE OR REPLACE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text, p_holder text, p_ttl interval, p_owner text, p_key text, p_request text, p_key_ttl interval) RETURNS TABLE(outcome text, runs_first bigint[], runs_last bigint[], value_count bigint, detail text, lease_id bigint, expires_at timestamp with time zone, increment bigint, ran_out boolean)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
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
                                p_key_ttl, drawn.ran_out) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        -- Only an answer written without the key's lock (by hand) can be there: it stands, and
        -- this lease's values are a gap.
        SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
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

-- Leases that never hand a value out twice, and a recovery for a dropped range sequence.
--
-- 1. seqvend.lease and seqvend.lease_keyed force synchronous_commit for their own transaction
--    (as seqvend.vend does): a pooler may drop seqvend's startup option, and a lease row or a
--    stored answer lost in a crash lets the same values, or an expired lease, be trusted again.
-- 2. seqvend.lease_keyed stores a lease's runs exactly as they were handed out: a new run
--    wherever a value does not follow the one before it by exactly one increment. (It grouped
--    by value - position * increment, which joins runs that are not adjacent: a lease of
--    100-102, 10-11, 105-109 was replayed as 100-109 and 10-11.)
-- 3. seqvend.recreate_range_sequence(range_id): recreates a range's dropped sequence past the
--    range's high-water mark and points the range at it.

CREATE OR REPLACE FUNCTION seqvend.lease(p_name text, p_count integer, p_kind text, p_holder text,
                                         p_ttl interval)
    RETURNS TABLE (outcome text, vals bigint[], detail text, lease_id bigint,
                   expires_at timestamptz, increment bigint)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    drawn record;
BEGIN
    -- The lease row and the draw's mark must survive a crash before any value leaves.
    PERFORM set_config('synchronous_commit', 'on', true);
    SELECT v.outcome, v.vals, v.detail INTO drawn
      FROM seqvend.vend(ARRAY[p_name], ARRAY[p_count]) AS v;
    outcome := drawn.outcome;
    vals := drawn.vals;
    detail := drawn.detail;
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    IF drawn.outcome = 'ok' AND cardinality(drawn.vals) > 0 THEN
        INSERT INTO seqvend.leases AS l (sequence_id, kind, holder, value_count, expires_at)
        SELECT s.id, p_kind, p_holder, cardinality(drawn.vals), now() + p_ttl
          FROM seqvend.sequences s WHERE s.name = p_name
        RETURNING l.id, l.expires_at INTO lease_id, expires_at;
    END IF;
    RETURN NEXT;
END
$$;

-- A lease's values as runs, in the order handed out: a run continues only while each value is
-- the one before it plus the increment (compared as numeric: no overflow at the ends of bigint).
CREATE FUNCTION seqvend.lease_runs(p_vals bigint[], p_increment bigint,
                                   OUT runs_first bigint[], OUT runs_last bigint[])
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT array_agg(r.first ORDER BY r.run), array_agg(r.last ORDER BY r.run)
      FROM (SELECT b.run,
                   (array_agg(b.v ORDER BY b.n))[1] AS first,
                   (array_agg(b.v ORDER BY b.n DESC))[1] AS last
              FROM (SELECT a.v, a.n, sum(a.starts) OVER (ORDER BY a.n) AS run
                      FROM (SELECT u.v, u.n,
                                   CASE WHEN u.v::numeric - lag(u.v) OVER (ORDER BY u.n)
                                             = p_increment THEN 0 ELSE 1 END AS starts
                              FROM unnest(p_vals) WITH ORDINALITY AS u(v, n)) AS a) AS b
             GROUP BY b.run) AS r
$$;

CREATE OR REPLACE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text,
                                               p_holder text, p_ttl interval, p_owner text,
                                               p_key text, p_request text, p_key_ttl interval)
    RETURNS TABLE (outcome text, vals bigint[], detail text, lease_id bigint,
                   expires_at timestamptz, increment bigint, runs_first bigint[],
                   runs_last bigint[])
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    known seqvend.idempotency_keys;
    drawn record;
BEGIN
    -- The stored answer is what a retry gets: it must be as durable as the lease it replays.
    PERFORM set_config('synchronous_commit', 'on', true);
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
        SELECT r.runs_first, r.runs_last INTO runs_first, runs_last
          FROM seqvend.lease_runs(drawn.vals, increment) AS r;
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

-- Recreates the PostgreSQL sequence of range p_range_id after someone dropped it: the same
-- name, bounds and increment, positioned so that its next value follows the range's high-water
-- mark (the last value seqvend handed out from it), or at the range's start when it handed out
-- none; then points the range at it. Run by a DBA; refuses a range whose sequence still exists.
-- Holds the sequence's lock exclusively and the range's lock, as admin changes and draws do,
-- so no vend runs meanwhile. Returns the recreated sequence.
CREATE FUNCTION seqvend.recreate_range_sequence(p_range_id integer)
    RETURNS regclass
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    r       record;
    seqname text := format('%I.%I', 'seqvend_ranges', 'r' || p_range_id);
    created regclass;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    SELECT g.sequence_id INTO r FROM seqvend.ranges g WHERE g.id = p_range_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no range % in seqvend.ranges', p_range_id
            USING ERRCODE = 'no_data_found';
    END IF;
    PERFORM pg_advisory_xact_lock(1398166353, r.sequence_id);
    PERFORM pg_advisory_xact_lock(1398166087, p_range_id);
    SELECT g.id, g.min_value, g.max_value, g.start_value, g.high_water,
           g.pg_sequence::oid AS old_oid, s.increment
      INTO r
      FROM seqvend.ranges g JOIN seqvend.sequences s ON s.id = g.sequence_id
     WHERE g.id = p_range_id
       FOR UPDATE OF g;
    IF EXISTS (SELECT FROM pg_catalog.pg_sequence WHERE seqrelid = r.old_oid) THEN
        RAISE EXCEPTION 'range %''s sequence % still exists', p_range_id, r.old_oid::regclass
            USING ERRCODE = 'duplicate_object',
                  HINT = 'Only a dropped sequence is recreated; a rewound one is repaired at the next draw.';
    END IF;
    EXECUTE format('CREATE SEQUENCE %s AS bigint INCREMENT BY %s MINVALUE %s MAXVALUE %s '
                   'START WITH %s CACHE 1 NO CYCLE',
                   seqname, r.increment, r.min_value, r.max_value, r.start_value);
    created := seqname::regclass;
    -- seqvend draws from it as the registry's owner, as from the sequences it created itself.
    EXECUTE format('ALTER SEQUENCE %s OWNER TO %I', seqname,
                   (SELECT c.relowner::regrole::text FROM pg_catalog.pg_class c
                     WHERE c.oid = 'seqvend.ranges'::regclass));
    -- high_water is the last value handed out: is_called = true makes nextval return the one
    -- after it. (At the range's end nextval then fails, and the draw rolls over as usual.)
    IF r.high_water IS NOT NULL THEN
        PERFORM setval(created, r.high_water, true);
    END IF;
    UPDATE seqvend.ranges SET pg_sequence = created WHERE id = p_range_id;
    RETURN created;
END
$$;

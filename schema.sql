--
-- PostgreSQL database dump
--

\restrict seqvend

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: seqvend; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA seqvend;

--
-- Name: seqvend_ranges; Type: SCHEMA; Schema: -; Owner: -
--

CREATE SCHEMA seqvend_ranges;

--
-- Name: vend_answer; Type: TYPE; Schema: seqvend; Owner: -
--

CREATE TYPE seqvend.vend_answer AS (
	requests integer[],
	outcome text,
	vals bigint[],
	detail text,
	ranges integer[],
	marks bigint[]
);

--
-- Name: counters_asked(text[], text[], integer[]); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.counters_asked(p_families text[], p_keys text[], p_counts integer[]) RETURNS TABLE(family_id integer, key text, wanted bigint, capacity bigint)
    LANGUAGE sql STABLE
    AS $$
    SELECT f.id, a.key COLLATE "C", sum(a.count), f.capacity
      FROM unnest(p_families, p_keys, p_counts) AS a(family, key, count)
      JOIN seqvend.families f ON f.name = a.family AND f.retired_at IS NULL
     GROUP BY f.id, a.key, f.capacity
     ORDER BY f.id, a.key COLLATE "C"
$$;

--
-- Name: draw(integer, integer, regclass, bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint, bigint); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.draw(p_sequence integer, p_range integer, p_seq regclass, p_min bigint, p_max bigint, p_start bigint, p_increment bigint, p_step bigint, p_seq_min bigint, p_seq_max bigint, p_mark bigint, p_wanted bigint, OUT vals bigint[], OUT ended boolean, OUT note text) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    up        boolean := p_increment > 0;
    -- The last value the range can give: its own end or the sequence's, the nearer.
    range_end bigint := CASE WHEN up THEN least(p_max, p_seq_max) ELSE greatest(p_min, p_seq_min) END;
    last_out  bigint := p_mark;
    last_val  bigint;
    next_val  numeric;
    room      numeric;
    k         bigint;
    batch     bigint[];
    ordered   boolean;
    stale     numeric;
    repairs   integer := 0;
    v         bigint;
BEGIN
    vals := '{}';
    ended := false;
    IF (p_step > 0) <> up THEN
        RAISE EXCEPTION 'sequence % counts by % but its range counts by %: restore its '
                        'INCREMENT BY', p_seq, p_step, p_increment;
    END IF;

    WHILE cardinality(vals) < p_wanted LOOP
        IF stale IS NOT NULL THEN
            repairs := repairs + 1;
            IF repairs > 2 THEN
                RAISE EXCEPTION 'sequence % keeps moving back behind %, the last value seqvend '
                                'handed out from it', p_seq, last_out;
            END IF;
            note := nullif(concat_ws('; ', note,
                                     seqvend.repair_rewind(p_sequence, p_range, p_seq, p_min,
                                                           p_max, p_start, p_step, last_out,
                                                           stale)), '');
            stale := NULL;
        END IF;
        -- NULL after a restart (RESTART, setval(…, false)): the next value is then unknown,
        -- so draw a single one to learn where the sequence stands.
        last_val := pg_sequence_last_value(p_seq);
        IF last_val IS NULL THEN
            k := 1;
            room := 1;
        ELSE
            next_val := last_val::numeric + p_step;
            IF NOT (CASE WHEN up THEN next_val >= p_min ELSE next_val <= p_max END)
               OR (last_out IS NOT NULL
                   AND NOT (CASE WHEN up THEN next_val > last_out ELSE next_val < last_out END)) THEN
                stale := next_val;
                CONTINUE;
            END IF;
            room := CASE WHEN up THEN floor((range_end - next_val) / p_step) + 1
                         ELSE floor((next_val - range_end) / -p_step) + 1 END;
            IF room <= 0 THEN
                ended := true;
                EXIT;
            END IF;
            k := least(room, p_wanted - cardinality(vals));
        END IF;

        IF k < room THEN
            SELECT coalesce(array_agg(w.v), '{}'),
                   coalesce(bool_and(CASE WHEN up THEN w.v > w.prev ELSE w.v < w.prev END), true)
              INTO batch, ordered
              -- lag() over the rows in the order nextval produced them.
              FROM (SELECT n.v, lag(n.v) OVER () AS prev
                      FROM (SELECT nextval(p_seq) AS v FROM generate_series(1, k)) AS n) AS w;
        ELSE
            batch := '{}';
            BEGIN
                FOR i IN 1 .. k LOOP
                    batch := batch || nextval(p_seq);
                END LOOP;
            EXCEPTION WHEN sqlstate '2200H' THEN
                -- The sequence's own bound: the values drawn before it are in `batch`.
                ended := true;
            END;
            ordered := false;  -- few values: checked one by one below
        END IF;

        IF ordered AND cardinality(batch) > 0
           AND batch[1] BETWEEN p_min AND p_max
           AND batch[cardinality(batch)] BETWEEN p_min AND p_max
           AND (last_out IS NULL OR CASE WHEN up THEN batch[1] > last_out ELSE batch[1] < last_out END) THEN
            vals := vals || batch;
            last_out := batch[cardinality(batch)];
        ELSE
            -- Keep each value past the last one kept; a value not past it was moved back
            -- (it may have been handed out before): skip it and repair before drawing more.
            FOREACH v IN ARRAY batch LOOP
                IF v BETWEEN p_min AND p_max
                   AND (last_out IS NULL OR CASE WHEN up THEN v > last_out ELSE v < last_out END) THEN
                    vals := vals || v;
                    last_out := v;
                ELSIF (CASE WHEN up THEN v > p_max ELSE v < p_min END) THEN
                    -- Beyond the range's end (its sequence's bounds were widened): not ours.
                    ended := true;
                    EXIT;
                ELSE
                    stale := coalesce(stale, v);
                END IF;
            END LOOP;
        END IF;
        EXIT WHEN ended;
    END LOOP;

    -- Roll over as soon as the last value is out, so the registry never shows an active
    -- range with nothing left.
    IF NOT ended AND last_out IS NOT NULL THEN
        ended := CASE WHEN up THEN last_out::numeric + p_step > range_end
                      ELSE last_out::numeric + p_step < range_end END;
    END IF;
END
$$;

--
-- Name: draw_counters(text[], text[], integer[]); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.draw_counters(p_families text[], p_keys text[], p_counts integer[]) RETURNS TABLE(requests integer[], outcome text, first_value bigint, taken bigint, step bigint, created boolean)
    LANGUAGE plpgsql
    AS $$
DECLARE
    asked_count bigint;
    d_family integer[];
    d_key text[];
    d_before bigint[];
    d_after bigint[];
    c_family integer[];
    c_key text[];
    c_before bigint[];
    c_after bigint[];
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    PERFORM pg_advisory_xact_lock_shared(1178684747, f.id)
       FROM seqvend.families f
      WHERE f.name IN (SELECT DISTINCT unnest(p_families))
      ORDER BY f.id;

    -- Statements after the lock see a retirement that committed before it.
    -- A row updated here had at least one value drawn before (a new key is inserted drawn),
    -- so its new `drawn` exceeds what was asked; an inserted one's does not.
    WITH asked AS (
        SELECT * FROM seqvend.counters_asked(p_families, p_keys, p_counts)
    ), drawn AS (
        INSERT INTO seqvend.counters AS c (drawn, family_id, key)
        SELECT least(a.wanted, a.capacity), a.family_id, a.key
          FROM asked a
         ORDER BY a.family_id, a.key
        ON CONFLICT (family_id, key) DO UPDATE
           SET drawn = c.drawn + excluded.drawn
         WHERE c.drawn <= (SELECT f.capacity FROM seqvend.families f WHERE f.id = c.family_id)
                          - excluded.drawn
        RETURNING c.family_id, c.key, c.drawn
    )
    SELECT array_agg(d.family_id), array_agg(d.key),
           array_agg(CASE WHEN d.drawn <= a.wanted THEN 0 ELSE d.drawn - a.wanted END),
           array_agg(d.drawn),
           (SELECT count(*) FROM asked)
      INTO d_family, d_key, d_before, d_after, asked_count
      FROM drawn d
      JOIN asked a ON a.family_id = d.family_id AND a.key = d.key;

    IF coalesce(cardinality(d_key), 0) < asked_count THEN
        -- Locked by step 1 and unchanged since: this statement's snapshot reads them as they
        -- are.
        WITH rest AS MATERIALIZED (
            SELECT a.*, c.drawn
              FROM seqvend.counters_asked(p_families, p_keys, p_counts) a
              JOIN seqvend.counters c ON c.family_id = a.family_id AND c.key = a.key
             WHERE (a.family_id, a.key) NOT IN (SELECT * FROM unnest(d_family, d_key))
        ), clamped AS (
            UPDATE seqvend.counters c
               SET drawn = least(r.drawn + r.wanted, r.capacity)
              FROM rest r
             WHERE c.family_id = r.family_id AND c.key = r.key AND r.drawn < r.capacity
            RETURNING c.family_id, c.key, r.drawn AS before, c.drawn AS after
        )
        SELECT array_agg(u.family_id), array_agg(u.key), array_agg(u.before), array_agg(u.after)
          INTO c_family, c_key, c_before, c_after
          FROM clamped u;
    END IF;

    RETURN QUERY
    WITH groups AS (
        SELECT g.requests, g.wanted, f.id, f.start_value, f.increment, f.capacity,
               f.retired_at, g.key
          FROM (SELECT a.family, a.key COLLATE "C" AS key,
                       array_agg(a.i::int4 ORDER BY a.i) AS requests, sum(a.count) AS wanted
                  FROM unnest(p_families, p_keys, p_counts) WITH ORDINALITY
                           AS a(family, key, count, i)
                 GROUP BY a.family, a.key) g
          LEFT JOIN seqvend.families f ON f.name = g.family
    ), took AS (
        SELECT * FROM unnest(d_family, d_key, d_before, d_after) AS t(family_id, key, before, after)
        UNION ALL
        SELECT * FROM unnest(c_family, c_key, c_before, c_after)
    )
    SELECT g.requests,
           CASE WHEN g.id IS NULL THEN 'not_found'
                WHEN g.retired_at IS NOT NULL THEN 'retired'
                ELSE 'ok' END,
           CASE WHEN t.key IS NOT NULL
                THEN (g.start_value + t.before::numeric * g.increment)::bigint END,
           coalesce(t.after - t.before, 0),
           g.increment,
           coalesce(t.before = 0, false)
      FROM groups g
      LEFT JOIN took t ON t.family_id = g.id AND t.key = g.key;
END;
$$;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: idempotency_keys; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.idempotency_keys (
    owner text NOT NULL,
    key text NOT NULL,
    request text NOT NULL,
    status smallint NOT NULL,
    vals bigint[],
    runs_first bigint[],
    runs_last bigint[],
    lease_expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT idempotency_keys_key_check CHECK ((key ~ '^[!-~]{1,255}$'::text)),
    CONSTRAINT idempotency_keys_status_check CHECK ((status = ANY (ARRAY[200, 409])))
);

--
-- Name: idempotent_answer(text, text); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.idempotent_answer(p_owner text, p_key text) RETURNS SETOF seqvend.idempotency_keys
    LANGUAGE sql STABLE
    AS $$
    SELECT * FROM seqvend.idempotency_keys
     WHERE owner = p_owner AND key = p_key AND expires_at > now()
$$;

--
-- Name: lease(text, integer, text, text, interval); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.lease(p_name text, p_count integer, p_kind text, p_holder text, p_ttl interval) RETURNS TABLE(outcome text, vals bigint[], detail text, lease_id bigint, expires_at timestamp with time zone, increment bigint)
    LANGUAGE plpgsql
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

--
-- Name: lease_keyed(text, integer, text, text, interval, text, text, text, interval); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text, p_holder text, p_ttl interval, p_owner text, p_key text, p_request text, p_key_ttl interval) RETURNS TABLE(outcome text, vals bigint[], detail text, lease_id bigint, expires_at timestamp with time zone, increment bigint, runs_first bigint[], runs_last bigint[])
    LANGUAGE plpgsql
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

--
-- Name: lease_runs(bigint[], bigint); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.lease_runs(p_vals bigint[], p_increment bigint, OUT runs_first bigint[], OUT runs_last bigint[]) RETURNS record
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

--
-- Name: range_last_value(regclass, bigint, bigint); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.range_last_value(p_seq regclass, p_mark bigint, p_increment bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    position  bigint;
    called    boolean;
    taken     numeric;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_sequence WHERE seqrelid = p_seq) THEN
        RETURN p_mark;
    END IF;
    -- A regclass prints as a quoted, qualified name.
    EXECUTE format('SELECT last_value, is_called FROM %s', p_seq) INTO position, called;
    taken := CASE WHEN called THEN position ELSE position::numeric - p_increment END;
    IF taken NOT BETWEEN -9223372036854775808 AND 9223372036854775807 THEN
        taken := NULL;  -- restarted at the very first value of the bigint space
    END IF;
    IF p_mark IS NULL THEN
        RETURN taken;
    ELSIF taken IS NULL THEN
        RETURN p_mark;
    END IF;
    RETURN CASE WHEN p_increment > 0 THEN greatest(taken, p_mark) ELSE least(taken, p_mark) END;
END
$$;

--
-- Name: recreate_range_sequence(integer); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.recreate_range_sequence(p_range_id integer) RETURNS regclass
    LANGUAGE plpgsql
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

--
-- Name: repair_rewind(integer, integer, regclass, bigint, bigint, bigint, bigint, bigint, numeric); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.repair_rewind(p_sequence integer, p_range integer, p_seq regclass, p_min bigint, p_max bigint, p_start bigint, p_step bigint, p_mark bigint, p_seen numeric) RETURNS text
    LANGUAGE plpgsql
    AS $$
DECLARE
    up       boolean := p_step > 0;
    last_val bigint;
    next_val numeric;
    behind   boolean;
    detail   text;
BEGIN
    -- ALTER SEQUENCE takes a lock that nextval and setval in other sessions wait for, held to
    -- the end of this transaction (LOCK TABLE refuses sequences), so nobody moves it between
    -- the look and the fix, nor during the rest of this statement's draw. NO CYCLE is what
    -- seqvend creates its sequences with: a cycling sequence is a rewind waiting to happen.
    -- DDL is the one place a name is spliced: a regclass prints as a quoted, qualified name.
    EXECUTE format('ALTER SEQUENCE %s NO CYCLE', p_seq);

    last_val := pg_sequence_last_value(p_seq);
    IF last_val IS NULL THEN
        -- Restarted: the next value is the restart value. Draw it to see it, then put it
        -- back; nobody else can draw while the lock is held.
        next_val := nextval(p_seq);
        PERFORM setval(p_seq, next_val::bigint, false);
    ELSE
        next_val := last_val::numeric + p_step;
    END IF;
    behind := NOT (CASE WHEN up THEN next_val >= p_min ELSE next_val <= p_max END)
              OR (p_mark IS NOT NULL
                  AND NOT (CASE WHEN up THEN next_val > p_mark ELSE next_val < p_mark END));

    IF p_mark IS NULL THEN
        IF behind THEN
            PERFORM setval(p_seq, p_start, false);
        END IF;
        detail := format('sequence %s was moved outside its range [%s, %s] (it gave %s) before '
                         'seqvend handed out any value from it; %s', p_seq, p_min, p_max,
                         p_seen, CASE WHEN behind THEN format('moved it to the range''s start %s', p_start)
                                      ELSE 'it has since moved back into the range' END);
    ELSE
        IF behind THEN
            PERFORM setval(p_seq, p_mark, true);
        END IF;
        detail := format('sequence %s was moved back: it gave %s, not past %s, the last value '
                         'seqvend handed out from it; %s', p_seq, p_seen, p_mark,
                         CASE WHEN behind THEN format('moved it forward past %s, so no value is '
                                                      'handed out twice', p_mark)
                              ELSE 'it has since moved past it' END);
    END IF;
    INSERT INTO seqvend.events (sequence_id, range_id, kind, actor, detail)
    VALUES (p_sequence, p_range, 'rewind', 'vend', detail);
    RAISE WARNING '%', detail;
    RETURN detail;
END
$$;

--
-- Name: roll_over(integer, integer); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.roll_over(p_sequence integer, p_range integer) RETURNS void
    LANGUAGE plpgsql
    AS $$
DECLARE
    next_range integer;
BEGIN
    UPDATE seqvend.ranges SET status = 'exhausted', updated_at = now()
     WHERE id = p_range AND status = 'active';
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE seqvend.ranges SET status = 'active', updated_at = now()
     WHERE id = (SELECT id FROM seqvend.ranges
                  WHERE sequence_id = p_sequence AND status = 'pending'
                  ORDER BY id LIMIT 1)
    RETURNING id INTO next_range;
    IF next_range IS NULL THEN
        UPDATE seqvend.sequences SET status = 'exhausted', updated_at = now()
         WHERE id = p_sequence AND status = 'active';
        INSERT INTO seqvend.events (sequence_id, range_id, kind, actor)
        VALUES (p_sequence, p_range, 'exhausted', 'vend');
    ELSE
        INSERT INTO seqvend.events (sequence_id, range_id, kind, actor)
        VALUES (p_sequence, next_range, 'rollover', 'vend');
    END IF;
END
$$;

--
-- Name: span(bigint, bigint); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.span(lo bigint, hi bigint) RETURNS int8range
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN (hi = '9223372036854775807'::bigint) THEN int8range(lo, NULL::bigint) ELSE int8range(lo, (hi + 1)) END;

--
-- Name: store_answer(text, text, text, smallint, bigint[], bigint[], bigint[], timestamp with time zone, interval); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.store_answer(p_owner text, p_key text, p_request text, p_status smallint, p_vals bigint[], p_runs_first bigint[], p_runs_last bigint[], p_lease_expires_at timestamp with time zone, p_ttl interval) RETURNS boolean
    LANGUAGE plpgsql
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

--
-- Name: thin_usage_samples(); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.thin_usage_samples() RETURNS bigint
    LANGUAGE sql
    AS $$
    WITH anchors AS (
        -- The newest sample a day's window can start from, per sequence: always kept.
        SELECT sequence_id, max(at) AS at
          FROM seqvend.usage_samples
         WHERE at <= now() - interval '1 day'
         GROUP BY sequence_id
    ), doomed AS (
        SELECT s.sequence_id, s.at
          FROM seqvend.usage_samples s
          LEFT JOIN anchors a ON a.sequence_id = s.sequence_id
         WHERE s.at < now() - interval '70 minutes'
           AND s.at IS DISTINCT FROM a.at
           AND (
               -- Older than the anchor: no window starts there any more.
               s.at < a.at
               -- Not the last of its 5 minutes.
               OR EXISTS (SELECT 1 FROM seqvend.usage_samples later
                           WHERE later.sequence_id = s.sequence_id
                             AND later.at > s.at
                             AND later.at < date_bin('5 minutes', s.at, 'epoch') + interval '5 minutes')
           )
    ), deleted AS (
        DELETE FROM seqvend.usage_samples s
         USING doomed
         WHERE s.sequence_id = doomed.sequence_id AND s.at = doomed.at
        RETURNING 1
    )
    SELECT count(*) FROM deleted
$$;

--
-- Name: usage_since(integer, interval); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.usage_since(p_sequence integer, p_window interval, OUT used numeric, OUT span_seconds double precision) RETURNS record
    LANGUAGE sql STABLE
    AS $$
    SELECT s.used,
           extract(epoch FROM least(now() - s.at, p_window))::double precision
      FROM ((SELECT at, used FROM seqvend.usage_samples
              WHERE sequence_id = p_sequence AND at <= now() - p_window
              ORDER BY at DESC LIMIT 1)
            UNION ALL
            (SELECT at, used FROM seqvend.usage_samples
              WHERE sequence_id = p_sequence
              ORDER BY at LIMIT 1)) s
     ORDER BY s.at DESC
     LIMIT 1
$$;

--
-- Name: vend(text[], integer[]); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.vend(p_names text[], p_counts integer[]) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    AS $$
DECLARE
    batch_locked boolean := true;
    locked       integer[];
    prelocked    integer[];
    cur          record;
    answer       seqvend.vend_answer;
    answers      seqvend.vend_answer[] := '{}';
    mark_ranges  integer[] := '{}';
    mark_values  bigint[] := '{}';
    mark_up      boolean[] := '{}';
    written      integer[] := '{}';
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    -- Short: a lock held longer than this by someone else (a DBA's open ALTER SEQUENCE, a
    -- row left locked) fails the one sequence that needs it, not the batch. The session's
    -- seqvend.lock_timeout (milliseconds, SEQVEND_LOCK_TIMEOUT_MS) if set, else 200 ms.
    PERFORM set_config('lock_timeout',
                       coalesce(nullif(current_setting('seqvend.lock_timeout', true), ''), '200'),
                       true);

    -- 1. Lock the batch. In name order, take each named sequence's lock shared (vends do not
    --    block each other, but a retirement or a new range waits for the vends in flight, and
    --    they for it), then its active range's lock exclusively (one draw per range at a
    --    time). Should one not come within lock_timeout, this is undone and each sequence
    --    takes its own locks below, in the same order, in its own exception block.
    BEGIN
        SELECT array_agg(l.id), array_agg(l.range_id) INTO locked, prelocked
          FROM (SELECT s.id, s.range_id,
                       pg_advisory_xact_lock_shared(1398166353, s.id),
                       CASE WHEN s.range_id IS NOT NULL
                            THEN pg_advisory_xact_lock(1398166087, s.range_id) END
                  FROM (SELECT q.id, r.id AS range_id
                          FROM seqvend.sequences q
                          LEFT JOIN seqvend.ranges r ON r.sequence_id = q.id AND r.status = 'active'
                         WHERE q.name = ANY (p_names) ORDER BY q.name) AS s) AS l;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        batch_locked := false;
        prelocked := '{}';
    END;

    -- 2. Draw for each sequence. A new statement takes a new snapshot: it sees what committed
    --    while this session waited for the locks, so the marks it reads are current for the
    --    ranges locked above.
    FOR cur IN
        SELECT g.name, g.requests, g.total,
               s.id AS sequence_id, s.status, s.increment,
               r.id AS range_id, r.pg_sequence, r.min_value, r.max_value, r.start_value,
               r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
          FROM (SELECT u.name,
                       array_agg(u.ord::integer ORDER BY u.ord) AS requests,
                       sum(u.cnt) AS total
                  FROM unnest(p_names, p_counts) WITH ORDINALITY AS u(name, cnt, ord)
                 GROUP BY u.name) AS g
          LEFT JOIN seqvend.sequences s
                 ON s.name = g.name AND (NOT batch_locked OR s.id = ANY (locked))
          LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
          LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
         ORDER BY g.name COLLATE "C"
    LOOP
        IF cur.sequence_id IS NULL OR cur.status = 'retired' THEN
            answer := ROW(cur.requests, CASE WHEN cur.sequence_id IS NULL THEN 'not_found'
                                             ELSE 'retired' END, NULL, NULL, '{}', '{}');
            answers := answers || answer;
            CONTINUE;
        END IF;

        FOR attempt IN 1 .. 2 LOOP
            BEGIN
                answer := seqvend.vend_sequence(
                    cur.sequence_id, cur.increment, cur.total, batch_locked,
                    CASE WHEN attempt = 1 THEN prelocked ELSE '{}' END, attempt = 1,
                    cur.range_id, cur.pg_sequence, cur.min_value, cur.max_value,
                    cur.start_value, cur.high_water, cur.seqincrement, cur.seqmin, cur.seqmax);
                EXIT;
            EXCEPTION
                -- Whatever this sequence did is undone (values it drew are gaps); the other
                -- sequences of the statement go on.
                WHEN sqlstate '2200H' THEN
                    -- nextval met the sequence's own bound after the room was read: someone
                    -- drew its last values, or narrowed its MAXVALUE while this statement
                    -- waited. Once more from a fresh read, where draw() handles the end.
                    answer := ROW(NULL, 'unavailable', NULL, SQLERRM, '{}', '{}');
                WHEN lock_not_available OR deadlock_detected OR serialization_failure THEN
                    answer := ROW(NULL, 'unavailable', NULL, SQLERRM, '{}', '{}');
                    EXIT;
                WHEN OTHERS THEN
                    answer := ROW(NULL, 'failed', NULL, SQLERRM, '{}', '{}');
                    EXIT;
            END;
        END LOOP;
        answer.requests := cur.requests;
        answers := answers || answer;
        mark_ranges := mark_ranges || answer.ranges;
        mark_values := mark_values || answer.marks;
        mark_up := mark_up || array_fill(cur.increment > 0, ARRAY[cardinality(answer.ranges)]);
    END LOOP;

    -- 3. The marks, in one statement for the whole batch.
    IF cardinality(mark_ranges) > 0 THEN
        written := seqvend.write_marks(mark_ranges, mark_values, mark_up);
    END IF;

    -- 4. The answers. A sequence whose mark could not be written (its range's row was held
    --    by another session) hands nothing out: its values become gaps.
    FOREACH answer IN ARRAY answers LOOP
        requests := answer.requests;
        outcome := answer.outcome;
        vals := answer.vals;
        detail := answer.detail;
        IF outcome = 'ok' AND NOT (answer.ranges <@ written) THEN
            outcome := 'unavailable';
            vals := NULL;
            detail := 'the registry row of one of its ranges is locked by another session';
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

--
-- Name: vend_keyed(text[], integer[], text[], text[], text[], interval); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.vend_keyed(p_names text[], p_counts integer[], p_owners text[], p_keys text[], p_requests text[], p_ttl interval) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
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

--
-- Name: vend_sequence(integer, bigint, bigint, boolean, integer[], boolean, integer, regclass, bigint, bigint, bigint, bigint, bigint, bigint, bigint); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.vend_sequence(p_sequence integer, p_increment bigint, p_wanted bigint, p_sequence_locked boolean, p_locked integer[], p_fast boolean, p_range integer, p_seq regclass, p_min bigint, p_max bigint, p_start bigint, p_mark bigint, p_step bigint, p_seq_min bigint, p_seq_max bigint) RETURNS seqvend.vend_answer
    LANGUAGE plpgsql
    AS $$
DECLARE
    answer   seqvend.vend_answer := ROW(NULL, 'ok', '{}', NULL, '{}', '{}');
    up       boolean := p_increment > 0;
    r_id     integer := p_range;
    r_seq    regclass := p_seq;
    r_min    bigint := p_min;
    r_max    bigint := p_max;
    r_start  bigint := p_start;
    r_mark   bigint := p_mark;
    s_step   bigint := p_step;
    s_min    bigint := p_seq_min;
    s_max    bigint := p_seq_max;
    r_status text;
    res      record;
    need     bigint;
    taken    bigint;
    last_val bigint;
    next_val numeric;
    v        bigint;
BEGIN
    IF NOT p_sequence_locked THEN
        PERFORM pg_advisory_xact_lock_shared(1398166353, p_sequence);
        SELECT s.status,
               (SELECT r.id FROM seqvend.ranges r WHERE r.sequence_id = s.id AND r.status = 'active')
          INTO r_status, r_id
          FROM seqvend.sequences s WHERE s.id = p_sequence;
        IF r_status = 'retired' THEN
            answer.outcome := 'retired';
            answer.vals := NULL;
            RETURN answer;
        END IF;
    END IF;

    WHILE r_id IS NOT NULL LOOP
        IF array_position(p_locked, r_id) IS NULL THEN
            PERFORM pg_advisory_xact_lock(1398166087, r_id);
            SELECT r.status, r.pg_sequence, r.min_value, r.max_value, r.start_value,
                   r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
              INTO r_status, r_seq, r_min, r_max, r_start, r_mark, s_step, s_min, s_max
              FROM seqvend.ranges r
              LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
             WHERE r.id = r_id;
            p_locked := p_locked || r_id;
            IF r_status <> 'active' THEN
                r_id := (SELECT r.id FROM seqvend.ranges r
                          WHERE r.sequence_id = p_sequence AND r.status = 'active');
                CONTINUE;
            END IF;
        END IF;
        IF s_step IS NULL THEN
            RAISE EXCEPTION 'the PostgreSQL sequence of range % is missing', r_id;
        END IF;

        -- The common case, inline: the sequence stands past the mark, inside the range, with
        -- room to spare and the increment seqvend expects. nextval as plain expressions (no
        -- SQL statement), each value checked as it comes; the first that is not past the one
        -- before (a rewind meanwhile) or not inside the range (its bounds altered) ends this
        -- path, is dropped, and draw() takes over from the last value kept.
        need := p_wanted - cardinality(answer.vals);
        taken := 0;
        IF p_fast AND need <= 64 AND (s_step > 0) = up THEN
            last_val := pg_sequence_last_value(r_seq);
            next_val := last_val::numeric + s_step;
            IF last_val IS NOT NULL AND next_val BETWEEN r_min AND r_max
               AND (r_mark IS NULL OR (CASE WHEN up THEN next_val > r_mark ELSE next_val < r_mark END))
               AND (CASE WHEN up THEN least(r_max, s_max) - next_val >= need::numeric * s_step
                         ELSE next_val - greatest(r_min, s_min) >= need::numeric * -(s_step::numeric) END) THEN
                FOR i IN 1 .. need LOOP
                    v := nextval(r_seq);
                    EXIT WHEN NOT (v BETWEEN r_min AND r_max
                                   AND (r_mark IS NULL OR (CASE WHEN up THEN v > r_mark ELSE v < r_mark END)));
                    answer.vals := answer.vals || v;
                    r_mark := v;
                    taken := taken + 1;
                END LOOP;
            END IF;
        END IF;
        IF taken > 0 THEN
            answer.ranges := answer.ranges || r_id;
            answer.marks := answer.marks || r_mark;
        END IF;
        -- Room was left after the last value: the range is not used up.
        EXIT WHEN taken = need;

        res := seqvend.draw(p_sequence, r_id, r_seq, r_min, r_max, r_start, p_increment,
                            s_step, s_min, s_max, r_mark, p_wanted - cardinality(answer.vals));
        answer.vals := answer.vals || res.vals;
        answer.detail := nullif(concat_ws('; ', answer.detail, res.note), '');
        IF cardinality(res.vals) > 0 THEN
            -- The same range as the fast path's, perhaps: folded by the caller.
            answer.ranges := answer.ranges || r_id;
            answer.marks := answer.marks || res.vals[cardinality(res.vals)];
        END IF;
        EXIT WHEN NOT res.ended;

        -- Used up: roll over at once, and continue from the next range if more values are
        -- wanted.
        PERFORM seqvend.roll_over(p_sequence, r_id);
        EXIT WHEN cardinality(answer.vals) >= p_wanted;
        r_id := (SELECT r.id FROM seqvend.ranges r
                  WHERE r.sequence_id = p_sequence AND r.status = 'active');
    END LOOP;
    RETURN answer;
END
$$;

--
-- Name: write_marks(integer[], bigint[], boolean[]); Type: FUNCTION; Schema: seqvend; Owner: -
--

CREATE FUNCTION seqvend.write_marks(p_ranges integer[], p_marks bigint[], p_up boolean[]) RETURNS integer[]
    LANGUAGE plpgsql
    AS $$
DECLARE
    folded_ids   integer[];
    folded_marks bigint[];
    written      integer[] := '{}';
BEGIN
    SELECT array_agg(f.id), array_agg(f.mark) INTO folded_ids, folded_marks
      FROM (SELECT m.id, CASE WHEN bool_and(m.up) THEN max(m.mark) ELSE min(m.mark) END AS mark
              FROM unnest(p_ranges, p_marks, p_up) AS m(id, mark, up)
             GROUP BY m.id) AS f;
    BEGIN
        UPDATE seqvend.ranges r SET high_water = f.mark
          FROM unnest(folded_ids, folded_marks) AS f(id, mark)
         WHERE r.id = f.id;
        RETURN folded_ids;
    EXCEPTION WHEN lock_not_available THEN
        NULL;  -- one of the rows is held: write them one by one below
    END;
    FOR i IN 1 .. cardinality(folded_ids) LOOP
        BEGIN
            PERFORM FROM seqvend.ranges r WHERE r.id = folded_ids[i] FOR NO KEY UPDATE NOWAIT;
            UPDATE seqvend.ranges r SET high_water = folded_marks[i] WHERE r.id = folded_ids[i];
            written := written || folded_ids[i];
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- held: that range's sequence hands nothing out
        END;
    END LOOP;
    RETURN written;
END
$$;

--
-- Name: counters; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.counters (
    drawn bigint NOT NULL,
    family_id integer NOT NULL,
    key text NOT NULL COLLATE pg_catalog."C",
    CONSTRAINT counters_drawn_check CHECK ((drawn >= 0)),
    CONSTRAINT counters_key_check CHECK (((octet_length(key) >= 1) AND (octet_length(key) <= 200)))
)
WITH (fillfactor='85');

--
-- Name: events; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.events (
    id bigint NOT NULL,
    sequence_id integer,
    range_id integer,
    kind text NOT NULL,
    actor text NOT NULL,
    db_role text DEFAULT CURRENT_USER NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    detail text,
    token text,
    family_id integer,
    CONSTRAINT events_actor_check CHECK ((actor = ANY (ARRAY['admin'::text, 'vend'::text, 'seqvend'::text]))),
    CONSTRAINT events_kind_check CHECK ((kind = ANY (ARRAY['created'::text, 'range_added'::text, 'rollover'::text, 'exhausted'::text, 'retired'::text, 'rewind'::text, 'cache_changed'::text, 'alerts_changed'::text, 'alert_raised'::text, 'alert_cleared'::text, 'token_created'::text, 'token_revoked'::text, 'family_created'::text, 'family_retired'::text]))),
    CONSTRAINT events_subject_check CHECK ((((sequence_id IS NULL) = (kind = ANY (ARRAY['token_created'::text, 'token_revoked'::text, 'family_created'::text, 'family_retired'::text]))) AND ((family_id IS NULL) = (kind <> ALL (ARRAY['family_created'::text, 'family_retired'::text])))))
);

--
-- Name: events_id_seq; Type: SEQUENCE; Schema: seqvend; Owner: -
--

ALTER TABLE seqvend.events ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME seqvend.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: families; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.families (
    id integer NOT NULL,
    name text NOT NULL COLLATE pg_catalog."C",
    start_value bigint NOT NULL,
    increment bigint NOT NULL,
    min_value bigint NOT NULL,
    max_value bigint NOT NULL,
    capacity bigint GENERATED ALWAYS AS ((LEAST((trunc((
CASE
    WHEN (increment > 0) THEN ((max_value)::numeric - (start_value)::numeric)
    ELSE ((start_value)::numeric - (min_value)::numeric)
END / abs((increment)::numeric))) + (1)::numeric), ('9223372036854775807'::bigint)::numeric))::bigint) STORED,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text NOT NULL,
    retired_at timestamp with time zone,
    retired_by text,
    CONSTRAINT families_bounds_check CHECK ((min_value < max_value)),
    CONSTRAINT families_increment_check CHECK (((increment <> 0) AND (increment > '-9223372036854775808'::bigint))),
    CONSTRAINT families_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'::text)),
    CONSTRAINT families_start_check CHECK (((start_value >= min_value) AND (start_value <= max_value)))
);

--
-- Name: families_id_seq; Type: SEQUENCE; Schema: seqvend; Owner: -
--

ALTER TABLE seqvend.families ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME seqvend.families_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: leases; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.leases (
    id bigint NOT NULL,
    sequence_id integer NOT NULL,
    kind text NOT NULL,
    holder text NOT NULL,
    value_count bigint NOT NULL,
    granted_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    released_at timestamp with time zone,
    CONSTRAINT leases_kind_check CHECK ((kind = ANY (ARRAY['instance'::text, 'client'::text]))),
    CONSTRAINT leases_value_count_check CHECK ((value_count > 0))
);

--
-- Name: leases_id_seq; Type: SEQUENCE; Schema: seqvend; Owner: -
--

ALTER TABLE seqvend.leases ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME seqvend.leases_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: range_ids; Type: SEQUENCE; Schema: seqvend; Owner: -
--

CREATE SEQUENCE seqvend.range_ids
    AS integer
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

--
-- Name: ranges; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.ranges (
    id integer NOT NULL,
    sequence_id integer NOT NULL,
    namespace text NOT NULL COLLATE pg_catalog."C",
    min_value bigint NOT NULL,
    max_value bigint NOT NULL,
    start_value bigint NOT NULL,
    status text NOT NULL,
    pg_sequence regclass NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    high_water bigint,
    CONSTRAINT ranges_bounds_check CHECK ((min_value < max_value)),
    CONSTRAINT ranges_start_check CHECK (((start_value >= min_value) AND (start_value <= max_value))),
    CONSTRAINT ranges_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'active'::text, 'exhausted'::text])))
)
WITH (fillfactor='50');

--
-- Name: sequences; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.sequences (
    id integer NOT NULL,
    name text NOT NULL COLLATE pg_catalog."C",
    namespace text NOT NULL COLLATE pg_catalog."C",
    increment bigint NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    format jsonb,
    cache_size bigint DEFAULT 0 NOT NULL,
    cache_buffer_seconds integer DEFAULT 0 NOT NULL,
    cache_min bigint DEFAULT 0 NOT NULL,
    alert_remaining_below bigint,
    alert_days_left_below double precision,
    alerts_raised text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT sequences_alert_days_check CHECK (((alert_days_left_below >= (0)::double precision) AND (alert_days_left_below <= (3650)::double precision))),
    CONSTRAINT sequences_alert_remaining_check CHECK ((alert_remaining_below >= 0)),
    CONSTRAINT sequences_cache_buffer_check CHECK (((cache_buffer_seconds >= 0) AND (cache_buffer_seconds <= 3600))),
    CONSTRAINT sequences_cache_min_check CHECK (((cache_min >= 0) AND (cache_min <= cache_size))),
    CONSTRAINT sequences_cache_size_check CHECK (((cache_size >= 0) AND (cache_size <= 100000))),
    CONSTRAINT sequences_format_check CHECK (((format IS NULL) OR ((jsonb_typeof(format) = 'object'::text) AND (format ? 'kind'::text)))),
    CONSTRAINT sequences_increment_check CHECK ((increment <> 0)),
    CONSTRAINT sequences_name_check CHECK ((name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'::text)),
    CONSTRAINT sequences_namespace_check CHECK ((namespace ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'::text)),
    CONSTRAINT sequences_status_check CHECK ((status = ANY (ARRAY['active'::text, 'exhausted'::text, 'retired'::text])))
);

--
-- Name: sequences_id_seq; Type: SEQUENCE; Schema: seqvend; Owner: -
--

ALTER TABLE seqvend.sequences ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME seqvend.sequences_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: snowflake_layout; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.snowflake_layout (
    singleton boolean DEFAULT true NOT NULL,
    timestamp_bits integer NOT NULL,
    worker_bits integer NOT NULL,
    sequence_bits integer NOT NULL,
    epoch_ms bigint NOT NULL,
    fixed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT snowflake_layout_check CHECK ((((timestamp_bits + worker_bits) + sequence_bits) <= 63)),
    CONSTRAINT snowflake_layout_sequence_bits_check CHECK (((sequence_bits >= 1) AND (sequence_bits <= 22))),
    CONSTRAINT snowflake_layout_singleton_check CHECK (singleton),
    CONSTRAINT snowflake_layout_timestamp_bits_check CHECK (((timestamp_bits >= 1) AND (timestamp_bits <= 61))),
    CONSTRAINT snowflake_layout_worker_bits_check CHECK (((worker_bits >= 1) AND (worker_bits <= 16)))
);

--
-- Name: tokens; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.tokens (
    id bigint NOT NULL,
    name text NOT NULL COLLATE pg_catalog."C",
    secret_hash bytea NOT NULL,
    scopes text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    created_by text NOT NULL,
    revoked_at timestamp with time zone,
    revoked_by text,
    last_used_at timestamp with time zone,
    CONSTRAINT tokens_name_check CHECK (((name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'::text) AND (name !~~ 'bootstrap-%'::text))),
    CONSTRAINT tokens_scopes_check CHECK (((cardinality(scopes) >= 1) AND (cardinality(scopes) <= 100))),
    CONSTRAINT tokens_secret_hash_check CHECK ((length(secret_hash) = 32))
);

--
-- Name: tokens_id_seq; Type: SEQUENCE; Schema: seqvend; Owner: -
--

ALTER TABLE seqvend.tokens ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME seqvend.tokens_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

--
-- Name: usage_rounds; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.usage_rounds (
    only_row boolean DEFAULT true NOT NULL,
    sampled_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL,
    thinned_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone NOT NULL,
    CONSTRAINT usage_rounds_only_row_check CHECK (only_row)
);

--
-- Name: usage_samples; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.usage_samples (
    sequence_id integer NOT NULL,
    at timestamp with time zone NOT NULL,
    used numeric NOT NULL,
    CONSTRAINT usage_samples_used_check CHECK ((used >= (0)::numeric))
);

--
-- Name: worker_ids; Type: TABLE; Schema: seqvend; Owner: -
--

CREATE TABLE seqvend.worker_ids (
    worker_id integer NOT NULL,
    holder text,
    leased_at timestamp with time zone,
    expires_at timestamp with time zone,
    not_before_ms bigint DEFAULT 0 NOT NULL,
    not_after_ms bigint DEFAULT 0 NOT NULL,
    CONSTRAINT worker_ids_check CHECK (((holder IS NULL) OR (expires_at IS NOT NULL))),
    CONSTRAINT worker_ids_worker_id_check CHECK ((worker_id >= 0))
);

--
-- Name: counters counters_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.counters
    ADD CONSTRAINT counters_pkey PRIMARY KEY (family_id, key);

--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);

--
-- Name: families families_name_key; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.families
    ADD CONSTRAINT families_name_key UNIQUE (name);

--
-- Name: families families_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.families
    ADD CONSTRAINT families_pkey PRIMARY KEY (id);

--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (owner, key);

--
-- Name: leases leases_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (id);

--
-- Name: ranges ranges_no_overlap; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.ranges
    ADD CONSTRAINT ranges_no_overlap EXCLUDE USING gist (namespace WITH =, seqvend.span(min_value, max_value) WITH &&);

--
-- Name: ranges ranges_pg_sequence_key; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.ranges
    ADD CONSTRAINT ranges_pg_sequence_key UNIQUE (pg_sequence);

--
-- Name: ranges ranges_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.ranges
    ADD CONSTRAINT ranges_pkey PRIMARY KEY (id);

--
-- Name: sequences sequences_id_namespace_key; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.sequences
    ADD CONSTRAINT sequences_id_namespace_key UNIQUE (id, namespace);

--
-- Name: sequences sequences_name_key; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.sequences
    ADD CONSTRAINT sequences_name_key UNIQUE (name);

--
-- Name: sequences sequences_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.sequences
    ADD CONSTRAINT sequences_pkey PRIMARY KEY (id);

--
-- Name: snowflake_layout snowflake_layout_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.snowflake_layout
    ADD CONSTRAINT snowflake_layout_pkey PRIMARY KEY (singleton);

--
-- Name: tokens tokens_name_key; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.tokens
    ADD CONSTRAINT tokens_name_key UNIQUE (name);

--
-- Name: tokens tokens_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.tokens
    ADD CONSTRAINT tokens_pkey PRIMARY KEY (id);

--
-- Name: usage_rounds usage_rounds_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.usage_rounds
    ADD CONSTRAINT usage_rounds_pkey PRIMARY KEY (only_row);

--
-- Name: usage_samples usage_samples_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.usage_samples
    ADD CONSTRAINT usage_samples_pkey PRIMARY KEY (sequence_id, at);

--
-- Name: worker_ids worker_ids_pkey; Type: CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.worker_ids
    ADD CONSTRAINT worker_ids_pkey PRIMARY KEY (worker_id);

--
-- Name: events_by_sequence; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE INDEX events_by_sequence ON seqvend.events USING btree (sequence_id, id);

--
-- Name: idempotency_keys_expiry; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE INDEX idempotency_keys_expiry ON seqvend.idempotency_keys USING btree (expires_at);

--
-- Name: leases_by_holder; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE INDEX leases_by_holder ON seqvend.leases USING btree (holder) WHERE (released_at IS NULL);

--
-- Name: leases_live; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE INDEX leases_live ON seqvend.leases USING btree (sequence_id) WHERE (released_at IS NULL);

--
-- Name: ranges_by_sequence; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE INDEX ranges_by_sequence ON seqvend.ranges USING btree (sequence_id, id);

--
-- Name: ranges_one_active; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE UNIQUE INDEX ranges_one_active ON seqvend.ranges USING btree (sequence_id) WHERE (status = 'active'::text);

--
-- Name: sequences_by_format; Type: INDEX; Schema: seqvend; Owner: -
--

CREATE INDEX sequences_by_format ON seqvend.sequences USING btree (format) WHERE (format IS NOT NULL);

--
-- Name: events events_family_id_fkey; Type: FK CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.events
    ADD CONSTRAINT events_family_id_fkey FOREIGN KEY (family_id) REFERENCES seqvend.families(id);

--
-- Name: events events_range_id_fkey; Type: FK CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.events
    ADD CONSTRAINT events_range_id_fkey FOREIGN KEY (range_id) REFERENCES seqvend.ranges(id);

--
-- Name: events events_sequence_id_fkey; Type: FK CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.events
    ADD CONSTRAINT events_sequence_id_fkey FOREIGN KEY (sequence_id) REFERENCES seqvend.sequences(id);

--
-- Name: leases leases_sequence_id_fkey; Type: FK CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.leases
    ADD CONSTRAINT leases_sequence_id_fkey FOREIGN KEY (sequence_id) REFERENCES seqvend.sequences(id);

--
-- Name: ranges ranges_sequence_fkey; Type: FK CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.ranges
    ADD CONSTRAINT ranges_sequence_fkey FOREIGN KEY (sequence_id, namespace) REFERENCES seqvend.sequences(id, namespace);

--
-- Name: usage_samples usage_samples_sequence_id_fkey; Type: FK CONSTRAINT; Schema: seqvend; Owner: -
--

ALTER TABLE ONLY seqvend.usage_samples
    ADD CONSTRAINT usage_samples_sequence_id_fkey FOREIGN KEY (sequence_id) REFERENCES seqvend.sequences(id);

--
-- PostgreSQL database dump complete
--

\unrestrict seqvend


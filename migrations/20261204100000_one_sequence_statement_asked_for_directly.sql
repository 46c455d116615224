-- seqvend asks for a batch on one sequence through vend_one_sequence() itself.
--
-- Why: a lane's batch almost always names one sequence, and vend() served it by calling
-- vend_one_sequence() from a set-returning PL/pgSQL function: a second function's call, its
-- result set and the list of requests around the same work. In one session (pgbench,
-- prepared, backend CPU per committed statement, 3 interleaved rounds, medians), through
-- vend() one request cost 245 µs and 26 requests 255 µs; asked for as below, 205 µs and
-- 223 µs. seqvend's statement for such a batch (src/vend/statement.rs) is
--
--   SELECT b.requests, b.outcome, b.vals, b.detail, o.vals
--     FROM (SELECT seqvend.vend_one_sequence(name, counts) AS vals OFFSET 0) AS o
--     LEFT JOIN LATERAL (SELECT * FROM seqvend.vend_batch(names, counts)
--                         WHERE o.vals IS NULL OFFSET 0) AS b ON true
--
-- The filter on o.vals is a one-time filter: vend_batch() runs only when vend_one_sequence()
-- answered NULL, and then in the same statement and transaction, under the locks already
-- taken, as it did inside vend(). So a draw in flight still finishes before a retirement
-- waiting for it (`concurrency::delete_waits_for_a_draw_in_flight`).
--
-- This migration moves the settings vend() made before calling vend_one_sequence() into
-- vend_one_sequence(), which is now called without vend() around it: synchronous_commit = on
-- for its transaction whatever its session says, and a lock_timeout when its session has
-- none (`never_twice::draws_force_synchronous_commit_whatever_the_session_says`). vend()
-- keeps serving every batch as before, for batches on several sequences and for anyone
-- calling it.

CREATE OR REPLACE FUNCTION seqvend.vend_one_sequence(p_name text, p_counts integer[]) RETURNS bigint[]
    LANGUAGE plpgsql
    AS $$
DECLARE
    total    bigint := 0;
    c        integer;
    locked   record;
    cur      record;
    up       boolean;
    last_val bigint;
    next_val numeric;
    mark     bigint;
    v        bigint;
    drawn    bigint[] := '{}';
    ignored  text;
BEGIN
    -- The settings vend_batch() would make, before any lock is asked for; each an expression,
    -- not a query, and made only when the session lacks it (migration 20261203100000).
    IF current_setting('synchronous_commit') <> 'on' THEN
        ignored := set_config('synchronous_commit', 'on', true);
    END IF;
    IF current_setting('lock_timeout') = '0' THEN
        ignored := set_config('lock_timeout',
                              coalesce(nullif(current_setting('seqvend.lock_timeout', true), ''),
                                       '200'),
                              true);
    END IF;

    FOREACH c IN ARRAY p_counts LOOP
        total := total + c;
    END LOOP;
    IF total > 64 OR total < 1 THEN
        RETURN NULL;
    END IF;

    -- 1. The locks, in the general statement's order.
    BEGIN
        SELECT s.id, r.id AS range_id,
               pg_advisory_xact_lock_shared(1398166353, s.id),
               pg_advisory_xact_lock(1398166087, r.id)
          INTO locked
          FROM seqvend.sequences s
          JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
         WHERE s.name = p_name;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        RETURN '{}';
    END;
    IF locked.id IS NULL THEN
        RETURN NULL;
    END IF;

    -- 2. The rows as they stand now that the locks are held (a new statement: a new snapshot).
    SELECT s.status, s.increment, r.status AS range_status, r.pg_sequence, r.min_value,
           r.max_value, m.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
      INTO cur
      FROM seqvend.sequences s
      JOIN seqvend.ranges r ON r.id = locked.range_id AND r.sequence_id = s.id
      JOIN seqvend.range_marks m ON m.range_id = r.id
      JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
     WHERE s.id = locked.id AND s.name = p_name;
    IF NOT FOUND OR cur.status = 'retired' OR cur.range_status <> 'active' THEN
        RETURN NULL;
    END IF;
    up := cur.increment > 0;
    IF (cur.seqincrement > 0) <> up THEN
        RETURN NULL;
    END IF;

    BEGIN
        -- 3. The common case, as the general statement's attempt checks it. Reading the
        --    position locks the PostgreSQL sequence, as the draw does: inside this block.
        last_val := pg_sequence_last_value(cur.pg_sequence);
        next_val := last_val::numeric + cur.seqincrement;
        mark := cur.high_water;
        IF last_val IS NULL OR NOT (next_val BETWEEN cur.min_value AND cur.max_value)
           OR NOT (mark IS NULL OR CASE WHEN up THEN next_val > mark ELSE next_val < mark END)
           OR NOT (CASE WHEN up
                        THEN least(cur.max_value, cur.seqmax) - next_val
                             >= total::numeric * cur.seqincrement
                        ELSE next_val - greatest(cur.min_value, cur.seqmin)
                             >= total::numeric * -(cur.seqincrement::numeric) END) THEN
            RETURN NULL;
        END IF;
        FOR i IN 1 .. total LOOP
            v := nextval(cur.pg_sequence);
            IF NOT (v BETWEEN cur.min_value AND cur.max_value
                    AND (mark IS NULL OR CASE WHEN up THEN v > mark ELSE v < mark END)) THEN
                -- Moved back, or its bounds altered, since the look above: the general
                -- statement repairs it and records it.
                RETURN NULL;
            END IF;
            drawn := drawn || v;
            mark := v;
        END LOOP;

        -- 4. The mark.
        UPDATE seqvend.range_marks SET high_water = mark WHERE range_id = locked.range_id;
        IF NOT FOUND THEN
            RETURN NULL;  -- no mark row: the general statement hands nothing out either
        END IF;
    EXCEPTION
        WHEN lock_not_available OR deadlock_detected THEN
            RETURN '{}';
        WHEN OTHERS THEN
            RETURN NULL;
    END;
    RETURN drawn;
END
$$;

CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[]) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF cardinality(p_names) > 0 AND p_names[1] = ALL (p_names) THEN
        vals := seqvend.vend_one_sequence(p_names[1], p_counts);
        IF vals IS NOT NULL THEN
            requests := '{}';
            FOR i IN 1 .. cardinality(p_names) LOOP
                requests := requests || i;
            END LOOP;
            IF cardinality(vals) = 0 THEN
                outcome := 'unavailable';
                vals := NULL;
                detail := 'a lock it needs was not granted within lock_timeout: another session '
                          'holds its PostgreSQL sequence (an open ALTER SEQUENCE?), its '
                          'range''s registry row or its range''s mark (seqvend.range_marks)';
            ELSE
                outcome := 'ok';
            END IF;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM seqvend.vend_batch(p_names, p_counts);
END
$$;

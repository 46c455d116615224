-- Exact arithmetic at the i64 edges: a small batch from a sequence with a large increment
-- (2^62 over the whole bigint span) multiplied steps by the increment in bigint and failed
-- with an overflow, although every value it vends fits. And the function now sets
-- synchronous_commit = on for its own transaction: seqvend also sends it as a startup option,
-- but a pooler in between may drop those, and without it the commit would not wait for the
-- WAL flush that makes the values durable. Otherwise unchanged.

-- Serves many vend requests in one statement. Request i asks p_counts[i] values of the
-- sequence p_names[i]. Returns one row per sequence named: the requests for it (their indexes,
-- in the order they were taken), and either outcome 'ok' with every value drawn for them, in
-- vend order (fewer than they asked for together when the sequence ran out), or outcome
-- 'retired' or 'not_found' with none. The caller hands the values out in request order, so
-- the earlier request gets the earlier values.
--
-- Values are allocated with setval, which always writes a WAL record and assigns the
-- transaction an id, so the commit flushes the WAL (synchronous_commit = on) before any value
-- is returned, including any record an earlier aborted transaction left unflushed. Unlike
-- nextval, nothing here errors at MAXVALUE: a statement never loses values it drew.
--
-- The per-sequence work is written as plain PL/pgSQL expressions, which run without the cost
-- of a SQL statement: with thousands of distinct sequences per second that cost dominated.
CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
    RETURNS TABLE (requests integer[], outcome text, vals bigint[])
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    locked      integer[];
    cur         record;
    wanted      bigint;
    drawn       bigint[];
    last_value  bigint;
    first_value numeric;
    available   numeric;
    taking      bigint;
    final_value bigint;
    ok          boolean;
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    -- 1. Take every named sequence's lock, shared: vends do not block each other, but a
    --    retirement or a new range waits for the vends in flight, and they for it.
    SELECT array_agg(l.id) INTO locked
      FROM (SELECT s.id, pg_advisory_xact_lock_shared(1398166353, s.id)
              FROM (SELECT id FROM seqvend.sequences
                     WHERE name = ANY (p_names) ORDER BY name) AS s) AS l;

    -- 2. A new statement takes a new snapshot: it sees a retirement that committed while this
    --    session waited for a lock. Sequences are visited in name order, so concurrent
    --    statements take row locks (on rollover) in one order and cannot deadlock.
    FOR cur IN
        SELECT g.name, g.requests, g.total,
               s.id AS sequence_id, s.status, s.increment,
               r.id AS range_id, r.pg_sequence, r.start_value, r.min_value, r.max_value
          FROM (SELECT u.name,
                       array_agg(u.ord::integer ORDER BY u.ord) AS requests,
                       sum(u.cnt) AS total
                  FROM unnest(p_names, p_counts) WITH ORDINALITY AS u(name, cnt, ord)
                 GROUP BY u.name) AS g
          LEFT JOIN seqvend.sequences s ON s.name = g.name AND s.id = ANY (locked)
          LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
         ORDER BY g.name COLLATE "C"
    LOOP
        requests := cur.requests;
        IF cur.sequence_id IS NULL OR cur.status = 'retired' THEN
            outcome := CASE WHEN cur.sequence_id IS NULL THEN 'not_found' ELSE 'retired' END;
            vals := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;

        wanted := cur.total;
        drawn := '{}';
        WHILE cur.range_id IS NOT NULL LOOP
            -- 3. Under the range's lock, read where its PostgreSQL sequence stands and setval
            --    past the values taken. A transaction lock: an aborted or cancelled statement
            --    releases it with everything else.
            ok := pg_advisory_xact_lock(1398166087, cur.range_id) IS NOT NULL;
            last_value := pg_sequence_last_value(cur.pg_sequence::regclass);
            first_value := CASE WHEN last_value IS NULL THEN cur.start_value
                                ELSE last_value::numeric + cur.increment END;
            available := CASE
                WHEN cur.increment > 0
                    THEN greatest(0, floor((cur.max_value - first_value) / cur.increment) + 1)
                ELSE greatest(0, floor((first_value - cur.min_value) / -cur.increment) + 1)
            END;
            taking := least(available, wanted - cardinality(drawn));
            IF taking > 0 THEN
                final_value := first_value + (taking - 1)::numeric * cur.increment;
                ok := setval(cur.pg_sequence::regclass, final_value, true) IS NOT NULL;
            END IF;

            IF taking > 16 THEN
                drawn := drawn || ARRAY(SELECT generate_series(first_value::bigint, final_value,
                                                               cur.increment));
            ELSE
                -- In numeric: i * increment alone can leave bigint (2 * 2^62) while the
                -- value it leads to is still inside the range.
                FOR i IN 0 .. taking - 1 LOOP
                    drawn := drawn || (first_value + i * cur.increment::numeric)::bigint;
                END LOOP;
            END IF;

            -- Done while the range still has values after the last one drawn.
            EXIT WHEN taking > 0 AND available > taking;
            -- 4. Used up: roll over at once, so the registry never shows an active range with
            --    nothing left, and continue from the next range if more values are wanted.
            PERFORM seqvend.roll_over(cur.sequence_id, cur.range_id);
            EXIT WHEN cardinality(drawn) >= wanted;
            SELECT r.id, r.pg_sequence, r.start_value, r.min_value, r.max_value
              INTO cur.range_id, cur.pg_sequence, cur.start_value, cur.min_value, cur.max_value
              FROM seqvend.ranges r
             WHERE r.sequence_id = cur.sequence_id AND r.status = 'active';
            IF NOT FOUND THEN
                cur.range_id := NULL;
            END IF;
        END LOOP;

        outcome := 'ok';
        vals := drawn;
        RETURN NEXT;
    END LOOP;
END
$$;

-- Vending: one statement validates names against the registry, draws every value, rolls
-- exhausted ranges over, and writes the WAL whose flush at commit makes the draw durable.
--
-- Advisory lock keys (two-int form, first int is the class):
--   1398166353 ('SVSQ') + sequence id: vends hold it shared until commit; retiring a sequence
--                        or adding a range holds it exclusively. After a retirement commits,
--                        no statement can draw from that sequence.
--   1398166087 ('SVRG') + range id: held by a session only around the read-and-advance of one
--                        range's PostgreSQL sequence, never across the commit's WAL flush.

-- Draws up to p_want values from one range. Returns them in order (possibly fewer, possibly
-- none). Values are allocated with setval, which always writes a WAL record and assigns the
-- transaction an id, so the caller's commit flushes the WAL (synchronous_commit = on) before
-- any value is returned. Unlike nextval, nothing here ever errors at MAXVALUE: values already
-- drawn are never lost to an aborted statement.
CREATE FUNCTION seqvend.take(p_range_id integer, p_sequence oid, p_start bigint, p_min bigint,
                             p_max bigint, p_increment bigint, p_want bigint)
    RETURNS bigint[]
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    last_value  bigint;
    first_value numeric;
    available   numeric;
    taking      bigint;
    final_value bigint;
    drawn       bigint[];
BEGIN
    -- The lock is taken before last_value is read (the FROM clause runs first), and released
    -- after setval. Nothing in between raises unless the statement is cancelled or the server
    -- fails; the service drops any connection whose vend statement failed, and closing the
    -- session releases the lock.
    SELECT pg_sequence_last_value(p_sequence::regclass) INTO last_value
      FROM (SELECT pg_advisory_lock(1398166087, p_range_id)) AS locked;
    first_value := CASE WHEN last_value IS NULL THEN p_start
                        ELSE last_value::numeric + p_increment END;
    available := CASE
        WHEN p_increment > 0 THEN greatest(0, floor((p_max - first_value) / p_increment) + 1)
        ELSE greatest(0, floor((first_value - p_min) / -p_increment) + 1)
    END;
    taking := least(available, p_want);
    IF taking = 0 THEN
        PERFORM pg_advisory_unlock(1398166087, p_range_id);
        RETURN '{}';
    END IF;
    final_value := first_value + (taking - 1) * p_increment;
    PERFORM pg_advisory_unlock(1398166087, p_range_id)
       FROM (SELECT setval(p_sequence::regclass, final_value, true)) AS advanced;
    IF taking <= 16 THEN
        drawn := ARRAY[first_value::bigint];
        FOR i IN 1 .. taking - 1 LOOP
            drawn := drawn || (first_value::bigint + i * p_increment);
        END LOOP;
        RETURN drawn;
    END IF;
    RETURN ARRAY(SELECT generate_series(first_value::bigint, final_value, p_increment));
END
$$;

-- Marks a used-up range exhausted and activates the oldest pending range, or marks the
-- sequence exhausted when there is none. Several sessions may reach the end at once: the row
-- lock on the range makes them queue, and only the first finds it still active.
CREATE FUNCTION seqvend.roll_over(p_sequence integer, p_range integer)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
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

-- Serves many vend requests in one statement. Request i asks p_counts[i] values of the
-- sequence p_names[i]. Returns one row per request: outcome 'ok' with its values (fewer than
-- asked when the sequence ran out), or 'exhausted', 'retired', 'not_found' with none.
-- Requests to one sequence are served in array order, so the earlier request gets the earlier
-- values. Sequences are visited in name order so that concurrent statements take their locks
-- in one order and cannot deadlock.
CREATE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
    RETURNS TABLE (request integer, outcome text, vals bigint[])
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    grp    record;
    seq_id integer;
    cur    record;
    wanted bigint;
    drawn  bigint[];
    got    bigint[];
    pos    integer;
    n      integer;
BEGIN
    FOR grp IN
        SELECT u.name,
               array_agg(u.ord::integer ORDER BY u.ord) AS requests,
               array_agg(u.cnt ORDER BY u.ord) AS counts,
               sum(u.cnt) AS total
          FROM unnest(p_names, p_counts) WITH ORDINALITY AS u(name, cnt, ord)
         GROUP BY u.name
         ORDER BY u.name COLLATE "C"
    LOOP
        -- Look the name up and take the sequence's lock, shared: vends do not block each
        -- other, but a retirement waits for them, and they for it.
        SELECT locked.id INTO seq_id
          FROM (SELECT s.id, pg_advisory_xact_lock_shared(1398166353, s.id)
                  FROM seqvend.sequences s WHERE s.name = grp.name) AS locked;
        IF NOT FOUND THEN
            RETURN QUERY SELECT r, 'not_found'::text, NULL::bigint[] FROM unnest(grp.requests) AS r;
            CONTINUE;
        END IF;

        wanted := grp.total;
        drawn := '{}';
        LOOP
            -- A new statement takes a new snapshot: it sees a retirement that committed while
            -- this session waited for the lock, and a rollover another session committed.
            SELECT s.status, s.increment, r.id, r.pg_sequence, r.start_value, r.min_value, r.max_value
              INTO cur
              FROM seqvend.sequences s
              LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
             WHERE s.id = seq_id;
            EXIT WHEN cur.status = 'retired' OR cur.id IS NULL;
            got := seqvend.take(cur.id, cur.pg_sequence, cur.start_value, cur.min_value,
                                cur.max_value, cur.increment, wanted - cardinality(drawn));
            drawn := drawn || got;
            -- Done while the range still has values after the last one drawn.
            EXIT WHEN cardinality(got) > 0
                  AND (got[cardinality(got)]::numeric + cur.increment)
                      BETWEEN cur.min_value AND cur.max_value;
            -- Used up: roll over at once, so the registry never shows an active range with
            -- nothing left.
            PERFORM seqvend.roll_over(seq_id, cur.id);
            EXIT WHEN cardinality(drawn) >= wanted;
        END LOOP;
        IF cur.status = 'retired' THEN
            RETURN QUERY SELECT r, 'retired'::text, NULL::bigint[] FROM unnest(grp.requests) AS r;
            CONTINUE;
        END IF;

        pos := 1;
        FOR i IN 1 .. cardinality(grp.requests) LOOP
            n := least(grp.counts[i], cardinality(drawn) - pos + 1);
            request := grp.requests[i];
            IF n > 0 THEN
                outcome := 'ok';
                vals := drawn[pos : pos + n - 1];
                pos := pos + n;
            ELSE
                outcome := 'exhausted';
                vals := NULL;
            END IF;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END
$$;

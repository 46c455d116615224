-- nextval is the allocator. Each range's PostgreSQL sequence is the one record of where the
-- range stands, and seqvend draws from it with nextval, so anything else that uses the
-- sequence the PostgreSQL way (nextval from psql or another application, ALTER SEQUENCE …
-- RESTART, setval) interleaves safely with seqvend.
--
-- Against what nextval cannot protect from (someone moving the sequence backwards), each
-- range keeps a high-water mark: the last value seqvend handed out from it. The vend statement
-- writes it in the same transaction as the draw, so it is durable before any value leaves; a
-- sequence found behind it is held against other sessions and moved forward past it, with an
-- event and a warning. Values outside the registry's [min, max] are never handed out, whatever
-- the sequence's own bounds were altered to.
--
-- Advisory lock keys are unchanged (see 20261121000002_vend.sql): SVSQ + sequence id shared
-- by vends; SVRG + range id exclusive around one range's draw and its mark, now taken in name
-- order together with the SVSQ locks, before the registry is read.

-- The last value seqvend handed out from the range; NULL while none. Until now the sequence's
-- own last value was exactly that (seqvend advanced it with setval), so it seeds the mark.
ALTER TABLE seqvend.ranges ADD COLUMN high_water bigint;
UPDATE seqvend.ranges SET high_water = pg_sequence_last_value(pg_sequence);
-- Every vend statement updates its ranges' marks: room on each page keeps those updates HOT.
ALTER TABLE seqvend.ranges SET (fillfactor = 50);

ALTER TABLE seqvend.events DROP CONSTRAINT events_kind_check;
ALTER TABLE seqvend.events ADD CONSTRAINT events_kind_check
    CHECK (kind IN ('created', 'range_added', 'rollover', 'exhausted', 'retired', 'rewind'));
ALTER TABLE seqvend.events ADD COLUMN detail text;

-- Called when a range's sequence gave (or was about to give) p_seen, a value seqvend must not
-- hand out: one not past the range's mark or, before any value was handed out, one before the
-- range's start. Holds the sequence against every other session until this transaction ends,
-- looks again, and if it is still behind moves it to just after the mark (or to the range's
-- start). Records a 'rewind' event, raises a warning and returns what it found and did.
CREATE FUNCTION seqvend.repair_rewind(p_sequence integer, p_range integer, p_seq regclass,
                                      p_min bigint, p_max bigint, p_start bigint,
                                      p_step bigint, p_mark bigint, p_seen numeric)
    RETURNS text
    LANGUAGE plpgsql VOLATILE
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

-- Draws up to p_wanted values from one range with nextval, in vend order. Every value
-- returned is inside [p_min, p_max] and beyond p_mark (the last value seqvend handed out from
-- the range), and they strictly follow each other. `ended` is true when the range has no
-- value left after the last one returned (so fewer than p_wanted come back only then).
-- `note` says what was repaired, if anything. The caller holds the range's SVRG lock.
--
-- A batch is drawn in one SQL statement (one nextval per value) and checked in it: a sequence
-- moved back while the batch was drawn shows as a value not beyond the one before. The batch
-- that reaches the range's end is drawn one value at a time instead, so that another session
-- taking the last values meanwhile (nextval then errors at the sequence's own bound) costs
-- no value this statement drew.
CREATE FUNCTION seqvend.draw(p_sequence integer, p_range integer, p_seq regclass,
                             p_min bigint, p_max bigint, p_start bigint, p_increment bigint,
                             p_step bigint, p_seq_min bigint, p_seq_max bigint,
                             p_mark bigint, p_wanted bigint,
                             OUT vals bigint[], OUT ended boolean, OUT note text)
    LANGUAGE plpgsql VOLATILE
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

-- Serves many vend requests in one statement. Request i asks p_counts[i] values of the
-- sequence p_names[i]. Returns one row per sequence named: the requests for it (their indexes,
-- in the order they were taken), and either outcome 'ok' with every value drawn for them, in
-- vend order (fewer than they asked for together when the sequence ran out), or 'retired' or
-- 'not_found' with none, or 'failed' with none and the error in `detail`: a failure specific
-- to one sequence answers its requests only. With 'ok', `detail` says what was repaired.
--
-- The marks written at the end are the WAL-writing part: they give the transaction an id, so
-- the commit waits for the WAL flush (synchronous_commit = on, set here as well as by the
-- session, since a pooler may drop startup options) before any value is returned, including
-- any sequence WAL an earlier aborted transaction left unflushed.
DROP FUNCTION seqvend.vend(text[], integer[]);
CREATE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
    RETURNS TABLE (requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    locked     integer[];
    prelocked  integer[];
    cur        record;
    res        record;
    wanted     bigint;
    drawn      bigint[];
    r_id       integer;
    r_seq      regclass;
    r_min      bigint;
    r_max      bigint;
    r_start    bigint;
    r_mark     bigint;
    r_status   text;
    s_step     bigint;
    s_min      bigint;
    s_max      bigint;
    seq_ranges integer[];
    seq_marks  bigint[];
    mark_ranges integer[] := '{}';
    mark_values bigint[] := '{}';
BEGIN
    PERFORM set_config('synchronous_commit', 'on', true);
    -- 1. In name order, take each named sequence's lock shared (vends do not block each
    --    other, but a retirement or a new range waits for the vends in flight, and they for
    --    it), then its active range's lock exclusively (one draw per range at a time).
    SELECT array_agg(l.id), array_agg(l.range_id) INTO locked, prelocked
      FROM (SELECT s.id, s.range_id,
                   pg_advisory_xact_lock_shared(1398166353, s.id),
                   CASE WHEN s.range_id IS NOT NULL
                        THEN pg_advisory_xact_lock(1398166087, s.range_id) END
              FROM (SELECT q.id, r.id AS range_id
                      FROM seqvend.sequences q
                      LEFT JOIN seqvend.ranges r ON r.sequence_id = q.id AND r.status = 'active'
                     WHERE q.name = ANY (p_names) ORDER BY q.name) AS s) AS l;

    -- 2. A new statement takes a new snapshot: it sees what committed while this session
    --    waited for the locks, so the marks it reads are current for the ranges locked above.
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
          LEFT JOIN seqvend.sequences s ON s.name = g.name AND s.id = ANY (locked)
          LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
          LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
         ORDER BY g.name COLLATE "C"
    LOOP
        requests := cur.requests;
        detail := NULL;
        vals := NULL;
        IF cur.sequence_id IS NULL OR cur.status = 'retired' THEN
            outcome := CASE WHEN cur.sequence_id IS NULL THEN 'not_found' ELSE 'retired' END;
            RETURN NEXT;
            CONTINUE;
        END IF;

        wanted := cur.total;
        drawn := '{}';
        seq_ranges := '{}';
        seq_marks := '{}';
        BEGIN
            r_id := cur.range_id;
            r_seq := cur.pg_sequence;
            r_min := cur.min_value;
            r_max := cur.max_value;
            r_start := cur.start_value;
            r_mark := cur.high_water;
            s_step := cur.seqincrement;
            s_min := cur.seqmin;
            s_max := cur.seqmax;
            WHILE r_id IS NOT NULL LOOP
                IF array_position(prelocked, r_id) IS NULL THEN
                    -- A range that became active after step 1 (a rollover here or in another
                    -- instance): lock it, then read it afresh.
                    PERFORM pg_advisory_xact_lock(1398166087, r_id);
                    SELECT r.status, r.pg_sequence, r.min_value, r.max_value, r.start_value,
                           r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
                      INTO r_status, r_seq, r_min, r_max, r_start, r_mark, s_step, s_min, s_max
                      FROM seqvend.ranges r
                      JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
                     WHERE r.id = r_id;
                    prelocked := prelocked || r_id;
                    IF r_status <> 'active' THEN
                        r_id := (SELECT r.id FROM seqvend.ranges r
                                  WHERE r.sequence_id = cur.sequence_id AND r.status = 'active');
                        CONTINUE;
                    END IF;
                END IF;
                IF s_step IS NULL THEN
                    RAISE EXCEPTION 'the PostgreSQL sequence of range % is missing', r_id;
                END IF;

                res := seqvend.draw(cur.sequence_id, r_id, r_seq, r_min, r_max, r_start,
                                    cur.increment, s_step, s_min, s_max, r_mark,
                                    wanted - cardinality(drawn));
                drawn := drawn || res.vals;
                detail := nullif(concat_ws('; ', detail, res.note), '');
                IF cardinality(res.vals) > 0 THEN
                    seq_ranges := seq_ranges || r_id;
                    seq_marks := seq_marks || res.vals[cardinality(res.vals)];
                END IF;
                EXIT WHEN NOT res.ended;

                -- 3. Used up: roll over at once, and continue from the next range if more
                --    values are wanted.
                PERFORM seqvend.roll_over(cur.sequence_id, r_id);
                EXIT WHEN cardinality(drawn) >= wanted;
                r_id := (SELECT r.id FROM seqvend.ranges r
                          WHERE r.sequence_id = cur.sequence_id AND r.status = 'active');
            END LOOP;
            outcome := 'ok';
            vals := drawn;
            mark_ranges := mark_ranges || seq_ranges;
            mark_values := mark_values || seq_marks;
        EXCEPTION WHEN OTHERS THEN
            -- Whatever this sequence did is undone (values it drew are gaps); the other
            -- sequences of the statement go on.
            outcome := 'failed';
            vals := NULL;
            detail := SQLERRM;
        END;
        RETURN NEXT;
    END LOOP;

    -- 4. The marks, in one statement for the whole batch.
    IF cardinality(mark_ranges) > 0 THEN
        UPDATE seqvend.ranges r SET high_water = m.mark
          FROM unnest(mark_ranges, mark_values) AS m(id, mark)
         WHERE r.id = m.id;
    END IF;
END
$$;

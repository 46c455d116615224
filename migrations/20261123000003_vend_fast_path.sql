-- The vend statement's common case, inline: a small draw (up to 64 values per sequence)
-- from a sequence that stands past its mark with room to spare is taken with nextval as plain
-- PL/pgSQL expressions, each value checked as it comes, instead of a call to draw() and a SQL
-- statement per sequence: over 32 distinct sequences per statement that cost three times the
-- old setval statement. Anything unusual (a rewind, altered bounds or increment, the range's
-- end, a large batch) still goes through draw(). Otherwise unchanged.

CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
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
    up         boolean;
    need       bigint;
    taken      bigint;
    last_val   bigint;
    next_val   numeric;
    v          bigint;
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
        up := cur.increment > 0;
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

                -- 3. The common case, inline: the sequence stands past the mark, inside the
                --    range, with room to spare and the increment seqvend expects. nextval as
                --    plain expressions, each value checked as it comes; the first that is not
                --    past the one before (a rewind meanwhile) or not inside the range (its
                --    bounds altered) ends this path, is dropped, and draw() takes over.
                need := wanted - cardinality(drawn);
                taken := 0;
                last_val := pg_sequence_last_value(r_seq);
                IF last_val IS NOT NULL AND need <= 64 AND (s_step > 0) = up THEN
                    next_val := last_val::numeric + s_step;
                    IF next_val BETWEEN r_min AND r_max
                       AND (r_mark IS NULL OR (CASE WHEN up THEN next_val > r_mark ELSE next_val < r_mark END))
                       AND (CASE WHEN up THEN least(r_max, s_max) - next_val >= need::numeric * s_step
                                 ELSE next_val - greatest(r_min, s_min) >= need::numeric * -(s_step::numeric) END) THEN
                        FOR i IN 1 .. need LOOP
                            v := nextval(r_seq);
                            EXIT WHEN NOT (v BETWEEN r_min AND r_max
                                           AND (r_mark IS NULL OR (CASE WHEN up THEN v > r_mark ELSE v < r_mark END)));
                            drawn := drawn || v;
                            r_mark := v;
                            taken := taken + 1;
                        END LOOP;
                    END IF;
                END IF;
                IF taken > 0 THEN
                    seq_ranges := seq_ranges || r_id;
                    seq_marks := seq_marks || r_mark;
                END IF;
                -- Room was left after the last value: the range is not used up.
                EXIT WHEN taken = need;

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

                -- 4. Used up: roll over at once, and continue from the next range if more
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

    -- 5. The marks, in one statement for the whole batch.
    IF cardinality(mark_ranges) > 0 THEN
        UPDATE seqvend.ranges r SET high_water = m.mark
          FROM unnest(mark_ranges, mark_values) AS m(id, mark)
         WHERE r.id = m.id;
    END IF;
END
$$;

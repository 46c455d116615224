-- The vend statement in one attempt for the whole batch, where it can be.
--
-- Why: each sequence of a batch paid a subtransaction of its own (its exception block), a call
-- of vend_sequence() with fifteen arguments, and marks folded per range before one UPDATE in
-- one more subtransaction. Inside PostgreSQL a batch of 32 requests on 32 sequences took
-- ~1.4 ms, on one sequence ~0.6 ms, against ~0.25 ms for 32 nextval calls and a WAL-writing
-- update (pgbench, one session, rolled back; docs/performance.md).
--
-- Now the batch is first tried in one attempt, in one exception block: for each sequence whose
-- common case holds (its active range locked by step 1, its PostgreSQL sequence standing past
-- the mark inside the range with room for every value asked, counting by the range's
-- direction, at most 64 values), its values are drawn inline, each checked as it comes. A
-- sequence whose common case does not hold is left to the per-sequence path, as before
-- (vend_sequence() in an exception block of its own), after the attempt. Should anything in
-- the attempt fail (a value not past the one before: a rewind meanwhile; any error), the whole
-- attempt is undone, its values become gaps, and every sequence of the batch takes the
-- per-sequence path. The attempt writes nothing (so its subtransaction needs no transaction id)
-- and changes no sequence but by nextval, so undoing it loses no repair or event: the
-- per-sequence path sees the rewind the attempt stopped at, repairs it and records it.
--
-- The marks of both paths are written together by write_marks(), which no longer folds a
-- single mark: a range row another session holds still costs only its own sequence's values.
--
-- Outcomes, locks, their order and the durability of the commit are unchanged.

-- The rows the vend statement draws for: one per sequence named (or per name of p_only, when
-- given), in name order: its requests (1-based, in the order taken), the values they ask
-- together, and the sequence, its active range and that range's PostgreSQL sequence as they
-- stand now. With p_locked, only those sequences are found (the others: sequence_id NULL;
-- an empty p_locked finds none, NULL finds every one).
CREATE FUNCTION seqvend.vend_batch_rows(p_names text[], p_counts integer[], p_locked integer[],
                                        p_only text[])
    RETURNS TABLE (name text, requests integer[], total bigint, sequence_id integer,
                   status text, increment bigint, range_id integer, pg_sequence regclass,
                   min_value bigint, max_value bigint, start_value bigint, high_water bigint,
                   seqincrement bigint, seqmin bigint, seqmax bigint)
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF cardinality(p_names) > 0 AND p_names[1] = ALL (p_names) THEN
        -- One name (a lane's batch on one sequence, the common case): nothing to group.
        IF p_only IS NOT NULL AND NOT (p_names[1] = ANY (p_only)) THEN
            RETURN;
        END IF;
        RETURN QUERY
            SELECT p_names[1], ARRAY(SELECT generate_series(1, cardinality(p_names))),
                   (SELECT sum(c)::bigint FROM unnest(p_counts) AS c),
                   s.id, s.status, s.increment,
                   r.id, r.pg_sequence, r.min_value, r.max_value, r.start_value,
                   r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
              FROM (SELECT) AS one
              LEFT JOIN seqvend.sequences s
                     ON s.name = p_names[1] AND (p_locked IS NULL OR s.id = ANY (p_locked))
              LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
              LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT g.name, g.requests, g.total,
               s.id, s.status, s.increment,
               r.id, r.pg_sequence, r.min_value, r.max_value, r.start_value,
               r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
          FROM (SELECT u.name,
                       array_agg(u.ord::integer ORDER BY u.ord) AS requests,
                       sum(u.cnt)::bigint AS total
                  FROM unnest(p_names, p_counts) WITH ORDINALITY AS u(name, cnt, ord)
                 WHERE p_only IS NULL OR u.name = ANY (p_only)
                 GROUP BY u.name) AS g
          LEFT JOIN seqvend.sequences s
                 ON s.name = g.name AND (p_locked IS NULL OR s.id = ANY (p_locked))
          LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
          LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
         ORDER BY g.name COLLATE "C";
END
$$;

CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
    RETURNS TABLE (requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    batch_locked boolean := true;
    locked       integer[];
    prelocked    integer[];
    cur          record;
    answer       seqvend.vend_answer;
    answers      seqvend.vend_answer[] := '{}';
    -- Left to the per-sequence path: every name when the attempt was not made or undone.
    slow         text[] := '{}';
    mark_ranges  integer[] := '{}';
    mark_values  bigint[] := '{}';
    mark_up      boolean[] := '{}';
    written      integer[] := '{}';
    up           boolean;
    last_val     bigint;
    next_val     numeric;
    mark         bigint;
    drawn        bigint[];
    v            bigint;
BEGIN
    -- lock_timeout short: a lock held longer than this by someone else (a DBA's open ALTER
    -- SEQUENCE, a row left locked) fails the one sequence that needs it, not the batch. The
    -- session's seqvend.lock_timeout (milliseconds, SEQVEND_LOCK_TIMEOUT_MS) if set, else
    -- 200 ms. One statement for both settings.
    PERFORM set_config('synchronous_commit', 'on', true),
            set_config('lock_timeout',
                       coalesce(nullif(current_setting('seqvend.lock_timeout', true), ''), '200'),
                       true);

    -- 1. Lock the batch, as before: in name order, each named sequence's lock shared, then its
    --    active range's lock exclusively. Should one not come within lock_timeout, this is
    --    undone and each sequence takes its own locks on the per-sequence path.
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

    -- 2. The attempt. A new statement takes a new snapshot: it sees what committed while this
    --    session waited for the locks, so the marks it reads are current for the ranges locked
    --    above (a range that became active since is not among them: per-sequence path).
    IF batch_locked THEN
        BEGIN
            FOR cur IN
                SELECT * FROM seqvend.vend_batch_rows(p_names, p_counts, coalesce(locked, '{}'), NULL)
            LOOP
                IF cur.sequence_id IS NULL OR cur.status = 'retired' THEN
                    answers := answers || ROW(cur.requests, CASE WHEN cur.sequence_id IS NULL
                                                                 THEN 'not_found' ELSE 'retired' END,
                                              NULL, NULL, '{}', '{}')::seqvend.vend_answer;
                    CONTINUE;
                END IF;
                up := cur.increment > 0;
                -- coalesce: a NULL here (no active range, a NULL among prelocked) must mean
                -- "not the common case", never "not excluded".
                IF cur.total > 64 OR cur.range_id IS NULL
                   OR NOT coalesce(cur.range_id = ANY (prelocked), false)
                   OR cur.seqincrement IS NULL OR (cur.seqincrement > 0) <> up THEN
                    slow := slow || cur.name;
                    CONTINUE;
                END IF;
                last_val := pg_sequence_last_value(cur.pg_sequence);
                next_val := last_val::numeric + cur.seqincrement;
                mark := cur.high_water;
                IF last_val IS NULL OR NOT (next_val BETWEEN cur.min_value AND cur.max_value)
                   OR NOT (mark IS NULL OR CASE WHEN up THEN next_val > mark ELSE next_val < mark END)
                   OR NOT (CASE WHEN up
                                THEN least(cur.max_value, cur.seqmax) - next_val
                                     >= cur.total::numeric * cur.seqincrement
                                ELSE next_val - greatest(cur.min_value, cur.seqmin)
                                     >= cur.total::numeric * -(cur.seqincrement::numeric) END) THEN
                    slow := slow || cur.name;
                    CONTINUE;
                END IF;
                drawn := '{}';
                FOR i IN 1 .. cur.total LOOP
                    v := nextval(cur.pg_sequence);
                    IF NOT (v BETWEEN cur.min_value AND cur.max_value
                            AND (mark IS NULL OR CASE WHEN up THEN v > mark ELSE v < mark END)) THEN
                        -- Moved back, or its bounds altered, since the look above: undo the
                        -- attempt; the per-sequence path repairs and records it.
                        RAISE EXCEPTION 'sequence % moved while drawn', cur.pg_sequence;
                    END IF;
                    drawn := drawn || v;
                    mark := v;
                END LOOP;
                answers := answers || ROW(cur.requests, 'ok', drawn, NULL, ARRAY[cur.range_id],
                                          ARRAY[mark])::seqvend.vend_answer;
                mark_ranges := mark_ranges || cur.range_id;
                mark_values := mark_values || mark;
                mark_up := mark_up || up;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            answers := '{}';
            mark_ranges := '{}';
            mark_values := '{}';
            mark_up := '{}';
            slow := NULL;
        END;
    ELSE
        slow := NULL;
    END IF;

    -- 3. The per-sequence path, for the sequences left to it (NULL: every one), in name order.
    IF slow IS NULL OR cardinality(slow) > 0 THEN
        FOR cur IN
            SELECT * FROM seqvend.vend_batch_rows(p_names, p_counts,
                                                  CASE WHEN batch_locked THEN coalesce(locked, '{}') END,
                                                  slow)
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
                        -- nextval met the sequence's own bound after the room was read: once
                        -- more from a fresh read, where draw() handles the end.
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
    END IF;

    -- 4. The marks, in one statement for the whole batch.
    IF cardinality(mark_ranges) > 0 THEN
        written := seqvend.write_marks(mark_ranges, mark_values, mark_up);
    END IF;

    -- 5. The answers. A sequence whose mark could not be written (its range's row was held
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

-- write_marks(), as before, without the fold query for a single mark (a batch on one sequence,
-- the common case).
CREATE OR REPLACE FUNCTION seqvend.write_marks(p_ranges integer[], p_marks bigint[], p_up boolean[])
    RETURNS integer[]
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    folded_ids   integer[] := p_ranges;
    folded_marks bigint[] := p_marks;
    written      integer[] := '{}';
BEGIN
    IF cardinality(p_ranges) > 1 THEN
        SELECT array_agg(f.id), array_agg(f.mark) INTO folded_ids, folded_marks
          FROM (SELECT m.id, CASE WHEN bool_and(m.up) THEN max(m.mark) ELSE min(m.mark) END AS mark
                  FROM unnest(p_ranges, p_marks, p_up) AS m(id, mark, up)
                 GROUP BY m.id) AS f;
    END IF;
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

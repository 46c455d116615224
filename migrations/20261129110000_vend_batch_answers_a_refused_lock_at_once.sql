-- A sequence whose lock a batch's attempt was refused is answered `unavailable` at once.
--
-- Why: in a batch naming several sequences, a DBA's open ALTER SEQUENCE on one of them made
-- the batch's attempt wait lock_timeout for it and then undo the attempt; the per-sequence
-- path then waited lock_timeout for the same lock again before answering that sequence
-- `unavailable`: two waits, where SEQVEND_LOCK_TIMEOUT_MS promises one (the one-sequence path
-- waits once since 20261128100000).
--
-- Now the attempt remembers which sequence it was drawing from when a lock was not granted,
-- and the per-sequence path answers that one `unavailable` without asking for the lock again.
-- Nothing is drawn for it; values the undone attempt drew are gaps, as before. Every other
-- failure of the attempt (a deadlock included) leaves every sequence to its own path, as
-- before. Still waited for more than once: a lock refused while the whole batch is locked
-- (step 1: it cannot tell which sequence's), and the registry row of a range when its mark is
-- written.

CREATE OR REPLACE FUNCTION seqvend.vend_batch(p_names text[], p_counts integer[]) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
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
    -- The sequence the attempt is drawing from, while it is; and the one whose lock it was
    -- refused, answered `unavailable` without waiting for that lock again on its own path.
    drawing      text;
    refused      text;
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
                drawing := cur.name;
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
                drawing := NULL;
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
            IF SQLSTATE = '55P03' THEN  -- lock_not_available
                refused := drawing;
            END IF;
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
            IF cur.name = refused THEN
                answers := answers || ROW(cur.requests, 'unavailable', NULL,
                    'a lock it needs was not granted within lock_timeout: another session '
                    'holds its PostgreSQL sequence (an open ALTER SEQUENCE?)',
                    '{}', '{}')::seqvend.vend_answer;
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

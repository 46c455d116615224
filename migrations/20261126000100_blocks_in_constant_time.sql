-- Blocks in constant time: a draw of more than 64 values from one range costs the same
-- whatever its size, and the statement answers values as runs.
--
-- * draw_runs() replaces draw(). For a block, it takes the range's PostgreSQL sequence lock
--   the way repair_rewind() does (ALTER SEQUENCE … NO CYCLE: a lock that nextval and setval
--   in every other session wait for, held to commit; it changes nothing, since seqvend's
--   sequences are NO CYCLE), reads where the sequence stands and its bounds and increment
--   again under that lock, and claims the block with one setval to its last value. Nobody can
--   draw between the read and the setval, so no value of the block goes to anyone else; the
--   block is cut at the range's end (or the sequence's own MAXVALUE/MINVALUE, the nearer) and
--   the draw rolls over as before. Where the lock cannot be had quickly (another session holds
--   the sequence in an open transaction) or seqvend does not own the sequence, the block is
--   drawn with nextval value by value, as before. Why this and not ALTER SEQUENCE INCREMENT BY
--   or a setval without the lock: docs/design.md, "Blocks in constant time".
-- * Answers are runs (first, last, step) instead of every value: vend_runs() is the
--   statement seqvend sends, and expands nothing; vend() is kept, same signature and answers,
--   for SQL callers and vend_keyed(); lease() answers runs, so a lease of 100,000 values costs
--   what a lease of 100 does.
-- * lease() and lease_keyed() answer runs_first/runs_last and value_count instead of vals.
--
-- Advisory lock keys are unchanged (see 20261121000002_vend.sql).

-- Runs (firsts, lasts, steps) followed by runs (p_firsts, p_lasts, p_steps): the first of
-- these joins the last of those when it follows it by exactly one step (compared as numeric:
-- no overflow at bigint's ends).
CREATE FUNCTION seqvend.runs_join(INOUT firsts bigint[], INOUT lasts bigint[],
                                  INOUT steps bigint[], p_firsts bigint[], p_lasts bigint[],
                                  p_steps bigint[])
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    n integer := cardinality(firsts);
BEGIN
    IF cardinality(p_firsts) = 0 THEN
        RETURN;
    END IF;
    IF n > 0 AND steps[n] = p_steps[1] AND lasts[n]::numeric + p_steps[1] = p_firsts[1] THEN
        lasts[n] := p_lasts[1];
        p_firsts := p_firsts[2:];
        p_lasts := p_lasts[2:];
        p_steps := p_steps[2:];
    END IF;
    firsts := firsts || p_firsts;
    lasts := lasts || p_lasts;
    steps := steps || p_steps;
END
$$;

-- Every value of runs (firsts, lasts, steps), in order.
CREATE FUNCTION seqvend.run_values(p_firsts bigint[], p_lasts bigint[], p_steps bigint[])
    RETURNS bigint[]
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    IF cardinality(p_firsts) = 1 AND p_firsts[1] = p_lasts[1] THEN
        RETURN ARRAY[p_firsts[1]];
    END IF;
    RETURN (SELECT coalesce(array_agg(v.v ORDER BY u.n, v.k), '{}')
              FROM unnest(p_firsts, p_lasts, p_steps) WITH ORDINALITY AS u(f, l, s, n),
                   generate_series(u.f, u.l, u.s) WITH ORDINALITY AS v(v, k));
END
$$;

-- Takes the lock of a range's PostgreSQL sequence that nextval and setval in every other
-- session wait for, held to commit, without waiting longer than p_wait for it. False when it
-- did not come in time, or when seqvend does not own the sequence (only its owner may alter
-- it): the caller then draws value by value. ALTER SEQUENCE … NO CYCLE changes nothing on a
-- sequence seqvend made (and a cycling one is a rewind waiting to happen: repair_rewind()
-- does the same); it rewrites no file, only the sequence's pg_sequence row.
CREATE FUNCTION seqvend.lock_range_sequence(p_seq regclass, p_wait text)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    outer_wait text := current_setting('lock_timeout');
BEGIN
    IF NOT pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = p_seq),
                       'USAGE') THEN
        RETURN false;
    END IF;
    PERFORM set_config('lock_timeout', p_wait, true);
    BEGIN
        EXECUTE format('ALTER SEQUENCE %s NO CYCLE', p_seq);
    EXCEPTION WHEN lock_not_available THEN
        PERFORM set_config('lock_timeout', outer_wait, true);
        RETURN false;
    END;
    PERFORM set_config('lock_timeout', outer_wait, true);
    RETURN true;
END
$$;

-- Draws up to p_wanted values from one range, in vend order, as runs: every value inside
-- [p_min, p_max] and beyond p_mark (the last value seqvend handed out from the range), each
-- strictly past the one before. `taken` counts them; `ended` is true when the range has no
-- value left after the last one; `note` says what was repaired. The caller holds the range's
-- SVRG lock.
--
-- More than 64 values still wanted: a block, claimed with one setval under the sequence's
-- lock (lock_range_sequence), after reading the sequence, its increment and its bounds under
-- that lock. Otherwise (or when that lock is not to be had) value by value with nextval: a
-- batch in one SQL statement, and the batch that reaches the range's end one value at a time,
-- so that another session taking the last values meanwhile (nextval then errors at the
-- sequence's own bound) costs no value this statement drew.
CREATE FUNCTION seqvend.draw_runs(p_sequence integer, p_range integer, p_seq regclass,
                                  p_min bigint, p_max bigint, p_start bigint,
                                  p_increment bigint, p_step bigint, p_seq_min bigint,
                                  p_seq_max bigint, p_mark bigint, p_wanted bigint,
                                  OUT firsts bigint[], OUT lasts bigint[], OUT steps bigint[],
                                  OUT taken bigint, OUT ended boolean, OUT note text)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    up        boolean := p_increment > 0;
    range_end bigint;
    last_out  bigint := p_mark;
    last_val  bigint;
    next_val  numeric;
    room      numeric;
    k         bigint;
    batch     bigint[];
    stale     numeric;
    repairs   integer := 0;
    tried     boolean := false;
    locked    boolean := false;
    n         integer;
    v         bigint;
BEGIN
    firsts := '{}';
    lasts := '{}';
    steps := '{}';
    taken := 0;
    ended := false;
    WHILE taken < p_wanted LOOP
        IF NOT tried AND p_wanted - taken > 64 THEN
            -- Tried once per draw: a lock not had in time is not waited for again.
            tried := true;
            locked := seqvend.lock_range_sequence(p_seq, '20ms');
            IF locked THEN
                -- What a DBA committed before the lock came is seen now, and nothing moves
                -- until commit.
                SELECT ps.seqincrement, ps.seqmin, ps.seqmax INTO p_step, p_seq_min, p_seq_max
                  FROM pg_catalog.pg_sequence ps WHERE ps.seqrelid = p_seq;
            END IF;
        END IF;
        IF (p_step > 0) <> up THEN
            RAISE EXCEPTION 'sequence % counts by % but its range counts by %: restore its '
                            'INCREMENT BY', p_seq, p_step, p_increment;
        END IF;
        -- The last value the range can give: its own end or the sequence's, the nearer.
        range_end := CASE WHEN up THEN least(p_max, p_seq_max) ELSE greatest(p_min, p_seq_min) END;
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
            k := least(room, p_wanted - taken);
            IF locked AND k > 1 THEN
                -- The block: next_val is inside the range and past the mark (checked above),
                -- and its last value is within range_end (room), so every value between is.
                v := (next_val + (k - 1) * p_step)::bigint;
                PERFORM setval(p_seq, v, true);
                SELECT r.firsts, r.lasts, r.steps INTO firsts, lasts, steps
                  FROM seqvend.runs_join(firsts, lasts, steps, ARRAY[next_val::bigint],
                                         ARRAY[v], ARRAY[p_step]) AS r;
                taken := taken + k;
                last_out := v;
                CONTINUE;
            END IF;
        END IF;
        IF k < room THEN
            batch := ARRAY(SELECT nextval(p_seq) FROM generate_series(1, k));
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
        END IF;
        -- Keep each value past the last one kept; a value not past it was moved back (it may
        -- have been handed out before): skip it and repair before drawing more.
        FOREACH v IN ARRAY batch LOOP
            IF v BETWEEN p_min AND p_max
               AND (last_out IS NULL OR CASE WHEN up THEN v > last_out ELSE v < last_out END) THEN
                n := cardinality(firsts);
                IF n > 0 AND steps[n] = p_step AND lasts[n]::numeric + p_step = v THEN
                    lasts[n] := v;
                ELSE
                    firsts := firsts || v;
                    lasts := lasts || v;
                    steps := steps || p_step;
                END IF;
                taken := taken + 1;
                last_out := v;
            ELSIF (CASE WHEN up THEN v > p_max ELSE v < p_min END) THEN
                -- Beyond the range's end (its sequence's bounds were widened): not ours.
                ended := true;
                EXIT;
            ELSE
                stale := coalesce(stale, v);
            END IF;
        END LOOP;
        EXIT WHEN ended;
    END LOOP;
    -- Roll over as soon as the last value is out, so the registry never shows an active
    -- range with nothing left.
    IF NOT ended AND last_out IS NOT NULL THEN
        range_end := CASE WHEN up THEN least(p_max, p_seq_max) ELSE greatest(p_min, p_seq_min) END;
        ended := CASE WHEN up THEN last_out::numeric + p_step > range_end
                      ELSE last_out::numeric + p_step < range_end END;
    END IF;
END
$$;

-- One sequence's answer, held until the marks are written (see vend_answer): its values as
-- runs, `taken` of them.
CREATE TYPE seqvend.vend_runs_answer AS (
    requests integer[],
    outcome  text,
    firsts   bigint[],
    lasts    bigint[],
    steps    bigint[],
    taken    bigint,
    detail   text,
    ranges   integer[],
    marks    bigint[]
);

-- vend_sequence() answering runs, and drawing blocks with draw_runs(). Parameters and
-- outcomes as there.
CREATE FUNCTION seqvend.vend_sequence_runs(p_sequence integer, p_increment bigint,
                                           p_wanted bigint, p_sequence_locked boolean,
                                           p_locked integer[], p_fast boolean,
                                           p_range integer, p_seq regclass, p_min bigint,
                                           p_max bigint, p_start bigint, p_mark bigint,
                                           p_step bigint, p_seq_min bigint, p_seq_max bigint)
    RETURNS seqvend.vend_runs_answer
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    answer   seqvend.vend_runs_answer := ROW(NULL, 'ok', '{}', '{}', '{}', 0, NULL, '{}', '{}');
    firsts   bigint[] := '{}';
    lasts    bigint[] := '{}';
    steps    bigint[] := '{}';
    got      bigint := 0;
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
    n        integer;
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
            answer.firsts := NULL;
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

        -- The common case, inline (see vend_sequence): nextval as plain expressions, each
        -- value checked as it comes; the first that is not past the one before or not inside
        -- the range ends this path, is dropped, and draw_runs() takes over.
        need := p_wanted - got;
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
                    n := cardinality(firsts);
                    IF n > 0 AND steps[n] = s_step AND lasts[n]::numeric + s_step = v THEN
                        lasts[n] := v;
                    ELSE
                        firsts := firsts || v;
                        lasts := lasts || v;
                        steps := steps || s_step;
                    END IF;
                    r_mark := v;
                    taken := taken + 1;
                END LOOP;
            END IF;
        END IF;
        got := got + taken;
        IF taken > 0 THEN
            answer.ranges := answer.ranges || r_id;
            answer.marks := answer.marks || r_mark;
        END IF;
        -- Room was left after the last value: the range is not used up.
        EXIT WHEN taken = need;

        res := seqvend.draw_runs(p_sequence, r_id, r_seq, r_min, r_max, r_start, p_increment,
                                 s_step, s_min, s_max, r_mark, p_wanted - got);
        answer.detail := nullif(concat_ws('; ', answer.detail, res.note), '');
        IF res.taken > 0 THEN
            SELECT j.firsts, j.lasts, j.steps INTO firsts, lasts, steps
              FROM seqvend.runs_join(firsts, lasts, steps, res.firsts, res.lasts, res.steps) AS j;
            got := got + res.taken;
            -- The same range as the fast path's, perhaps: folded by the caller.
            answer.ranges := answer.ranges || r_id;
            answer.marks := answer.marks || res.lasts[cardinality(res.lasts)];
        END IF;
        EXIT WHEN NOT res.ended;

        -- Used up: roll over at once, and continue from the next range if more values are
        -- wanted.
        PERFORM seqvend.roll_over(p_sequence, r_id);
        EXIT WHEN got >= p_wanted;
        r_id := (SELECT r.id FROM seqvend.ranges r
                  WHERE r.sequence_id = p_sequence AND r.status = 'active');
    END LOOP;
    answer.firsts := firsts;
    answer.lasts := lasts;
    answer.steps := steps;
    answer.taken := got;
    RETURN answer;
END
$$;

-- seqvend.vend() answering runs: the statement seqvend sends. Request i asks p_counts[i]
-- values of the sequence p_names[i]; one row per sequence named, its values (outcome 'ok') as
-- runs: run j is firsts[j], firsts[j] + steps[j], …, lasts[j]. Otherwise as vend() (its
-- comment, 20261125000001_vend_never_twice.sql, says what each outcome means, and why the
-- marks written at the end make the commit wait for the WAL flush).
CREATE FUNCTION seqvend.vend_runs(p_names text[], p_counts integer[])
    RETURNS TABLE (requests integer[], outcome text, firsts bigint[], lasts bigint[],
                   steps bigint[], detail text)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    batch_locked boolean := true;
    locked       integer[];
    prelocked    integer[];
    cur          record;
    answer       seqvend.vend_runs_answer;
    answers      seqvend.vend_runs_answer[] := '{}';
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
                                             ELSE 'retired' END, NULL, NULL, NULL, 0, NULL,
                          '{}', '{}');
            answers := answers || answer;
            CONTINUE;
        END IF;

        FOR attempt IN 1 .. 2 LOOP
            BEGIN
                answer := seqvend.vend_sequence_runs(
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
                    answer := ROW(NULL, 'unavailable', NULL, NULL, NULL, 0, SQLERRM, '{}', '{}');
                WHEN lock_not_available OR deadlock_detected OR serialization_failure THEN
                    answer := ROW(NULL, 'unavailable', NULL, NULL, NULL, 0, SQLERRM, '{}', '{}');
                    EXIT;
                WHEN OTHERS THEN
                    answer := ROW(NULL, 'failed', NULL, NULL, NULL, 0, SQLERRM, '{}', '{}');
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
        firsts := answer.firsts;
        lasts := answer.lasts;
        steps := answer.steps;
        detail := answer.detail;
        IF outcome = 'ok' AND NOT (answer.ranges <@ written) THEN
            outcome := 'unavailable';
            firsts := NULL;
            lasts := NULL;
            steps := NULL;
            detail := 'the registry row of one of its ranges is locked by another session';
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- Every value, as before: for SQL callers and vend_keyed(), which stores each request's
-- share. The same statement as vend_runs(), the runs expanded.
CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
    RETURNS TABLE (requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN QUERY
    SELECT v.requests, v.outcome,
           CASE WHEN v.firsts IS NOT NULL THEN seqvend.run_values(v.firsts, v.lasts, v.steps) END,
           v.detail
      FROM seqvend.vend_runs(p_names, p_counts) AS v;
END
$$;

DROP FUNCTION seqvend.vend_sequence(integer, bigint, bigint, boolean, integer[], boolean, integer,
                                    regclass, bigint, bigint, bigint, bigint, bigint, bigint,
                                    bigint);
DROP TYPE seqvend.vend_answer;
DROP FUNCTION seqvend.draw(integer, integer, regclass, bigint, bigint, bigint, bigint, bigint,
                           bigint, bigint, bigint, bigint);

-- Runs drawn (each with its step) as blocks counting by p_increment, the registry's: a run
-- drawn with another step (its sequence's INCREMENT BY changed by hand) is one block per value.
CREATE FUNCTION seqvend.runs_as_blocks(p_firsts bigint[], p_lasts bigint[], p_steps bigint[],
                                       p_increment bigint, OUT runs_first bigint[],
                                       OUT runs_last bigint[], OUT value_count bigint)
    LANGUAGE sql IMMUTABLE
AS $$
    SELECT coalesce(array_agg(b.f ORDER BY b.n, b.k), '{}'),
           coalesce(array_agg(b.l ORDER BY b.n, b.k), '{}'),
           coalesce(sum((b.l::numeric - b.f) / p_increment + 1), 0)::bigint
      FROM (SELECT u.n, 0::bigint AS k, u.f, u.l
              FROM unnest(p_firsts, p_lasts, p_steps) WITH ORDINALITY AS u(f, l, s, n)
             WHERE u.s = p_increment
            UNION ALL
            SELECT u.n, g.k, g.v, g.v
              FROM unnest(p_firsts, p_lasts, p_steps) WITH ORDINALITY AS u(f, l, s, n),
                   generate_series(u.f, u.l, u.s) WITH ORDINALITY AS g(v, k)
             WHERE u.s <> p_increment) AS b
$$;

-- A lease answers its values as blocks (runs_first[j] … runs_last[j] by the sequence's
-- increment), value_count of them, instead of every value: its cost does not grow with its
-- size. Otherwise as before (20261125000002_leases_never_twice.sql).
DROP FUNCTION seqvend.lease_keyed(text, integer, text, text, interval, text, text, text,
                                  interval);
DROP FUNCTION seqvend.lease(text, integer, text, text, interval);

CREATE FUNCTION seqvend.lease(p_name text, p_count integer, p_kind text, p_holder text,
                              p_ttl interval)
    RETURNS TABLE (outcome text, runs_first bigint[], runs_last bigint[], value_count bigint,
                   detail text, lease_id bigint, expires_at timestamptz, increment bigint)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    drawn record;
BEGIN
    -- The lease row and the draw's mark must survive a crash before any value leaves.
    PERFORM set_config('synchronous_commit', 'on', true);
    SELECT v.outcome, v.firsts, v.lasts, v.steps, v.detail INTO drawn
      FROM seqvend.vend_runs(ARRAY[p_name], ARRAY[p_count]) AS v;
    outcome := drawn.outcome;
    detail := drawn.detail;
    value_count := 0;
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    IF drawn.outcome = 'ok' THEN
        SELECT b.runs_first, b.runs_last, b.value_count INTO runs_first, runs_last, value_count
          FROM seqvend.runs_as_blocks(drawn.firsts, drawn.lasts, drawn.steps, increment) AS b;
    END IF;
    IF value_count > 0 THEN
        INSERT INTO seqvend.leases AS l (sequence_id, kind, holder, value_count, expires_at)
        SELECT s.id, p_kind, p_holder, value_count, now() + p_ttl
          FROM seqvend.sequences s WHERE s.name = p_name
        RETURNING l.id, l.expires_at INTO lease_id, expires_at;
    END IF;
    RETURN NEXT;
END
$$;

CREATE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text, p_holder text,
                                    p_ttl interval, p_owner text, p_key text, p_request text,
                                    p_key_ttl interval)
    RETURNS TABLE (outcome text, runs_first bigint[], runs_last bigint[], value_count bigint,
                   detail text, lease_id bigint, expires_at timestamptz, increment bigint)
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
        runs_first := drawn.runs_first;
        runs_last := drawn.runs_last;
        value_count := drawn.value_count;
        detail := drawn.detail;
        lease_id := drawn.lease_id;
        expires_at := drawn.expires_at;
        IF drawn.outcome <> 'ok' THEN
            RETURN NEXT;
            RETURN;
        END IF;
        IF seqvend.store_answer(p_owner, p_key, p_request,
                                CASE WHEN value_count > 0 THEN 200 ELSE 409 END::smallint,
                                NULL, runs_first, runs_last, drawn.expires_at, p_key_ttl) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        -- Another instance stored an answer first: it stands (this lease's values are a gap).
        SELECT * INTO known FROM seqvend.idempotent_answer(p_owner, p_key);
    END IF;
    outcome := CASE WHEN known.request = p_request THEN 'replayed' ELSE 'key_reused' END;
    detail := known.status::text;
    lease_id := NULL;
    expires_at := known.lease_expires_at;
    runs_first := known.runs_first;
    runs_last := known.runs_last;
    value_count := NULL;
    RETURN NEXT;
END
$$;

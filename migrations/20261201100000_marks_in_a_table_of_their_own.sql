-- Each range's high-water mark moves from its registry row to a narrow table of its own.
--
-- Why: every vend statement writes its range's mark. Written in `ranges`, that `UPDATE` paid
-- for the row's three CHECK constraints (parsed and prepared again for every statement) and
-- its foreign keys, though it touches none of their columns. In one session (pgbench, backend
-- CPU, medians of 3 interleaved rounds), the one-sequence statement cost 191 µs for one value
-- and 214 µs for 26 with the mark in `ranges`, against 170 µs and 199 µs with it here (taken
-- without the foreign key below, which cost nothing measurable for one value and 3-4 % for
-- 26). `range_marks` has its key, that key's reference and the mark, nothing else to check.
--
-- Every range gets its mark row when it is inserted, by a trigger, however it is inserted (an
-- instance of the previous version adding a range while others are upgraded, a range made by
-- hand); the row is never deleted, as ranges are not. Every writer of a mark checks that the
-- row was there: a missing one (deleted by hand) hands nothing out, as a mark that cannot be
-- written did before.
--
-- `ranges` is locked first, as dropping its column will need: a draw in flight (an instance
-- not yet upgraded) finishes before the marks are copied, so its mark is not left behind in the
-- column that is dropped, and no draw can then hold the table against this transaction's
-- stronger lock later (a deadlock). Draws wait for the migration, a fraction of a second.

LOCK TABLE seqvend.ranges IN ACCESS EXCLUSIVE MODE;

CREATE TABLE seqvend.range_marks (
    range_id   integer PRIMARY KEY REFERENCES seqvend.ranges (id),
    -- The last value handed out from the range; NULL until the first.
    high_water bigint
) WITH (fillfactor = 50);  -- room on each page for the updates to stay HOT

INSERT INTO seqvend.range_marks (range_id, high_water)
SELECT id, high_water FROM seqvend.ranges;

CREATE FUNCTION seqvend.add_range_mark() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO seqvend.range_marks (range_id) VALUES (NEW.id);
    RETURN NULL;
END
$$;

CREATE TRIGGER ranges_have_a_mark AFTER INSERT ON seqvend.ranges
    FOR EACH ROW EXECUTE FUNCTION seqvend.add_range_mark();

CREATE OR REPLACE FUNCTION seqvend.write_marks(p_ranges integer[], p_marks bigint[], p_up boolean[]) RETURNS integer[]
    LANGUAGE plpgsql
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
        -- Only the marks found are written: a range without its mark row hands nothing out.
        WITH marked AS (
            UPDATE seqvend.range_marks m SET high_water = f.mark
              FROM unnest(folded_ids, folded_marks) AS f(id, mark)
             WHERE m.range_id = f.id
            RETURNING m.range_id)
        SELECT coalesce(array_agg(range_id), '{}') INTO written FROM marked;
        RETURN written;
    EXCEPTION WHEN lock_not_available THEN
        NULL;  -- one of the rows is held: write them one by one below
    END;
    FOR i IN 1 .. cardinality(folded_ids) LOOP
        BEGIN
            PERFORM FROM seqvend.range_marks m WHERE m.range_id = folded_ids[i]
                FOR NO KEY UPDATE NOWAIT;
            UPDATE seqvend.range_marks m SET high_water = folded_marks[i]
             WHERE m.range_id = folded_ids[i];
            IF FOUND THEN
                written := written || folded_ids[i];
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            NULL;  -- held: that range's sequence hands nothing out
        END;
    END LOOP;
    RETURN written;
END
$$;

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
BEGIN
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

CREATE OR REPLACE FUNCTION seqvend.vend_batch_rows(p_names text[], p_counts integer[], p_locked integer[], p_only text[]) RETURNS TABLE(name text, requests integer[], total bigint, sequence_id integer, status text, increment bigint, range_id integer, pg_sequence regclass, min_value bigint, max_value bigint, start_value bigint, high_water bigint, seqincrement bigint, seqmin bigint, seqmax bigint)
    LANGUAGE plpgsql
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
                   m.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
              FROM (SELECT) AS one
              LEFT JOIN seqvend.sequences s
                     ON s.name = p_names[1] AND (p_locked IS NULL OR s.id = ANY (p_locked))
              LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
              LEFT JOIN seqvend.range_marks m ON m.range_id = r.id
              LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence;
        RETURN;
    END IF;
    RETURN QUERY
        SELECT g.name, g.requests, g.total,
               s.id, s.status, s.increment,
               r.id, r.pg_sequence, r.min_value, r.max_value, r.start_value,
               m.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
          FROM (SELECT u.name,
                       array_agg(u.ord::integer ORDER BY u.ord) AS requests,
                       sum(u.cnt)::bigint AS total
                  FROM unnest(p_names, p_counts) WITH ORDINALITY AS u(name, cnt, ord)
                 WHERE p_only IS NULL OR u.name = ANY (p_only)
                 GROUP BY u.name) AS g
          LEFT JOIN seqvend.sequences s
                 ON s.name = g.name AND (p_locked IS NULL OR s.id = ANY (p_locked))
          LEFT JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
          LEFT JOIN seqvend.range_marks m ON m.range_id = r.id
          LEFT JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
         ORDER BY g.name COLLATE "C";
END
$$;

CREATE OR REPLACE FUNCTION seqvend.vend_sequence(p_sequence integer, p_increment bigint, p_wanted bigint, p_sequence_locked boolean, p_locked integer[], p_fast boolean, p_range integer, p_seq regclass, p_min bigint, p_max bigint, p_start bigint, p_mark bigint, p_step bigint, p_seq_min bigint, p_seq_max bigint) RETURNS seqvend.vend_answer
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
                   m.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
              INTO r_status, r_seq, r_min, r_max, r_start, r_mark, s_step, s_min, s_max
              FROM seqvend.ranges r
              JOIN seqvend.range_marks m ON m.range_id = r.id
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

CREATE OR REPLACE FUNCTION seqvend.lease_blocks(p_name text, p_count bigint, OUT runs_first bigint[], OUT runs_last bigint[], OUT taken bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    seq_id integer;
    step   bigint;
    r      record;
    blk    record;
    last   bigint;
    n      integer;
BEGIN
    runs_first := '{}';
    runs_last := '{}';
    taken := 0;
    PERFORM set_config('lock_timeout',
                       coalesce(nullif(current_setting('seqvend.lock_timeout', true), ''), '200'),
                       true);
    SELECT s.id, s.increment INTO seq_id, step FROM seqvend.sequences s WHERE s.name = p_name;
    IF seq_id IS NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(1398166353, seq_id);
    WHILE taken < p_count LOOP
        -- Read after the locks (a new snapshot each): a retirement or rollover that committed
        -- meanwhile is seen.
        SELECT g.id INTO r FROM seqvend.ranges g JOIN seqvend.sequences s ON s.id = g.sequence_id
         WHERE s.id = seq_id AND s.status = 'active' AND g.status = 'active';
        EXIT WHEN r.id IS NULL;
        PERFORM pg_advisory_xact_lock(1398166087, r.id);
        SELECT g.id, g.status, g.pg_sequence, g.min_value, g.max_value, m.high_water INTO r
          FROM seqvend.ranges g LEFT JOIN seqvend.range_marks m ON m.range_id = g.id
         WHERE g.id = r.id;
        EXIT WHEN r.status <> 'active';
        blk := seqvend.draw_block(r.pg_sequence, p_count - taken, step, r.min_value,
                                  r.max_value, r.high_water);
        EXIT WHEN blk.taken IS NULL;
        IF blk.taken > 0 THEN
            last := (blk.first::numeric + (blk.taken - 1) * step)::bigint;
            UPDATE seqvend.range_marks SET high_water = last WHERE range_id = r.id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'range % has no row in seqvend.range_marks', r.id;
            END IF;
            n := cardinality(runs_last);
            IF n > 0 AND runs_last[n]::numeric + step = blk.first THEN
                runs_last[n] := last;
            ELSE
                runs_first := runs_first || blk.first;
                runs_last := runs_last || last;
            END IF;
            taken := taken + blk.taken;
        END IF;
        EXIT WHEN NOT blk.ended;
        PERFORM seqvend.roll_over(seq_id, r.id);
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION seqvend.recreate_range_sequence(p_range_id integer) RETURNS regclass
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
    SELECT g.id, g.min_value, g.max_value, g.start_value, m.high_water,
           g.pg_sequence::oid AS old_oid, s.increment
      INTO r
      FROM seqvend.ranges g
      JOIN seqvend.sequences s ON s.id = g.sequence_id
      JOIN seqvend.range_marks m ON m.range_id = g.id
     WHERE g.id = p_range_id
       FOR UPDATE OF g, m;
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

-- Their answers name the mark where they named the range's row.
CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[]) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    IF cardinality(p_names) > 0 AND p_names[1] = ALL (p_names) THEN
        -- The settings vend_batch() would make, before any lock is asked for.
        PERFORM set_config('synchronous_commit', 'on', true),
                set_config('lock_timeout',
                           coalesce(nullif(current_setting('seqvend.lock_timeout', true), ''),
                                    '200'),
                           true);
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

    -- 5. The answers. A sequence whose mark could not be written (its range's mark was held
    --    by another session) hands nothing out: its values become gaps.
    FOREACH answer IN ARRAY answers LOOP
        requests := answer.requests;
        outcome := answer.outcome;
        vals := answer.vals;
        detail := answer.detail;
        IF outcome = 'ok' AND NOT (answer.ranges <@ written) THEN
            outcome := 'unavailable';
            vals := NULL;
            detail := 'the mark of one of its ranges (seqvend.range_marks) is locked by another '
                      'session';
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

ALTER TABLE seqvend.ranges DROP COLUMN high_water;

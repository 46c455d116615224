-- The vend statement, rewritten in parts with one job each, for three faults:
--
-- * Marks fold per range. When a rewind landed inside a batch, the fast path and draw() each
--   recorded a mark for the same range, and `UPDATE … FROM unnest(…)` kept one of the two (the
--   lower, with a nested loop): the next rewind was repaired only to it, and values went out
--   twice. The marks are now folded per range (the furthest, by direction) before one UPDATE.
-- * A lock one sequence waits on fails that sequence only. The statement sets a short
--   lock_timeout; every lock it can wait on (the batch's advisory locks, a range's sequence
--   under ALTER SEQUENCE, the registry rows a rollover and its events touch, the marks' rows)
--   is taken where a failure answers that sequence's requests alone: outcome 'unavailable'
--   (answered 503 with Retry-After), never 'failed', and the other sequences' values are kept.
-- * nextval meeting the sequence's own bound after the room check (someone drew the last
--   values meanwhile, or narrowed MAXVALUE while this statement waited) is retried once from a
--   fresh read, without the fast path: draw() handles the range's end and rolls over, so the
--   request is still served when values exist.
--
-- Also: draw_counters takes every key in key order in its first statement (no deadlock between
-- seqvend's own draws) and forces synchronous_commit for its own transaction, as vend() does.
--
-- Advisory lock keys are unchanged (see 20261121000002_vend.sql): SVSQ (1398166353) + sequence
-- id, shared by vends; SVRG (1398166087) + range id, exclusive around one range's draw.

-- One sequence's answer, held until the marks are written: a sequence whose mark cannot be
-- written must not hand its values out. `ranges` are the ranges its values came from.
CREATE TYPE seqvend.vend_answer AS (
    requests integer[],
    outcome  text,
    vals     bigint[],
    detail   text,
    ranges   integer[],
    marks    bigint[]
);

-- Draws p_wanted values for one sequence, starting from its active range p_range (as read by
-- the caller), and rolls used-up ranges over. Returns the answer without `requests`:
-- 'ok' with the values (fewer when the sequence ran out), or 'retired'; and for each range
-- drawn from, the last value handed out from it (`ranges`, `marks`, a range listed once per
-- path that drew from it: the caller folds them). Raises on any failure: the caller's
-- exception block undoes what this did and answers for it.
--
-- p_sequence_locked: the caller holds the sequence's SVSQ lock and read its status after
-- taking it. When false (the batch's locks did not all come in time), it is taken here, and
-- the status and active range read again after it.
-- p_locked: the ranges whose SVRG lock the caller took before reading them. Any other range
-- (one that became active since, or any range when the caller asks for a fresh read) is locked
-- here and read again after the lock, so its mark and bounds are current.
-- p_fast: whether the inline fast path may be used (off on a retry).
CREATE FUNCTION seqvend.vend_sequence(p_sequence integer, p_increment bigint, p_wanted bigint,
                                      p_sequence_locked boolean, p_locked integer[],
                                      p_fast boolean, p_range integer, p_seq regclass,
                                      p_min bigint, p_max bigint, p_start bigint, p_mark bigint,
                                      p_step bigint, p_seq_min bigint, p_seq_max bigint)
    RETURNS seqvend.vend_answer
    LANGUAGE plpgsql VOLATILE
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

-- Writes the marks of a batch: for each range, the furthest value handed out from it (the
-- highest going up, the lowest going down; a range may be listed more than once). Returns the
-- ranges written. One UPDATE in the common case; should a registry row be held by another
-- session past lock_timeout, each range is written on its own, a row still held is skipped
-- (NOWAIT), and only the sequences of the skipped ranges go without their values: one locked
-- row never fails the batch. PL/pgSQL, not SQL: its statements' plans are kept for the
-- session (a SQL function's are made again at every call, a cost every vend paid).
CREATE FUNCTION seqvend.write_marks(p_ranges integer[], p_marks bigint[], p_up boolean[])
    RETURNS integer[]
    LANGUAGE plpgsql VOLATILE
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

-- Serves many vend requests in one statement. Request i asks p_counts[i] values of the
-- sequence p_names[i]. Returns one row per sequence named: the requests for it (their indexes,
-- in the order they were taken), and one of
--   'ok'          every value drawn for them, in vend order (fewer than they asked for
--                 together when the sequence ran out); `detail` says what was repaired;
--   'retired', 'not_found';
--   'unavailable' a lock it needed was held by another session past lock_timeout, or a
--                 transient conflict (deadlock, serialization); worth retrying;
--   'failed'      a failure of its own (its PostgreSQL sequence dropped, its INCREMENT
--                 reversed): `detail` says why.
-- A failure of one sequence answers its requests only; the others are served.
--
-- The marks written at the end are the WAL-writing part: they give the transaction an id, so
-- the commit waits for the WAL flush (synchronous_commit = on, set here as well as by the
-- session, since a pooler may drop startup options) before any value is returned, including
-- any sequence WAL an earlier aborted transaction left unflushed.
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

-- Draws values for a batch of requests, request i asking p_counts[i] values of the counter
-- p_keys[i] in the family named p_families[i]. One row per (family, key) asked: the requests
-- it answers (1-based, in order), and
--   'ok'        taken values from first_value by step (taken < asked: the counter ran out;
--               0: it had run out already); created when this draw made the counter;
--   'not_found' no such family;
--   'retired'   the family is retired.
-- Each family is held by a shared advisory lock, which retiring takes exclusively, so a draw
-- never commits after a retirement did. Then:
--   1. every key asked, in key order, in one INSERT … ON CONFLICT DO UPDATE: a new key is
--      inserted already drawn; an existing one with room for all that is asked is drawn (a
--      HOT update). Either way the key is locked, in key order, whatever the plan: two
--      batches with keys in common queue, never deadlock. Most batches end here;
--   2. the keys left (counters running out): already locked by step 1, so nothing is waited
--      for; clamped at the family's bound.
-- The commit must be durable before any value is answered: synchronous_commit is forced for
-- this transaction, as in vend(), since a pooler may drop the session's option.
CREATE OR REPLACE FUNCTION seqvend.draw_counters(p_families text[], p_keys text[], p_counts int4[])
RETURNS TABLE (requests int4[], outcome text, first_value bigint, taken bigint, step bigint,
               created boolean)
LANGUAGE plpgsql AS $$
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

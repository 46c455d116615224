-- Blocks in constant time: a lease, or a vend batch, of more than 64 values from one range
-- claims them with one setval under the sequence's lock, whatever their number, instead of
-- calling nextval once per value. Why this lock and not another: docs/design.md, "Blocks in
-- constant time".
--
-- * lock_sequence_for_block(): the lock. ALTER SEQUENCE … OWNER TO its current owner is an
--   ALTER TABLE subcommand that takes AccessExclusiveLock on the sequence (nextval, setval and
--   any SELECT … FROM it in other sessions wait) and, the owner being unchanged, writes no
--   catalog row and gives the sequence no new file: a DBA reading the sequence meanwhile waits
--   and then finds its row (every other ALTER SEQUENCE option rewrites the file on
--   PostgreSQL 15). Waited for briefly, and not at all where seqvend does not own the sequence.
-- * draw_block(): under that lock, reads where the sequence stands, its increment and bounds,
--   and claims up to n values with one setval; declines (the caller draws value by value with
--   nextval, as before) whenever the lock is not had or the sequence is not where a plain
--   nextval would continue the range from its mark.
-- * lease_blocks(): a lease's draw in blocks, answered as runs, so a lease of 100,000 values
--   costs what a lease of 100 does.
-- * lease() and lease_keyed() answer runs (runs_first, runs_last, value_count) instead of
--   every value; what lease_blocks() did not draw, vend() draws as before.
-- * draw() (vend's value-by-value path) claims a block with draw_block() when more than 64
--   values are wanted from one range; its answer still lists every value.
--
-- Advisory lock keys are unchanged (see 20261121000002_vend.sql).

-- Takes the lock of a range's PostgreSQL sequence that nextval, setval and reads of the
-- sequence in every other session wait for, held to commit, waiting as lock_timeout says.
-- Raises insufficient_privilege where seqvend does not own the sequence (only its owner may
-- alter it). It changes nothing: not the owner, not the sequence's file, no catalog row.
CREATE FUNCTION seqvend.lock_sequence(p_seq regclass)
    RETURNS void
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    owner text;
BEGIN
    -- Reading the sequence first holds off an owner change (it waits for this reader), so the
    -- owner read next is the one the ALTER below finds: the ALTER then never changes it, and
    -- so writes nothing. (A regclass prints as a quoted, qualified name.)
    EXECUTE format('SELECT FROM %s', p_seq);
    SELECT c.relowner::regrole::text INTO owner FROM pg_catalog.pg_class c WHERE c.oid = p_seq;
    EXECUTE format('ALTER SEQUENCE %s OWNER TO %s', p_seq, owner);
END
$$;

-- lock_sequence(), waiting at most p_wait. False, having changed nothing, when the lock did not
-- come in time (a transaction elsewhere that called nextval, a pg_dump reading the sequence) or
-- may not be taken: the caller then draws value by value.
CREATE FUNCTION seqvend.lock_sequence_for_block(p_seq regclass, p_wait text)
    RETURNS boolean
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    outer_wait text := current_setting('lock_timeout');
BEGIN
    PERFORM set_config('lock_timeout', p_wait, true);
    BEGIN
        PERFORM seqvend.lock_sequence(p_seq);
    EXCEPTION WHEN lock_not_available OR insufficient_privilege OR deadlock_detected THEN
        PERFORM set_config('lock_timeout', outer_wait, true);
        RETURN false;
    END;
    PERFORM set_config('lock_timeout', outer_wait, true);
    RETURN true;
END
$$;

-- Claims up to p_wanted values of sequence p_seq at once, exactly the values that many nextval
-- calls would return now: the first is the sequence's next value (after a restart, its restart
-- value), each following one p_step further, and the sequence is left where the last nextval
-- would leave it. Only values of the range [p_min, p_max] past p_mark (the last value handed
-- out from it, NULL while none) are claimed, and none past the sequence's own bound.
--
-- `taken` is NULL when it declined and changed nothing: the lock was not had within 20 ms or
-- may not be taken, the sequence counts by another increment than p_step (a DBA changed it), or
-- its next value is not inside the range past the mark (a rewind, which the value-by-value
-- draw repairs). Otherwise `taken` values from `first`, by p_step (0 when the range has no
-- room left), and `ended` says whether the range has no value left after them.
-- The caller holds the range's SVRG lock; the sequence's lock is held to commit.
CREATE FUNCTION seqvend.draw_block(p_seq regclass, p_wanted bigint, p_step bigint,
                                   p_min bigint, p_max bigint, p_mark bigint,
                                   OUT first bigint, OUT taken bigint, OUT ended boolean)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    up        boolean := p_step > 0;
    position  bigint;
    called    boolean;
    next_val  numeric;
    range_end numeric;
    room      numeric;
    seq       record;
BEGIN
    IF NOT seqvend.lock_sequence_for_block(p_seq, '20ms') THEN
        RETURN;
    END IF;
    -- Read under the lock (a new snapshot): what a DBA committed before it came is seen, and
    -- nothing moves until commit.
    SELECT ps.seqincrement, ps.seqmin, ps.seqmax INTO seq
      FROM pg_catalog.pg_sequence ps WHERE ps.seqrelid = p_seq;
    IF seq.seqincrement IS DISTINCT FROM p_step THEN
        RETURN;
    END IF;
    EXECUTE format('SELECT last_value, is_called FROM %s', p_seq) INTO position, called;
    next_val := CASE WHEN called THEN position::numeric + p_step ELSE position END;
    IF NOT next_val BETWEEN p_min AND p_max
       OR (p_mark IS NOT NULL AND NOT (CASE WHEN up THEN next_val > p_mark ELSE next_val < p_mark END)) THEN
        RETURN;
    END IF;
    range_end := CASE WHEN up THEN least(p_max, seq.seqmax) ELSE greatest(p_min, seq.seqmin) END;
    room := floor((range_end - next_val) / p_step) + 1;
    taken := greatest(least(room, p_wanted), 0);
    ended := room <= p_wanted;
    IF taken > 0 THEN
        first := next_val;
        -- Inside [p_min, p_max] and the sequence's bounds: setval accepts it.
        PERFORM setval(p_seq, (next_val + (taken - 1) * p_step)::bigint, true);
    END IF;
END
$$;

-- Draws up to p_count values of the sequence p_name in blocks (draw_block), range after range,
-- as runs (runs_first[i] to runs_last[i] by the sequence's increment), `taken` of them, each
-- range's mark written and a used-up range rolled over as vend() does. Stops, having drawn what
-- it drew, where a block is declined or the sequence is not active: the caller draws the rest
-- with vend(), which answers every case (retired, exhausted, rewound, locked) as it always did.
-- Locks as vend() does: the sequence's SVSQ lock shared, then its active range's SVRG lock.
CREATE FUNCTION seqvend.lease_blocks(p_name text, p_count bigint,
                                     OUT runs_first bigint[], OUT runs_last bigint[],
                                     OUT taken bigint)
    LANGUAGE plpgsql VOLATILE
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
        SELECT g.id, g.status, g.pg_sequence, g.min_value, g.max_value, g.high_water INTO r
          FROM seqvend.ranges g WHERE g.id = r.id;
        EXIT WHEN r.status <> 'active';
        blk := seqvend.draw_block(r.pg_sequence, p_count - taken, step, r.min_value,
                                  r.max_value, r.high_water);
        EXIT WHEN blk.taken IS NULL;
        IF blk.taken > 0 THEN
            last := (blk.first::numeric + (blk.taken - 1) * step)::bigint;
            UPDATE seqvend.ranges SET high_water = last WHERE id = r.id;
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

-- Runs (firsts, lasts) followed by runs (p_firsts, p_lasts) of the same increment: the first of
-- these joins the last of those when it follows it by exactly one increment.
CREATE FUNCTION seqvend.join_runs(INOUT firsts bigint[], INOUT lasts bigint[],
                                  p_firsts bigint[], p_lasts bigint[], p_increment bigint)
    LANGUAGE plpgsql IMMUTABLE
AS $$
DECLARE
    n integer := cardinality(lasts);
BEGIN
    IF coalesce(cardinality(p_firsts), 0) = 0 THEN
        RETURN;
    END IF;
    IF n > 0 AND lasts[n]::numeric + p_increment = p_firsts[1] THEN
        lasts[n] := p_lasts[1];
        p_firsts := p_firsts[2:];
        p_lasts := p_lasts[2:];
    END IF;
    firsts := firsts || p_firsts;
    lasts := lasts || p_lasts;
END
$$;

-- The answers change shape (runs instead of values): dropped and made again.
DROP FUNCTION seqvend.lease_keyed(text, integer, text, text, interval, text, text, text, interval);
DROP FUNCTION seqvend.lease(text, integer, text, text, interval);

-- Draws p_count values of the sequence p_name for a lease held by p_kind/p_holder for p_ttl,
-- and records the lease. Answers 'ok' with the values as runs in vend order (runs_first[i] to
-- runs_last[i] by `increment`; value_count of them, fewer than asked when the sequence ran
-- out, none when it had) and the lease, or vend()'s other outcomes with no values.
-- More than 64 values are drawn in blocks (lease_blocks); whatever they did not draw (a block
-- declined, or none tried), vend() draws value by value. Should vend() then fail, the values
-- the blocks drew are gaps: the answer carries none of them.
CREATE FUNCTION seqvend.lease(p_name text, p_count integer, p_kind text, p_holder text,
                              p_ttl interval)
    RETURNS TABLE (outcome text, runs_first bigint[], runs_last bigint[], value_count bigint,
                   detail text, lease_id bigint, expires_at timestamptz, increment bigint)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    drawn record;
    rest  record;
BEGIN
    -- The lease row and the draw's mark must survive a crash before any value leaves.
    PERFORM set_config('synchronous_commit', 'on', true);
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    outcome := 'ok';
    runs_first := '{}';
    runs_last := '{}';
    value_count := 0;
    IF p_count > 64 AND increment IS NOT NULL THEN
        BEGIN
            SELECT b.runs_first, b.runs_last, b.taken INTO runs_first, runs_last, value_count
              FROM seqvend.lease_blocks(p_name, p_count) AS b;
        EXCEPTION WHEN OTHERS THEN
            -- Undone (values it claimed are gaps): vend() draws them all, and answers for
            -- whatever went wrong.
            runs_first := '{}';
            runs_last := '{}';
            value_count := 0;
        END;
    END IF;
    IF value_count < p_count THEN
        SELECT v.outcome, v.vals, v.detail INTO drawn
          FROM seqvend.vend(ARRAY[p_name], ARRAY[(p_count - value_count)::integer]) AS v;
        detail := drawn.detail;
        IF drawn.outcome <> 'ok' THEN
            outcome := drawn.outcome;
            runs_first := '{}';
            runs_last := '{}';
            value_count := 0;
            RETURN NEXT;
            RETURN;
        END IF;
        SELECT l.runs_first, l.runs_last INTO rest FROM seqvend.lease_runs(drawn.vals, increment) AS l;
        SELECT j.firsts, j.lasts INTO runs_first, runs_last
          FROM seqvend.join_runs(runs_first, runs_last, rest.runs_first, rest.runs_last,
                                 increment) AS j;
        value_count := value_count + cardinality(drawn.vals);
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

-- lease() with an idempotency key: a lease's answer (its runs) is stored with the draw, or
-- the stored one replayed ('replayed', or 'key_reused' when the key came with another
-- request; `detail` the stored status, the runs and expiry those stored).
CREATE FUNCTION seqvend.lease_keyed(p_name text, p_count integer, p_kind text,
                                    p_holder text, p_ttl interval, p_owner text,
                                    p_key text, p_request text, p_key_ttl interval)
    RETURNS TABLE (outcome text, runs_first bigint[], runs_last bigint[], value_count bigint,
                   detail text, lease_id bigint, expires_at timestamptz, increment bigint)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    known record;
    drawn record;
BEGIN
    -- The stored answer is what a retry gets: it must be as durable as the lease it replays.
    PERFORM set_config('synchronous_commit', 'on', true);
    -- The key's lock first (20261126100300): a key another transaction still serves past
    -- lock_timeout is answered 'key_in_flight', nothing drawn.
    IF cardinality(seqvend.lock_keys(ARRAY[p_owner], ARRAY[p_key])) > 0 THEN
        outcome := 'key_in_flight';
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
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
                                CASE WHEN drawn.value_count > 0 THEN 200 ELSE 409 END::smallint,
                                NULL, coalesce(drawn.runs_first, '{}'),
                                coalesce(drawn.runs_last, '{}'), drawn.expires_at,
                                p_key_ttl) THEN
            RETURN NEXT;
            RETURN;
        END IF;
        -- Only an answer written without the key's lock (by hand) can be there: it stands, and
        -- this lease's values are a gap.
        SELECT * INTO known FROM seqvend.stored_answers(ARRAY[p_owner], ARRAY[p_key]);
    END IF;
    IF known.request = p_request THEN
        PERFORM seqvend.replay_durably();
    END IF;
    outcome := CASE WHEN known.request = p_request THEN 'replayed' ELSE 'key_reused' END;
    detail := known.status::text;
    lease_id := NULL;
    expires_at := known.lease_expires_at;
    runs_first := coalesce(known.runs_first, '{}');
    runs_last := coalesce(known.runs_last, '{}');
    value_count := NULL;
    RETURN NEXT;
END
$$;

-- draw(), as before, but a run of more than 64 values from the range is claimed as one block
-- (draw_block) where the sequence's lock is to be had; the rest, and everything when it is
-- not, value by value. Unchanged otherwise.
CREATE OR REPLACE FUNCTION seqvend.draw(p_sequence integer, p_range integer, p_seq regclass,
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
    tried     boolean := false;
    blk       record;
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
            IF k > 64 AND NOT tried THEN
                -- A block, claimed at once (tried once per draw: a lock not had in time is not
                -- waited for again). Declined, it is drawn value by value below.
                tried := true;
                blk := seqvend.draw_block(p_seq, k, p_increment, p_min, p_max, last_out);
                IF blk.taken > 0 THEN
                    last_out := (blk.first::numeric + (blk.taken - 1) * p_increment)::bigint;
                    vals := vals || ARRAY(SELECT generate_series(blk.first, last_out, p_increment));
                END IF;
                IF blk.taken IS NOT NULL THEN
                    ended := blk.ended;
                    EXIT WHEN ended;
                    CONTINUE;
                END IF;
            END IF;
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


-- repair_rewind(), as before, but holding the sequence with lock_sequence() instead of
-- ALTER SEQUENCE … NO CYCLE, which gave the sequence a new file under a lock that readers of
-- the sequence do not wait for: a DBA reading it meanwhile could find no row.
CREATE OR REPLACE FUNCTION seqvend.repair_rewind(p_sequence integer, p_range integer, p_seq regclass,
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
    -- The sequence's lock (lock_sequence: nextval, setval and reads in other sessions wait for
    -- it), held to the end of this transaction, so nobody moves it between the look and the
    -- fix, nor during the rest of this statement's draw.
    PERFORM seqvend.lock_sequence(p_seq);

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

-- A block's last value computed in numeric.
--
-- Why: draw(), draw_block() and lease_blocks() found a block's last value as
-- first + (taken - 1) * increment with the product in bigint. Over a range spanning most of
-- bigint with a large increment (say [-9.15e18, 9.21e18] by 7.1e16), a block of more than
-- about 9.2e18 / increment values overflowed though its last value lay inside the range: the
-- draw failed with "bigint out of range" (500 sequence_failed) on every lease or batch that
-- large. Nothing was handed out. The sum was already numeric; the product now is too.
--
-- The test `blocks::blocks_of_ranges_of_every_scale_give_each_value_once_and_stop_at_the_end`
-- covers it, with the count of 20261207120000.

CREATE OR REPLACE FUNCTION seqvend.draw(p_sequence integer, p_range integer, p_seq regclass, p_min bigint, p_max bigint, p_start bigint, p_increment bigint, p_step bigint, p_seq_min bigint, p_seq_max bigint, p_mark bigint, p_wanted bigint, OUT vals bigint[], OUT ended boolean, OUT note text) RETURNS record
    LANGUAGE plpgsql
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
            room := seqvend.room(CASE WHEN up THEN range_end - next_val
                                      ELSE next_val - range_end END, p_step);
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
                    last_out := (blk.first::numeric + (blk.taken - 1)::numeric * p_increment)::bigint;
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

CREATE OR REPLACE FUNCTION seqvend.draw_block(p_seq regclass, p_wanted bigint, p_step bigint, p_min bigint, p_max bigint, p_mark bigint, OUT first bigint, OUT taken bigint, OUT ended boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    up        boolean := p_step > 0;
    position  bigint;
    called    boolean;
    next_val  numeric;
    range_end numeric;
    room      numeric;
    last_val  numeric;
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
    room := seqvend.room(CASE WHEN up THEN range_end - next_val ELSE next_val - range_end END,
                         p_step);
    taken := least(room, p_wanted);
    ended := room <= p_wanted;
    IF taken > 0 THEN
        last_val := next_val + (taken - 1)::numeric * p_step;
        -- Counted to lie inside [p_min, p_max] and the sequence's bounds. Checked all the same,
        -- as the value-by-value draw checks each value: should the count ever be wrong, the
        -- block is declined (taken NULL) and every value is drawn and checked one by one.
        IF NOT (last_val BETWEEN p_min AND p_max AND last_val BETWEEN seq.seqmin AND seq.seqmax) THEN
            taken := NULL;
            ended := NULL;
            RETURN;
        END IF;
        first := next_val;
        PERFORM setval(p_seq, last_val::bigint, true);
    END IF;
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
            last := (blk.first::numeric + (blk.taken - 1)::numeric * step)::bigint;
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

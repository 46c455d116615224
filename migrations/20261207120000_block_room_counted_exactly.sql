-- A block's room counted exactly.
--
-- Why: draw() and draw_block() counted the values left in a range as
-- floor((range_end - next_val) / step) + 1. PostgreSQL's numeric division keeps about 16
-- significant digits and rounds the last, so with a large increment the quotient's fraction
-- rounded up to the next whole number and the room came out one value too many: over
-- [0, 10^18 - 1] by 10^13, (10^18 - 1) / 10^13 is 99999.99999999999990 and printed 100000.
-- draw_block() then claimed one value past the range's end. Where the range's sequence kept
-- the range's bounds, its setval failed and every lease or batch reaching the end failed with
-- it (the range never rolled over that way); where a DBA had widened the sequence's bounds,
-- the value past the end went out: outside the range, and again as the next range's first
-- value when the ranges touch.
--
-- * room(): the values left, by div(), which is exact (and floor for the non-negative
--   distances it is given; a distance below zero leaves no room).
-- * draw() and draw_block() count with it; draw_block() also checks its block's last value
--   against the range's and the sequence's bounds before the setval, and declines otherwise.
-- * families.capacity, counted the same way with trunc(), gave a family of that shape one
--   value more than it has: the last counter value drawn lay past its bound. Made again with
--   div() (a generated column's expression cannot be altered on PostgreSQL 15).
--
-- The tests `blocks::a_block_reaching_the_end_of_a_range_of_large_steps_stops_at_it`,
-- `blocks::a_widened_sequence_of_large_steps_gives_nothing_past_its_range` and
-- `counters::a_family_of_large_steps_gives_nothing_past_its_bound` cover it.

-- The values left between `next_val` and the last value a range may give, `distance` apart
-- (in the direction of the count), by steps of `step`.
CREATE FUNCTION seqvend.room(distance numeric, step bigint) RETURNS numeric
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$
    SELECT CASE WHEN distance < 0 THEN 0 ELSE div(distance, abs(step::numeric)) + 1 END
$$;

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
        last_val := next_val + (taken - 1) * p_step;
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

ALTER TABLE seqvend.families
    DROP COLUMN capacity,
    ADD COLUMN capacity bigint GENERATED ALWAYS AS (
        least(div(CASE WHEN increment > 0 THEN max_value::numeric - start_value
                       ELSE start_value::numeric - min_value END,
                  abs(increment::numeric)) + 1,
              9223372036854775807)::bigint) STORED;

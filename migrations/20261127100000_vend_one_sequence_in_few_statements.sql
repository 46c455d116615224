-- A batch on one sequence, in its common case, drawn with as few statements as it needs.
--
-- Why: a lane's batch almost always names one sequence, and for one request the vend
-- statement took ~0.55 ms inside PostgreSQL against ~0.25 ms for an UPDATE with its durable
-- commit, the floor of any statement that hands out values. The general statement pays for
-- what a batch on many sequences needs: the rows of every sequence through vend_batch_rows()
-- (a function returning a set, materialised), the marks through write_marks() (folded per
-- range), the answers gathered in an array of composites, and a cursor per loop. Under load the
-- lane's statement is the service time every request of the sequence queues behind, and its
-- CPU is shared with seqvend itself on two cores (docs/performance.md).
--
-- Now vend() first tries vend_one_sequence() when every request names the same sequence:
--   1. the locks, as before: the sequence's shared, then its active range's exclusive;
--   2. in a new statement (so a new snapshot, taken with the locks held), the sequence, that
--      range and its PostgreSQL sequence as they stand now;
--   3. the common case checked exactly as the general statement checks it (the range still
--      active and the sequence's, not retired, the direction agreeing, the sequence standing
--      past the mark inside the range with room for every value asked, at most 64 values),
--      and the values drawn with nextval, each checked as it comes;
--   4. the mark written with one UPDATE of the range's row.
-- Whatever does not hold, or fails (a lock not granted within lock_timeout, a value not past
-- the one before, a row held by another session), makes it return NULL having handed out
-- nothing (values it drew become gaps), and the general statement, renamed vend_batch(),
-- serves the batch as before: it takes the locks again, repairs what needs repair and
-- answers every outcome. So outcomes, locks, their order and the durability of the commit
-- are unchanged; only the common case is shorter.
--
-- Both functions run under plan_cache_mode = force_generic_plan (vend_batch() keeps the
-- setting through the rename; vend() says it again).

ALTER FUNCTION seqvend.vend(text[], integer[]) RENAME TO vend_batch;

-- The values for a batch of `p_counts` requests on `p_name`, or NULL: not its common case,
-- nothing handed out.
CREATE FUNCTION seqvend.vend_one_sequence(p_name text, p_counts integer[])
    RETURNS bigint[]
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

    -- 1. The locks, in the general statement's order. Not granted within lock_timeout: the
    --    general statement waits for them again, and answers for the sequence if it must.
    BEGIN
        SELECT s.id, r.id AS range_id,
               pg_advisory_xact_lock_shared(1398166353, s.id),
               pg_advisory_xact_lock(1398166087, r.id)
          INTO locked
          FROM seqvend.sequences s
          JOIN seqvend.ranges r ON r.sequence_id = s.id AND r.status = 'active'
         WHERE s.name = p_name;
    EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
        RETURN NULL;
    END;
    IF locked.id IS NULL THEN
        RETURN NULL;
    END IF;

    -- 2. The rows as they stand now that the locks are held (a new statement: a new snapshot).
    SELECT s.status, s.increment, r.status AS range_status, r.pg_sequence, r.min_value,
           r.max_value, r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
      INTO cur
      FROM seqvend.sequences s
      JOIN seqvend.ranges r ON r.id = locked.range_id AND r.sequence_id = s.id
      JOIN pg_catalog.pg_sequence ps ON ps.seqrelid = r.pg_sequence
     WHERE s.id = locked.id AND s.name = p_name;
    IF NOT FOUND OR cur.status = 'retired' OR cur.range_status <> 'active' THEN
        RETURN NULL;
    END IF;

    -- 3. The common case, as the general statement's attempt checks it.
    up := cur.increment > 0;
    IF (cur.seqincrement > 0) <> up THEN
        RETURN NULL;
    END IF;
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
    BEGIN
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

        -- 4. The mark. Its row held by another session past lock_timeout: the general
        --    statement's write_marks() decides.
        UPDATE seqvend.ranges SET high_water = mark WHERE id = locked.range_id;
    EXCEPTION WHEN OTHERS THEN
        RETURN NULL;
    END;
    RETURN drawn;
END
$$;

-- The vend statement: one row per outcome, each with the (1-based) requests it answers.
CREATE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
    RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan
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
            outcome := 'ok';
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM seqvend.vend_batch(p_names, p_counts);
END
$$;

-- The one-sequence path answers `unavailable` itself when a lock it needs is not granted.
--
-- Why: vend_one_sequence() read its PostgreSQL sequence's position outside its exception
-- block. With a DBA's ALTER SEQUENCE open on that sequence, that read waited lock_timeout and
-- then failed the whole statement, where the general statement answers `unavailable` for the
-- sequence alone. And a lock not granted anywhere else sent the batch to vend_batch(), which
-- waited for the same lock again before answering `unavailable`: twice more for the advisory
-- locks or the draw (its attempt, then its per-sequence path), once more for the range's
-- registry row (write_marks()). Up to three times lock_timeout where SEQVEND_LOCK_TIMEOUT_MS
-- promises one.
--
-- Now the read is inside the exception block, and a lock not granted (or a deadlock) makes
-- vend_one_sequence() return an empty array: nothing handed out, and vend() answers every
-- request of the batch `unavailable`, as vend_batch() would have after its own waits. Every
-- other reason to decline still returns NULL and leaves the batch to vend_batch(). Values
-- drawn before the lock was refused become gaps, as before.

-- The values for a batch of `p_counts` requests on `p_name`; NULL: not its common case,
-- nothing handed out; empty: a lock it needs was not granted within lock_timeout, nothing
-- handed out.
CREATE OR REPLACE FUNCTION seqvend.vend_one_sequence(p_name text, p_counts integer[])
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
           r.max_value, r.high_water, ps.seqincrement, ps.seqmin, ps.seqmax
      INTO cur
      FROM seqvend.sequences s
      JOIN seqvend.ranges r ON r.id = locked.range_id AND r.sequence_id = s.id
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
        UPDATE seqvend.ranges SET high_water = mark WHERE id = locked.range_id;
    EXCEPTION
        WHEN lock_not_available OR deadlock_detected THEN
            RETURN '{}';
        WHEN OTHERS THEN
            RETURN NULL;
    END;
    RETURN drawn;
END
$$;

-- The vend statement: one row per outcome, each with the (1-based) requests it answers.
CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[])
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
            IF cardinality(vals) = 0 THEN
                outcome := 'unavailable';
                vals := NULL;
                detail := 'a lock it needs was not granted within lock_timeout: another session '
                          'holds its PostgreSQL sequence (an open ALTER SEQUENCE?) or its '
                          'range''s registry row';
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

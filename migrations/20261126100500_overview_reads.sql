-- Reading every sequence at once (the console's overview, the list, the sampling round) in
-- one statement per page instead of several function calls per sequence.

-- The same window as before, now a set-returning SQL function the planner inlines: a
-- listing's LATERAL join then runs the two index probes on usage_samples' primary key
-- directly, instead of starting the SQL-function executor twice per sequence (most of a
-- 10,000-sequence listing's time). No sample: no row, which a LEFT JOIN LATERAL reads as
-- NULLs, as the single NULL row before.
DROP FUNCTION seqvend.usage_since(integer, interval);
CREATE FUNCTION seqvend.usage_since(p_sequence integer, p_window interval)
    RETURNS TABLE (used numeric, span_seconds double precision)
    LANGUAGE sql STABLE
AS $$
    SELECT s.used,
           extract(epoch FROM least(now() - s.at, p_window))::double precision
      FROM ((SELECT at, used FROM seqvend.usage_samples
              WHERE sequence_id = p_sequence AND at <= now() - p_window
              ORDER BY at DESC LIMIT 1)
            UNION ALL
            (SELECT at, used FROM seqvend.usage_samples
              WHERE sequence_id = p_sequence
              ORDER BY at LIMIT 1)) s
     ORDER BY s.at DESC
     LIMIT 1
$$;

-- As before, with a fast path: a sequence that has handed out a value (is_called) says its
-- position through pg_sequence_last_value, a plain function call. Only a sequence that has
-- not (never drawn, or restarted) is still read with a statement of its own, which
-- PostgreSQL must parse and plan each time.
CREATE OR REPLACE FUNCTION seqvend.range_last_value(p_seq regclass, p_mark bigint,
                                                    p_increment bigint)
    RETURNS bigint
    LANGUAGE plpgsql STABLE
AS $$
DECLARE
    position  bigint;
    called    boolean;
    taken     numeric;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_sequence WHERE seqrelid = p_seq) THEN
        RETURN p_mark;
    END IF;
    taken := pg_sequence_last_value(p_seq);
    IF taken IS NULL THEN
        -- A regclass prints as a quoted, qualified name.
        EXECUTE format('SELECT last_value, is_called FROM %s', p_seq) INTO position, called;
        taken := CASE WHEN called THEN position ELSE position::numeric - p_increment END;
        IF taken NOT BETWEEN -9223372036854775808 AND 9223372036854775807 THEN
            taken := NULL;  -- restarted at the very first value of the bigint space
        END IF;
    END IF;
    IF p_mark IS NULL THEN
        RETURN taken;
    ELSIF taken IS NULL THEN
        RETURN p_mark;
    END IF;
    RETURN CASE WHEN p_increment > 0 THEN greatest(taken, p_mark) ELSE least(taken, p_mark) END;
END
$$;

-- Where a range stands, for reading (GET /sequences, the list, the gauges): the last value
-- taken from it, by seqvend or by anyone calling nextval, as seqvend will see it at its next
-- draw. That is the furthest of the sequence's own position and the range's high-water mark
-- (a sequence moved back is moved past the mark at the next draw). A restarted sequence
-- (RESTART WITH, setval(…, false)) has taken nothing at its position yet, which
-- pg_sequence_last_value cannot say (it returns NULL), so the sequence is read directly.
-- NULL when nothing was taken. A sequence dropped by hand reads as its mark, so one broken
-- range never breaks a listing.
CREATE FUNCTION seqvend.range_last_value(p_seq regclass, p_mark bigint, p_increment bigint)
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
    -- A regclass prints as a quoted, qualified name.
    EXECUTE format('SELECT last_value, is_called FROM %s', p_seq) INTO position, called;
    taken := CASE WHEN called THEN position ELSE position::numeric - p_increment END;
    IF taken NOT BETWEEN -9223372036854775808 AND 9223372036854775807 THEN
        taken := NULL;  -- restarted at the very first value of the bigint space
    END IF;
    IF p_mark IS NULL THEN
        RETURN taken;
    ELSIF taken IS NULL THEN
        RETURN p_mark;
    END IF;
    RETURN CASE WHEN p_increment > 0 THEN greatest(taken, p_mark) ELSE least(taken, p_mark) END;
END
$$;

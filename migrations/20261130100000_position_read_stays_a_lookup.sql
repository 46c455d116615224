-- The watch round's position read stays a lookup once the database has thousands of
-- sequences.
--
-- Why: range_last_value() is called for every live sequence in every watch round, and
-- PL/pgSQL keeps its statements' plans for the session. Its check that the range's sequence
-- still exists looked in pg_catalog.pg_sequence. While that holds a few rows, on one page, the
-- lookup is planned as a scan of the whole table (cheaper at that size than its index), and a
-- session that planned it then kept the scan as the table grew: after 10,000 sequences were
-- created, every round scanned pg_sequence once per sequence (50 million tuples a round, about
-- a core of PostgreSQL per seqvend instance) until autovacuum analysed pg_sequence, a minute
-- or two later, and the plan was made again.
--
-- The check now asks pg_class: it is never small (hundreds of rows in an empty database), so
-- the lookup is planned in its primary key at any size. A relation of kind 'S' is a sequence,
-- as a row of pg_sequence says. (The vend statements, which need pg_sequence's columns, are
-- kept to their indexes by their sessions' planner settings: see VEND_PLANNER_SETTINGS.)
--
-- Checked by the test
-- `planning::plans_made_with_few_sequences_stay_lookups_as_sequences_are_added`.

CREATE OR REPLACE FUNCTION seqvend.range_last_value(p_seq regclass, p_mark bigint, p_increment bigint) RETURNS bigint
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    position  bigint;
    called    boolean;
    taken     numeric;
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_class WHERE oid = p_seq AND relkind = 'S') THEN
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

-- Values handed out past a range's end before 20261207120000, kept from going out again.
--
-- Why: before 20261207120000 a block reaching the end of a range of large steps could claim one
-- value past it where a DBA had widened the range's PostgreSQL sequence. That value went out,
-- and the range's mark (`range_marks.high_water`) recorded it, outside the range's bounds. A
-- range of the same namespace holding that value (the next one, when ranges touch) would hand
-- it out again. The count is exact now, but a database upgraded from before still holds such
-- marks, and values a client leased then may still be handed out.
--
-- * mark_values_past_range_ends(): for every value a range's mark records outside the range,
--   moves the mark of each range of its namespace that holds the value so that the value counts
--   as handed out there (the furthest such value in the range's direction; marks only move
--   forward). The values skipped become gaps, never a value twice. Each range is changed under
--   its advisory lock, as a draw holds it. Returns how many marks moved. Safe to run again.
-- * It runs once here.
--
-- The test `never_twice::a_value_handed_out_past_a_range_end_is_not_handed_out_again` covers it.

CREATE FUNCTION seqvend.mark_values_past_range_ends() RETURNS integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    moved integer;
BEGIN
    -- The ranges to change, locked in id order (the range lock's key, as draws take it).
    PERFORM pg_advisory_xact_lock(1398166087, c.range_id)
       FROM (SELECT DISTINCT r.id AS range_id
               FROM seqvend.ranges x
               JOIN seqvend.range_marks xm ON xm.range_id = x.id
               JOIN seqvend.ranges r ON r.namespace = x.namespace AND r.id <> x.id
                                    AND xm.high_water BETWEEN r.min_value AND r.max_value
              WHERE xm.high_water NOT BETWEEN x.min_value AND x.max_value
              ORDER BY r.id) AS c;

    -- Read again under the locks (a new statement), folded to one row per range.
    WITH claimed AS (
        SELECT r.id AS range_id, s.increment > 0 AS up,
               max(xm.high_water) AS highest, min(xm.high_water) AS lowest
          FROM seqvend.ranges x
          JOIN seqvend.range_marks xm ON xm.range_id = x.id
          JOIN seqvend.ranges r ON r.namespace = x.namespace AND r.id <> x.id
                               AND xm.high_water BETWEEN r.min_value AND r.max_value
          JOIN seqvend.sequences s ON s.id = r.sequence_id
         WHERE xm.high_water NOT BETWEEN x.min_value AND x.max_value
         GROUP BY r.id, s.increment > 0
    )
    UPDATE seqvend.range_marks m
       SET high_water = CASE WHEN c.up THEN c.highest ELSE c.lowest END
      FROM claimed c
     WHERE m.range_id = c.range_id
       AND (m.high_water IS NULL
            OR (c.up AND m.high_water < c.highest)
            OR (NOT c.up AND m.high_water > c.lowest));
    GET DIAGNOSTICS moved = ROW_COUNT;
    IF moved > 0 THEN
        RAISE WARNING 'seqvend: % range mark(s) moved past values handed out beyond another range''s end before 20261207120000; the values skipped are gaps', moved;
    END IF;
    RETURN moved;
END
$$;

SELECT seqvend.mark_values_past_range_ends();

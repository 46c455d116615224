-- Counter families: millions of light counters, one row per key, created by the key's first
-- draw. A PostgreSQL sequence per key would cost a relation each (about 16 kB of disk and a
-- catalog entry); a row costs about a hundred bytes.

-- A family holds the parameters every one of its counters follows, with the same rules as a
-- sequence's range: min < max, start within them, a non-zero increment.
CREATE TABLE seqvend.families (
    id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    start_value bigint NOT NULL,
    increment   bigint NOT NULL CHECK (increment <> 0 AND increment > -9223372036854775808),
    min_value   bigint NOT NULL,
    max_value   bigint NOT NULL,
    -- How many values one counter holds: from start to the bound the increment moves toward.
    -- Capped at the largest bigint, as a counter's `drawn` is one (nobody draws 2^63 values).
    capacity    bigint GENERATED ALWAYS AS (
                    least(trunc(CASE WHEN increment > 0
                                     THEN max_value::numeric - start_value
                                     ELSE start_value::numeric - min_value END
                                / abs(increment::numeric)) + 1,
                          9223372036854775807)::bigint) STORED,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  text NOT NULL,
    retired_at  timestamptz,
    retired_by  text,
    CONSTRAINT families_name_key UNIQUE (name),
    CONSTRAINT families_bounds_check CHECK (min_value < max_value),
    CONSTRAINT families_start_check CHECK (start_value BETWEEN min_value AND max_value)
);

-- One row per counter: how many values it has handed out. Its next value is
-- start + drawn * increment, so the row never holds a value that overflows.
--
-- * Columns in this order so that nothing is padded: 8 + 4 bytes, then the key.
-- * fillfactor 85: a draw updates `drawn` only, which no index covers, so it is a HOT update
--   when the row's page has room for the new version; the 15% kept free gives each page room
--   for a dozen new versions between the prunes that reclaim the old ones. Without it, the
--   first draw on a full page moves the row and adds an index entry.
-- * No foreign key to families: a family is never deleted (retiring keeps its counters), and
--   the check would cost a lookup per new key.
-- * Not partitioned: a draw finds its row through the primary key, whose depth grows with the
--   log of the key count; partitions would add routing to every draw and DDL per family.
CREATE TABLE seqvend.counters (
    drawn     bigint NOT NULL CHECK (drawn >= 0),
    family_id integer NOT NULL,
    key       text COLLATE "C" NOT NULL CHECK (octet_length(key) BETWEEN 1 AND 200),
    PRIMARY KEY (family_id, key)
) WITH (fillfactor = 85);

ALTER TABLE seqvend.events ADD COLUMN family_id integer REFERENCES seqvend.families (id);
ALTER TABLE seqvend.events DROP CONSTRAINT events_sequence_check;
ALTER TABLE seqvend.events DROP CONSTRAINT events_kind_check;
ALTER TABLE seqvend.events ADD CONSTRAINT events_kind_check
    CHECK (kind IN ('created', 'range_added', 'rollover', 'exhausted', 'retired', 'rewind',
                    'cache_changed', 'alerts_changed', 'alert_raised', 'alert_cleared',
                    'token_created', 'token_revoked', 'family_created', 'family_retired'));
ALTER TABLE seqvend.events ADD CONSTRAINT events_subject_check
    CHECK ((sequence_id IS NULL) = (kind IN ('token_created', 'token_revoked',
                                             'family_created', 'family_retired'))
       AND (family_id IS NULL) = (kind NOT IN ('family_created', 'family_retired')));

-- What a batch asks of the counters of live families: one row per (family, key), with the
-- values its requests ask in all. The draw's steps below each read it.
CREATE FUNCTION seqvend.counters_asked(p_families text[], p_keys text[], p_counts int4[])
RETURNS TABLE (family_id integer, key text, wanted bigint, capacity bigint)
LANGUAGE sql STABLE AS $$
    SELECT f.id, a.key COLLATE "C", sum(a.count), f.capacity
      FROM unnest(p_families, p_keys, p_counts) AS a(family, key, count)
      JOIN seqvend.families f ON f.name = a.family AND f.retired_at IS NULL
     GROUP BY f.id, a.key, f.capacity
     ORDER BY f.id, a.key COLLATE "C"
$$;

-- Draws values for a batch of requests, request i asking p_counts[i] values of the counter
-- p_keys[i] in the family named p_families[i]. One row per (family, key) asked: the requests
-- it answers (1-based, in order), and
--   'ok'        taken values from first_value by step (taken < asked: the counter ran out;
--               0: it had run out already); created when this draw made the counter;
--   'not_found' no such family;
--   'retired'   the family is retired.
-- Each family is held by a shared advisory lock, which retiring takes exclusively, so a draw
-- never commits after a retirement did. Then, in up to three steps, each only for what the
-- steps before left:
--   1. counters that exist and hold all that is asked: one UPDATE, whose new value says where
--      the values began (a HOT update, no lock taken before it). Most batches end here;
--   2. keys drawn for the first time: inserted already drawn, in key order; a key another
--      batch is inserting is waited for and left to step 3;
--   3. the rest (counters running out, keys raced into existence): locked in key order and
--      clamped at the family's bound.
CREATE FUNCTION seqvend.draw_counters(p_families text[], p_keys text[], p_counts int4[])
RETURNS TABLE (requests int4[], outcome text, first_value bigint, taken bigint, step bigint,
               created boolean)
LANGUAGE plpgsql AS $$
DECLARE
    asked_count bigint;
    whole_family integer[];
    whole_key text[];
    whole_before bigint[];
    new_family integer[];
    new_key text[];
    clamped_family integer[];
    clamped_key text[];
    clamped_before bigint[];
    clamped_after bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1178684747, f.id)
       FROM seqvend.families f
      WHERE f.name IN (SELECT DISTINCT unnest(p_families))
      ORDER BY f.id;

    -- Statements after the lock see a retirement that committed before it.
    WITH asked AS (
        SELECT * FROM seqvend.counters_asked(p_families, p_keys, p_counts)
    ), updated AS (
        UPDATE seqvend.counters c
           SET drawn = c.drawn + a.wanted
          FROM asked a
         WHERE c.family_id = a.family_id AND c.key = a.key
           AND c.drawn <= a.capacity - a.wanted
        RETURNING c.family_id, c.key, c.drawn - a.wanted AS before
    )
    SELECT array_agg(u.family_id), array_agg(u.key), array_agg(u.before),
           (SELECT count(*) FROM asked)
      INTO whole_family, whole_key, whole_before, asked_count
      FROM updated u;

    IF coalesce(cardinality(whole_key), 0) < asked_count THEN
        WITH inserted AS (
            INSERT INTO seqvend.counters AS c (drawn, family_id, key)
            SELECT least(a.wanted, a.capacity), a.family_id, a.key
              FROM seqvend.counters_asked(p_families, p_keys, p_counts) a
             WHERE (a.family_id, a.key) NOT IN (SELECT * FROM unnest(whole_family, whole_key))
            ON CONFLICT (family_id, key) DO NOTHING
            RETURNING c.family_id, c.key
        )
        SELECT array_agg(i.family_id), array_agg(i.key) INTO new_family, new_key
          FROM inserted i;
    END IF;

    IF coalesce(cardinality(whole_key), 0) + coalesce(cardinality(new_key), 0) < asked_count THEN
        WITH rest AS MATERIALIZED (
            SELECT a.*
              FROM seqvend.counters_asked(p_families, p_keys, p_counts) a
             WHERE (a.family_id, a.key) NOT IN (SELECT * FROM unnest(whole_family, whole_key))
               AND (a.family_id, a.key) NOT IN (SELECT * FROM unnest(new_family, new_key))
        ), locked AS (
            SELECT c.family_id, c.key, c.drawn
              FROM seqvend.counters c
              JOIN rest r ON r.family_id = c.family_id AND r.key = c.key
             ORDER BY c.family_id, c.key
               FOR UPDATE OF c
        ), clamped AS (
            UPDATE seqvend.counters c
               SET drawn = least(l.drawn + r.wanted, r.capacity)
              FROM locked l
              JOIN rest r ON r.family_id = l.family_id AND r.key = l.key
             WHERE c.family_id = l.family_id AND c.key = l.key AND l.drawn < r.capacity
            RETURNING c.family_id, c.key, l.drawn AS before, c.drawn AS after
        )
        SELECT array_agg(u.family_id), array_agg(u.key), array_agg(u.before),
               array_agg(u.after)
          INTO clamped_family, clamped_key, clamped_before, clamped_after
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
    )
    SELECT g.requests,
           CASE WHEN g.id IS NULL THEN 'not_found'
                WHEN g.retired_at IS NOT NULL THEN 'retired'
                ELSE 'ok' END,
           CASE WHEN n.key IS NOT NULL THEN g.start_value
                WHEN w.key IS NOT NULL
                    THEN (g.start_value + w.before::numeric * g.increment)::bigint
                WHEN u.key IS NOT NULL
                    THEN (g.start_value + u.before::numeric * g.increment)::bigint END,
           CASE WHEN n.key IS NOT NULL THEN least(g.wanted, g.capacity)::bigint
                WHEN w.key IS NOT NULL THEN g.wanted::bigint
                WHEN u.key IS NOT NULL THEN u.after - u.before
                ELSE 0 END,
           g.increment,
           n.key IS NOT NULL
      FROM groups g
      LEFT JOIN unnest(whole_family, whole_key, whole_before) AS w(family_id, key, before)
             ON w.family_id = g.id AND w.key = g.key
      LEFT JOIN unnest(new_family, new_key) AS n(family_id, key)
             ON n.family_id = g.id AND n.key = g.key
      LEFT JOIN unnest(clamped_family, clamped_key, clamped_before, clamped_after)
                AS u(family_id, key, before, after)
             ON u.family_id = g.id AND u.key = g.key;
END;
$$;

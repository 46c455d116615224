-- Running out: how fast each sequence is used, when it will run out, and alert thresholds.
--
-- Usage is sampled from what PostgreSQL shows (values drawn from every range, whoever drew
-- them), so every instance and every client lease counts and all instances agree. One
-- instance per round samples (it claims the round in seqvend.usage_rounds); the others only
-- read.

-- Alert thresholds: NULL means the default (10% of the active and pending ranges' capacity;
-- 14 days at the last day's rate), 0 turns the alert off.
ALTER TABLE seqvend.sequences
    ADD COLUMN alert_remaining_below bigint
        CONSTRAINT sequences_alert_remaining_check CHECK (alert_remaining_below >= 0),
    ADD COLUMN alert_days_left_below double precision
        CONSTRAINT sequences_alert_days_check
            CHECK (alert_days_left_below >= 0 AND alert_days_left_below <= 3650),
    -- The alerts currently raised (kinds), so that a crossing is recorded once, by one
    -- instance, and every instance shows the same.
    ADD COLUMN alerts_raised text[] NOT NULL DEFAULT '{}';

ALTER TABLE seqvend.events DROP CONSTRAINT events_kind_check;
ALTER TABLE seqvend.events ADD CONSTRAINT events_kind_check
    CHECK (kind IN ('created', 'range_added', 'rollover', 'exhausted', 'retired', 'rewind',
                    'cache_changed', 'alerts_changed', 'alert_raised', 'alert_cleared'));
-- 'seqvend': the service itself (an alert crossing seen by its sampler).
ALTER TABLE seqvend.events DROP CONSTRAINT events_actor_check;
ALTER TABLE seqvend.events ADD CONSTRAINT events_actor_check
    CHECK (actor IN ('admin', 'vend', 'seqvend'));

-- A sample is stored only when the count changed since the sequence's previous sample: the
-- count is a step function of time, so an idle sequence costs no rows and the value at any
-- moment is that of the latest sample at or before it.
CREATE TABLE seqvend.usage_samples (
    sequence_id integer NOT NULL REFERENCES seqvend.sequences (id),
    at          timestamptz NOT NULL,
    -- Values drawn from all the sequence's ranges so far (numeric: may exceed 2^63).
    used        numeric NOT NULL CHECK (used >= 0),
    PRIMARY KEY (sequence_id, at)
);

-- One row: when the last sampling round and the last thinning started. An instance claims a
-- round by moving sampled_at forward; the row lock makes two instances take turns.
CREATE TABLE seqvend.usage_rounds (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    sampled_at timestamptz NOT NULL DEFAULT '-infinity',
    thinned_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO seqvend.usage_rounds DEFAULT VALUES;

-- The count a window's rate starts from: the latest sample at or before now() - p_window,
-- or, while the sequence has been observed for less than the window, its first sample.
-- span_seconds is how long ago that was, capped at the window.
CREATE FUNCTION seqvend.usage_since(p_sequence integer, p_window interval,
                                    OUT used numeric, OUT span_seconds double precision)
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

-- Keeps the samples bounded: full resolution for the last 70 minutes (the hour's window),
-- then the last sample of each 5 minutes, and beyond a day only the newest sample that a
-- day's window can start from. At most ~720 rows per busy sequence.
CREATE FUNCTION seqvend.thin_usage_samples() RETURNS bigint
    LANGUAGE sql
AS $$
    WITH anchors AS (
        -- The newest sample a day's window can start from, per sequence: always kept.
        SELECT sequence_id, max(at) AS at
          FROM seqvend.usage_samples
         WHERE at <= now() - interval '1 day'
         GROUP BY sequence_id
    ), doomed AS (
        SELECT s.sequence_id, s.at
          FROM seqvend.usage_samples s
          LEFT JOIN anchors a ON a.sequence_id = s.sequence_id
         WHERE s.at < now() - interval '70 minutes'
           AND s.at IS DISTINCT FROM a.at
           AND (
               -- Older than the anchor: no window starts there any more.
               s.at < a.at
               -- Not the last of its 5 minutes.
               OR EXISTS (SELECT 1 FROM seqvend.usage_samples later
                           WHERE later.sequence_id = s.sequence_id
                             AND later.at > s.at
                             AND later.at < date_bin('5 minutes', s.at, 'epoch') + interval '5 minutes')
           )
    ), deleted AS (
        DELETE FROM seqvend.usage_samples s
         USING doomed
         WHERE s.sequence_id = doomed.sequence_id AND s.at = doomed.at
        RETURNING 1
    )
    SELECT count(*) FROM deleted
$$;

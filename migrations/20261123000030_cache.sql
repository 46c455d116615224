-- Cached sequences: a per-sequence cache policy, and leases on the blocks of values that
-- instances (and clients) hold in memory.
--
-- A cached block is drawn exactly like strict values (seqvend.vend: nextval under the range's
-- lock, the high-water mark written in the same transaction, the commit flushed before any
-- value leaves), and recorded as a lease in that same transaction. A lease expires: an
-- instance stops handing out a block's values before its lease's expires_at, and renews the
-- leases it still holds. Retiring a sequence waits until no instance lease of it is live
-- (released, or past its expiry), so no instance hands out a value after DELETE answered.

ALTER TABLE seqvend.sequences
    -- 0: strict, every value drawn on the request path. Otherwise each instance holds up to
    -- cache_size values, and draws more when it holds fewer than
    -- max(rate × cache_buffer_seconds, cache_min).
    ADD COLUMN cache_size bigint NOT NULL DEFAULT 0
        CONSTRAINT sequences_cache_size_check CHECK (cache_size BETWEEN 0 AND 100000),
    ADD COLUMN cache_buffer_seconds integer NOT NULL DEFAULT 0
        CONSTRAINT sequences_cache_buffer_check CHECK (cache_buffer_seconds BETWEEN 0 AND 3600),
    ADD COLUMN cache_min bigint NOT NULL DEFAULT 0,
    ADD CONSTRAINT sequences_cache_min_check CHECK (cache_min BETWEEN 0 AND cache_size);

ALTER TABLE seqvend.events DROP CONSTRAINT events_kind_check;
ALTER TABLE seqvend.events ADD CONSTRAINT events_kind_check
    CHECK (kind IN ('created', 'range_added', 'rollover', 'exhausted', 'retired', 'rewind',
                    'cache_changed'));

CREATE TABLE seqvend.leases (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sequence_id integer NOT NULL REFERENCES seqvend.sequences (id),
    -- 'instance': a seqvend instance's own cache (holder names the instance); 'client': a
    -- block handed to an application over POST /sequences/{name}/leases.
    kind        text NOT NULL CHECK (kind IN ('instance', 'client')),
    holder      text NOT NULL,
    value_count bigint NOT NULL CHECK (value_count > 0),
    granted_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    released_at timestamptz
);

CREATE INDEX leases_live ON seqvend.leases (sequence_id) WHERE released_at IS NULL;
CREATE INDEX leases_by_holder ON seqvend.leases (holder) WHERE released_at IS NULL;

-- Draws p_count values from p_name for a lease, as one vend (same locks, checks, rollover and
-- mark), and records the lease in the same transaction. Returns the vend's outcome, values
-- and detail, and the lease (NULL when nothing was drawn).
CREATE FUNCTION seqvend.lease(p_name text, p_count integer, p_kind text, p_holder text,
                              p_ttl interval)
    RETURNS TABLE (outcome text, vals bigint[], detail text, lease_id bigint,
                   expires_at timestamptz, increment bigint)
    LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    drawn record;
BEGIN
    SELECT v.outcome, v.vals, v.detail INTO drawn
      FROM seqvend.vend(ARRAY[p_name], ARRAY[p_count]) AS v;
    outcome := drawn.outcome;
    vals := drawn.vals;
    detail := drawn.detail;
    SELECT s.increment INTO increment FROM seqvend.sequences s WHERE s.name = p_name;
    IF drawn.outcome = 'ok' AND cardinality(drawn.vals) > 0 THEN
        INSERT INTO seqvend.leases AS l (sequence_id, kind, holder, value_count, expires_at)
        SELECT s.id, p_kind, p_holder, cardinality(drawn.vals), now() + p_ttl
          FROM seqvend.sequences s WHERE s.name = p_name
        RETURNING l.id, l.expires_at INTO lease_id, expires_at;
    END IF;
    RETURN NEXT;
END
$$;

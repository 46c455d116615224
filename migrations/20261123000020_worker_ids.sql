-- Time-ordered ids. A Snowflake id is (milliseconds since an epoch, worker id, sequence within
-- the millisecond); two issuers must never hold one worker id at once, and a worker id's new
-- holder must never stamp a millisecond its earlier holders may have used.

-- The bit layout and epoch, fixed by the first seqvend to start on the database: ids already
-- issued decode only under the layout they were made with. One row at most.
CREATE TABLE seqvend.snowflake_layout (
    singleton      boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    timestamp_bits integer NOT NULL CHECK (timestamp_bits BETWEEN 1 AND 61),
    worker_bits    integer NOT NULL CHECK (worker_bits BETWEEN 1 AND 16),
    sequence_bits  integer NOT NULL CHECK (sequence_bits BETWEEN 1 AND 22),
    epoch_ms       bigint NOT NULL,
    fixed_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (timestamp_bits + worker_bits + sequence_bits <= 63)
);

-- One row per worker id (2^worker_bits of them, created with the layout). A lease is a
-- holder token and an expiry by the database's clock; an id whose lease expired may be taken.
CREATE TABLE seqvend.worker_ids (
    worker_id       integer PRIMARY KEY CHECK (worker_id >= 0),
    holder          text,
    leased_at       timestamptz,
    expires_at      timestamptz,
    -- The first millisecond the current holder may stamp: one past everything before it.
    not_before_ms   bigint NOT NULL DEFAULT 0,
    -- No id of this worker id carries a later millisecond: a holder stamps at most this, and
    -- raises it (durably, before using it) at each renewal to its clock plus the lease length.
    not_after_ms    bigint NOT NULL DEFAULT 0,
    CHECK (holder IS NULL OR expires_at IS NOT NULL)
);

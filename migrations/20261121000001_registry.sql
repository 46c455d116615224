-- The registry: sequences, their ranges (each one a real PostgreSQL sequence in the schema
-- seqvend_ranges) and the events that changed them.

CREATE EXTENSION IF NOT EXISTS btree_gist;

-- seqvend's own schema may already exist: seqvend creates it before migrating, so that the
-- migration history (_sqlx_migrations) lives in it too.
CREATE SCHEMA IF NOT EXISTS seqvend;
CREATE SCHEMA seqvend_ranges;

CREATE TABLE seqvend.sequences (
    id         integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- "C" collation: names compare and sort byte by byte, so "Ups" and "ups" are two names
    -- and keyset pagination is stable whatever the database's locale.
    name       text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    namespace  text COLLATE "C" NOT NULL CHECK (namespace ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$'),
    increment  bigint NOT NULL CHECK (increment <> 0),
    status     text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'exhausted', 'retired')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sequences_name_key UNIQUE (name),
    CONSTRAINT sequences_id_namespace_key UNIQUE (id, namespace)
);

-- The span of [lo, hi] as an int8range. int8range(lo, hi, '[]') cannot represent a range
-- ending at the largest bigint (its canonical form needs hi + 1), so that end is left open.
CREATE FUNCTION seqvend.span(lo bigint, hi bigint) RETURNS int8range
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN CASE WHEN hi = 9223372036854775807 THEN int8range(lo, NULL) ELSE int8range(lo, hi + 1) END;

-- Range ids are drawn before the range's PostgreSQL sequence is created, because its name
-- (seqvend_ranges.r<id>) comes from the id: short, unique, never truncated.
CREATE SEQUENCE seqvend.range_ids AS integer;

CREATE TABLE seqvend.ranges (
    id          integer PRIMARY KEY,
    sequence_id integer NOT NULL,
    namespace   text COLLATE "C" NOT NULL,
    min_value   bigint NOT NULL,
    max_value   bigint NOT NULL,
    start_value bigint NOT NULL,
    status      text NOT NULL CHECK (status IN ('pending', 'active', 'exhausted')),
    pg_sequence oid NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ranges_bounds_check CHECK (min_value < max_value),
    CONSTRAINT ranges_start_check CHECK (start_value BETWEEN min_value AND max_value),
    -- The namespace is copied from the sequence (and kept equal by this key) so that the
    -- exclusion constraint below can see it.
    CONSTRAINT ranges_sequence_fkey FOREIGN KEY (sequence_id, namespace)
        REFERENCES seqvend.sequences (id, namespace),
    -- Ranges never overlap within a namespace. Enforced here, not by check-then-insert.
    CONSTRAINT ranges_no_overlap
        EXCLUDE USING gist (namespace WITH =, seqvend.span(min_value, max_value) WITH &&)
);

CREATE UNIQUE INDEX ranges_one_active ON seqvend.ranges (sequence_id) WHERE status = 'active';
CREATE INDEX ranges_by_sequence ON seqvend.ranges (sequence_id, id);

CREATE TABLE seqvend.events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    sequence_id integer NOT NULL REFERENCES seqvend.sequences (id),
    range_id    integer REFERENCES seqvend.ranges (id),
    kind        text NOT NULL
        CHECK (kind IN ('created', 'range_added', 'rollover', 'exhausted', 'retired')),
    -- The seqvend role that caused it ('admin' or 'vend') and the database role it used.
    actor       text NOT NULL CHECK (actor IN ('admin', 'vend')),
    db_role     text NOT NULL DEFAULT current_user,
    at          timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX events_by_sequence ON seqvend.events (sequence_id, id);

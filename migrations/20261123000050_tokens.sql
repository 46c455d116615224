-- Tokens managed at run time, scoped to sequences, and an audit trail of who did what.

-- A token's secret is shown once, at creation; only its SHA-256 is stored (the secret is 256
-- random bits, so a slow password hash would add nothing but latency to every cache miss).
-- A scope is '<verb>:<target>': verb read, vend or admin (each includes the ones before);
-- target '*', a sequence name, a name prefix ending in '*', or 'namespace:<namespace>'.
CREATE TABLE seqvend.tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- Names appear in logs, metrics and the audit trail; 'bootstrap-' names the tokens
    -- configured in the environment.
    name         text COLLATE "C" NOT NULL
        CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$' AND name NOT LIKE 'bootstrap-%'),
    secret_hash  bytea NOT NULL CHECK (length(secret_hash) = 32),
    scopes       text[] NOT NULL CHECK (cardinality(scopes) BETWEEN 1 AND 100),
    created_at   timestamptz NOT NULL DEFAULT now(),
    created_by   text NOT NULL,
    revoked_at   timestamptz,
    revoked_by   text,
    last_used_at timestamptz,
    CONSTRAINT tokens_name_key UNIQUE (name)
);

-- Every event names the token that caused it (NULL: seqvend itself, or an event recorded
-- before tokens were named). Events about tokens belong to no sequence.
ALTER TABLE seqvend.events ADD COLUMN token text;
ALTER TABLE seqvend.events ALTER COLUMN sequence_id DROP NOT NULL;
ALTER TABLE seqvend.events DROP CONSTRAINT events_kind_check;
ALTER TABLE seqvend.events ADD CONSTRAINT events_kind_check
    CHECK (kind IN ('created', 'range_added', 'rollover', 'exhausted', 'retired', 'rewind',
                    'cache_changed', 'alerts_changed', 'alert_raised', 'alert_cleared',
                    'token_created', 'token_revoked'));
ALTER TABLE seqvend.events ADD CONSTRAINT events_sequence_check
    CHECK ((sequence_id IS NULL) = (kind IN ('token_created', 'token_revoked')));

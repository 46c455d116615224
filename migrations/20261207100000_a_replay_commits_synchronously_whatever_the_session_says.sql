-- A keyed request answered only from its stored answer commits with synchronous_commit = on,
-- whatever its session says.
--
-- Why: a replay writes WAL (replay_durably) so that its commit waits for the synchronous
-- standby past the stored answer: a retry must not hand out values that a failover would take
-- back. That wait needs synchronous_commit = on. A keyed vend whose every request is replayed
-- never reaches vend_one_sequence() or vend_batch(), which make the setting, so it committed
-- with its session's: seqvend's own sessions carry `on`, but a session whose startup options
-- were dropped (a proxy that ignores them) or a DBA's psql did not. Then: an answer stored by
-- a commit whose standby wait was cancelled (answered 503), replayed by a retry without the
-- wait, lost in a failover, and its values drawn again on the new primary.
--
-- Made here, in the one function every replay runs (vend_keyed and lease_keyed), and only
-- when the session lacks it, as vend_one_sequence() does. The test
-- `never_twice::draws_force_synchronous_commit_whatever_the_session_says` covers it.

CREATE OR REPLACE FUNCTION seqvend.replay_durably() RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF current_setting('synchronous_commit') <> 'on' THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    PERFORM pg_logical_emit_message(true, 'seqvend', 'replay');
END
$$;

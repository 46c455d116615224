-- The vend statement's common case makes no setting its session already has.
--
-- Why: vend() set synchronous_commit and lock_timeout for its transaction on every call, with
-- a PERFORM (a query run through SPI), and was declared with SET plan_cache_mode, which
-- PostgreSQL saves and restores around every call. On the one-sequence statement (pgbench,
-- one session, fsync off, PostgreSQL's CPU per call, 7 interleaved rounds, 10,000 sequences)
-- the three were 14 % of a one-request statement and 10 % of a 26-request one; making no
-- setting at all, a further 5 %. seqvend's vend sessions already carry synchronous_commit = on
-- and now carry lock_timeout (SEQVEND_LOCK_TIMEOUT_MS), so each call only reads them.
--
-- What still holds:
-- * a vend transaction commits with synchronous_commit = on whatever its session says: set
--   here when the session has anything else (the test
--   `never_twice::draws_force_synchronous_commit_whatever_the_session_says`);
-- * a lock is waited for for a bounded time: a session without a lock_timeout gets
--   seqvend.lock_timeout, else 200 ms, as before. What changed: a session that has a
--   lock_timeout of its own (seqvend's, or a DBA's psql) keeps it;
-- * the statements vend() calls are still planned once per session: vend_one_sequence()
--   filters by scalar keys, whose generic plans PostgreSQL keeps, and vend_batch() carries
--   plan_cache_mode of its own (`planning::the_hot_path_is_planned_once_per_session`).

CREATE OR REPLACE FUNCTION seqvend.vend(p_names text[], p_counts integer[]) RETURNS TABLE(requests integer[], outcome text, vals bigint[], detail text)
    LANGUAGE plpgsql
    AS $$
DECLARE
    ignored text;
BEGIN
    IF cardinality(p_names) > 0 AND p_names[1] = ALL (p_names) THEN
        -- The settings vend_batch() would make, before any lock is asked for; each an
        -- expression, not a query, and made only when the session lacks it.
        IF current_setting('synchronous_commit') <> 'on' THEN
            ignored := set_config('synchronous_commit', 'on', true);
        END IF;
        IF current_setting('lock_timeout') = '0' THEN
            ignored := set_config('lock_timeout',
                                  coalesce(nullif(current_setting('seqvend.lock_timeout', true),
                                                  ''),
                                           '200'),
                                  true);
        END IF;
        vals := seqvend.vend_one_sequence(p_names[1], p_counts);
        IF vals IS NOT NULL THEN
            requests := '{}';
            FOR i IN 1 .. cardinality(p_names) LOOP
                requests := requests || i;
            END LOOP;
            IF cardinality(vals) = 0 THEN
                outcome := 'unavailable';
                vals := NULL;
                detail := 'a lock it needs was not granted within lock_timeout: another session '
                          'holds its PostgreSQL sequence (an open ALTER SEQUENCE?), its '
                          'range''s registry row or its range''s mark (seqvend.range_marks)';
            ELSE
                outcome := 'ok';
            END IF;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT * FROM seqvend.vend_batch(p_names, p_counts);
END
$$;

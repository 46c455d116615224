-- The statements inside the five hot-path functions are planned once per session, not on
-- every call.
--
-- Why: PL/pgSQL keeps a plan per statement, but PostgreSQL's plan cache first makes five
-- custom plans and then keeps making them for as long as the generic plan's estimate is
-- dearer than theirs. For a statement filtered by an array parameter (`name = ANY ($1)`) the
-- generic plan assumes ten elements, and a batch of one request costs less, so the lock and
-- read statements of `vend()` were parsed into a new plan on every call. With 10,000
-- sequences that was 36 % of the backend time of a one-request statement (a CPU profile):
-- 1.15 ms against 0.72 ms with generic plans (pgbench, one session, committed).
--
-- The generic plans are the same index scans (every lookup is by a primary or unique key;
-- checked with auto_explain on 10,000 sequences). Nested functions (vend_sequence,
-- vend_batch_rows, write_marks, ...) run under the setting of the function that calls them.
--
-- lease_runs() becomes PL/pgSQL for the same reason: a SQL function that cannot be inlined
-- (it aggregates) is planned on each call, where a PL/pgSQL one keeps its plan. Same query.
--
-- A CREATE OR REPLACE of one of these functions drops the setting unless it says it again:
-- the test `planning::the_hot_path_is_planned_once_per_session` checks all five.
ALTER FUNCTION seqvend.vend(text[], integer[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION seqvend.vend_keyed(text[], integer[], text[], text[], text[], interval)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION seqvend.draw_counters(text[], text[], integer[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION seqvend.lease(text, integer, text, text, interval)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION seqvend.lease_keyed(text, integer, text, text, interval, text, text, text, interval)
    SET plan_cache_mode = force_generic_plan;

CREATE OR REPLACE FUNCTION seqvend.lease_runs(p_vals bigint[], p_increment bigint,
                                              OUT runs_first bigint[], OUT runs_last bigint[])
    LANGUAGE plpgsql IMMUTABLE
AS $$
BEGIN
    SELECT array_agg(r.first ORDER BY r.run), array_agg(r.last ORDER BY r.run)
      INTO runs_first, runs_last
      FROM (SELECT b.run,
                   (array_agg(b.v ORDER BY b.n))[1] AS first,
                   (array_agg(b.v ORDER BY b.n DESC))[1] AS last
              FROM (SELECT a.v, a.n, sum(a.starts) OVER (ORDER BY a.n) AS run
                      FROM (SELECT u.v, u.n,
                                   CASE WHEN u.v::numeric - lag(u.v) OVER (ORDER BY u.n)
                                             = p_increment THEN 0 ELSE 1 END AS starts
                              FROM unnest(p_vals) WITH ORDINALITY AS u(v, n)) AS a) AS b
             GROUP BY b.run) AS r;
END
$$;

-- The answer rows stored before 20261205100000 get their ids, which the purge ranks rows of the
-- same microsecond by. In a transaction of its own: it locks the rows it updates, not the
-- table, so keyed vends and replays go on beside it. Rows stored since have theirs already.
--
-- Only a purge locks rows of vend_answers (vends insert, replays read). Updating rows while a
-- purge holds some of them could deadlock with it, and fail this migration and the start of
-- the instance running it; so it takes the purges' lock first (SVPU, 20261205100000): it waits
-- for a running purge to end, and purges that start meanwhile wait for it.
SELECT pg_advisory_xact_lock(1398165589, 0);
UPDATE seqvend.vend_answers SET id = nextval('seqvend.vend_answer_ids') WHERE id IS NULL;

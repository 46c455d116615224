-- The answer rows stored before 20261205100000 get their ids, which the purge ranks rows of the
-- same microsecond by. In a transaction of its own: it locks the rows it updates, not the
-- table, so keyed vends and replays go on beside it. Rows stored since have theirs already.
UPDATE seqvend.vend_answers SET id = nextval('seqvend.vend_answer_ids') WHERE id IS NULL;

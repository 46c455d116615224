-- Ranges refer to their PostgreSQL sequences as regclass, not as raw oids: pg_dump writes a
-- regclass value as the sequence's name, so a dump restored into another cluster (where every
-- oid differs) still points each range at its own sequence.
ALTER TABLE seqvend.ranges ALTER COLUMN pg_sequence TYPE regclass USING pg_sequence::regclass;

-- A sequence's number format (src/carriers): the layout its values are printed in, with its
-- parameters, e.g. {"kind": "ups_1z", "account": "5R8939", "service": "03"}. NULL for a plain
-- sequence. Set at creation and never changed, which is what lets seqvend cache it per name.
ALTER TABLE seqvend.sequences
    ADD COLUMN format jsonb
        CONSTRAINT sequences_format_check
        CHECK (format IS NULL OR (jsonb_typeof(format) = 'object' AND format ? 'kind'));

-- Recognising a number looks for the sequences whose format printed it.
CREATE INDEX sequences_by_format ON seqvend.sequences (format) WHERE format IS NOT NULL;

-- What a page says of itself, read by the parse stage: its date and the URL it names as its canonical. A page naming
-- another page of its host as its canonical is a duplicate of that page (duplicate_of), folded by the update of the
-- cycle that stored the later of the two, which folded_cycle keeps so that a re-run of that cycle undoes the fold
-- (docs/explanation/canonicalization.md). Pages stored before have none of the three.
ALTER TABLE pages ADD COLUMN date DATE;               -- publication, else last change
ALTER TABLE pages ADD COLUMN canonical_link VARCHAR;  -- Link header or <link rel=canonical>, canonicalized
ALTER TABLE pages ADD COLUMN folded_cycle INTEGER;    -- the cycle that made it a duplicate of its canonical

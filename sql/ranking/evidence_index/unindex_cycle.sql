-- Undo what an earlier run of refit $cycle added to the evidence index.
DELETE FROM evidence_postings WHERE cycle = $cycle;
DELETE FROM evidence_lengths WHERE cycle = $cycle;
UPDATE frontier SET evidence_cycle = NULL WHERE evidence_cycle = $cycle;

-- Why a cycle failed (status failed): the one line of the bad input that stopped its begin (a malformed query-log
-- row, a missing query-log folder). A rerun of the interval opens the cycle again and clears it.
ALTER TABLE cycles ADD COLUMN failure VARCHAR;

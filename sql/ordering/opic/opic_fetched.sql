-- The known URLs (r_ids) fetched after cycle $last and up to cycle $cycle: those that pass their cash on.
SELECT i.id
FROM r_ids i
JOIN pages p USING (url)
WHERE p.cycle > $last AND p.cycle <= $cycle;

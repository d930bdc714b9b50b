-- Replace cycle $cycle's rows of opic_cash with the URLs whose cash or history its scoring changed (s_opic, by id).
-- inputs: s_opic
DELETE FROM opic_cash WHERE cycle = $cycle;
INSERT INTO opic_cash
SELECT $cycle, i.url, s.cash, s.history
FROM s_opic s
JOIN r_ids i USING (id);

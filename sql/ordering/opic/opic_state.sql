-- Each known URL's (r_ids) OPIC cash and history before cycle $cycle's scoring: its newest row of an earlier cycle.
SELECT i.id, o.cash, o.history
FROM r_ids i
JOIN opic_cash o USING (url)
WHERE o.cycle < $cycle
QUALIFY row_number() OVER (PARTITION BY o.url ORDER BY o.cycle DESC) = 1;

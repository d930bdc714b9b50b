-- Online page importance (OPIC, as Nutch orders fetch lists): cash plus history of each URL as of cycle $cycle
-- (table opic_cash, written by crawlcycle.ordering.opic); a URL that never received cash has 0.
SELECT e.url, coalesce(o.cash + o.history, 0) AS priority,
       json_object('cash', coalesce(o.cash, 0), 'history', coalesce(o.history, 0)) AS parts
FROM eligible e
LEFT JOIN (SELECT url, cash, history FROM opic_cash WHERE cycle <= $cycle
           QUALIFY row_number() OVER (PARTITION BY url ORDER BY cycle DESC) = 1) o USING (url);

-- Each batch URL has exactly one fetch-log row, and no row lacks a URL.
SELECT url, count(*) AS rows FROM g_fetch_log GROUP BY url HAVING url IS NULL OR count(*) > 1;

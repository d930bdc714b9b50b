-- One parse row per page URL, none without a URL.
SELECT url, count(*) AS rows FROM g_pages GROUP BY url HAVING url IS NULL OR count(*) > 1;

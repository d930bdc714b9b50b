-- Per shown URL of partition $partition: views (times shown at rank <= $top_k) and clicks (at any rank).
SELECT shown_url AS url,
       count(*) FILTER (WHERE rank <= $top_k) AS views,
       count(*) FILTER (WHERE clicked) AS clicks
FROM query_log
WHERE partition = $partition AND shown_url IS NOT NULL
GROUP BY shown_url
ORDER BY url;

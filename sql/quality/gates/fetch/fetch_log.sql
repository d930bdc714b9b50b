-- The shards' fetch log, one row per batch URL.
SELECT url, status, content_type, outcome, error_class,
       status IS NOT NULL OR error_class IS NOT NULL AS explained,
       (error_class IS NOT NULL OR coalesce(status >= 400, false))::INTEGER AS failed
FROM g_fetch_log;

-- The shards' parsed pages.
SELECT url, status, content_type FROM g_pages;

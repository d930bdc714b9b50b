-- Parsed 2xx HTML pages: whether the main text came out empty, and how many out-links they hold.
SELECT url, (coalesce(length(text), 0) = 0)::INTEGER AS empty_text, coalesce(n_links, 0) AS n_links
FROM g_pages
WHERE status BETWEEN 200 AND 299 AND content_type LIKE '%html%';

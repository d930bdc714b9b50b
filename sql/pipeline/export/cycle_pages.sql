-- The pages cycle $cycle stored first, with their text: what an indexer downstream of the crawl takes in.
SELECT url, host, title, description, lang, text, content_hash
FROM pages
WHERE cycle = $cycle AND reason IS NULL AND duplicate_of IS NULL
ORDER BY url;

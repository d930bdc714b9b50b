-- The shards' 2xx pages, the columns that tell whether they repeat a stored page (shard_rows: stage_fetch_files).
SELECT file_index, row_index, url, content_hash, simhash, duplicate_of
FROM shard_rows($pages)
WHERE status BETWEEN 200 AND 299
ORDER BY file_index, row_index;

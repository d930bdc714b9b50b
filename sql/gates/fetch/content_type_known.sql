-- Content types are bare, lower-case media types.
SELECT url, content_type FROM g_fetch_log
WHERE content_type IS NOT NULL AND NOT regexp_full_match(content_type, '[a-z0-9][a-z0-9.+_-]*/[a-z0-9][a-z0-9.+_-]*');

-- Edges among known URLs (crawled and frontier), nofollow links included: they are evidence of importance.
SELECT DISTINCT src, dst FROM links;

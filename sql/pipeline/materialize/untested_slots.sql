-- Slots of a batch of $batch_size for URLs of origins that answered but never gave a page (seeds' origins aside): the
-- share of such origins found by links that gave a page once their URLs were asked (Laplace's rule: one more page and
-- one more try than seen) times the batch, at least one. Few new origins giving pages (a crawl at the edge of a
-- snapshot, or of a web of dead links) means few slots spent finding more of them.
WITH seeds AS (
    SELECT DISTINCT url_origin(url) AS origin FROM frontier WHERE source = 'seed'
), asked AS (
    SELECT url_origin(path_group) AS origin, sum(pages) > 0 AS gave_page
    FROM path_yield GROUP BY 1
)
SELECT greatest(1, CAST(round((count(*) FILTER (WHERE gave_page) + 1) / (count(*) + 2) * $batch_size) AS INTEGER))
FROM asked WHERE origin NOT IN (SELECT origin FROM seeds);

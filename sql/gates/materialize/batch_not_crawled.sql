-- Nothing already crawled is fetched again.
SELECT b.url FROM batches b JOIN pages p USING (url) WHERE b.cycle = $cycle + 1;

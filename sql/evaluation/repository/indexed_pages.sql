-- Every page of the ranker's index with its stored main-text signature and the cycle whose fetch stored it.
SELECT p.url, p.content_hash, p.cycle
FROM posting_docs d JOIN pages p USING (url)
ORDER BY p.url;

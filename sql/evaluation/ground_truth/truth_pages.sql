-- Pages of a simulation's ground truth (crawlcycle.evaluation.ground_truth): every 2xx page of the snapshot the parser
-- reads as HTML-or-unknown, with its host (as the per-host cap counts it), its in-degree and its main-text signature.
SELECT p.url, f.host, f.in_links, p.content_hash
FROM pages p JOIN frontier f USING (url)
WHERE p.reason IS DISTINCT FROM 'not_html'
ORDER BY p.url;

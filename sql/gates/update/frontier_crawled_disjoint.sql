-- No URL is both still to fetch and already crawled.
SELECT f.url, f.status FROM v_frontier_open f JOIN pages p USING (url);

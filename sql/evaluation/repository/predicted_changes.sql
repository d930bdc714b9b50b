-- What each change model predicts of every stored page for the fetch of cycle $fetch_cycle (page_freshness with the
-- refresh settings $refresh): P(changed since its last fetch or check) by poisson and by bursts, the one the settings
-- use, with the stored main-text signature the live page is compared with.
SELECT f.url, f.host, f.since, f.checks, f.changes, f.host_events, f.by_sitemap, f.p_poisson, f.p_bursts,
       f.p_changed, p.content_hash
FROM page_freshness($fetch_cycle, $refresh::JSON) f JOIN pages p USING (url)
ORDER BY f.url;

-- Pages the learned combination scores: the eligible frontier (to rank) and the crawled, indexed pages (to learn
-- from, their impact being observed).
CREATE OR REPLACE TEMP TABLE s_scope AS
SELECT discovery_seq AS seq FROM eligible
UNION
SELECT f.discovery_seq FROM frontier f SEMI JOIN posting_docs d ON d.url = f.url;

-- Pages S' learns from: crawled and indexed, so the reference ranker knows their S.
CREATE OR REPLACE TEMP TABLE s_scope AS
SELECT f.discovery_seq AS seq FROM frontier f SEMI JOIN posting_docs d ON d.url = f.url;

-- What index_pages tokenizes, for every page of r_refresh at once, ordered by r_refresh.n so that each chunk's
-- read (content.sql, anchors.sql) skips the rest: the title and main text of pages whose content fields this run
-- writes, and every anchor text pointing at each page with the number of links carrying it (one row with a NULL
-- anchor for a page without any). Tokenized chunks gather in s_rewrite and s_postings (write_postings.sql).
CREATE OR REPLACE TEMP TABLE r_content AS
SELECT r.n, r.url, p.title, p.text
FROM r_refresh r JOIN pages p ON p.url = r.url
WHERE r.content
ORDER BY r.n;
CREATE OR REPLACE TEMP TABLE r_anchor_texts AS
SELECT r.n, r.url, l.anchor, count(l.src) AS links
FROM r_refresh r LEFT JOIN links l ON l.dst = r.url AND l.anchor <> ''
GROUP BY r.n, r.url, l.anchor
ORDER BY r.n;
CREATE OR REPLACE TEMP TABLE s_rewrite (url VARCHAR, field VARCHAR);
CREATE OR REPLACE TEMP TABLE s_postings (url VARCHAR, field VARCHAR, term VARCHAR, tf INTEGER);

-- Every known URL (crawled and frontier) numbered 0.. for the link-graph measures.
CREATE OR REPLACE TEMP TABLE r_ids AS SELECT url, (row_number() OVER (ORDER BY url) - 1)::BIGINT AS id FROM frontier;

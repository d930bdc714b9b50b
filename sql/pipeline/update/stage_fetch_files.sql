-- Stage the shards' fetch output for merge_fetch as temp tables s_fetch_log (with the shard number, and `refresh`: the
-- URL was a stored page fetched again, a refresh row of the batch of cycle $cycle), s_requests,
-- s_hosts, s_robots, s_sitemaps, s_sitemap_urls and s_origin_tries. A parameter named like a shard file ($fetch_log for
-- fetch_log.parquet) lists that file of every shard, in shard order; $shards holds the shards' numbers.
-- shard_rows(files): the rows of those files with their place, file_index (from 1) and row_index (from 0), so that
-- later statements keep the order of the shards and of their files.
CREATE OR REPLACE TEMP MACRO shard_rows(files) AS TABLE
SELECT * EXCLUDE (filename, file_row_number), list_position(files, filename) AS file_index,
       file_row_number AS row_index
FROM read_parquet(files, union_by_name = true, filename = true, file_row_number = true);
CREATE OR REPLACE TEMP TABLE s_fetch_log AS
SELECT l.*, $shards[l.file_index] AS shard, coalesce(b.kind = 'refresh', false) AS refresh
FROM shard_rows($fetch_log) l LEFT JOIN batches b ON b.fetch_cycle = $cycle AND b.url = l.url;
CREATE OR REPLACE TEMP TABLE s_requests AS SELECT * FROM shard_rows($requests);
CREATE OR REPLACE TEMP TABLE s_hosts AS SELECT * FROM shard_rows($hosts);
CREATE OR REPLACE TEMP TABLE s_robots AS SELECT * FROM shard_rows($robots);
CREATE OR REPLACE TEMP TABLE s_sitemaps AS SELECT * FROM shard_rows($sitemaps);
CREATE OR REPLACE TEMP TABLE s_sitemap_urls AS SELECT * FROM shard_rows($sitemap_urls);
CREATE OR REPLACE TEMP TABLE s_origin_tries AS SELECT * FROM shard_rows($origin_tries);

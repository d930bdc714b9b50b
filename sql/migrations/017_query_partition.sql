-- Which query-log partition each cycle read (its own; an earlier one when its own was missing and the setting
-- missing_query_log is 'latest'; NULL: none, an empty log) and how many rows it gave.
ALTER TABLE cycles ADD COLUMN query_partition DATE;
ALTER TABLE cycles ADD COLUMN query_rows BIGINT;
UPDATE cycles SET query_partition = interval_start,
                  query_rows = (SELECT count(*) FROM query_log l WHERE l.partition = cycles.interval_start);

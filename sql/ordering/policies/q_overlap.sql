-- Query overlap (Tran et al.'s reading of Pandey & Olston): the summed frequency x matched share of the partition's
-- queries whose n-grams the page's URL and anchors hold (temp table s_query_overlap, staged by
-- crawlcycle.ordering.query_overlap). The priority is all query part: query_impact and query_priority are the overlap.
-- inputs: s_query_overlap
SELECT e.url, coalesce(o.overlap, 0) AS priority,
       json_object('overlap', coalesce(o.overlap, 0), 'queries', coalesce(o.queries, []),
                   'query_impact', coalesce(o.overlap, 0), 'query_priority', coalesce(o.overlap, 0)) AS parts
FROM eligible e LEFT JOIN s_query_overlap o USING (url);

-- PageRank over crawled pages and frontier.
SELECT url, pagerank AS priority, json_object('pagerank', pagerank, 'in_links', in_links) AS parts
FROM eligible;

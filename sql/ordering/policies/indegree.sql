-- Backlink count: distinct pages seen linking to the URL; discovery order breaks ties.
SELECT url, in_links + 1.0 / (2.0 + discovery_seq) AS priority,
       json_object('in_links', in_links) AS parts
FROM eligible;

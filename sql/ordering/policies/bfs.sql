-- Breadth-first: discovery order.
SELECT url, -discovery_seq::DOUBLE AS priority,
       json_object('discovery_seq', discovery_seq, 'first_seen_cycle', first_seen_cycle) AS parts
FROM eligible;

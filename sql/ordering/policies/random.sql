-- Uniform random order, reproducible from the seed and cycle.
SELECT url, (hash(url || ':' || $seed || ':' || $cycle) % 1000000007)::DOUBLE AS priority,
       json_object('seed', $seed) AS parts
FROM eligible;

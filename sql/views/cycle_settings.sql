-- Which settings did each cycle run with, and which changed from the cycle before? Every setting of a cycle's record
-- (cycles.settings) that is not at its default, with where its value came from, or whose value differs from the
-- record of the cycle before (previous; source NULL: back at its default).
CREATE OR REPLACE VIEW v_cycle_settings AS
WITH recorded AS (
    SELECT c.cycle, e.key AS setting, e.value ->> '$' AS value, (c.settings -> 'sources') ->> e.key AS source
    FROM cycles c, json_each(c.settings -> 'values') e
    WHERE c.settings IS NOT NULL
), compared AS (
    SELECT *, lag(value) OVER (PARTITION BY setting ORDER BY cycle) AS previous
    FROM recorded
)
SELECT cycle, setting, value, source, previous, coalesce(value <> previous, false) AS changed
FROM compared
WHERE source IS NOT NULL OR value <> previous
ORDER BY cycle, setting;

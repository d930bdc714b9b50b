-- Close cycle $cycle with the figures of the state it leaves behind.
UPDATE cycles SET
    status = 'done',
    finished_at = current_timestamp,
    frontier_open = (SELECT count(*) FROM v_frontier_open),
    next_batch = (SELECT count(*) FROM batches WHERE cycle = $cycle + 1),
    pages_total = (SELECT count(*) FROM pages)
WHERE cycle = $cycle;

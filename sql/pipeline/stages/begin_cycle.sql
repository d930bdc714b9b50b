-- Open cycle $cycle for the data interval starting $interval_start (a re-run reopens the same row).
DELETE FROM cycles WHERE cycle = $cycle;
INSERT INTO cycles (cycle, interval_start, interval_end, run_id, policy, status, started_at, stage_seconds)
VALUES ($cycle, $interval_start, $interval_end, $run_id, $policy, 'running', current_timestamp, '{}');

-- Open cycle $cycle for the data interval starting $interval_start with the settings it runs with (a re-run reopens
-- the same row and records them afresh).
DELETE FROM cycles WHERE cycle = $cycle;
INSERT INTO cycles (cycle, interval_start, interval_end, run_id, policy, status, started_at, stage_seconds, settings)
VALUES ($cycle, $interval_start, $interval_end, $run_id, $policy, cycle_running(), current_timestamp, '{}', $settings);

-- The task instances of the given crawl_cycle runs in Airflow's metadata database (SQLite or PostgreSQL), with when
-- each was queued, started running and ended, and its DAG run's start and end. Read by `crawlcycle report`.
SELECT ti.run_id, ti.task_id, ti.map_index, ti.queued_dttm, ti.start_date, ti.end_date,
       dr.start_date AS run_start, dr.end_date AS run_end
FROM task_instance ti
JOIN dag_run dr ON dr.dag_id = ti.dag_id AND dr.run_id = ti.run_id
WHERE ti.dag_id = :dag_id AND ti.run_id IN :run_ids AND ti.start_date IS NOT NULL AND ti.end_date IS NOT NULL
ORDER BY ti.run_id, ti.start_date

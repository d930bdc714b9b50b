-- HTTP status in 100..599, outcome in the URL state model, and an error class on every row without a status.
SELECT url, status, outcome, error_class FROM g_fetch_log
WHERE (status IS NOT NULL AND status NOT BETWEEN 100 AND 599)
   OR outcome NOT IN ('fetched', 'redirected_permanent', 'redirected_temporary', 'gone', 'retry_pending',
                      'deferred', 'disallowed')
   OR (status IS NULL AND error_class IS NULL);

-- Impact-weighted random walk over the link graph enriched with co-citation edges (Tran et al., RW-EG): the
-- walk's stationary share of each URL (temp table s_walk, staged by crawlcycle.ordering.random_walk; its iterations,
-- residual and virtual edges are in model_runs, model 'rw_eg').
-- inputs: s_walk
SELECT e.url, w.score AS priority, json_object('walk', w.score, 'in_links', e.in_links) AS parts
FROM eligible e JOIN s_walk w USING (url);

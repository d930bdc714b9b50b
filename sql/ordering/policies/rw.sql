-- Impact-weighted random walk (Tran et al.) over the link graph: the walk's stationary share of each URL (temp
-- table s_walk, staged by crawlcycle.ordering.random_walk; its iterations and residual are in model_runs, model 'rw').
-- inputs: s_walk
SELECT e.url, w.score AS priority, json_object('walk', w.score, 'in_links', e.in_links) AS parts
FROM eligible e JOIN s_walk w USING (url);

-- Learned combination (Tran et al.): a decision tree over the other policies' scores predicts each page's impact
-- (temp table s_learned, staged by crawlcycle.learned_combination; its cross-validation is in model_runs, model 'ml').
SELECT e.url, l.priority, l.parts FROM eligible e JOIN s_learned l USING (url);

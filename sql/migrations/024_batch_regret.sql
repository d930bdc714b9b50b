-- Regret of a simulated crawl's batches, per judge (written by crawlcycle.evaluation.simulator after the run; a real
-- crawl has no true impact and leaves them empty): the true impact of the new URLs each batch took, of the best batch
-- of as many URLs from the same frontier (the URLs the batch's scores ranked) and from every page of the snapshot not
-- fetched yet, both greedy by true impact under the per-host cap; and the URLs of the best frontier batch the policy
-- passed over, with what it believed of them. v_batch_regret reads both.
CREATE TABLE batch_regret (
    fetch_cycle    INTEGER NOT NULL,   -- the batch's (batches.fetch_cycle)
    judge          VARCHAR NOT NULL,   -- whose true impact (crawlcycle.evaluation.ground_truth.JUDGES)
    slots          INTEGER NOT NULL,   -- new URLs in the batch: the size of both best batches
    chosen         DOUBLE NOT NULL,    -- true impact of the new URLs the batch took
    best_frontier  DOUBLE NOT NULL,    -- of the best batch from the same frontier
    best_all       DOUBLE NOT NULL,    -- of the best batch from every page not fetched yet
    PRIMARY KEY (fetch_cycle, judge)
);

CREATE TABLE batch_passed_over (
    fetch_cycle    INTEGER NOT NULL,
    judge          VARCHAR NOT NULL,
    url            VARCHAR NOT NULL,   -- in the best frontier batch, not in the batch the policy took
    impact         DOUBLE NOT NULL,    -- its true impact
    priority       DOUBLE NOT NULL,    -- what the policy believed: its priority (frontier_scores)
    frontier_rank  INTEGER NOT NULL,   -- its place in the frontier by that priority (1 = first)
    parts          JSON,               -- and what the priority was made of
    PRIMARY KEY (fetch_cycle, judge, url)
);

-- Index epochs: the reference ranker's collection statistics hold still between full re-rankings, so that a cycle
-- scores only the pages it wrote and carries every other result (crawlcycle.ranking.epochs). One row per epoch.
CREATE TABLE index_epochs (
    epoch         INTEGER PRIMARY KEY,
    opened_cycle  INTEGER NOT NULL,   -- the cycle whose refit froze the statistics and ranked every query
    reason        VARCHAR NOT NULL,   -- why it opened: first | settings | full | age | drift
    pages         BIGINT NOT NULL,    -- N, indexed pages, of the idf
    known         BIGINT NOT NULL,    -- known URLs, of the PageRank prior
    ranker        VARCHAR,            -- the ranker settings its scores read (crawlcycle.ranking.epochs.ranker_key)
    closed_cycle  INTEGER,            -- the cycle whose refit opened the next epoch
    drift         DOUBLE              -- at its last cycle: share of sampled top-K places today's statistics change
);
-- A term's document frequency as the epoch holds it: counted by index run `cycle`; stale: pages holding it came or
-- went since, so the next epoch counts it again.
ALTER TABLE posting_terms ADD COLUMN cycle INTEGER DEFAULT 0;
ALTER TABLE posting_terms ADD COLUMN stale BOOLEAN DEFAULT false;
-- A page's PageRank as the epoch holds it: read when the epoch opened or when an index run wrote the page's fields.
ALTER TABLE posting_docs ADD COLUMN pagerank DOUBLE;
-- An index built before epochs: its statistics as its last index run left them open the first epoch.
UPDATE posting_docs d SET pagerank = f.pagerank FROM frontier f WHERE f.url = d.url;
INSERT INTO index_epochs (epoch, opened_cycle, reason, pages, known)
SELECT 1, max(cycle), 'first', count(*), (SELECT count(*) FROM frontier) FROM posting_docs HAVING count(*) > 0;

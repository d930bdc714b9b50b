-- Online page importance (policy opic, crawlcycle.ordering.opic): the cash and history of a URL after the scoring of the
-- cycle that last changed them. A URL's state is its newest row; a URL without one has neither.
CREATE TABLE opic_cash (
    cycle    INTEGER NOT NULL,      -- cycle whose scoring wrote the row
    url      VARCHAR NOT NULL,
    cash     DOUBLE NOT NULL,       -- importance received and not passed on yet; all URLs' cash sums to 1
    history  DOUBLE NOT NULL,       -- cash the page passed on when it was fetched
    PRIMARY KEY (cycle, url)
);

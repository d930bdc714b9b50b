-- Crawl state. Every row written by a cycle carries that cycle's number, so a re-run of the cycle
-- can replace exactly its own output.

-- One row per crawl cycle (= one Airflow run of crawl_cycle).
CREATE TABLE cycles (
    cycle           INTEGER PRIMARY KEY,
    interval_start  DATE NOT NULL UNIQUE,   -- data interval: selects the query-log partition
    interval_end    DATE,
    run_id          VARCHAR,
    policy          VARCHAR NOT NULL,
    status          VARCHAR NOT NULL,       -- running | done
    started_at      TIMESTAMP,
    finished_at     TIMESTAMP,
    batch_size      INTEGER,                -- URLs in this cycle's batch
    fetched         INTEGER,                -- outcome = fetched
    errors          INTEGER,                -- rows with an error class
    new_urls        INTEGER,                -- URLs first seen in this cycle
    pages_total     BIGINT,
    frontier_open   BIGINT,
    next_batch      INTEGER,
    stage_seconds   JSON                    -- seconds per stage
);

-- Every URL the crawler knows, with its state in the URL state model (see README).
CREATE TABLE frontier (
    url               VARCHAR PRIMARY KEY,
    host              VARCHAR NOT NULL,
    first_seen_cycle  INTEGER NOT NULL,     -- 0 = seed
    discovery_seq     BIGINT NOT NULL,      -- global discovery order (breadth-first)
    source            VARCHAR NOT NULL,     -- seed | link | redirect | sitemap
    status            VARCHAR NOT NULL DEFAULT 'unfetched',
    status_cycle      INTEGER,              -- cycle that set the status
    attempts          INTEGER NOT NULL DEFAULT 0,
    retry_after_cycle INTEGER,              -- retry_pending / deferred: not before this cycle
    in_links          INTEGER NOT NULL DEFAULT 0,
    pagerank          DOUBLE NOT NULL DEFAULT 0
);

-- Fetched pages (the crawled set D).
CREATE TABLE pages (
    url            VARCHAR PRIMARY KEY,
    host           VARCHAR NOT NULL,
    cycle          INTEGER NOT NULL,
    status         INTEGER,
    content_type   VARCHAR,
    title          VARCHAR,
    text           VARCHAR,
    description    VARCHAR,
    lang           VARCHAR,
    content_hash   VARCHAR,
    simhash        UBIGINT,
    duplicate_of   VARCHAR,
    n_links        INTEGER,
    noindex        BOOLEAN,
    reason         VARCHAR,
    bytes          BIGINT
);

-- Link graph with anchor text.
CREATE TABLE links (
    src       VARCHAR NOT NULL,
    dst       VARCHAR NOT NULL,
    anchor    VARCHAR NOT NULL,
    context   VARCHAR,
    nofollow  BOOLEAN,
    cycle     INTEGER NOT NULL,
    PRIMARY KEY (src, dst, anchor)
);

-- Per-host politeness and robots state.
CREATE TABLE hosts (
    host               VARCHAR PRIMARY KEY,
    robots_status      INTEGER,
    robots_fetched_at  DOUBLE,
    robots_txt         VARCHAR,
    crawl_delay        DOUBLE,
    sitemaps           VARCHAR[],
    delay              DOUBLE,
    last_response_ms   DOUBLE,
    errors             INTEGER,             -- consecutive errors
    backoff_until      DOUBLE,
    updated_cycle      INTEGER
);

-- One row per batch URL per cycle.
CREATE TABLE fetch_log (
    cycle         INTEGER NOT NULL,
    shard         INTEGER NOT NULL,
    url           VARCHAR NOT NULL,
    host          VARCHAR NOT NULL,
    final_url     VARCHAR,
    status        INTEGER,
    redirects     VARCHAR[],
    bytes         BIGINT,
    content_type  VARCHAR,
    started_at    DOUBLE,
    finished_at   DOUBLE,
    elapsed_ms    DOUBLE,
    error_class   VARCHAR,
    truncated     BOOLEAN,
    outcome       VARCHAR NOT NULL,
    PRIMARY KEY (cycle, url)
);

-- One row per HTTP request sent (robots.txt included): the per-host gap invariant is read here.
CREATE TABLE fetch_requests (
    cycle        INTEGER NOT NULL,
    host         VARCHAR NOT NULL,
    url          VARCHAR NOT NULL,
    started_at   DOUBLE NOT NULL,
    finished_at  DOUBLE
);

-- The batch each cycle fetches, with the priority and its parts.
CREATE TABLE batches (
    cycle     INTEGER NOT NULL,
    url       VARCHAR NOT NULL,
    host      VARCHAR NOT NULL,
    rank      INTEGER NOT NULL,
    policy    VARCHAR NOT NULL,
    priority  DOUBLE NOT NULL,
    parts     JSON,
    PRIMARY KEY (cycle, url)
);

-- Priority of every open frontier URL under the cycle's policy (rewritten by each score stage).
CREATE TABLE frontier_scores (
    cycle     INTEGER NOT NULL,
    url       VARCHAR NOT NULL,
    priority  DOUBLE NOT NULL,
    parts     JSON,
    PRIMARY KEY (cycle, url)
);

-- Query log partitions: aggregated (query, frequency) or impressions (time, url, rank, clicked).
CREATE TABLE query_log (
    partition  DATE NOT NULL,
    query      VARCHAR NOT NULL,
    frequency  DOUBLE NOT NULL,
    time       TIMESTAMP,
    shown_url  VARCHAR,
    rank       INTEGER,
    clicked    BOOLEAN
);

-- Top-K results per query over crawled pages.
CREATE TABLE query_results (
    cycle   INTEGER NOT NULL,
    query   VARCHAR NOT NULL,
    rank    INTEGER NOT NULL,
    url     VARCHAR NOT NULL,
    score   DOUBLE NOT NULL,
    source  VARCHAR NOT NULL,             -- reference | loaded
    PRIMARY KEY (cycle, query, rank)
);

-- Queries that steer each cycle, and why.
CREATE TABLE needy_queries (
    cycle          INTEGER NOT NULL,
    query          VARCHAR NOT NULL,
    frequency      DOUBLE NOT NULL,
    improvability  DOUBLE NOT NULL,
    neediness      DOUBLE NOT NULL,
    rank           INTEGER NOT NULL,
    PRIMARY KEY (cycle, query)
);

-- Every model fit, with its version, features and metrics.
CREATE TABLE model_runs (
    cycle       INTEGER NOT NULL,
    model       VARCHAR NOT NULL,
    version     INTEGER NOT NULL,
    features    VARCHAR[],
    metrics     JSON,
    file        VARCHAR,
    created_at  TIMESTAMP DEFAULT current_timestamp,
    PRIMARY KEY (cycle, model)
);

-- Data-quality gate results.
CREATE TABLE dq_results (
    cycle        INTEGER NOT NULL,
    gate         VARCHAR NOT NULL,        -- fetch | parse | update | materialize
    expectation  VARCHAR NOT NULL,
    success      BOOLEAN NOT NULL,
    severity     VARCHAR NOT NULL,        -- fail | warn
    failed_rows  BIGINT NOT NULL,
    examples     VARCHAR,
    created_at   TIMESTAMP DEFAULT current_timestamp
);

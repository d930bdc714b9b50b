-- Functions the stages and the views share, kept in the database so that they can be used from the duckdb CLI too.

-- Sum and mean of a DOUBLE column to 1e-9, the same whatever order DuckDB's threads add the rows in: each value is
-- rounded to an integer count of nano-units and the integers are added, exactly. A plain float sum depends on that
-- order in its last bits, and a score or a fit fed by it would then differ between two runs of the same cycle.
-- Each value must stay below 9.2e9 in magnitude (a BIGINT of nano-units); their sum may not.
CREATE OR REPLACE MACRO exact_sum(x) AS sum(round(x * 1e9)::BIGINT) / 1e9;
CREATE OR REPLACE MACRO exact_avg(x) AS exact_sum(x) / count(x);

-- scheme://host[:port] of a canonical URL (canonical URLs carry no user info and no default port): the scope of
-- one robots.txt and the unit of reachability (crawlcycle.fetch.robots.origin_of in Python).
CREATE OR REPLACE MACRO url_origin(url) AS regexp_extract(url, '^[a-z][a-z0-9+.-]*://[^/?#]+');

-- Why the crawl scope refuses URL `target` of host `target_host`, found `target_hops` links from the nearest seed, or
-- NULL when it is in scope. `rules` holds the scope settings (Settings.scope_rules): allowed_domains and
-- denied_domains (a domain covers its subdomains), url_include and url_exclude (RE2 patterns searched in the URL;
-- '' = none), max_hops (0 = no limit; NULL hops pass) and follow_external (whether hosts other than the seeds' may
-- enter). The parameters are not named like columns: a macro would put them in place of the subquery's columns.
CREATE OR REPLACE MACRO scope_reason(target, target_host, target_hops, rules) AS CASE
    WHEN list_bool_or(list_transform(rules.denied_domains,
                                     lambda d: target_host = d OR ends_with(target_host, '.' || d)))
        THEN 'domain_denied'
    WHEN len(rules.allowed_domains) > 0
         AND NOT list_bool_or(list_transform(rules.allowed_domains,
                                             lambda d: target_host = d OR ends_with(target_host, '.' || d)))
        THEN 'domain_not_allowed'
    WHEN NOT rules.follow_external AND target_host NOT IN (SELECT host FROM frontier WHERE source = 'seed')
        THEN 'external_host'
    WHEN rules.url_exclude <> '' AND regexp_matches(target, rules.url_exclude) THEN 'url_excluded'
    WHEN rules.url_include <> '' AND NOT regexp_matches(target, rules.url_include) THEN 'url_not_included'
    WHEN rules.max_hops > 0 AND target_hops > rules.max_hops THEN 'too_many_hops'
END;

-- The path group of a URL, the unit whose broken links are learned: its origin, its first directory (when the path
-- has more than one segment) and the extension of its last segment, e.g. http://h/purchase/* for
-- http://h/purchase/license and http://h/*.json for http://h/cluster.json?v=1.
CREATE OR REPLACE MACRO url_path_group(url) AS
    url_origin(url)
    || coalesce(nullif(regexp_extract(url, '^[a-z][a-z0-9+.-]*://[^/?#]+(/[^/?#]+/)', 1), ''), '/') || '*'
    || regexp_extract(regexp_extract(url, '^[^?#]*'), '/[^/]*(\.[A-Za-z0-9]{1,8})$', 1);

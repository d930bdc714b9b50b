-- Every link destination is in canonical form (canonicalizing it again changes nothing).
SELECT src, dst, canon(dst) AS canonical FROM g_links WHERE canon(dst) IS DISTINCT FROM dst;

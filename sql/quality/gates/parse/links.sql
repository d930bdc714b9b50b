-- The shards' links, with each destination canonicalized again.
SELECT src, dst, anchor, canon(dst) AS dst_canonical FROM g_links;

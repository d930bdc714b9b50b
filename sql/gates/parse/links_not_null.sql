-- Links have a source and a destination.
SELECT src, dst, anchor FROM g_links WHERE src IS NULL OR dst IS NULL OR anchor IS NULL;

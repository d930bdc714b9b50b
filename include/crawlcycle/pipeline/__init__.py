"""The crawl cycle's stages as plain functions, their order, and the files that move between tasks."""

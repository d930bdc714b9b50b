"""What people read: the Crawl page's data and ``crawlcycle report``."""

"""The project's SQL files, by the part of the crawl that runs them; installed as the package ``crawlcycle.sql``
(see ``pyproject.toml``), so a non-editable install reads them from its own copy."""

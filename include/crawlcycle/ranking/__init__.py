"""What search sees: the reference ranker, the n-gram and evidence indexes, the query log."""

"""A stand-in for a user's own package: a domain and a filter plugged in by dotted path."""

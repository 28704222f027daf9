"""Side-by-side performance harness (DESIGN §6): run with ``make bench``, never as unit tests."""

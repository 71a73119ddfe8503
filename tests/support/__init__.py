"""What the tests share besides fixtures (those stay in the conftest.py files): the service
served on a settable clock, databases, failure reports, the parser corpus, the sweeper and
`rewake run` in processes, and the drills the benches run at full size."""

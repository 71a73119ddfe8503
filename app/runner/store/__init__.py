"""Where the runner records and reads sessions: the store (`stores`: the service or a local
database; `base`: what every user of one needs without loading one) and the run records on the
local disk (`records`)."""

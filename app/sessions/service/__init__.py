"""The session service: what hosts and people do to a session (`actions`) and what is shown of
it (`reads`). It sits above the marks, which it clears, settles and shows: a layer above the rest of
`rewake.sessions`, whose storage the marks build on."""

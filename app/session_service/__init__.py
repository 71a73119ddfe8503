"""The session service: what hosts and people do to a session (`actions`) and what is shown of
it (`reads`). It sits above the marks, which it clears, settles and shows, while the sessions'
storage (`rewake.sessions`) lies below them."""
